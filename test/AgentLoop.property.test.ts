/**
 * Properties of the agent loop over random scripted conversations: random tool calls (including unknown
 * tools, invalid arguments, failures, defects, terminating and slow tools, a tool that aborts the run),
 * `length` stops, model errors (as events and as typed failures), `toolUse` without calls, aborts at random
 * points, and steering and follow-up messages arriving at random times.
 *
 * Whatever happens: the event stream ends with exactly one `agent_end`; start/end events balance; every tool
 * call in the returned messages has exactly one tool result after it and before the next assistant message;
 * the model is never called after an abort.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema, SubscriptionRef } from "effect"
import * as Agent from "../src/Agent.ts"
import type { AgentEvent } from "../src/AgentEvent.ts"
import type { AgentMessage } from "../src/Message.ts"
import { Model } from "../src/Model.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import type { ToolCall } from "../src/Message.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import {
  assertBalanced,
  assertMessagesMatchEvents,
  assertOneAgentEnd,
  assertWellFormed,
  customTool,
  makeRecorder,
  runLoop,
  standardTools,
  user,
  within
} from "./support/loop.ts"

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

/** The tool calls of a step: each kind mapped to a concrete call. */
const callOf = (kind: CallKind, id: string): ToolCall => {
  switch (kind) {
    case "ok":
      return ScriptedModel.toolCall(id, "add", { a: 1, b: 2 })
    case "fail":
      return ScriptedModel.toolCall(id, "fail", { text: id })
    case "die":
      return ScriptedModel.toolCall(id, "die", {})
    case "unknown":
      return ScriptedModel.toolCall(id, "missing", {})
    case "invalid":
      return ScriptedModel.toolCall(id, "add", { a: "not a number" })
    case "terminate":
      return ScriptedModel.toolCall(id, "stop", { text: id })
    case "slow":
      return ScriptedModel.toolCall(id, "slow", {})
    case "abort":
      return ScriptedModel.toolCall(id, "abort", {})
  }
}

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

describe("AgentLoop properties", () => {
  it.effect.prop(
    "random conversations: one agent_end, balanced events, well-formed transcript, no model call after abort",
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
        const { events, messages } = yield* within(runLoop({
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
            shouldStopAfterTurn: () => Effect.sync(() => ++turns === scenario.stopAfterTurn)
          }
        }), "the run ends")
        checkRun(events, messages, h)
      }),
    { timeout: 60_000, arbitrary: { runs: RUNS } }
  )

  it.effect.prop(
    "random conversations through the stateful agent: the transcript stays well formed across runs",
    {
      scenario: Scenario,
      prompts: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 3 }))
    },
    ({ scenario, prompts }) =>
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
        yield* agent.subscribe((event) =>
          Effect.gen(function*() {
            events.push(event)
            for (const injection of scenario.injections) {
              if (injection.at !== events.length - 1) continue
              if (injection.kind === "abort") yield* h.abortRun
              else if (injection.kind === "steer") yield* agent.steer(`steer @${injection.at}`)
              else yield* agent.followUp(`follow-up @${injection.at}`)
            }
          })
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
        assert.isFalse(state.isStreaming)
        assert.strictEqual(state.pendingToolCalls.size, 0)
      }),
    { timeout: 60_000, arbitrary: { runs: 100 } }
  )
})
