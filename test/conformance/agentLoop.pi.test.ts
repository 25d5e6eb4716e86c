/**
 * Conformance with pi's agent core 0.73.1 (`@mariozechner/pi-agent-core`).
 *
 * The same scripted conversations run through pi's agent loop (with a `streamFn` that replays exactly the
 * events our scripted model streams, into pi-ai's assistant message event stream) and through ours. For the
 * **[pi]** behaviours of `docs/agent-loop.md` the normalized event sequences, the messages and the
 * model requests must be equal. The deliberate differences (**[pi later]** / **[ours]**) are listed as
 * executable tests that assert what pi does and what we do instead.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  Agent as PiAgent,
  agentLoop as piAgentLoop,
  agentLoopContinue as piAgentLoopContinue,
  runAgentLoop as piRunAgentLoop,
  runAgentLoopContinue as piRunAgentLoopContinue
} from "@mariozechner/pi-agent-core"
import { Type } from "@mariozechner/pi-ai"
import { Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { agentLoop, type AgentLoopConfig, defaultConvertToLlm, runAgentLoopContinue } from "../../src/AgentLoop.ts"
import type { AgentMessage, AssistantMessage, Message } from "../../src/Message.ts"
import { emptyUsage } from "../../src/Message.ts"
import { Model, type ModelRequest, type ModelShape } from "../../src/Model.ts"
import { PromiseAgent } from "../../src/PromiseAgent.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import { callTools, say } from "../../src/ScriptedModel.ts"
import { type RegisteredTool, ToolRegistry } from "../../src/ToolRegistry.ts"
import {
  addTool,
  assertBalanced,
  assertOneAgentEnd,
  assertWellFormed,
  call,
  counted,
  customTool,
  labelOf,
  makeGate,
  makeRecorder,
  note,
  type PiCall,
  piModel,
  piScripted,
  piTools,
  provideRun,
  runLoop,
  standardTools,
  textOf,
  toolResults,
  user,
  within,
  withoutTimestamps
} from "../support/loop.ts"

const SYSTEM = "You are a test."

// ---------------------------------------------------------------------------------------------------------
// Running one scenario through both loops
// ---------------------------------------------------------------------------------------------------------

interface Queues {
  readonly steering: Array<AgentMessage>
  readonly followUps: Array<AgentMessage>
  /** Per-run scratch state for `inject`. */
  readonly marks: Set<string>
}

interface Scenario {
  readonly script: ReadonlyArray<ScriptedModel.Step>
  readonly prompts?: ReadonlyArray<AgentMessage>
  readonly context?: ReadonlyArray<AgentMessage>
  readonly steeringMode?: "one-at-a-time" | "all"
  readonly toolExecution?: "parallel" | "sequential"
  /** Stop after this turn (1-based). */
  readonly stopAfterTurn?: number
  readonly initialSteering?: ReadonlyArray<AgentMessage>
  readonly initialFollowUps?: ReadonlyArray<AgentMessage>
  /** Called synchronously for every event with its label (to queue messages at a precise point). */
  readonly inject?: (label: string, queues: Queues, index: number) => void
}

interface Side {
  readonly events: ReadonlyArray<{ readonly type: string }>
  readonly messages: ReadonlyArray<AgentMessage>
  /** What the model was given on each call. */
  readonly requests: ReadonlyArray<ReadonlyArray<Message>>
}

const queuesOf = (s: Scenario): Queues => ({
  steering: [...(s.initialSteering ?? [])],
  followUps: [...(s.initialFollowUps ?? [])],
  marks: new Set()
})

const drainOf = (queue: Array<AgentMessage>, mode: "one-at-a-time" | "all" = "one-at-a-time") =>
  mode === "all" ? queue.splice(0) : queue.splice(0, 1)

const runPi = async (s: Scenario): Promise<Side> => {
  const { streamFn, calls } = piScripted(s.script)
  const queues = queuesOf(s)
  const events: Array<{ type: string }> = []
  let turns = 0
  const messages = await piRunAgentLoop(
    [...(s.prompts ?? [user("hi")])] as Array<any>,
    { systemPrompt: SYSTEM, messages: [...(s.context ?? [])] as Array<any>, tools: piTools() },
    {
      model: piModel,
      convertToLlm: (ms: Array<any>) => defaultConvertToLlm(ms) as Array<any>,
      toolExecution: s.toolExecution ?? "parallel",
      getSteeringMessages: async () => drainOf(queues.steering, s.steeringMode) as Array<any>,
      getFollowUpMessages: async () => drainOf(queues.followUps, "all") as Array<any>,
      ...(s.stopAfterTurn !== undefined ? { shouldStopAfterTurn: () => ++turns === s.stopAfterTurn } : {})
    } as any,
    async (event: any) => {
      events.push(event)
      s.inject?.(labelOf(event), queues, events.length - 1)
    },
    undefined,
    streamFn as any
  )
  return { events, messages: messages as Array<AgentMessage>, requests: calls.map((c) => c.messages) }
}

const runOurs = (s: Scenario) =>
  Effect.gen(function*() {
    const queues = queuesOf(s)
    let turns = 0
    const config: AgentLoopConfig = {
      toolExecution: s.toolExecution ?? "parallel",
      getSteeringMessages: Effect.sync(() => drainOf(queues.steering, s.steeringMode)),
      getFollowUpMessages: Effect.sync(() => drainOf(queues.followUps, "all")),
      ...(s.stopAfterTurn !== undefined
        ? { shouldStopAfterTurn: () => Effect.sync(() => ++turns === s.stopAfterTurn) }
        : {})
    }
    const { events, messages, requests } = yield* runLoop({
      script: s.script,
      prompts: s.prompts ?? [user("hi")],
      context: { systemPrompt: SYSTEM, messages: s.context ?? [] },
      config,
      recorder: makeRecorder((event, index) => s.inject?.(labelOf(event), queues, index))
    })
    return { events, messages, requests: requests.map((r) => r.messages) } satisfies Side
  })

/** Runs both and checks they agree on events, messages and model requests. */
const conforms = (s: Scenario) =>
  Effect.gen(function*() {
    const pi = yield* Effect.promise(() => runPi(s))
    const ours = yield* runOurs(s)
    assert.deepStrictEqual(ours.events.map((e) => labelOf(e as any)), pi.events.map((e) => labelOf(e as any)), "events")
    assert.deepStrictEqual(withoutTimestamps(ours.messages), withoutTimestamps(pi.messages), "messages")
    assert.deepStrictEqual(withoutTimestamps(ours.requests), withoutTimestamps(pi.requests), "model requests")
    // turn_end and agent_end payloads agree too
    const payloads = (events: ReadonlyArray<any>) =>
      withoutTimestamps(
        events.filter((e) => e.type === "turn_end" || e.type === "agent_end").map((e) =>
          e.type === "turn_end" ? [e.message, e.toolResults] : e.messages
        )
      )
    assert.deepStrictEqual(payloads(ours.events), payloads(pi.events), "turn_end / agent_end payloads")
    return { pi, ours }
  })

// ---------------------------------------------------------------------------------------------------------
// [pi] behaviours: identical
// ---------------------------------------------------------------------------------------------------------

describe("[pi] agent loop: same events, messages and model requests as pi", () => {
  it.effect("AL 2.1 a one-tool turn then a final answer", () =>
    conforms({ script: [callTools([call("c1", "add", { a: 1, b: 2 })], "Adding."), say("It is 3.")] }))

  it.effect("AL 2.5 multi-turn: parallel tools, an unknown tool, a failing tool", () =>
    Effect.gen(function*() {
      const { ours } = yield* conforms({
        script: [
          callTools([call("c1", "add", { a: 1, b: 2 }), call("c2", "echo", { text: "x" })]),
          callTools([call("c3", "nope", {}), call("c4", "fail", { text: "y" })], "Again."),
          say("done")
        ]
      })
      assert.strictEqual(toolResults(ours.messages).length, 4)
    }))

  it.effect("AL 2.5 multi-turn, sequential tool execution", () =>
    conforms({
      toolExecution: "sequential",
      script: [
        callTools([call("c1", "add", { a: 1, b: 2 }), call("c2", "echo", { text: "x" })]),
        callTools([call("c3", "fail", { text: "y" })]),
        say("done")
      ]
    }))

  it.effect("AL 2.9 `toolUse` without tool calls ends the run", () =>
    conforms({ script: [say("I would call a tool", { stopReason: "toolUse" }), say("never")] }))

  it.effect("AL 2.6 shouldStopAfterTurn ends the run after that turn", () =>
    conforms({
      stopAfterTurn: 1,
      initialFollowUps: [user("never read")],
      script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("never")]
    }))

  it.effect("AL 2.6 steering queued during the batch arrives after the batch and its turn_end, one per turn", () =>
    conforms({
      script: [callTools([call("c1", "add", { a: 1, b: 2 }), call("c2", "echo", { text: "x" })]), say("r1"), say("r2")],
      inject: (label, q) => {
        if (label === "tool_execution_start:c1") q.steering.push(user("S1", 1), user("S2", 2))
      }
    }))

  it.effect("AL 4.4 steering in `all` mode arrives together", () =>
    conforms({
      steeringMode: "all",
      script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("r1"), say("r2")],
      inject: (label, q) => {
        if (label === "tool_execution_end:c1") q.steering.push(user("S1", 1), user("S2", 2))
      }
    }))

  it.effect("AL 2.2 the initial steering poll", () =>
    conforms({ initialSteering: [user("typed while waiting", 1)], script: [say("ok")] }))

  it.effect("AL 2.7 follow-ups only when the agent would otherwise stop", () =>
    conforms({
      initialFollowUps: [user("F1", 1)],
      script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("3"), say("after F1"), say("after F2")],
      inject: (label, q) => {
        // queued while a tool runs: still waits until the agent would stop
        if (label === "tool_execution_start:c1" && !q.marks.has("F2")) {
          q.marks.add("F2")
          q.followUps.push(user("F2", 2))
        }
      }
    }))

  it.effect("AL 3.2 running out of script (a provider failure before any event) ends the run the same way", () =>
    conforms({ script: [callTools([call("c1", "add", { a: 1, b: 2 })])] }))

  it.effect("AL 2.8 a terminating batch ends the run", () =>
    conforms({ script: [callTools([call("s1", "stop", { text: "bye" })]), say("never")] }))

  it.effect("AL 2.8 a terminating batch followed by steering starts a new turn", () =>
    conforms({
      script: [callTools([call("s1", "stop", { text: "bye" })]), say("steered")],
      inject: (label, q) => {
        if (label === "tool_execution_end:s1") q.steering.push(user("one more", 1))
      }
    }))

  it.effect("AL 3.2 a model `error` event (no tool calls) ends the run with the error message", () =>
    conforms({ script: [{ fail: "overloaded", as: "event", content: [{ type: "text", text: "so" }] }, say("never")] }))

  it.effect("AL 1.2 application messages are filtered by the default convertToLlm", () =>
    conforms({
      context: [note("earlier note"), user("earlier")],
      prompts: [note("a notification"), user("question")],
      script: [say("ok")]
    }))

  it.effect("AL 1.3 the stream forms agree (pi's agentLoop EventStream and our agentLoop Stream)", () =>
    Effect.gen(function*() {
      const script = [callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")]
      const { streamFn } = piScripted(script)
      const piEvents = yield* Effect.promise(async () => {
        const stream = piAgentLoop(
          [user("hi")] as Array<any>,
          { systemPrompt: SYSTEM, messages: [], tools: piTools() },
          { model: piModel, convertToLlm: (ms: Array<any>) => ms } as any,
          undefined,
          streamFn as any
        )
        const events: Array<any> = []
        for await (const event of stream) events.push(event)
        return { events, result: await stream.result() }
      })
      const model = yield* ScriptedModel.make(script)
      const ours = yield* provideRun(
        Stream.runCollect(agentLoop([user("hi")], { systemPrompt: SYSTEM, messages: [] })),
        model,
        standardTools,
        makeRecorder().sink
      )
      assert.deepStrictEqual(ours.map(labelOf), piEvents.events.map(labelOf))
      assert.deepStrictEqual(
        withoutTimestamps(piEvents.result),
        withoutTimestamps((ours.at(-1) as { messages: unknown }).messages)
      )
    }))

  it.effect("AL 2.11 continue refuses an empty context and an assistant tail with pi's texts (typed for us)", () =>
    Effect.gen(function*() {
      const assistant: AssistantMessage = {
        role: "assistant",
        content: [],
        api: "x",
        provider: "x",
        model: "x",
        usage: emptyUsage,
        stopReason: "stop",
        timestamp: 0
      }
      for (const messages of [[], [user("q"), assistant]] as Array<Array<AgentMessage>>) {
        let piError: unknown
        try {
          piAgentLoopContinue(
            { systemPrompt: SYSTEM, messages: messages as Array<any> },
            { model: piModel, convertToLlm: (ms: Array<any>) => ms } as any
          )
        } catch (e) {
          piError = e
        }
        assert.instanceOf(piError, Error)
        const model = yield* ScriptedModel.make([say("never")])
        const ours = yield* provideRun(
          runAgentLoopContinue({ systemPrompt: SYSTEM, messages }),
          model,
          [],
          makeRecorder().sink
        ).pipe(Effect.flip)
        assert.strictEqual(ours._tag, "CannotContinue")
        assert.strictEqual(ours.message, (piError as Error).message)
      }
    }))
})

// ---------------------------------------------------------------------------------------------------------
// [pi] behaviours on random conversations
// ---------------------------------------------------------------------------------------------------------

const PiCallKind = Schema.Literals(["add", "echo", "fail", "unknown", "stop"])
const PiStep = Schema.Struct({
  kind: Schema.Literals(["say", "tools", "tools", "toolUseNoCalls", "errorEvent"]),
  calls: Schema.Array(PiCallKind).check(Schema.isMaxLength(3))
})
const PiScenario = Schema.Struct({
  steps: Schema.Array(PiStep).check(Schema.isMaxLength(5)),
  toolExecution: Schema.Literals(["parallel", "sequential"]),
  steeringMode: Schema.Literals(["one-at-a-time", "all"]),
  stopAfterTurn: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4 })),
  initialSteer: Schema.Boolean,
  initialFollowUp: Schema.Boolean,
  injections: Schema.Array(Schema.Struct({
    at: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 40 })),
    kind: Schema.Literals(["steer", "followUp"])
  })).check(Schema.isMaxLength(4))
})

const piScenario = (p: typeof PiScenario.Type): Scenario => ({
  script: [
    ...p.steps.map((step, turn): ScriptedModel.Step => {
      const calls = step.calls.map((kind, i) => {
        const id = `t${turn}_${i}`
        switch (kind) {
          case "add":
            return call(id, "add", { a: turn, b: i })
          case "echo":
            return call(id, "echo", { text: id })
          case "fail":
            return call(id, "fail", { text: id })
          case "unknown":
            return call(id, "missing", {})
          case "stop":
            return call(id, "stop", { text: id })
        }
      })
      switch (step.kind) {
        case "say":
          return say(`answer ${turn}`)
        case "tools":
          return callTools(calls, calls.length === 0 ? `no calls ${turn}` : undefined)
        case "toolUseNoCalls":
          return say(`tool use ${turn}`, { stopReason: "toolUse" })
        case "errorEvent":
          return { fail: `error ${turn}`, as: "event", content: [{ type: "text", text: `partial ${turn}` }] }
      }
    }),
    say("final a"),
    say("final b")
  ],
  toolExecution: p.toolExecution,
  steeringMode: p.steeringMode,
  ...(p.stopAfterTurn > 0 ? { stopAfterTurn: p.stopAfterTurn } : {}),
  initialSteering: p.initialSteer ? [user("initial steer", 1)] : [],
  initialFollowUps: p.initialFollowUp ? [user("initial follow-up", 2)] : [],
  inject: (_label, q, index) => {
    p.injections.forEach((injection, k) => {
      if (injection.at !== index) return
      const message = user(`${injection.kind} ${k} @${index}`, 100 + k)
      if (injection.kind === "steer") q.steering.push(message)
      else q.followUps.push(message)
    })
  }
})

describe("[pi] AL 2 agent loop on random conversations", () => {
  it.effect.prop(
    "random tool turns, steering and follow-ups at random points, stops: same events, messages and requests as pi",
    { scenario: PiScenario },
    ({ scenario }) => Effect.asVoid(conforms(piScenario(scenario))),
    { timeout: 60_000, arbitrary: { runs: 150 } }
  )
})

// ---------------------------------------------------------------------------------------------------------
// Deliberate differences: [pi later] and [ours]
// ---------------------------------------------------------------------------------------------------------

describe("[pi later] / [ours] agent loop: what pi 0.73.1 does, and what we do instead", () => {
  it.effect("[pi later] AL 2.10 a `length` stop: pi runs the possibly-truncated tool calls; we do not, each gets an error result", () =>
    Effect.gen(function*() {
      const script = [
        { ...callTools([call("c1", "add", { a: 1, b: 2 })]), stopReason: "length" as const },
        say("retry")
      ]
      const pi = yield* Effect.promise(() => runPi({ script }))
      const [piResult] = toolResults(pi.messages)
      assert.isFalse(piResult!.isError, "pi executed the call")
      assert.strictEqual(textOf(piResult), "3")
      const add = counted(addTool)
      const ours = yield* runLoop({ script, tools: [add.tool] })
      assert.strictEqual(add.count(), 0, "we do not execute it")
      const [result] = toolResults(ours.messages)
      assert.isTrue(result!.isError)
      assert.match(textOf(result), /token limit/)
      // both go on to the next model call
      assert.strictEqual(pi.requests.length, 2)
      assert.strictEqual(ours.requests.length, 2)
    }))

  it.effect("[ours] AL 3.3 an error message holding tool calls: pi leaves them without results; we give each one", () =>
    Effect.gen(function*() {
      const script = [
        { fail: "broke", as: "event" as const, content: [call("c1", "add", { a: 1, b: 2 })] },
        say("never")
      ]
      const pi = yield* Effect.promise(() => runPi({ script }))
      assert.deepStrictEqual(pi.messages.map((m) => m.role), ["user", "assistant"])
      assert.throws(() => assertWellFormed(pi.messages), /c1/, "pi's transcript has an orphaned tool call")
      assert.deepStrictEqual(pi.events.map((e) => labelOf(e as any)).slice(-2), [
        "turn_end:assistant:error[]",
        "agent_end"
      ])
      const ours = yield* runLoop({ script })
      assertWellFormed(ours.messages)
      assert.deepStrictEqual(ours.messages.map((m) => m.role), ["user", "assistant", "toolResult"])
      assert.deepStrictEqual(ours.events.map(labelOf).slice(-2), ["turn_end:assistant:error[c1]", "agent_end"])
      assert.strictEqual(ours.requests.length, 1)
    }))

  it.effect("[ours] AL 3.3 abort while streaming a tool call: pi leaves it without a result; we give it a \"not started\" result", () =>
    Effect.gen(function*() {
      // a stream that paces its events (1ms apart: real time for pi, virtual time for us)
      const steps = (_delay: "1 millis"): Array<ScriptedModel.Step> => [
        { ...callTools([call("c1", "add", { a: 1, b: 2 }), call("c2", "add", { a: 3, b: 4 })]), delay: "1 millis" },
        say("never")
      ]
      // pi: a provider stream that paces its events (real time), aborted at the first toolcall_end
      const pi = yield* Effect.promise(async () => {
        const { streamFn, calls } = piScripted(steps("1 millis"))
        const controller = new AbortController()
        const events: Array<any> = []
        const messages = await piRunAgentLoop(
          [user("hi")] as Array<any>,
          { systemPrompt: SYSTEM, messages: [], tools: piTools() },
          { model: piModel, convertToLlm: (ms: Array<any>) => ms } as any,
          async (event: any) => {
            events.push(event)
            if (event.type === "message_update" && event.assistantMessageEvent.type === "toolcall_end") {
              controller.abort()
            }
          },
          controller.signal,
          streamFn as any
        )
        return { events, messages: messages as Array<AgentMessage>, calls }
      })
      const piAssistant = pi.messages[1] as AssistantMessage
      assert.strictEqual(piAssistant.stopReason, "aborted")
      assert.strictEqual(piAssistant.content.filter((b) => b.type === "toolCall").length, 1)
      assert.throws(() => assertWellFormed(pi.messages), /c1/, "pi's transcript has an orphaned tool call")
      // ours: the same point, the stream paced in virtual time
      const controller = new AbortController()
      const fiber = yield* runLoop({
        script: steps("1 millis"),
        config: { signal: controller.signal },
        recorder: makeRecorder((event) => {
          if (event.type === "message_update" && event.assistantMessageEvent.type === "toolcall_end") controller.abort()
        })
      }).pipe(Effect.forkChild)
      for (let i = 0; i < 100 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust("1 millis")
      const ours = yield* within(Fiber.join(fiber), "our run ends")
      const assistant = ours.messages[1] as AssistantMessage
      assert.strictEqual(assistant.stopReason, "aborted")
      assert.strictEqual(assistant.errorMessage, piAssistant.errorMessage, "same error text as pi's providers")
      assertWellFormed(ours.messages)
      assert.match(textOf(toolResults(ours.messages)[0]), /not executed/)
      assert.strictEqual(ours.requests.length, 1)
      assert.strictEqual(pi.calls.length, 1)
    }))

  it.effect("[ours] AL 3.4 abort during a batch: pi calls the model again after the abort; we do not", () =>
    Effect.gen(function*() {
      const script = [callTools([call("g", "gate")]), say("never")]
      // pi: a tool that honours the signal
      const pi = yield* Effect.promise(async () => {
        const { streamFn, calls } = piScripted(script)
        const controller = new AbortController()
        const gate = {
          name: "gate",
          label: "gate",
          description: "waits",
          parameters: Type.Object({}),
          execute: (_id: string, _args: unknown, signal?: AbortSignal) =>
            new Promise((_resolve, reject) => {
              signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true })
              setTimeout(() => controller.abort(), 1)
            })
        }
        const messages = await piRunAgentLoop(
          [user("hi")] as Array<any>,
          { systemPrompt: SYSTEM, messages: [], tools: [gate] as Array<any> },
          { model: piModel, convertToLlm: (ms: Array<any>) => ms } as any,
          async () => {},
          controller.signal,
          streamFn as any
        )
        return { messages: messages as Array<AgentMessage>, calls: calls as ReadonlyArray<PiCall> }
      })
      assert.strictEqual(pi.calls.length, 2, "pi asked the model again")
      assert.isTrue(pi.calls[1]!.abortedAtCall, "with an already aborted signal")
      assert.strictEqual((pi.messages.at(-1) as AssistantMessage).stopReason, "aborted")
      // ours
      const controller = new AbortController()
      const gate = makeGate()
      const fiber = yield* runLoop({ script, tools: [gate.tool], config: { signal: controller.signal } }).pipe(
        Effect.forkChild
      )
      yield* within(Deferred.await(gate.started), "the tool runs")
      controller.abort()
      const ours = yield* within(Fiber.join(fiber), "our run ends")
      assert.strictEqual(ours.requests.length, 1, "we do not call the model after an abort")
      assert.deepStrictEqual(ours.messages.map((m) => m.role), ["user", "assistant", "toolResult"])
      assertWellFormed(ours.messages)
    }))

  it.effect("[ours] AL 3.4 abort with a tool that ignores cancellation: pi's run hangs; ours abandons it after a grace period", () =>
    Effect.gen(function*() {
      const script = [callTools([call("g", "stubborn")]), say("never")]
      const piSettled = yield* Effect.promise(async () => {
        const { streamFn } = piScripted(script)
        const controller = new AbortController()
        const stubborn = {
          name: "stubborn",
          label: "stubborn",
          description: "never stops",
          parameters: Type.Object({}),
          execute: () => {
            setTimeout(() => controller.abort(), 1)
            return new Promise(() => {})
          }
        }
        const run = piRunAgentLoop(
          [user("hi")] as Array<any>,
          { systemPrompt: SYSTEM, messages: [], tools: [stubborn] as Array<any> },
          { model: piModel, convertToLlm: (ms: Array<any>) => ms } as any,
          async () => {},
          controller.signal,
          streamFn as any
        )
        return Promise.race([
          run.then(() => true),
          new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 200))
        ])
      })
      assert.isFalse(piSettled, "pi is still waiting for the tool 200ms after the abort")
      // ours
      const controller = new AbortController()
      const started = Deferred.makeUnsafe<void>()
      const stubborn = customTool(
        "stubborn",
        () => Deferred.succeed(started, undefined).pipe(Effect.andThen(Effect.uninterruptible(Effect.never)))
      )
      const fiber = yield* runLoop({
        script,
        tools: [stubborn],
        config: { signal: controller.signal, abandonAfter: "1 second" }
      }).pipe(Effect.forkChild)
      yield* within(Deferred.await(started), "the tool runs")
      controller.abort()
      yield* TestClock.adjust("1 second")
      const ours = yield* within(Fiber.join(fiber), "our run ends")
      assertWellFormed(ours.messages)
      assert.match(textOf(toolResults(ours.messages)[0]), /abandoned/)
    }))

  it.effect("[ours] AL 3.2 a throwing convertToLlm or transformContext: pi's run rejects without agent_end; ours ends with an error message", () =>
    Effect.gen(function*() {
      for (const hook of ["convertToLlm", "transformContext"] as const) {
        const { streamFn } = piScripted([say("never")])
        const events: Array<any> = []
        const failing = async () => {
          throw new Error(`${hook} broke`)
        }
        const rejected = yield* Effect.promise(() =>
          piRunAgentLoop(
            [user("hi")] as Array<any>,
            { systemPrompt: SYSTEM, messages: [], tools: [] },
            {
              model: piModel,
              convertToLlm: hook === "convertToLlm" ? failing : (ms: Array<any>) => ms,
              ...(hook === "transformContext" ? { transformContext: failing } : {})
            } as any,
            async (e: any) => void events.push(e),
            undefined,
            streamFn as any
          ).then(() => undefined, (e: Error) => e.message)
        )
        assert.strictEqual(rejected, `${hook} broke`, `pi: ${hook}`)
        assert.isFalse(events.some((e) => e.type === "agent_end"), `pi emits no agent_end (${hook})`)
        const ours = yield* runLoop({
          script: [say("never")],
          config: hook === "convertToLlm"
            ? { convertToLlm: () => Effect.fail(new Error(`${hook} broke`)) }
            : { transformContext: () => Effect.fail(new Error(`${hook} broke`)) }
        })
        assertOneAgentEnd(ours.events)
        assertBalanced(ours.events)
        assert.strictEqual((ours.messages.at(-1) as AssistantMessage).errorMessage, `${hook} broke`)
      }
    }))

  it.effect("[ours] AL 3.4 stopping the event stream early: pi's run goes on (tools run, the model is called again); ours is interrupted", () =>
    Effect.gen(function*() {
      const script = [callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")]
      const { streamFn, calls } = piScripted(script)
      const piResult = yield* Effect.promise(async () => {
        const stream = piAgentLoop(
          [user("hi")] as Array<any>,
          { systemPrompt: SYSTEM, messages: [], tools: piTools() },
          { model: piModel, convertToLlm: (ms: Array<any>) => ms } as any,
          undefined,
          streamFn as any
        )
        for await (const event of stream) if (event.type === "tool_execution_start") break
        return stream.result()
      })
      assert.strictEqual(piResult.length, 4, "pi finished the whole conversation anyway")
      assert.strictEqual(calls.length, 2)
      const gate = makeGate("add")
      const model = yield* ScriptedModel.make(script)
      yield* provideRun(
        agentLoop([user("hi")], { systemPrompt: SYSTEM, messages: [] }).pipe(
          Stream.takeUntil((e) => e.type === "tool_execution_start"),
          Stream.runDrain
        ),
        model,
        [gate.tool],
        makeRecorder().sink
      )
      yield* within(Deferred.await(gate.interrupted), "our tool was interrupted")
      assert.strictEqual((yield* model.requests).length, 1)
    }))

  it.effect("[ours] AL 3.6 continuing never mutates the caller's context; pi's continue pushes into it (and fails on a frozen one)", () =>
    Effect.gen(function*() {
      const piMessages: Array<any> = [user("q")]
      const { streamFn } = piScripted([say("a"), say("b")])
      yield* Effect.promise(() =>
        piRunAgentLoopContinue(
          { systemPrompt: SYSTEM, messages: piMessages, tools: [] },
          { model: piModel, convertToLlm: (ms: Array<any>) => ms } as any,
          async () => {},
          undefined,
          streamFn as any
        )
      )
      assert.strictEqual(piMessages.length, 2, "pi appended its response to the caller's array")
      const frozen = Object.freeze([user("q")]) as unknown as Array<any>
      const piFrozen = yield* Effect.promise(() =>
        piRunAgentLoopContinue(
          { systemPrompt: SYSTEM, messages: frozen, tools: [] },
          { model: piModel, convertToLlm: (ms: Array<any>) => ms } as any,
          async () => {},
          undefined,
          streamFn as any
        ).then(() => "ok", (e: Error) => e.constructor.name)
      )
      assert.strictEqual(piFrozen, "TypeError")
      const ourMessages: Array<AgentMessage> = [user("q")]
      const model = yield* ScriptedModel.make([say("a")])
      const added = yield* provideRun(
        runAgentLoopContinue({ systemPrompt: SYSTEM, messages: ourMessages }),
        model,
        [],
        makeRecorder().sink
      )
      assert.strictEqual(ourMessages.length, 1)
      assert.strictEqual(added.length, 1)
    }))
})

// ---------------------------------------------------------------------------------------------------------
// The stateful agents: pi's Agent vs our PromiseAgent
// ---------------------------------------------------------------------------------------------------------

/** A tool named "gate" for either side, held until `open()`. */
const promiseGate = () => {
  let open!: () => void
  let started!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  const startedP = new Promise<void>((resolve) => (started = resolve))
  const run = async () => {
    started()
    await opened
    return { content: [{ type: "text" as const, text: "opened" }], details: {} }
  }
  return {
    open: () => open(),
    started: startedP,
    pi: { name: "gate", label: "gate", description: "waits", parameters: Type.Object({}), execute: run },
    ours: customTool("gate", () => Effect.promise(run))
  }
}

interface AgentDriver {
  prompt(text: string): Promise<void>
  continue(): Promise<void>
  steer(message: AgentMessage): Promise<void>
  followUp(message: AgentMessage): Promise<void>
  reset(): Promise<void>
  subscribe(listener: (event: any) => void | Promise<void>): Promise<void>
  messages(): Promise<ReadonlyArray<AgentMessage>>
  /** The user texts the model saw, per call. */
  requests(): Promise<Array<Array<string>>>
  dispose(): Promise<void>
}

interface AgentSetup {
  readonly script: ReadonlyArray<ScriptedModel.Step>
  readonly messages?: ReadonlyArray<AgentMessage>
  readonly steeringMode?: "one-at-a-time" | "all"
  readonly followUpMode?: "one-at-a-time" | "all"
}

const userTextsOf = (messages: ReadonlyArray<Message>) =>
  messages.filter((m) => m.role === "user").map((m) => textOf(m))

const piDriver = (setup: AgentSetup, gate: ReturnType<typeof promiseGate>): AgentDriver => {
  const { streamFn, calls } = piScripted(setup.script)
  const agent = new PiAgent({
    initialState: {
      systemPrompt: SYSTEM,
      model: piModel,
      tools: [...piTools(), gate.pi] as Array<any>,
      messages: [...(setup.messages ?? [])] as Array<any>
    },
    streamFn: streamFn as any,
    ...(setup.steeringMode ? { steeringMode: setup.steeringMode } : {}),
    ...(setup.followUpMode ? { followUpMode: setup.followUpMode } : {})
  })
  return {
    prompt: (text) => agent.prompt(text),
    continue: () => agent.continue(),
    steer: async (m) => agent.steer(m as any),
    followUp: async (m) => agent.followUp(m as any),
    reset: async () => agent.reset(),
    subscribe: async (listener) => void agent.subscribe(listener),
    messages: async () => agent.state.messages as Array<AgentMessage>,
    requests: async () => calls.map((c) => userTextsOf(c.messages)),
    dispose: async () => {}
  }
}

const ourDriver = (setup: AgentSetup, gate: ReturnType<typeof promiseGate>): AgentDriver => {
  const model: ModelShape & { requests: Effect.Effect<ReadonlyArray<ModelRequest>> } = Effect.runSync(
    ScriptedModel.make(setup.script)
  )
  const tools: ReadonlyArray<RegisteredTool> = [...standardTools, gate.ours]
  const agent = new PromiseAgent({
    layer: Layer.merge(Layer.succeed(Model, model), ToolRegistry.fromEntries(tools)),
    systemPrompt: SYSTEM,
    messages: setup.messages ?? [],
    ...(setup.steeringMode ? { steeringMode: setup.steeringMode } : {}),
    ...(setup.followUpMode ? { followUpMode: setup.followUpMode } : {})
  })
  return {
    prompt: (text) => agent.prompt(text),
    continue: () => agent.continue(),
    steer: (m) => agent.steer(m),
    followUp: (m) => agent.followUp(m),
    reset: () => agent.reset(),
    subscribe: async (listener) => void (await agent.subscribe(listener)),
    messages: async () => (await agent.state()).messages,
    requests: async () => (await Effect.runPromise(model.requests)).map((r) => userTextsOf(r.messages)),
    dispose: () => agent.dispose()
  }
}

/** Runs the same interaction with pi's Agent and ours; returns what each did (errors as their messages). */
const bothAgents = async <A>(
  setup: AgentSetup,
  interaction: (agent: AgentDriver, gate: ReturnType<typeof promiseGate>) => Promise<A>
) => {
  const results = []
  for (const make of [piDriver, ourDriver]) {
    const gate = promiseGate()
    const agent = make(setup, gate)
    try {
      const value = await interaction(agent, gate)
      results.push({
        value,
        messages: withoutTimestamps(await agent.messages()),
        requests: await agent.requests(),
        raw: await agent.messages()
      })
    } finally {
      await agent.dispose()
    }
  }
  return { pi: results[0]!, ours: results[1]! }
}

const errorText = (p: Promise<unknown>) => p.then(() => "resolved", (e: Error) => e.message)

const assistantTail: ReadonlyArray<AgentMessage> = [
  user("q", 1),
  {
    role: "assistant",
    content: [{ type: "text", text: "a" }],
    api: "x",
    provider: "x",
    model: "x",
    usage: emptyUsage,
    stopReason: "stop",
    timestamp: 2
  }
]

describe("[pi] stateful agent: pi's Agent and our PromiseAgent agree", () => {
  const agree = (r: Awaited<ReturnType<typeof bothAgents<unknown>>>) => {
    assert.deepStrictEqual(r.ours.value, r.pi.value, "results")
    assert.deepStrictEqual(r.ours.requests, r.pi.requests, "what the model saw")
    assert.deepStrictEqual(r.ours.messages, r.pi.messages, "transcripts")
  }

  for (const mode of ["one-at-a-time", "all"] as const) {
    it(`steering during a tool call (${mode})`, async () => {
      agree(
        await bothAgents({
          script: [callTools([call("g", "gate")]), say("r1"), say("r2"), say("r3")],
          steeringMode: mode
        }, async (agent, gate) => {
          const run = agent.prompt("go")
          await gate.started
          await agent.steer(user("A", 10))
          await agent.steer(user("B", 11))
          gate.open()
          await run
        })
      )
    })

    it(`follow-ups (${mode})`, async () => {
      agree(
        await bothAgents({ script: [say("r1"), say("r2"), say("r3")], followUpMode: mode }, async (agent) => {
          await agent.followUp(user("F1", 10))
          await agent.followUp(user("F2", 11))
          await agent.prompt("go")
        })
      )
    })
  }

  it("AL 2.2 initial steering joins the first turn", async () => {
    agree(
      await bothAgents({ script: [say("r1")] }, async (agent) => {
        await agent.steer(user("S", 10))
        await agent.prompt("go")
      })
    )
  })

  it("AL 4.3 continue from an assistant tail drains one steering message, then the rest as steering, then follow-ups", async () => {
    agree(
      await bothAgents({ script: [say("r1"), say("r2"), say("r3")], messages: assistantTail }, async (agent) => {
        await agent.steer(user("A", 10))
        await agent.steer(user("B", 11))
        await agent.followUp(user("F", 12))
        await agent.continue()
      })
    )
  })

  it("AL 4.3 continue from an assistant tail runs the follow-ups when there is no steering", async () => {
    agree(
      await bothAgents(
        { script: [say("r1"), say("r2")], messages: assistantTail, followUpMode: "all" },
        async (agent) => {
          await agent.followUp(user("F1", 10))
          await agent.followUp(user("F2", 11))
          await agent.continue()
        }
      )
    )
  })

  it("AL 4.3 continue refusals and continue from a user tail", async () => {
    agree(
      await bothAgents({ script: [say("r1")], messages: assistantTail }, async (agent) => {
        const fromAssistant = await errorText(agent.continue())
        await agent.reset()
        const fromNothing = await errorText(agent.continue())
        return { fromAssistant, fromNothing }
      })
    )
    agree(
      await bothAgents({ script: [say("r1")], messages: [user("q", 1)] }, async (agent) => {
        await agent.continue()
      })
    )
  })

  it("AL 4.2 prompt and continue during a run are refused with the same texts", async () => {
    agree(
      await bothAgents({ script: [callTools([call("g", "gate")]), say("done")] }, async (agent, gate) => {
        const run = agent.prompt("go")
        await gate.started
        const prompt = await errorText(agent.prompt("again"))
        const cont = await errorText(agent.continue())
        gate.open()
        await run
        return { prompt, cont }
      })
    )
  })

  it("AL 4.6 prompt settles only after agent_end listeners finish", async () => {
    agree(
      await bothAgents({ script: [say("r1")] }, async (agent) => {
        const order: Array<string> = []
        await agent.subscribe(async (e) => {
          if (e.type === "agent_end") {
            await new Promise((resolve) => setTimeout(resolve, 5))
            order.push("listener done")
          }
        })
        await agent.prompt("go")
        order.push("prompt settled")
        return order
      })
    )
  })
})

describe("[ours] stateful agent: deliberate differences from pi's Agent", () => {
  it("AL 4.7 a listener throwing on the assistant's message_end: pi orphans the tool call; ours does not", async () => {
    const r = await bothAgents(
      { script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")] },
      async (agent) => {
        await agent.subscribe((e) => {
          if (e.type === "message_end" && e.message.role === "assistant" && e.message.stopReason === "toolUse") {
            throw new Error("listener broke")
          }
        })
        await agent.prompt("go").catch(() => undefined)
      }
    )
    assert.throws(() => assertWellFormed(r.pi.raw), /c1/, "pi's transcript has an orphaned tool call")
    assert.strictEqual((r.pi.raw.at(-1) as AssistantMessage).errorMessage, "listener broke")
    assertWellFormed(r.ours.raw)
    assert.deepStrictEqual(r.ours.raw.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"])
  })

  it("AL 4.5 reset during a run: pi clears the transcript mid-run; ours refuses", async () => {
    const r = await bothAgents({ script: [callTools([call("g", "gate")]), say("done")] }, async (agent, gate) => {
      const run = agent.prompt("go")
      await gate.started
      const reset = await errorText(agent.reset())
      gate.open()
      await run
      return reset
    })
    assert.strictEqual(r.pi.value, "resolved", "pi accepts the reset")
    assert.notDeepEqual(
      r.pi.raw.map((m) => m.role),
      ["user", "assistant", "toolResult", "assistant"],
      "pi lost the start of the run"
    )
    assert.match(r.ours.value, /Abort it or wait/)
    assert.deepStrictEqual(r.ours.raw.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"])
  })
})
