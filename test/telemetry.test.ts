/**
 * Spans and metrics of a run with an in-memory tracer, one test per rule of `docs/telemetry.md` (OT n.m).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Metric, Option, References, Stream, Tracer } from "effect"
import { TestClock } from "effect/testing"
import type { AgentLoopConfig } from "../src/AgentLoop.ts"
import * as Hooks from "../src/internal/telemetry.ts"
import { emptyUsage } from "../src/Message.ts"
import { callTools, say, toolCall } from "../src/ScriptedModel.ts"
import * as Telemetry from "../src/Telemetry.ts"
import type { RegisteredTool } from "../src/ToolRegistry.ts"
import { addTool, customTool, failTool, runLoop, skeleton, standardTools, user } from "./support/loop.ts"

// ---------------------------------------------------------------------------------------------------------
// A recording tracer
// ---------------------------------------------------------------------------------------------------------

interface Recorded {
  readonly span: Tracer.NativeSpan
  readonly opened: number
  closed: number | undefined
  ends: number
}

const makeRecorder = () => {
  const spans: Array<Recorded> = []
  let sequence = 0
  const tracer = Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      const recorded: Recorded = { span, opened: sequence++, closed: undefined, ends: 0 }
      const end = span.end.bind(span)
      span.end = (endTime, exit) => {
        recorded.ends++
        recorded.closed = sequence++
        end(endTime, exit)
      }
      spans.push(recorded)
      return span
    }
  })
  const named = (name: string) => spans.filter((r) => r.span.name === name)
  const one = (name: string) => {
    const found = named(name)
    assert.strictEqual(found.length, 1, `one span ${name}; spans: ${spans.map((r) => r.span.name).join(", ")}`)
    return found[0]!
  }
  const parentOf = (r: Recorded) => Option.getOrUndefined(r.span.parent) as Tracer.Span | undefined
  const childrenOf = (r: Recorded) => spans.filter((c) => parentOf(c) === r.span)
  const attr = (r: Recorded, key: string) => r.span.attributes.get(key)
  return { tracer, spans, named, one, parentOf, childrenOf, attr }
}

const traced = <A, E, R>(effect: Effect.Effect<A, E, R>, recorder: ReturnType<typeof makeRecorder>) =>
  Effect.withTracer(effect, recorder.tracer)

const exitOf = (r: Recorded) => {
  assert.strictEqual(r.span.status._tag, "Ended", `${r.span.name} ended`)
  return (r.span.status as { readonly exit: Exit.Exit<unknown, unknown> }).exit
}

/** A tool that signals `started`, waits for `open`, and answers `done`. */
const gated = (name: string) => {
  const started = Deferred.makeUnsafe<void>()
  const open = Deferred.makeUnsafe<void>()
  const tool = customTool(name, () =>
    Effect.gen(function*() {
      yield* Deferred.succeed(started, undefined)
      yield* Deferred.await(open)
      return { content: [{ type: "text" as const, text: "done" }], details: {} }
    }))
  return { started, open, tool }
}

const usage = (input: number, output: number, cacheRead = 0) => ({
  ...emptyUsage,
  input,
  output,
  cacheRead,
  totalTokens: input + output + cacheRead
})

// ---------------------------------------------------------------------------------------------------------
// OT 1
// ---------------------------------------------------------------------------------------------------------

describe("OT 1: where spans come from", () => {
  it.effect("OT 1.2: with only the native tracer nothing is made: no trace, and a tool sees no span of ours", () =>
    Effect.gen(function*() {
      assert.isUndefined(yield* Hooks.runTrace)
      assert.isUndefined(yield* Hooks.batchTrace)
      let seen: Option.Option<Tracer.Span> = Option.none()
      const probe = customTool("probe", () =>
        Effect.map(Effect.option(Effect.currentSpan), (span) => {
          seen = span
          return { content: [{ type: "text" as const, text: "ok" }], details: {} }
        }))
      yield* runLoop({ script: [callTools([toolCall("p1", "probe", {})]), say("done")], tools: [probe] })
      assert.isTrue(Option.isNone(seen), "no span is current inside the tool")
    }))

  it.effect("OT 1.2: a tracer with tracing turned off records nothing", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      yield* runLoop({ script: [callTools([toolCall("a1", "add", { a: 1, b: 2 })]), say("done")] }).pipe(
        Effect.provideService(References.TracerEnabled, false),
        (effect) => traced(effect, recorder)
      )
      assert.deepStrictEqual(recorder.spans.map((r) => r.span.name), [])
    }))

  it.effect("OT 1.1, 1.3: spans go under the caller's span, every span ends once, and the events do not change", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const script = [
        callTools([toolCall("a1", "add", { a: 1, b: 2 }), toolCall("f1", "fail", { text: "x" })]),
        say("done")
      ]
      const plain = yield* runLoop({ script })
      const withTracer = yield* runLoop({ script }).pipe(
        Effect.withSpan("caller"),
        (effect) => traced(effect, recorder)
      )
      assert.deepStrictEqual(skeleton(withTracer.events), skeleton(plain.events))
      const caller = recorder.one("caller")
      const run = recorder.one("invoke_agent effect-agent")
      assert.strictEqual(recorder.parentOf(run), caller.span)
      for (const r of recorder.spans) assert.strictEqual(r.ends, 1, `${r.span.name} ended once`)
    }))
})

// ---------------------------------------------------------------------------------------------------------
// OT 2
// ---------------------------------------------------------------------------------------------------------

describe("OT 2: the span tree", () => {
  it.effect("OT 2.1, 2.2, 2.3: run > turns > chat and tool spans; a parallel batch's tool spans overlap", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const a = gated("slowA")
      const b = gated("slowB")
      const fiber = yield* runLoop({
        script: [
          callTools([toolCall("c1", "slowA", {}), toolCall("c2", "slowB", {})]),
          say("done", { usage: usage(7, 3) })
        ],
        tools: [a.tool, b.tool],
        config: { toolExecution: "parallel" }
      }).pipe((effect) => traced(effect, recorder), Effect.forkChild)
      // Both tools are running before either may finish.
      yield* Deferred.await(a.started)
      yield* Deferred.await(b.started)
      yield* Deferred.succeed(a.open, undefined)
      yield* Deferred.succeed(b.open, undefined)
      yield* Fiber.join(fiber)

      const run = recorder.one("invoke_agent effect-agent")
      assert.strictEqual(recorder.attr(run, "gen_ai.operation.name"), "invoke_agent")
      assert.strictEqual(recorder.attr(run, "gen_ai.agent.name"), "effect-agent")
      assert.strictEqual(recorder.attr(run, "gen_ai.request.model"), "scripted-model")
      assert.strictEqual(recorder.attr(run, "effect_agent.turns"), 2)
      assert.strictEqual(recorder.attr(run, "gen_ai.usage.input_tokens"), 7)
      assert.strictEqual(recorder.attr(run, "gen_ai.usage.output_tokens"), 3)

      const turns = recorder.named("turn")
      assert.strictEqual(turns.length, 2)
      assert.deepStrictEqual(turns.map((t) => recorder.attr(t, "effect_agent.turn.index")), [0, 1])
      assert.deepStrictEqual(turns.map((t) => recorder.attr(t, "effect_agent.turn.stop_reason")), ["toolUse", "stop"])
      assert.deepStrictEqual(turns.map((t) => recorder.attr(t, "effect_agent.turn.tool_calls")), [2, 0])
      for (const t of turns) assert.strictEqual(recorder.parentOf(t), run.span)

      const [first, second] = turns
      const firstChildren = recorder.childrenOf(first!).map((r) => r.span.name).sort()
      assert.deepStrictEqual(firstChildren, ["chat scripted-model", "execute_tool slowA", "execute_tool slowB"])
      assert.deepStrictEqual(recorder.childrenOf(second!).map((r) => r.span.name), ["chat scripted-model"])

      const toolA = recorder.one("execute_tool slowA")
      const toolB = recorder.one("execute_tool slowB")
      assert.strictEqual(recorder.attr(toolA, "gen_ai.operation.name"), "execute_tool")
      assert.strictEqual(recorder.attr(toolA, "gen_ai.tool.name"), "slowA")
      assert.strictEqual(recorder.attr(toolA, "gen_ai.tool.call.id"), "c1")
      assert.strictEqual(recorder.attr(toolB, "gen_ai.tool.call.id"), "c2")
      assert.strictEqual(recorder.attr(toolA, "gen_ai.tool.type"), "function")
      assert.strictEqual(recorder.attr(toolA, "effect_agent.tool.outcome"), "success")
      assert.isTrue(Exit.isSuccess(exitOf(toolA)))
      // Overlap: each started before the other ended.
      assert.isTrue(toolA.opened < toolB.closed! && toolB.opened < toolA.closed!, "tool spans overlap")
      // Both tool spans end inside their turn.
      assert.isTrue(toolA.closed! < first!.closed! && toolB.closed! < first!.closed!)
      assert.isTrue(first!.closed! < run.closed!)
    }))

  it.effect("OT 2.3: error results carry error.type and an error status", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const sleepy = customTool("sleepy", () => Effect.as(Effect.never, { content: [], details: {} }))
      const fiber = yield* runLoop({
        script: [
          callTools([
            toolCall("n1", "nope", {}),
            toolCall("v1", "add", { a: "x" }),
            toolCall("f1", "fail", { text: "x" }),
            toolCall("b1", "echo", { text: "blocked" }),
            toolCall("s1", "sleepy", {})
          ]),
          say("done")
        ],
        tools: [...standardTools, sleepy],
        config: {
          timeout: "1 second",
          beforeToolCall: ({ toolCall }) =>
            Effect.succeed(toolCall.id === "b1" ? { block: true, reason: "no" } : undefined)
        }
      }).pipe((effect) => traced(effect, recorder), Effect.forkChild)
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(fiber)
      const errorType = (name: string) => {
        const span = recorder.one(name)
        assert.strictEqual(recorder.attr(span, "effect_agent.tool.outcome"), "error", name)
        assert.isTrue(Exit.isFailure(exitOf(span)), `${name} has an error status`)
        return recorder.attr(span, "error.type")
      }
      assert.strictEqual(errorType("execute_tool nope"), "ToolNotFound")
      assert.strictEqual(errorType("execute_tool add"), "InvalidToolArguments")
      assert.strictEqual(errorType("execute_tool fail"), "tool_error")
      assert.strictEqual(errorType("execute_tool echo"), "ToolCallBlocked")
      assert.strictEqual(errorType("execute_tool sleepy"), "timeout")
    }))

  it.effect("OT 2.4: phases that take time get spans; the tool's own spans go under its execution span", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const inner = customTool(
        "inner",
        () =>
          Effect.as(Effect.withSpan(Effect.yieldNow, "tool's own"), {
            content: [{ type: "text" as const, text: "ok" }],
            details: {}
          })
      )
      const config: AgentLoopConfig = {
        beforeToolCall: () => Effect.as(Effect.yieldNow, undefined),
        afterToolCall: () => Effect.as(Effect.yieldNow, undefined)
      }
      yield* runLoop({
        script: [callTools([toolCall("i1", "inner", {})]), say("done")],
        tools: [inner],
        config
      }).pipe((effect) => traced(effect, recorder))
      const tool = recorder.one("execute_tool inner")
      const phases = recorder.childrenOf(tool).map((r) => r.span.name)
      assert.deepStrictEqual(phases, ["tool.approval", "tool.execution", "tool.finalize"])
      const execution = recorder.one("tool.execution")
      assert.strictEqual(recorder.attr(execution, "effect_agent.tool.phase"), "execution")
      assert.strictEqual(recorder.parentOf(recorder.one("tool's own")), execution.span)
      for (const phase of recorder.childrenOf(tool)) assert.isTrue(phase.closed! < tool.closed!)
    }))

  it.effect("OT 2.4: an instant handler with no hooks gets no phase span", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      yield* runLoop({ script: [callTools([toolCall("a1", "add", { a: 1, b: 2 })]), say("done")] }).pipe(
        (effect) => traced(effect, recorder)
      )
      assert.deepStrictEqual(recorder.childrenOf(recorder.one("execute_tool add")), [])
    }))
})

// ---------------------------------------------------------------------------------------------------------
// OT 3
// ---------------------------------------------------------------------------------------------------------

describe("OT 3: model calls", () => {
  it.effect("OT 3.1, 3.2: the chat span has the request model, usage, finish reason and time to first token", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      yield* runLoop({
        script: [say("hello there", { usage: usage(11, 5, 2), delay: "100 millis" })],
        config: { modelOptions: { maxTokens: 64, temperature: 0.5 } }
      }).pipe(
        (effect) => traced(effect, recorder),
        Effect.forkChild,
        Effect.tap(() => TestClock.adjust("1 second")),
        Effect.flatMap(Fiber.join)
      )
      const chat = recorder.one("chat scripted-model")
      assert.strictEqual(chat.span.kind, "client")
      assert.strictEqual(recorder.attr(chat, "gen_ai.operation.name"), "chat")
      assert.strictEqual(recorder.attr(chat, "gen_ai.request.model"), "scripted-model")
      assert.strictEqual(recorder.attr(chat, "gen_ai.request.max_tokens"), 64)
      assert.strictEqual(recorder.attr(chat, "gen_ai.request.temperature"), 0.5)
      assert.strictEqual(recorder.attr(chat, "gen_ai.usage.input_tokens"), 11)
      assert.strictEqual(recorder.attr(chat, "gen_ai.usage.output_tokens"), 5)
      assert.strictEqual(recorder.attr(chat, "gen_ai.usage.cache_read.input_tokens"), 2)
      assert.deepStrictEqual(recorder.attr(chat, "gen_ai.response.finish_reasons"), ["stop"])
      // start, then the first text delta after two delays of 100 ms (virtual time).
      assert.strictEqual(recorder.attr(chat, "effect_agent.time_to_first_token"), 0.2)
      assert.isTrue(Exit.isSuccess(exitOf(chat)))
    }))

  it.effect("OT 3.1: spans the provider makes while streaming are children of the chat span", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      const message = {
        role: "assistant" as const,
        content: [{ type: "text" as const, text: "hi" }],
        api: "test",
        provider: "acme",
        model: "m1",
        responseModel: "m1-2026",
        responseId: "resp_1",
        usage: usage(1, 1),
        stopReason: "stop" as const,
        timestamp: 0
      }
      const model = {
        info: { api: "test", provider: "acme", model: "m1" },
        stream: () =>
          Stream.fromEffect(
            Effect.withSpan(Effect.succeed({ type: "done" as const, reason: "stop" as const, message }), "POST")
          ),
        requests: Effect.succeed([])
      }
      yield* runLoop({ script: [], model }).pipe((effect) => traced(effect, recorder))
      const chat = recorder.one("chat m1")
      assert.strictEqual(recorder.parentOf(recorder.one("POST")), chat.span)
      assert.strictEqual(recorder.attr(chat, "gen_ai.provider.name"), "acme")
      assert.strictEqual(recorder.attr(chat, "gen_ai.response.model"), "m1-2026")
      assert.strictEqual(recorder.attr(chat, "gen_ai.response.id"), "resp_1")
    }))

  it.effect("OT 3.2: a failed stream and an error event give error.type and an error status", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      yield* runLoop({ script: [{ fail: "overloaded", as: "error" }] }).pipe((effect) => traced(effect, recorder))
      yield* runLoop({ script: [{ fail: "bad", as: "event" }] }).pipe((effect) => traced(effect, recorder))
      const [failed, event] = recorder.named("chat scripted-model")
      assert.strictEqual(recorder.attr(failed!, "error.type"), "ModelError.unknown")
      assert.isTrue(Exit.isFailure(exitOf(failed!)))
      assert.strictEqual(recorder.attr(event!, "error.type"), "model_error")
      assert.isTrue(Exit.isFailure(exitOf(event!)))
      // OT 2.2: the turn of a failed response has an error status.
      for (const turn of recorder.named("turn")) assert.isTrue(Exit.isFailure(exitOf(turn)))
    }))
})

// ---------------------------------------------------------------------------------------------------------
// OT 4
// ---------------------------------------------------------------------------------------------------------

describe("OT 4: contents", () => {
  const contentKeys = [
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result"
  ]
  const script = [callTools([toolCall("e1", "echo", { text: "secret-argument" })]), say("secret-answer")]

  it.effect("OT 4.1: by default no span holds a prompt, a message, an argument or a result", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      yield* runLoop({ script, prompts: [user("secret-prompt")] }).pipe((effect) => traced(effect, recorder))
      for (const r of recorder.spans) {
        for (const key of contentKeys) assert.isFalse(r.span.attributes.has(key), `${r.span.name} has no ${key}`)
        for (const value of r.span.attributes.values()) assert.notInclude(String(value), "secret")
      }
    }))

  it.effect("OT 4.1: opted in, contents are JSON attributes of the chat and tool spans", () =>
    Effect.gen(function*() {
      const recorder = makeRecorder()
      yield* runLoop({ script, prompts: [user("secret-prompt")] }).pipe(
        Telemetry.withContents,
        (effect) => traced(effect, recorder)
      )
      const [firstChat] = recorder.named("chat scripted-model")
      assert.include(String(recorder.attr(firstChat!, "gen_ai.input.messages")), "secret-prompt")
      assert.include(String(recorder.attr(firstChat!, "gen_ai.system_instructions")), "You are a test.")
      assert.include(String(recorder.attr(firstChat!, "gen_ai.output.messages")), "secret-argument")
      const tool = recorder.one("execute_tool echo")
      assert.deepStrictEqual(JSON.parse(String(recorder.attr(tool, "gen_ai.tool.call.arguments"))), {
        text: "secret-argument"
      })
      assert.deepStrictEqual(JSON.parse(String(recorder.attr(tool, "gen_ai.tool.call.result"))), [
        { type: "text", text: "secret-argument" }
      ])
    }))
})

// ---------------------------------------------------------------------------------------------------------
// OT 5
// ---------------------------------------------------------------------------------------------------------

describe("OT 5: metrics", () => {
  /** A fresh registry per test: the default one is shared by the whole process. */
  const fresh = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.provideService(effect, Metric.MetricRegistry, new Map())

  const toolDuration = (tool: string, outcome: string, errorType?: string) =>
    Metric.value(
      Metric.withAttributes(Hooks.toolCallDuration, {
        "gen_ai.tool.name": tool,
        "effect_agent.tool.outcome": outcome,
        ...(errorType === undefined ? {} : { "error.type": errorType })
      })
    )
  const tokens = (kind: string) =>
    Metric.value(
      Metric.withAttributes(Hooks.modelTokens, {
        "gen_ai.request.model": "scripted-model",
        "gen_ai.token.type": kind
      })
    )
  const ttft = Metric.value(
    Metric.withAttributes(Hooks.modelTimeToFirstToken, { "gen_ai.request.model": "scripted-model" })
  )
  const inFlight = Metric.value(Hooks.toolCallsInFlight)

  it.effect("OT 5.1: without a tracer nothing is recorded; RecordMetrics true records without one", () =>
    fresh(Effect.gen(function*() {
      const script = [callTools([toolCall("a1", "add", { a: 1, b: 2 })]), say("done", { usage: usage(4, 2) })]
      yield* runLoop({ script })
      assert.strictEqual((yield* toolDuration("add", "success")).count, 0)
      assert.strictEqual((yield* tokens("input")).count, 0)
      yield* runLoop({ script }).pipe(Effect.provideService(Telemetry.RecordMetrics, true))
      assert.strictEqual((yield* toolDuration("add", "success")).count, 1)
      assert.strictEqual((yield* tokens("input")).count, 4)
      const recorder = makeRecorder()
      yield* runLoop({ script }).pipe(
        Effect.provideService(Telemetry.RecordMetrics, false),
        (effect) => traced(effect, recorder)
      )
      assert.strictEqual((yield* toolDuration("add", "success")).count, 1, "false: not recorded even with a tracer")
      yield* runLoop({ script }).pipe((effect) => traced(effect, recorder))
      assert.strictEqual((yield* toolDuration("add", "success")).count, 2, "auto: recorded with a tracer")
    })))

  it.effect("OT 5.2, 5.5: tool durations by tool and outcome; calls in flight while they run, none after", () =>
    fresh(Effect.gen(function*() {
      const a = gated("slowA")
      const b = gated("slowB")
      const tools: ReadonlyArray<RegisteredTool> = [a.tool, b.tool, failTool, addTool]
      const fiber = yield* runLoop({
        script: [
          // The failing call is instant and first: it has ended before the gated ones start.
          callTools([toolCall("f1", "fail", { text: "x" }), toolCall("c1", "slowA", {}), toolCall("c2", "slowB", {})]),
          say("done")
        ],
        tools
      }).pipe(Effect.provideService(Telemetry.RecordMetrics, true), Effect.forkChild)
      yield* Deferred.await(a.started)
      yield* Deferred.await(b.started)
      assert.strictEqual((yield* inFlight).value, 2, "two calls running")
      yield* TestClock.adjust("3 seconds")
      yield* Deferred.succeed(a.open, undefined)
      yield* Deferred.succeed(b.open, undefined)
      yield* Fiber.join(fiber)
      assert.strictEqual((yield* inFlight).value, 0)
      const slowA = yield* toolDuration("slowA", "success")
      assert.strictEqual(slowA.count, 1)
      assert.strictEqual(slowA.sum, 3)
      assert.strictEqual((yield* toolDuration("slowB", "success")).count, 1)
      const failed = yield* toolDuration("fail", "error", "tool_error")
      assert.strictEqual(failed.count, 1)
      assert.strictEqual(failed.sum, 0)
    })))

  it.effect("OT 5.3, 5.4: tokens by model and kind; time to first token per response", () =>
    fresh(Effect.gen(function*() {
      const fiber = yield* runLoop({
        script: [
          callTools([toolCall("a1", "add", { a: 1, b: 2 })], undefined),
          say("done", { usage: usage(10, 4, 3), delay: "50 millis" })
        ].map((step, i) => i === 0 ? { ...step, usage: usage(6, 1) } : step)
      }).pipe(Effect.provideService(Telemetry.RecordMetrics, true), Effect.forkChild)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      assert.strictEqual((yield* tokens("input")).count, 16)
      assert.strictEqual((yield* tokens("output")).count, 5)
      assert.strictEqual((yield* tokens("cache_read")).count, 3)
      assert.strictEqual((yield* tokens("cache_write")).count, 0, "zero counts add nothing")
      const firstToken = yield* ttft
      assert.strictEqual(firstToken.count, 2)
      // The second response's first content event comes after two delays of 50 ms.
      assert.strictEqual(firstToken.max, 0.1)
    })))
})
