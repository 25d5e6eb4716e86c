/**
 * Properties of the agent loop over random scripted conversations: random tool calls (including unknown
 * tools, invalid arguments, failures, defects, terminating and slow tools, a tool that aborts the run),
 * `length` stops, model errors (as events and as typed failures), `toolUse` without calls, aborts at random
 * points, and steering and follow-up messages arriving at random times.
 *
 * Whatever happens: the event stream ends with exactly one `agent_end`; start/end events balance; every tool
 * call in the returned messages has exactly one tool result after it and before the next assistant message;
 * the model is never called after an abort. The transcript is appended to without copying, so these also
 * check that every array the run handed out (model requests, hook contexts read at once or only after the
 * run) still shows its own moment.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema, SubscriptionRef } from "effect"
import * as Agent from "../src/Agent.ts"
import type { AgentEvent } from "../src/AgentEvent.ts"
import type { AgentLoopConfig } from "../src/AgentLoop.ts"
import { Growing } from "../src/internal/growing.ts"
import type { AgentMessage } from "../src/Message.ts"
import { Model } from "../src/Model.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import {
  assertBalanced,
  assertMessagesMatchEvents,
  assertOneAgentEnd,
  assertWellFormed,
  customTool,
  makeRecorder,
  runLoop,
  scenarioCall,
  standardTools,
  user,
  within
} from "./support/loop.ts"

/** What `shouldStopAfterTurn` is called with. */
type ShouldStopAfterTurnContext = Parameters<NonNullable<AgentLoopConfig["shouldStopAfterTurn"]>>[0]

// ---------------------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------------------

const CallKind = Schema.Literals(["ok", "fail", "die", "unknown", "invalid", "terminate", "slow", "abort"])
type CallKind = typeof CallKind.Type

const StepKind = Schema.Literals(["say", "tools", "tools", "length", "errorEvent", "errorFail", "toolUseNoCalls"])

const Step = Schema.Struct({
  kind: StepKind,
  calls: Schema.Array(CallKind).check(Schema.isMaxLength(4))
})

const Injection = Schema.Struct({
  /** Index of the event after which it happens. */
  at: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 40 })),
  kind: Schema.Literals(["steer", "followUp", "abort"])
})

const Scenario = Schema.Struct({
  steps: Schema.Array(Step).check(Schema.isMaxLength(6)),
  mode: Schema.Literals(["parallel", "sequential"]),
  injections: Schema.Array(Injection).check(Schema.isMaxLength(4)),
  initialSteer: Schema.Boolean,
  initialFollowUp: Schema.Boolean,
  /** Stop after this turn (0: never). */
  stopAfterTurn: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4 }))
})
type Scenario = typeof Scenario.Type

const callOf = scenarioCall

interface Harness {
  readonly controller: AbortController
  /** Model requests made so far (read synchronously). */
  requestsSoFar: () => number
  /** How many requests had been made when the run was aborted. */
  requestsAtAbort: number | undefined
  readonly steering: Array<AgentMessage>
  readonly followUps: Array<AgentMessage>
  /** What the "abort" tool does. */
  abortRun: Effect.Effect<void>
}

const abort = (h: Harness) => {
  if (!h.controller.signal.aborted) {
    h.requestsAtAbort = h.requestsSoFar()
    h.controller.abort()
  }
}

const toolsFor = (h: Harness) => [
  ...standardTools,
  customTool("die", () => Effect.die(new Error("tool defect"))),
  customTool("slow", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      return { content: [{ type: "text" as const, text: "slow done" }], details: {} }
    })),
  customTool("abort", () => Effect.suspend(() => h.abortRun).pipe(Effect.andThen(Effect.never)))
]

/** The scenario's steps, then two plain answers (so follow-ups usually have a reply left). */
const scriptOf = (scenario: Scenario): Array<ScriptedModel.Step> => [
  ...stepsOf(scenario),
  ScriptedModel.say("final a"),
  ScriptedModel.say("final b")
]

const stepsOf = (scenario: Scenario): Array<ScriptedModel.Step> =>
  scenario.steps.map((step, turn): ScriptedModel.Step => {
    const calls = step.calls.map((kind, i) => callOf(kind, `t${turn}_${i}`))
    switch (step.kind) {
      case "say":
        return ScriptedModel.say(`answer ${turn}`)
      case "tools":
        return ScriptedModel.callTools(calls, calls.length === 0 ? `nothing to call ${turn}` : undefined)
      case "length":
        return { ...ScriptedModel.callTools(calls, "cut"), stopReason: "length" }
      case "errorEvent":
        return { fail: `model error ${turn}`, as: "event", content: calls }
      case "errorFail":
        return { fail: `model failure ${turn}`, as: "error", content: calls }
      case "toolUseNoCalls":
        return ScriptedModel.say(`no calls ${turn}`, { stopReason: "toolUse" })
      default:
        return ScriptedModel.say(`answer ${turn}`)
    }
  })

const checkRun = (events: ReadonlyArray<AgentEvent>, messages: ReadonlyArray<AgentMessage>, h: Harness) => {
  assertOneAgentEnd(events)
  assertBalanced(events)
  assertMessagesMatchEvents(events, messages)
  assertWellFormed(messages)
  if (h.requestsAtAbort !== undefined) {
    assert.strictEqual(h.requestsSoFar(), h.requestsAtAbort, "no model call after the abort")
  }
}

const RUNS = 300

/**
 * What can be done to a growing list: append one or several at once, take a snapshot now, take one to read
 * later, read one.
 */
const GrowingOp = Schema.Union([
  Schema.Struct({ op: Schema.Literal("append") }),
  Schema.Struct({
    op: Schema.Literal("appendAll"),
    count: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 40 }))
  }),
  Schema.Struct({ op: Schema.Literal("snapshot") }),
  Schema.Struct({ op: Schema.Literal("later") }),
  Schema.Struct({ op: Schema.Literal("read"), which: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 50 })) })
])

describe("AgentLoop properties", () => {
  it.effect.prop(
    "AL 3.6 the transcript appends without copying per message, and every snapshot keeps its own moment",
    {
      initial: Schema.Array(Schema.Int).check(Schema.isMaxLength(5)),
      ops: Schema.Array(GrowingOp).check(Schema.isMaxLength(60))
    },
    ({ initial, ops }) =>
      Effect.sync(() => {
        const source = initial.slice()
        const list = new Growing<number>(source)
        const model: Array<number> = [...initial]
        let next = 1000
        const arrays: Array<{ readonly array: ReadonlyArray<number>; readonly copy: ReadonlyArray<number> }> = []
        const pending: Array<{ readonly read: () => ReadonlyArray<number>; readonly length: number }> = []
        for (const op of ops) {
          if (op.op === "append") {
            list.append(next)
            model.push(next++)
          } else if (op.op === "appendAll") {
            const items = Array.from({ length: op.count }, () => next++)
            list.appendAll(items)
            model.push(...items)
          } else if (op.op === "snapshot") {
            const array = list.snapshot()
            arrays.push({ array, copy: array.slice() })
          } else if (op.op === "later") pending.push({ read: list.later(), length: model.length })
          else if (pending.length > 0) {
            const { read, length } = pending[op.which % pending.length]!
            const array = read()
            assert.strictEqual(read(), array, "a deferred snapshot reads the same array every time")
            arrays.push({ array, copy: model.slice(0, length) })
          }
          assert.deepStrictEqual(list.peek(), model)
        }
        for (const { read, length } of pending) arrays.push({ array: read(), copy: model.slice(0, length) })
        for (const { array, copy } of arrays) assert.deepStrictEqual(array, copy, "a snapshot never changes")
        assert.deepStrictEqual(source, initial, "the initial array is never touched")
      })
  )

  it.effect.prop(
    "AL 3.1, 3.4, 3.5 random conversations: one agent_end, balanced events, well-formed transcript, no model call after abort",
    { scenario: Scenario },
    ({ scenario }) =>
      Effect.gen(function*() {
        const model = yield* ScriptedModel.make(scriptOf(scenario))
        const h: Harness = {
          controller: new AbortController(),
          requestsSoFar: () => Effect.runSync(model.requests).length,
          requestsAtAbort: undefined,
          steering: scenario.initialSteer ? [user("initial steer")] : [],
          followUps: scenario.initialFollowUp ? [user("initial follow-up")] : [],
          abortRun: Effect.void
        }
        h.abortRun = Effect.sync(() => abort(h))
        const recorder = makeRecorder((_event, index) => {
          for (const injection of scenario.injections) {
            if (injection.at !== index) continue
            if (injection.kind === "abort") abort(h)
            else if (injection.kind === "steer") h.steering.push(user(`steer @${index}`))
            else h.followUps.push(user(`follow-up @${index}`))
          }
        })
        let turns = 0
        // What each turn's hook context should show: the messages ended so far.
        const held: Array<
          {
            readonly context: ShouldStopAfterTurnContext
            readonly ended: number
            readonly read?: { readonly array: ReadonlyArray<AgentMessage>; readonly copy: ReadonlyArray<AgentMessage> }
          }
        > = []
        const requestCopies: Array<ReadonlyArray<unknown>> = []
        const { events, messages, requests } = yield* within(
          runLoop({
            script: [],
            model,
            tools: toolsFor(h),
            recorder,
            config: {
              signal: h.controller.signal,
              toolExecution: scenario.mode,
              abandonAfter: "50 millis",
              getSteeringMessages: Effect.sync(() => h.steering.splice(0, 1)),
              getFollowUpMessages: Effect.sync(() => h.followUps.splice(0)),
              shouldStopAfterTurn: (context) =>
                Effect.sync(() => {
                  const ended = recorder.events.filter((e) => e.type === "message_end").length
                  // Every other turn reads its context at once; the rest are read only after the run.
                  if (turns % 2 === 0) {
                    const array = context.context.messages
                    held.push({ context, ended, read: { array, copy: array.slice() } })
                  } else held.push({ context, ended })
                  for (const request of Effect.runSync(model.requests).slice(requestCopies.length)) {
                    requestCopies.push(request.messages.slice())
                  }
                  return ++turns === scenario.stopAfterTurn
                })
            }
          }),
          "the run ends"
        )
        checkRun(events, messages, h)
        const transcript = [user("hi"), ...messages.slice(1)]
        for (const { context, ended, read } of held) {
          if (read !== undefined) {
            assert.deepStrictEqual(read.array, read.copy, "a context read during the run never changes")
          }
          assert.deepStrictEqual(context.context.messages, transcript.slice(0, ended), "a context shows its own moment")
          assert.deepStrictEqual(context.newMessages, messages.slice(0, ended), "newMessages shows its own moment")
        }
        requestCopies.forEach((copy, i) =>
          assert.deepStrictEqual(requests[i]!.messages, copy, "a model request's messages never change")
        )
      }),
    { timeout: 60_000, arbitrary: { runs: RUNS } }
  )

  it.effect.prop(
    "AL 3.5, AL 4 random conversations through the stateful agent: the transcript stays well formed across runs",
    {
      scenario: Scenario,
      prompts: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 3 })),
      // How the subscriber is written: a complete Effect (delivered without the runtime), an Effect run by the
      // runtime, or one that yields first (events of parallel calls then queue behind it).
      subscriber: Schema.Literals(["complete", "effect", "yielding"])
    },
    ({ scenario, prompts, subscriber }) =>
      Effect.gen(function*() {
        const model = yield* ScriptedModel.make(scriptOf(scenario), { whenExhausted: "fail" })
        const h: Harness = {
          controller: new AbortController(),
          requestsSoFar: () => Effect.runSync(model.requests).length,
          requestsAtAbort: undefined,
          steering: [],
          followUps: [],
          abortRun: Effect.void
        }
        const agent = yield* Agent.make({ toolExecution: scenario.mode, abandonAfter: "50 millis" }).pipe(
          Effect.provideService(Model, model),
          Effect.provide(ToolRegistry.fromEntries(toolsFor(h))),
          Effect.orDie
        )
        h.abortRun = Effect.suspend(() => {
          h.requestsAtAbort ??= h.requestsSoFar()
          return agent.abort
        })
        const events: Array<AgentEvent> = []
        // The states subscribers saw, some read at once and some only at the end: each keeps its moment.
        const held: Array<
          {
            readonly state: Agent.AgentState
            readonly ended: number
            readonly pending: ReadonlyArray<string>
            readonly read?: ReadonlyArray<AgentMessage>
          }
        > = []
        let ended = 0
        const pending = new Set<string>()
        // Records the event and the state seen with it; returns the injections due now (complete when none).
        const record = (event: AgentEvent): Effect.Effect<void> => {
          events.push(event)
          if (event.type === "message_end") ended++
          if (event.type === "tool_execution_start") pending.add(event.toolCallId)
          if (event.type === "tool_execution_end") pending.delete(event.toolCallId)
          const now = SubscriptionRef.getUnsafe(agent.state)
          const read = events.length % 2 === 0 ? now.messages : undefined
          held.push({ state: now, ended, pending: [...pending].sort(), ...(read ? { read } : {}) })
          const due = scenario.injections.filter((injection) => injection.at === events.length - 1)
          if (due.length === 0) return Effect.void
          return Effect.forEach(due, (injection) =>
            injection.kind === "abort"
              ? h.abortRun
              : injection.kind === "steer"
              ? agent.steer(`steer @${injection.at}`)
              : agent.followUp(`follow-up @${injection.at}`), { discard: true })
        }
        yield* agent.subscribe((event) =>
          subscriber === "complete"
            ? record(event)
            : subscriber === "effect"
            ? Effect.suspend(() => record(event))
            : Effect.yieldNow.pipe(
              Effect.andThen(Effect.yieldNow),
              Effect.andThen(Effect.yieldNow),
              Effect.flatMap(() => record(event))
            )
        )
        if (scenario.initialSteer) yield* agent.steer("initial steer")
        if (scenario.initialFollowUp) yield* agent.followUp("initial follow-up")
        for (let i = 0; i < prompts; i++) {
          const before = events.length
          h.requestsAtAbort = undefined
          yield* within(agent.prompt(`prompt ${i}`), "the prompt settles")
          const runEvents = events.slice(before)
          assertOneAgentEnd(runEvents)
          assertBalanced(runEvents)
          if (h.requestsAtAbort !== undefined) {
            assert.strictEqual(h.requestsSoFar(), h.requestsAtAbort, "no model call after the abort")
          }
        }
        const state = yield* SubscriptionRef.get(agent.state)
        assertWellFormed(state.messages)
        for (const seen of held) {
          const expected = state.messages.slice(0, seen.ended)
          if (seen.read !== undefined) assert.deepStrictEqual(seen.read, expected, "messages read at once never change")
          assert.deepStrictEqual(seen.state.messages, expected, "a state keeps the transcript of its moment")
          assert.deepStrictEqual(
            [...seen.state.pendingToolCalls].sort(),
            seen.pending,
            "a state keeps its pending calls"
          )
        }
        assert.isFalse(state.isStreaming)
        assert.strictEqual(state.pendingToolCalls.size, 0)
      }),
    { timeout: 60_000, arbitrary: { runs: 100 } }
  )
})
