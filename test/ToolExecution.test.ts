/**
 * The tool-execution contract (docs/tool-execution.md), one test (or a small group) per rule of
 * TE 1 to TE 9. Ordering is forced with Deferred gates, time with the TestClock; no test sleeps for real.
 */
import { assert, describe, it } from "@effect/vitest"
import { Data, Effect, Exit, Fiber, Logger, Ref, References, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import type { AgentContext } from "../src/AgentContext.ts"
import type { AgentEvent } from "../src/AgentEvent.ts"
import * as EventSink from "../src/EventSink.ts"
import { chooseMode } from "../src/internal/batch.ts"
import type { ToolCall, ToolResultMessage } from "../src/Message.ts"
import * as Tool from "../src/Tool.ts"
import type { ToolResult } from "../src/Tool.ts"
import {
  type AfterToolCallContext,
  type BeforeToolCallContext,
  toolExecutionEvents,
  type ToolExecutionOptions
} from "../src/ToolExecution.ts"
import { type RegisteredTool, ToolRegistry } from "../src/ToolRegistry.ts"
import { grep } from "../src/tools/grep.ts"
import { read } from "../src/tools/read.ts"
import {
  assertBatchInvariants,
  assistantMessage,
  byCallId,
  gated,
  type Gates,
  makeGates,
  makeRecorder,
  marking,
  type Recorder,
  runBatch,
  type Script,
  scripted,
  settleFibers,
  succeedWith,
  textOf,
  toolCall,
  within
} from "./support/batch.ts"

// ---------------------------------------------------------------------------------------------------------
// Local helpers
// ---------------------------------------------------------------------------------------------------------

/**
 * For tests that fork a batch: when an assertion fails early, the forked batch may still be waiting on a
 * grace period in virtual time, which would hold the test's teardown until the vitest timeout. Advancing
 * the clock on the way out lets it finish. Harmless when the test passed.
 */
const unblockOnExit = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.ensuring(self, TestClock.adjust("1 hour"))

/** Asserts that `a` occurs in the trace strictly before `b`. */
const assertBefore = (trace: ReadonlyArray<string>, a: string, b: string) => {
  const i = trace.indexOf(a)
  const j = trace.indexOf(b)
  assert.isTrue(i >= 0, `${a} is in the trace ${JSON.stringify(trace)}`)
  assert.isTrue(j >= 0, `${b} is in the trace ${JSON.stringify(trace)}`)
  assert.isTrue(i < j, `${a} comes before ${b} in ${JSON.stringify(trace)}`)
}

const errorText = (text: string) => ({ content: [{ type: "text" as const, text }], details: {} })

const endEvents = (rec: Recorder) => rec.ofType("tool_execution_end")

const endOf = (rec: Recorder, id: string) => {
  const ends = endEvents(rec).filter((e) => e.toolCallId === id)
  assert.strictEqual(ends.length, 1, `exactly one end event for ${id}`)
  return ends[0]!
}

/** A tool that marks `exec:<id>`, listens to its signal (`signal:<id>`), waits for its gate, and marks its finalizers. */
const cooperative = (rec: Recorder, gates: Gates): Script => (_args, ctx) =>
  Effect.gen(function*() {
    // As any user of an AbortSignal must: it may already be aborted when first read.
    if (ctx.signal.aborted) rec.markUnsafe(`signal:${ctx.toolCallId}`)
    else ctx.signal.addEventListener("abort", () => rec.markUnsafe(`signal:${ctx.toolCallId}`), { once: true })
    yield* rec.mark(`exec:${ctx.toolCallId}`)
    yield* gates.wait(ctx.toolCallId)
    return { content: [{ type: "text" as const, text: `done ${ctx.toolCallId}` }], details: {} }
  }).pipe(
    Effect.onInterrupt(() => rec.mark(`interrupted:${ctx.toolCallId}`)),
    Effect.ensuring(rec.mark(`finalized:${ctx.toolCallId}`))
  )

/** A tool that ignores cancellation entirely. */
const stubborn = (rec: Recorder): Script => (_args, ctx) =>
  Effect.uninterruptible(Effect.andThen(rec.mark(`exec:${ctx.toolCallId}`), Effect.never))

const NumberArgs = Schema.Struct({ n: Schema.Number })

class DiskFull extends Data.TaggedError("DiskFull")<{ readonly message: string }> {}

const interruptedText = (name: string) =>
  `Tool ${name} was interrupted after it started: the run was aborted. It may have had side effects.`
const notStartedText = (name: string) => `Tool ${name} was not executed: the run was aborted before it started.`

// ---------------------------------------------------------------------------------------------------------
// TE 1 Choosing the mode
// ---------------------------------------------------------------------------------------------------------

describe("TE 1 choosing the mode", () => {
  const registry = {
    tools: [],
    get: (name: string) =>
      name === "seq"
        ? scripted("seq", succeedWith("s"), { executionMode: "sequential" })
        : name === "par"
        ? scripted("par", succeedWith("p"), { executionMode: "parallel" })
        : name === "plain"
        ? scripted("plain", succeedWith("x"))
        : undefined
  }

  it("TE 1 chooseMode: parallel by default, sequential by config or by any called sequential tool", () => {
    assert.strictEqual(chooseMode([], registry, undefined), "parallel")
    assert.strictEqual(chooseMode([toolCall("1", "plain"), toolCall("2", "par")], registry, undefined), "parallel")
    assert.strictEqual(chooseMode([toolCall("1", "plain")], registry, "parallel"), "parallel")
    assert.strictEqual(chooseMode([toolCall("1", "plain")], registry, "sequential"), "sequential")
    assert.strictEqual(chooseMode([toolCall("1", "plain"), toolCall("2", "seq")], registry, undefined), "sequential")
    assert.strictEqual(chooseMode([toolCall("1", "seq")], registry, "parallel"), "sequential")
    // unknown names do not affect the choice
    assert.strictEqual(chooseMode([toolCall("1", "nope"), toolCall("2", "plain")], registry, undefined), "parallel")
    // a tool's "parallel" cannot override a sequential config
    assert.strictEqual(chooseMode([toolCall("1", "par")], registry, "sequential"), "sequential")
  })

  const sequentialTrace = [
    "start:1",
    "exec:1",
    "end:1",
    "msg_start:1",
    "msg_end:1",
    "start:2",
    "exec:2",
    "end:2",
    "msg_start:2",
    "msg_end:2"
  ]

  it.effect("TE 1 config sequential runs the batch one call at a time", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const msg = assistantMessage(toolCall("1", "a"), toolCall("2", "a"))
      const result = yield* runBatch(msg, [scripted("a", marking(rec))], rec.sink, { toolExecution: "sequential" })
      assert.deepStrictEqual(rec.trace, sequentialTrace)
      assertBatchInvariants(rec.events, [toolCall("1", "a"), toolCall("2", "a")], result.messages)
    }))

  it.effect("TE 1 a called tool with executionMode sequential makes the whole batch sequential", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const msg = assistantMessage(toolCall("1", "a"), toolCall("2", "s"))
      yield* runBatch(msg, [
        scripted("a", marking(rec)),
        scripted("s", marking(rec), { executionMode: "sequential" })
      ], rec.sink)
      assert.deepStrictEqual(rec.trace, sequentialTrace)
    }))

  it.effect("TE 1 a registered sequential tool that is not called does not make the batch sequential", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const msg = assistantMessage(toolCall("1", "a"), toolCall("2", "a"))
      yield* runBatch(msg, [
        scripted("a", marking(rec)),
        scripted("s", marking(rec), { executionMode: "sequential" })
      ], rec.sink)
      assert.deepStrictEqual(rec.trace.slice(0, 2), ["start:1", "start:2"])
      assert.deepStrictEqual(rec.trace.slice(-4), ["msg_start:1", "msg_end:1", "msg_start:2", "msg_end:2"])
    }))

  it.effect("TE 1 unknown tool names do not affect the mode (parallel by default)", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const msg = assistantMessage(toolCall("1", "a"), toolCall("2", "nope"), toolCall("3", "a"))
      const result = yield* runBatch(msg, [scripted("a", marking(rec))], rec.sink)
      // parallel: preflight of every call before any execution, messages after every end
      assert.deepStrictEqual(rec.trace.slice(0, 4), ["start:1", "start:2", "end:2", "start:3"])
      assert.deepStrictEqual(rec.trace.slice(-6), [
        "msg_start:1",
        "msg_end:1",
        "msg_start:2",
        "msg_end:2",
        "msg_start:3",
        "msg_end:3"
      ])
      assertBatchInvariants(
        rec.events,
        [toolCall("1", "a"), toolCall("2", "nope"), toolCall("3", "a")],
        result.messages
      )
    }))

  it.effect("TE 1 a tool's executionMode parallel cannot override a sequential config", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const msg = assistantMessage(toolCall("1", "p"), toolCall("2", "p"))
      yield* runBatch(msg, [scripted("p", marking(rec), { executionMode: "parallel" })], rec.sink, {
        toolExecution: "sequential"
      })
      assert.deepStrictEqual(rec.trace, sequentialTrace)
    }))
})

// ---------------------------------------------------------------------------------------------------------
// TE 2 Prepare
// ---------------------------------------------------------------------------------------------------------

describe("TE 2 prepare", () => {
  it.effect("TE 2.1 tool_execution_start is emitted before prepare, with the raw arguments", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const raw = { n: "5" }
      const call = toolCall("1", "num", raw)
      const tool = scripted("num", marking(rec), {
        parameters: NumberArgs,
        prepareArguments: (args) => Effect.as(rec.mark("shim:1"), args)
      })
      yield* runBatch(assistantMessage(call), [tool], rec.sink, {
        beforeToolCall: () => rec.mark("before:1")
      })
      assert.deepStrictEqual(rec.trace, [
        "start:1",
        "shim:1",
        "before:1",
        "exec:1",
        "end:1",
        "msg_start:1",
        "msg_end:1"
      ])
      const [start] = rec.ofType("tool_execution_start")
      assert.deepStrictEqual(start, {
        type: "tool_execution_start",
        toolCallId: "1",
        toolName: "num",
        args: { n: "5" }
      })
      assert.strictEqual(start!.args, raw, "the start event carries the raw arguments object")
    }))

  it.effect("TE 2.1 tool_execution_start is emitted for a call that ends during prepare", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const raw = { whatever: [1, 2] }
      yield* runBatch(assistantMessage(toolCall("1", "nope", raw)), [], rec.sink)
      assert.deepStrictEqual(rec.trace, ["start:1", "end:1", "msg_start:1", "msg_end:1"])
      assert.strictEqual(rec.ofType("tool_execution_start")[0]!.args, raw)
    }))

  it.effect("TE 2.2 unknown tool: `Tool <name> not found`", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const result = yield* runBatch(assistantMessage(toolCall("1", "teleport", { to: "mars" })), [
        scripted("a", marking(rec))
      ], rec.sink)
      assert.deepStrictEqual(endOf(rec, "1"), {
        type: "tool_execution_end",
        toolCallId: "1",
        toolName: "teleport",
        result: errorText("Tool teleport not found"),
        isError: true
      })
      assert.strictEqual(textOf(result.messages[0]!), "Tool teleport not found")
      assert.isTrue(result.messages[0]!.isError)
      assert.isFalse(rec.trace.includes("exec:1"))
    }))

  it.effect("TE 2.3 prepareArguments (effectful) rewrites the raw arguments before validation", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const calls = yield* Ref.make(0)
      const raw = { file: "a.txt" }
      let received: unknown
      const tool = scripted("read", (args) => {
        received = args
        return succeedWith("read")(args, undefined as never)
      }, {
        parameters: Schema.Struct({ path: Schema.String }),
        prepareArguments: (u) =>
          Effect.gen(function*() {
            yield* Ref.update(calls, (n) => n + 1)
            yield* Effect.yieldNow
            const old = u as { file?: string }
            return old.file !== undefined ? { path: old.file } : u
          })
      })
      const result = yield* runBatch(assistantMessage(toolCall("1", "read", raw)), [tool], rec.sink)
      assert.deepStrictEqual(received, { path: "a.txt" })
      assert.strictEqual(yield* Ref.get(calls), 1)
      assert.deepStrictEqual(raw, { file: "a.txt" }, "raw arguments untouched")
      assert.isFalse(result.messages[0]!.isError)
    }))

  it.effect("TE 2.3 a failing prepareArguments is an immediate outcome with its message; the tool never runs", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const afterCalls: Array<string> = []
      const tool = scripted("read", marking(rec), {
        prepareArguments: () => Effect.fail(new Error("old argument shape is not supported"))
      })
      const result = yield* runBatch(assistantMessage(toolCall("1", "read")), [tool], rec.sink, {
        afterToolCall: (c) => Effect.sync(() => void afterCalls.push(c.toolCall.id))
      })
      assert.deepStrictEqual(rec.trace, ["start:1", "end:1", "msg_start:1", "msg_end:1"])
      assert.deepStrictEqual(endOf(rec, "1").result, errorText("old argument shape is not supported"))
      assert.strictEqual(textOf(result.messages[0]!), "old argument shape is not supported")
      assert.isTrue(result.messages[0]!.isError)
      assert.deepStrictEqual(afterCalls, [])
    }))

  it.effect("TE 2.3 a prepareArguments defect is an immediate outcome with its message", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const tool = scripted("read", marking(rec), {
        prepareArguments: () => Effect.die(new Error("shim crashed"))
      })
      const other = scripted("ok", marking(rec))
      const result = yield* runBatch(
        assistantMessage(toolCall("1", "read"), toolCall("2", "ok")),
        [tool, other],
        rec.sink
      )
      assert.strictEqual(textOf(result.messages[0]!), "shim crashed")
      assert.isTrue(result.messages[0]!.isError)
      assert.isFalse(rec.trace.includes("exec:1"))
      assert.strictEqual(textOf(result.messages[1]!), "ok 2", "the other call is unaffected")
      assert.isFalse(result.aborted)
    }))

  it.effect("TE 2.3 a prepareArguments that throws instead of returning an Effect is an immediate outcome", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const tool = scripted("read", marking(rec), {
        prepareArguments: () => {
          throw new Error("shim threw")
        }
      })
      const other = scripted("ok", marking(rec))
      const calls = [toolCall("1", "read"), toolCall("2", "ok")]
      const result = yield* runBatch(assistantMessage(...calls), [tool, other], rec.sink)
      assert.strictEqual(textOf(result.messages[0]!), "shim threw")
      assert.strictEqual(textOf(result.messages[1]!), "ok 2", "the other call is unaffected")
      assert.isFalse(result.aborted)
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 2.3 coercions: numeric strings → numbers, \"true\"/\"false\" → booleans, numbers → strings", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const raw = {
        n: "42",
        x: "-1.5e3",
        on: "true",
        off: "false",
        s: 7,
        nested: { k: "3" },
        list: ["1", "2"]
      }
      const snapshot = structuredClone(raw)
      let received: any
      const tool = scripted("t", (args) => {
        received = args
        return succeedWith("ok")(args, undefined as never)
      }, {
        parameters: Schema.Struct({
          n: Schema.Number,
          x: Schema.Number,
          on: Schema.Boolean,
          off: Schema.Boolean,
          s: Schema.String,
          nested: Schema.Struct({ k: Schema.Number }),
          list: Schema.Array(Schema.Number)
        })
      })
      const result = yield* runBatch(assistantMessage(toolCall("1", "t", raw)), [tool], rec.sink)
      assert.isFalse(result.messages[0]!.isError, textOf(result.messages[0]!))
      assert.deepStrictEqual(received, {
        n: 42,
        x: -1500,
        on: true,
        off: false,
        s: "7",
        nested: { k: 3 },
        list: [1, 2]
      })
      assert.deepStrictEqual(raw, snapshot, "the raw arguments are never mutated")
      assert.notStrictEqual(received, raw)
      assert.notStrictEqual(received.nested, raw.nested)
      assert.notStrictEqual(received.list, raw.list)
    }))

  it.effect("TE 2.3 a string that is not a number or a boolean is not coerced and fails validation", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const tool = scripted("t", marking(rec), {
        parameters: Schema.Struct({ n: Schema.Number, b: Schema.Boolean })
      })
      const result = yield* runBatch(assistantMessage(toolCall("1", "t", { n: "12abc", b: "yes" })), [tool], rec.sink)
      assert.strictEqual(
        textOf(result.messages[0]!),
        "Validation failed for tool \"t\":\n  - n: Expected number\n  - b: Expected boolean\n\nReceived arguments:\n" +
          JSON.stringify({ n: "12abc", b: "yes" }, null, 2)
      )
      assert.isFalse(rec.trace.includes("exec:1"))
    }))

  it.effect("TE 2.3 validation returns a fresh value even when nothing is coerced", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const raw = { path: "a.txt", opts: { deep: true } }
      let received: any
      const tool = scripted("t", (args) => {
        received = args
        args.path = "mutated by the tool"
        args.opts.deep = false
        return succeedWith("ok")(args, undefined as never)
      }, { parameters: Schema.Struct({ path: Schema.String, opts: Schema.Struct({ deep: Schema.Boolean }) }) })
      yield* runBatch(assistantMessage(toolCall("1", "t", raw)), [tool], rec.sink)
      assert.notStrictEqual(received, raw)
      assert.deepStrictEqual(raw, { path: "a.txt", opts: { deep: true } }, "the assistant message is unchanged")
    }))

  it.effect("TE 2.3 validation failure text (dotted paths, every issue, JSON of the arguments)", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const afterCalls: Array<string> = []
      const args = { a: "x", opts: { depth: "deep" }, items: ["a", {}] }
      const tool = scripted("t", marking(rec), {
        parameters: Schema.Struct({
          a: Schema.Number,
          b: Schema.Number,
          opts: Schema.Struct({ depth: Schema.Number }),
          items: Schema.Array(Schema.String)
        })
      })
      const result = yield* runBatch(assistantMessage(toolCall("1", "t", args)), [tool], rec.sink, {
        afterToolCall: (c) => Effect.sync(() => void afterCalls.push(c.toolCall.id))
      })
      const expected = [
        "Validation failed for tool \"t\":",
        "  - a: Expected number",
        "  - b: Missing key",
        "  - opts.depth: Expected number",
        "  - items.1: Expected string",
        "",
        "Received arguments:",
        JSON.stringify(args, null, 2)
      ].join("\n")
      assert.strictEqual(textOf(result.messages[0]!), expected)
      assert.deepStrictEqual(endOf(rec, "1").result, errorText(expected))
      assert.isTrue(result.messages[0]!.isError)
      assert.isFalse(rec.trace.includes("exec:1"))
      assert.deepStrictEqual(afterCalls, [])
    }))

  it.effect("TE 2.3 validation failure text uses `root` for the top level", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const Range = Schema.Struct({ from: Schema.Number, to: Schema.Number }).check(
        Schema.makeFilter((v) => v.from <= v.to || "from must not exceed to")
      )
      const tool = scripted("range", marking(rec), { parameters: Range })
      const result = yield* runBatch(assistantMessage(toolCall("1", "range", { from: 5, to: 1 })), [tool], rec.sink)
      assert.strictEqual(
        textOf(result.messages[0]!),
        "Validation failed for tool \"range\":\n  - root: from must not exceed to\n\nReceived arguments:\n{\n  \"from\": 5,\n  \"to\": 1\n}"
      )
    }))

  it.effect("TE 2.3 validation failure shows the arguments after prepareArguments (before coercion)", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const tool = scripted("t", marking(rec), {
        parameters: Schema.Struct({ count: Schema.Number, label: Schema.String }),
        prepareArguments: (u) => Effect.succeed({ ...(u as object), count: "many", label: 3 })
      })
      const result = yield* runBatch(assistantMessage(toolCall("1", "t", { original: true })), [tool], rec.sink)
      assert.strictEqual(
        textOf(result.messages[0]!),
        "Validation failed for tool \"t\":\n  - count: Expected number\n\nReceived arguments:\n" +
          JSON.stringify({ original: true, count: "many", label: 3 }, null, 2)
      )
    }))

  it.effect("TE 2.4 beforeToolCall gets the assistant message, the call, the validated args and the context", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const seen: Array<BeforeToolCallContext> = []
      const context: AgentContext = { systemPrompt: "be careful", messages: [] }
      const call = toolCall("1", "num", { n: "7" })
      const msg = assistantMessage(call)
      yield* runBatch(msg, [scripted("num", marking(rec), { parameters: NumberArgs })], rec.sink, {
        context,
        beforeToolCall: (c) => Effect.sync(() => void seen.push(c))
      })
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(seen[0]!.assistantMessage, msg)
      assert.strictEqual(seen[0]!.toolCall, call)
      assert.deepStrictEqual(seen[0]!.args, { n: 7 })
      assert.strictEqual(seen[0]!.context, context)
    }))

  it.effect("TE 2.4 beforeToolCall is not called when validation fails or the tool is unknown", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const seen: Array<string> = []
      yield* runBatch(
        assistantMessage(toolCall("1", "num", { n: "x" }), toolCall("2", "nope")),
        [scripted("num", marking(rec), { parameters: NumberArgs })],
        rec.sink,
        { beforeToolCall: (c) => Effect.sync(() => void seen.push(c.toolCall.id)) }
      )
      assert.deepStrictEqual(seen, [])
    }))

  it.effect("TE 2.4 a block with a reason ends the call with the reason; the tool never runs", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const afterCalls: Array<string> = []
      const result = yield* runBatch(assistantMessage(toolCall("1", "rm")), [scripted("rm", marking(rec))], rec.sink, {
        beforeToolCall: () => Effect.succeed({ block: true, reason: "rm is not allowed here" }),
        afterToolCall: (c) => Effect.sync(() => void afterCalls.push(c.toolCall.id))
      })
      assert.deepStrictEqual(rec.trace, ["start:1", "end:1", "msg_start:1", "msg_end:1"])
      assert.deepStrictEqual(endOf(rec, "1"), {
        type: "tool_execution_end",
        toolCallId: "1",
        toolName: "rm",
        result: errorText("rm is not allowed here"),
        isError: true
      })
      assert.strictEqual(textOf(result.messages[0]!), "rm is not allowed here")
      assert.deepStrictEqual(afterCalls, [])
      assert.isFalse(result.terminate)
    }))

  it.effect("TE 2.4 a block without a reason: `Tool execution was blocked`", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const result = yield* runBatch(assistantMessage(toolCall("1", "rm")), [scripted("rm", marking(rec))], rec.sink, {
        beforeToolCall: () => Effect.succeed({ block: true })
      })
      assert.strictEqual(textOf(result.messages[0]!), "Tool execution was blocked")
      assert.isTrue(result.messages[0]!.isError)
      assert.isFalse(rec.trace.includes("exec:1"))
    }))

  it.effect("TE 2.4 a block with terminate makes the batch terminate", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const result = yield* runBatch(assistantMessage(toolCall("1", "rm")), [scripted("rm", marking(rec))], rec.sink, {
        beforeToolCall: () => Effect.succeed({ block: true, reason: "stop now", terminate: true })
      })
      assert.strictEqual(textOf(result.messages[0]!), "stop now")
      assert.isTrue(result.terminate)
      assert.isFalse("terminate" in result.messages[0]!)
    }))

  it.effect("TE 2.4 beforeToolCall returning nothing or block: false lets the call run", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const result = yield* runBatch(
        assistantMessage(toolCall("1", "a"), toolCall("2", "a")),
        [scripted("a", marking(rec))],
        rec.sink,
        { beforeToolCall: (c) => Effect.succeed(c.toolCall.id === "1" ? undefined : { block: false }) }
      )
      assert.deepStrictEqual(result.messages.map(textOf), ["ok 1", "ok 2"])
    }))

  it.effect("TE 2.4 replacement arguments are passed to the tool as given (no re-validation)", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const replacement = { n: "not a number", extra: [1] }
      let received: unknown
      const tool = scripted("num", (args) => {
        received = args
        return succeedWith("ok")(args, undefined as never)
      }, { parameters: NumberArgs })
      const result = yield* runBatch(assistantMessage(toolCall("1", "num", { n: 1 })), [tool], rec.sink, {
        beforeToolCall: () => Effect.succeed({ args: replacement })
      })
      assert.strictEqual(received, replacement)
      assert.isFalse(result.messages[0]!.isError)
      assert.deepStrictEqual(rec.ofType("tool_execution_start")[0]!.args, { n: 1 }, "events keep the raw arguments")
    }))

  it.effect("TE 2.4 a failing beforeToolCall is an immediate outcome with its message", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const afterCalls: Array<string> = []
      const result = yield* runBatch(
        assistantMessage(toolCall("1", "a"), toolCall("2", "a")),
        [scripted("a", marking(rec))],
        rec.sink,
        {
          beforeToolCall: (c) =>
            c.toolCall.id === "1" ? Effect.fail(new Error("policy service unavailable")) : Effect.succeed(undefined),
          afterToolCall: (c) => Effect.sync(() => void afterCalls.push(c.toolCall.id))
        }
      )
      assert.deepStrictEqual(endOf(rec, "1").result, errorText("policy service unavailable"))
      assert.isTrue(result.messages[0]!.isError)
      assert.isFalse(rec.trace.includes("exec:1"))
      assert.strictEqual(textOf(result.messages[1]!), "ok 2")
      assert.deepStrictEqual(afterCalls, ["2"])
    }))

  it.effect("TE 2.4 a beforeToolCall defect is an immediate outcome with its message", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const result = yield* runBatch(assistantMessage(toolCall("1", "a")), [scripted("a", marking(rec))], rec.sink, {
        beforeToolCall: () => Effect.die(new Error("hook bug"))
      })
      assert.deepStrictEqual(endOf(rec, "1").result, errorText("hook bug"))
      assert.isFalse(rec.trace.includes("exec:1"))
      assert.isFalse(result.aborted)
    }))

  it.effect("TE 2.4 a beforeToolCall that throws instead of returning an Effect is an immediate outcome", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const calls = [toolCall("1", "a"), toolCall("2", "a")]
      const result = yield* runBatch(assistantMessage(...calls), [scripted("a", marking(rec))], rec.sink, {
        beforeToolCall: (c) => {
          if (c.toolCall.id === "1") throw new Error("hook threw")
          return Effect.succeed(undefined)
        }
      })
      assert.deepStrictEqual(endOf(rec, "1").result, errorText("hook threw"))
      assert.isFalse(rec.trace.includes("exec:1"))
      assert.strictEqual(textOf(result.messages[1]!), "ok 2", "the other call is unaffected")
      assert.isFalse(result.aborted)
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 2.5 abort while preparing: the call ends as aborted, not started, and is never executed", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const controller = new AbortController()
      const calls = [toolCall("1", "a"), toolCall("2", "a")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("a", marking(rec))], rec.sink, {
          signal: controller.signal,
          beforeToolCall: (c) =>
            rec.mark(`before:${c.toolCall.id}`).pipe(
              Effect.andThen(gates.wait(`approve:${c.toolCall.id}`)),
              Effect.onInterrupt(() => rec.mark(`before-interrupted:${c.toolCall.id}`))
            )
        })
      )
      yield* within(rec.reached("before:1"), "beforeToolCall of call 1")
      yield* settleFibers
      yield* Effect.sync(() => controller.abort())
      const result = yield* Fiber.join(fiber)
      assert.isTrue(result.aborted)
      assert.isFalse(rec.trace.some((e) => e.startsWith("exec:")), "no tool executed")
      assert.isTrue(rec.trace.includes("before-interrupted:1"), "the waiting hook was interrupted")
      assert.deepStrictEqual(result.messages.map(textOf), [notStartedText("a"), notStartedText("a")])
      assert.isTrue(result.messages.every((m) => m.isError))
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 2.5 a hook that returns after the run was aborted does not let the call execute", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const controller = new AbortController()
      const calls = [toolCall("1", "a")]
      const result = yield* runBatch(assistantMessage(...calls), [scripted("a", marking(rec))], rec.sink, {
        signal: controller.signal,
        // aborts the run itself, then approves the call without suspending
        beforeToolCall: () => Effect.sync(() => controller.abort())
      })
      assert.isTrue(result.aborted)
      assert.isFalse(rec.trace.includes("exec:1"))
      assert.deepStrictEqual(result.messages.map(textOf), [notStartedText("a")])
      assertBatchInvariants(rec.events, calls, result.messages)
    }))
})

// ---------------------------------------------------------------------------------------------------------
// TE 2.3 Arguments the model got wrong (issue 16 item 3), with the built-in tools' own parameter schemas
// ---------------------------------------------------------------------------------------------------------

describe("TE 2.3 arguments that are not valid JSON, and null for an optional property", () => {
  /** The built-in tool's definition with a handler that records what it was given. */
  const recording = (tool: Tool.Tool.Any, received: Array<unknown>): RegisteredTool => ({
    tool,
    handler: (args) => Effect.sync(() => (received.push(args), Tool.textResult("ran")))
  })

  it.effect("TE 2.3 argument text that is not valid JSON is said to be so, with the parser's position", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const received: Array<unknown> = []
      const raw = "{\"path\": \"src/a.ts\", \"offset\": 3"
      const call: ToolCall = { ...toolCall("1", "read", {}), rawArguments: raw }
      const result = yield* runBatch(assistantMessage(call), [recording(read, received)], rec.sink)
      const text = textOf(result.messages[0]!)
      assert.isTrue(result.messages[0]!.isError)
      assert.strictEqual(
        text,
        "Invalid arguments for tool \"read\": the arguments are not valid JSON: " +
          "Expected ',' or '}' after property value in JSON at position 32 (line 1 column 33)\n\n" +
          `Received arguments:\n${raw}`
      )
      assert.notInclude(text, "Missing key")
      assert.deepStrictEqual(received, [], "the tool never runs")
    }))

  it.effect("TE 2.3 text that simply stops is placed at its end", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const call: ToolCall = { ...toolCall("1", "read", {}), rawArguments: "" }
      const result = yield* runBatch(assistantMessage(call), [recording(read, [])], rec.sink)
      assert.include(
        textOf(result.messages[0]!),
        "the arguments are not valid JSON: Unexpected end of JSON input at position 0 (the end of the text)"
      )
    }))

  it.effect("TE 2.3 arguments sent as a string holding a JSON object are parsed; any other string is not valid JSON", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const received: Array<unknown> = []
      const asString = (id: string, text: string): ToolCall => ({
        ...toolCall(id, "read"),
        arguments: text as unknown as Record<string, unknown>
      })
      const result = yield* runBatch(
        assistantMessage(
          asString("1", "{\"path\": \"a.txt\", \"limit\": 5}"),
          asString("2", "[\"a.txt\"]"),
          asString("3", "path=a.txt")
        ),
        [recording(read, received)],
        rec.sink
      )
      assert.deepStrictEqual(received, [{ path: "a.txt", limit: 5 }])
      assert.isFalse(result.messages[0]!.isError)
      assert.include(
        textOf(result.messages[1]!),
        "the arguments are not valid JSON: expected a JSON object, got an array"
      )
      assert.include(textOf(result.messages[2]!), "the arguments are not valid JSON: Unexpected token 'p'")
      assert.include(textOf(result.messages[2]!), "(at position 0)")
    }))

  it.effect("TE 2.3 the bad text echoed back is bounded", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const raw = `{"path": "${"x".repeat(100_000)}`
      const call: ToolCall = { ...toolCall("1", "read", {}), rawArguments: raw }
      const result = yield* runBatch(assistantMessage(call), [recording(read, [])], rec.sink)
      const text = textOf(result.messages[0]!)
      assert.isBelow(text.length, 3_000)
      assert.include(text, "characters left out]")
    }))

  it.effect("TE 2.3 null for an optional property is read as the property left out (read, grep)", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const received: Array<unknown> = []
      const result = yield* runBatch(
        assistantMessage(
          toolCall("1", "read", { path: "a.txt", offset: null, limit: null }),
          toolCall("2", "grep", { pattern: "x", path: null, glob: null, ignoreCase: null, literal: true, limit: null })
        ),
        [recording(read, received), recording(grep, received)],
        rec.sink
      )
      assert.deepStrictEqual(
        result.messages.map((m) => m.isError),
        [false, false],
        result.messages.map(textOf).join("\n")
      )
      assert.deepStrictEqual(received, [{ path: "a.txt" }, { pattern: "x", literal: true }])
    }))

  it.effect("TE 2.3 null stays an error for a required property, and stays null where the schema accepts it", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const received: Array<unknown> = []
      const nullable = scripted("n", (args) => Effect.sync(() => (received.push(args), Tool.textResult("ran"))), {
        parameters: Schema.Struct({ note: Schema.optionalKey(Schema.NullOr(Schema.String)) })
      })
      const result = yield* runBatch(
        assistantMessage(toolCall("1", "read", { path: null }), toolCall("2", "n", { note: null })),
        [recording(read, received), nullable],
        rec.sink
      )
      assert.include(textOf(result.messages[0]!), "  - path: Expected string\n")
      assert.isFalse(result.messages[1]!.isError)
      assert.deepStrictEqual(received, [{ note: null }])
    }))
})

// ---------------------------------------------------------------------------------------------------------
// TE 3 Execute
// ---------------------------------------------------------------------------------------------------------

describe("TE 3 execute", () => {
  it.effect("TE 3 a tool gets the validated args and a context with its call id; success is isError false", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const seen: Array<{ args: unknown; id: string }> = []
      const tool = scripted("num", (args, ctx) =>
        Effect.sync(() => {
          seen.push({ args, id: ctx.toolCallId })
          return { content: [{ type: "text" as const, text: `n=${args.n}` }], details: { doubled: args.n * 2 } }
        }), { parameters: NumberArgs })
      const result = yield* runBatch(assistantMessage(toolCall("call-9", "num", { n: "21" })), [tool], rec.sink)
      assert.deepStrictEqual(seen, [{ args: { n: 21 }, id: "call-9" }])
      assert.deepStrictEqual(endOf(rec, "call-9"), {
        type: "tool_execution_end",
        toolCallId: "call-9",
        toolName: "num",
        result: { content: [{ type: "text", text: "n=21" }], details: { doubled: 42 } },
        isError: false
      })
      assert.isFalse(result.messages[0]!.isError)
    }))

  it.effect("TE 3 update events carry the raw args and all come before the call's end", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const raw = { n: "3" }
      const tool = scripted("num", (_args, ctx) =>
        Effect.gen(function*() {
          yield* ctx.update({ content: [{ type: "text", text: "1/2" }], details: { step: 1 } })
          yield* Effect.yieldNow
          yield* ctx.update({ content: [{ type: "text", text: "2/2" }], details: { step: 2 } })
          return { content: [{ type: "text" as const, text: "done" }], details: {} }
        }), { parameters: NumberArgs })
      const result = yield* runBatch(assistantMessage(toolCall("1", "num", raw)), [tool], rec.sink)
      assert.deepStrictEqual(rec.trace, ["start:1", "update:1", "update:1", "end:1", "msg_start:1", "msg_end:1"])
      const updates = rec.ofType("tool_execution_update")
      assert.deepStrictEqual(updates, [
        {
          type: "tool_execution_update",
          toolCallId: "1",
          toolName: "num",
          args: { n: "3" },
          partialResult: { content: [{ type: "text", text: "1/2" }], details: { step: 1 } }
        },
        {
          type: "tool_execution_update",
          toolCallId: "1",
          toolName: "num",
          args: { n: "3" },
          partialResult: { content: [{ type: "text", text: "2/2" }], details: { step: 2 } }
        }
      ])
      assert.strictEqual(updates[0]!.args, raw)
      assertBatchInvariants(rec.events, [toolCall("1", "num", raw)], result.messages)
    }))

  it.effect("TE 3 updates of parallel calls come before their own end events", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const tool = scripted("p", (_args, ctx) =>
        Effect.gen(function*() {
          yield* ctx.update({ content: [], details: "before gate" })
          yield* gates.wait(ctx.toolCallId)
          yield* ctx.update({ content: [], details: "after gate" })
          return { content: [{ type: "text" as const, text: "done" }], details: {} }
        }))
      const calls = [toolCall("1", "p"), toolCall("2", "p")]
      const fiber = yield* Effect.forkChild(runBatch(assistantMessage(...calls), [tool], rec.sink))
      yield* within(rec.reached("update:2"), "first update of call 2")
      yield* gates.open("2")
      yield* within(rec.reached("end:2"), "end of call 2")
      yield* gates.open("1")
      const result = yield* Fiber.join(fiber)
      const order = rec.labels("update", "end")
      assert.deepStrictEqual(order.slice(0, 2).sort(), ["update:1", "update:2"], "both report before their gates open")
      assert.deepStrictEqual(order.slice(2), ["update:2", "end:2", "update:1", "end:1"])
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 3 an update after the call has settled is ignored: no event, no error", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      let late: Fiber.Fiber<void> | undefined
      const tool = scripted("bg", (_args, ctx) =>
        Effect.gen(function*() {
          late = yield* Effect.forkDetach(
            gates.wait("late").pipe(Effect.andThen(ctx.update({ content: [], details: "too late" })))
          )
          return { content: [{ type: "text" as const, text: "done" }], details: {} }
        }))
      const calls = [toolCall("1", "bg")]
      const result = yield* runBatch(assistantMessage(...calls), [tool], rec.sink)
      const before = rec.events.length
      yield* gates.open("late")
      const exit = yield* within(Fiber.await(late!), "the late update")
      assert.isTrue(Exit.isSuccess(exit), "the late update neither fails nor dies")
      yield* settleFibers
      assert.strictEqual(rec.events.length, before, "no event after the batch")
      assert.strictEqual(rec.ofType("tool_execution_update").length, 0)
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 3 a typed failure becomes an error result whose text is the error's message", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const tool = scripted(
        "w",
        byCallId({
          "1": () => Effect.fail(new Error("EACCES: permission denied")),
          "2": () => Effect.fail(new DiskFull({ message: "disk full" })),
          "3": () => Effect.fail("plain string failure"),
          "4": () => Effect.fail({ message: "object with a message" })
        })
      )
      const calls = ["1", "2", "3", "4"].map((id) => toolCall(id, "w"))
      const result = yield* runBatch(assistantMessage(...calls), [tool], rec.sink)
      assert.deepStrictEqual(result.messages.map(textOf), [
        "EACCES: permission denied",
        "disk full",
        "plain string failure",
        "object with a message"
      ])
      assert.isTrue(result.messages.every((m) => m.isError))
      assert.deepStrictEqual(endOf(rec, "1"), {
        type: "tool_execution_end",
        toolCallId: "1",
        toolName: "w",
        result: errorText("EACCES: permission denied"),
        isError: true
      })
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 3 a defect becomes an error result whose text is the defect's message", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const tool = scripted(
        "d",
        byCallId({
          "1": () => Effect.die(new Error("kaboom")),
          "2": () =>
            Effect.sync(() => {
              throw new TypeError("cannot read properties of undefined")
            }),
          "3": () => {
            throw new Error("handler threw before returning an Effect")
          }
        })
      )
      const calls = ["1", "2", "3"].map((id) => toolCall(id, "d"))
      const result = yield* runBatch(assistantMessage(...calls), [tool], rec.sink)
      assert.deepStrictEqual(result.messages.map(textOf), [
        "kaboom",
        "cannot read properties of undefined",
        "handler threw before returning an Effect"
      ])
      assert.isTrue(result.messages.every((m) => m.isError))
      assert.isFalse(result.aborted)
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 3 an invalid tool result becomes an error result naming the tool", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const tool = scripted(
        "sloppy",
        byCallId({
          "1": () => Effect.succeed({} as unknown as ToolResult),
          "2": () => Effect.succeed(null as unknown as ToolResult),
          "3": () => Effect.succeed({ content: "just a string", details: {} } as unknown as ToolResult),
          "4": () => Effect.succeed({ content: [{ type: "video", url: "x" }] } as unknown as ToolResult),
          "5": () => Effect.succeed({ content: [{ type: "text", text: "fine" }] } as unknown as ToolResult)
        })
      )
      const calls = ["1", "2", "3", "4", "5"].map((id) => toolCall(id, "sloppy"))
      const result = yield* runBatch(assistantMessage(...calls), [tool], rec.sink)
      for (const m of result.messages.slice(0, 4)) {
        assert.isTrue(m.isError)
        assert.match(textOf(m), /^Tool sloppy returned an invalid result/)
      }
      assert.isFalse(result.messages[4]!.isError, "details may be omitted")
      assert.strictEqual(textOf(result.messages[4]!), "fine")
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 3 per-tool timeout: execution is interrupted and the call ends saying it timed out", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [toolCall("1", "slow")]
      const fiber = yield* Effect.forkChild(
        runBatch(
          assistantMessage(...calls),
          [scripted("slow", cooperative(rec, gates), { timeout: "1 second" })],
          rec.sink
        )
      )
      yield* within(rec.reached("exec:1"), "execution")
      yield* TestClock.adjust("999 millis")
      assert.isUndefined(fiber.pollUnsafe(), "not timed out before the limit")
      yield* TestClock.adjust("1 millis")
      const result = yield* within(Fiber.join(fiber), "the batch after the timeout")
      assert.strictEqual(textOf(result.messages[0]!), "Tool slow timed out after 1s")
      assert.isTrue(result.messages[0]!.isError)
      assert.isFalse(result.aborted)
      assertBefore(rec.trace, "interrupted:1", "end:1")
      assertBefore(rec.trace, "finalized:1", "end:1")
      assertBefore(rec.trace, "signal:1", "end:1")
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 3 the default timeout applies to tools without their own; a tool's own timeout wins", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [toolCall("1", "plain"), toolCall("2", "own")]
      const fiber = yield* Effect.forkChild(
        runBatch(
          assistantMessage(...calls),
          [
            scripted("plain", cooperative(rec, gates)),
            scripted("own", cooperative(rec, gates), { timeout: "1 second" })
          ],
          rec.sink,
          { timeout: "3 seconds" }
        )
      )
      yield* within(rec.reached("exec:2"), "execution")
      yield* TestClock.adjust("1 second")
      assert.strictEqual(textOf(endOf(rec, "2").result as ToolResult), "Tool own timed out after 1s")
      assert.isFalse(rec.trace.includes("end:1"))
      yield* TestClock.adjust("1999 millis")
      assert.isFalse(rec.trace.includes("end:1"), "not before the default limit")
      yield* TestClock.adjust("1 millis")
      const result = yield* within(Fiber.join(fiber), "the batch")
      assert.deepStrictEqual(result.messages.map(textOf), [
        "Tool plain timed out after 3s",
        "Tool own timed out after 1s"
      ])
      assert.deepStrictEqual(rec.labels("end"), ["end:2", "end:1"])
    }).pipe(unblockOnExit))

  it.effect("TE 3 a tool that finishes within its timeout is unaffected", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const tool = scripted("t", () => Effect.as(Effect.sleep("900 millis"), { content: [], details: "in time" }), {
        timeout: "1 second"
      })
      const fiber = yield* Effect.forkChild(runBatch(assistantMessage(toolCall("1", "t")), [tool], rec.sink))
      yield* TestClock.adjust("5 seconds")
      const result = yield* within(Fiber.join(fiber), "the batch")
      assert.isFalse(result.messages[0]!.isError)
      assert.strictEqual(result.messages[0]!.details, "in time")
    }).pipe(unblockOnExit))

  it.effect("TE 3 the timeout counts execution only: a slow beforeToolCall does not count", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const tool = scripted("t", () => Effect.as(Effect.sleep("800 millis"), { content: [], details: "ran" }), {
        timeout: "1 second"
      })
      const fiber = yield* Effect.forkChild(runBatch(assistantMessage(toolCall("1", "t")), [tool], rec.sink, {
        beforeToolCall: () => Effect.sleep("5 seconds")
      }))
      yield* TestClock.adjust("5 seconds")
      yield* TestClock.adjust("800 millis")
      const result = yield* within(Fiber.join(fiber), "the batch")
      assert.deepStrictEqual(endOf(rec, "1").result, { content: [], details: "ran" })
      assert.isFalse(result.messages[0]!.isError)
      assert.strictEqual(result.messages[0]!.details, "ran")
    }).pipe(unblockOnExit))

  it.effect("TE 3 a timed-out tool that ignores cancellation is abandoned after the grace period", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const calls = [toolCall("1", "stubborn")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("stubborn", stubborn(rec), { timeout: "1 second" })], rec.sink, {
          abandonAfter: "500 millis"
        })
      )
      yield* within(rec.reached("exec:1"), "execution")
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("499 millis")
      assert.isUndefined(fiber.pollUnsafe(), "still waiting within the grace period")
      yield* TestClock.adjust("1 millis")
      const result = yield* within(Fiber.join(fiber), "the batch")
      assert.strictEqual(
        textOf(result.messages[0]!),
        "Tool stubborn timed out after 1s and was abandoned: it did not stop when cancelled"
      )
      assert.isTrue(result.messages[0]!.isError)
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))
})

// ---------------------------------------------------------------------------------------------------------
// TE 4 Finalize
// ---------------------------------------------------------------------------------------------------------

describe("TE 4 finalize", () => {
  it.effect("TE 4 afterToolCall gets the executed call, its args, result and isError (also for failed executions)", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const seen: Array<AfterToolCallContext> = []
      const context: AgentContext = { systemPrompt: "sys", messages: [] }
      const calls = [toolCall("1", "num", { n: "1" }), toolCall("2", "num", { n: "2" })]
      const msg = assistantMessage(...calls)
      const tool = scripted(
        "num",
        byCallId({
          "1": succeedWith("one", { details: { k: 1 } }),
          "2": () => Effect.fail(new Error("two failed"))
        }),
        { parameters: NumberArgs }
      )
      yield* runBatch(msg, [tool], rec.sink, {
        context,
        beforeToolCall: (c) => Effect.succeed(c.toolCall.id === "2" ? { args: { n: 20 } } : undefined),
        afterToolCall: (c) => Effect.sync(() => void seen.push(c))
      })
      const byId = new Map(seen.map((c) => [c.toolCall.id, c]))
      assert.strictEqual(seen.length, 2)
      const one = byId.get("1")!
      assert.strictEqual(one.assistantMessage, msg)
      assert.strictEqual(one.toolCall, msg.content[2])
      assert.deepStrictEqual(one.args, { n: 1 })
      assert.deepStrictEqual(one.result, { content: [{ type: "text", text: "one" }], details: { k: 1 } })
      assert.isFalse(one.isError)
      assert.strictEqual(one.context, context)
      const two = byId.get("2")!
      assert.deepStrictEqual(two.args, { n: 20 }, "the arguments the tool actually got")
      assert.deepStrictEqual(two.result, errorText("two failed"))
      assert.isTrue(two.isError)
    }))

  it.effect("TE 4 afterToolCall overrides field by field; omitted fields keep the executed value; no deep merge", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const executed = { content: [{ type: "text" as const, text: "original" }], details: { a: 1, nested: { x: 1 } } }
      const tool = scripted("t", () => Effect.succeed(executed))
      const calls = ["none", "empty", "isError", "content", "details", "terminate", "all"].map((id) =>
        toolCall(id, "t")
      )
      const result = yield* runBatch(assistantMessage(...calls), [tool], rec.sink, {
        afterToolCall: (c) =>
          Effect.succeed(
            ({
              none: undefined,
              empty: {},
              isError: { isError: true },
              content: { content: [{ type: "text" as const, text: "replaced" }] },
              details: { details: { nested: { y: 2 } } },
              terminate: { terminate: true },
              all: {
                content: [{ type: "text" as const, text: "all" }],
                details: "d",
                isError: true,
                terminate: false
              }
            } as const)[c.toolCall.id as "none"]
          )
      })
      const ends = new Map(endEvents(rec).map((e) => [e.toolCallId, e]))
      const expect = (id: string, r: unknown, isError: boolean) => {
        assert.deepStrictEqual(ends.get(id)!.result, r, `end result of ${id}`)
        assert.strictEqual(ends.get(id)!.isError, isError, `isError of ${id}`)
      }
      expect("none", executed, false)
      expect("empty", executed, false)
      expect("isError", executed, true)
      expect("content", { content: [{ type: "text", text: "replaced" }], details: executed.details }, false)
      expect("details", { content: executed.content, details: { nested: { y: 2 } } }, false)
      expect("terminate", { ...executed, terminate: true }, false)
      expect("all", { content: [{ type: "text", text: "all" }], details: "d", terminate: false }, true)
      const msgs = new Map(result.messages.map((m) => [m.toolCallId, m]))
      assert.strictEqual(textOf(msgs.get("content")!), "replaced")
      assert.deepStrictEqual(msgs.get("details")!.details, { nested: { y: 2 } })
      assert.isTrue(msgs.get("isError")!.isError)
      assert.isFalse("terminate" in msgs.get("terminate")!)
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 4 afterToolCall can turn an error result into a success", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const result = yield* runBatch(
        assistantMessage(toolCall("1", "f")),
        [scripted("f", () => Effect.fail(new Error("flaky")))],
        rec.sink,
        { afterToolCall: () => Effect.succeed({ isError: false }) }
      )
      assert.isFalse(result.messages[0]!.isError)
      assert.strictEqual(textOf(result.messages[0]!), "flaky", "content kept")
    }))

  it.effect("TE 4 afterToolCall is never called for immediate outcomes", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const seen: Array<string> = []
      const calls = [
        toolCall("ran", "num", { n: 1 }),
        toolCall("unknown", "nope"),
        toolCall("invalid", "num", { n: "x" }),
        toolCall("blocked", "num", { n: 2 }),
        toolCall("hookfail", "num", { n: 3 }),
        toolCall("shimfail", "shim"),
        toolCall("ran", "num", { n: 4 })
      ]
      yield* runBatch(
        assistantMessage(...calls),
        [
          scripted("num", marking(rec), { parameters: NumberArgs }),
          scripted("shim", marking(rec), { prepareArguments: () => Effect.fail("nope") })
        ],
        rec.sink,
        {
          beforeToolCall: (c) =>
            c.toolCall.id === "blocked"
              ? Effect.succeed({ block: true })
              : c.toolCall.id === "hookfail"
              ? Effect.fail("hook failed")
              : Effect.void,
          afterToolCall: (c) => Effect.sync(() => void seen.push(c.toolCall.id))
        }
      )
      assert.deepStrictEqual(seen, ["ran"])
      assert.deepStrictEqual(rec.trace.filter((e) => e.startsWith("exec:")), ["exec:ran"])
    }))

  it.effect("TE 4 a failing afterToolCall makes the result an error result with its message", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const calls = [toolCall("fail", "t"), toolCall("die", "t"), toolCall("ok", "t")]
      const result = yield* runBatch(assistantMessage(...calls), [scripted("t", succeedWith("fine"))], rec.sink, {
        afterToolCall: (c) =>
          c.toolCall.id === "fail"
            ? Effect.fail(new Error("audit log unavailable"))
            : c.toolCall.id === "die"
            ? Effect.die(new Error("after hook bug"))
            : Effect.void
      })
      assert.deepStrictEqual(result.messages.map((m) => [textOf(m), m.isError]), [
        ["audit log unavailable", true],
        ["after hook bug", true],
        ["fine", false]
      ])
      assert.deepStrictEqual(endOf(rec, "fail").result, errorText("audit log unavailable"))
      assertBatchInvariants(rec.events, calls, result.messages)
    }))
})

// ---------------------------------------------------------------------------------------------------------
// TE 5 End event and tool-result message
// ---------------------------------------------------------------------------------------------------------

describe("TE 5 end event and tool-result message", () => {
  it.effect("TE 5 tool_execution_end has exactly { type, toolCallId, toolName, result, isError }", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const r = { content: [{ type: "text" as const, text: "hi" }], details: { d: 1 }, terminate: true }
      yield* runBatch(assistantMessage(toolCall("1", "t")), [scripted("t", () => Effect.succeed(r))], rec.sink)
      const end = endOf(rec, "1")
      assert.deepStrictEqual(Object.keys(end).sort(), ["isError", "result", "toolCallId", "toolName", "type"])
      assert.deepStrictEqual(end, {
        type: "tool_execution_end",
        toolCallId: "1",
        toolName: "t",
        result: r,
        isError: false
      })
    }))

  it.effect("TE 5 the tool-result message has pi's shape and no terminate key", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      yield* TestClock.setTime(1_234)
      const result = yield* runBatch(assistantMessage(toolCall("1", "t"), toolCall("2", "nope")), [
        scripted("t", succeedWith("hi", { details: { d: 1 }, terminate: true }))
      ], rec.sink)
      const [ok, missing] = result.messages
      assert.deepStrictEqual(Object.keys(ok!).sort(), [
        "content",
        "details",
        "isError",
        "role",
        "timestamp",
        "toolCallId",
        "toolName"
      ])
      assert.deepStrictEqual(ok, {
        role: "toolResult",
        toolCallId: "1",
        toolName: "t",
        content: [{ type: "text", text: "hi" }],
        details: { d: 1 },
        isError: false,
        timestamp: 1_234
      })
      assert.deepStrictEqual(missing, {
        role: "toolResult",
        toolCallId: "2",
        toolName: "nope",
        content: [{ type: "text", text: "Tool nope not found" }],
        details: {},
        isError: true,
        timestamp: 1_234
      })
    }))

  it.effect("TE 5 each message is announced with message_start then message_end, right after each other", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const calls = [toolCall("1", "t"), toolCall("2", "t")]
      const result = yield* runBatch(assistantMessage(...calls), [scripted("t", succeedWith("x"))], rec.sink)
      const messageEvents = rec.events.filter((e) => e.type === "message_start" || e.type === "message_end")
      assert.deepStrictEqual(messageEvents, [
        { type: "message_start", message: result.messages[0]! },
        { type: "message_end", message: result.messages[0]! },
        { type: "message_start", message: result.messages[1]! },
        { type: "message_end", message: result.messages[1]! }
      ])
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 5 toolExecutionEvents streams the batch's events and ends after the last message", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const calls = [toolCall("1", "t"), toolCall("2", "nope")]
      const tools = [scripted("t", succeedWith("x"))]
      const result = yield* runBatch(assistantMessage(...calls), tools, rec.sink)
      const streamed = yield* Stream.runCollect(toolExecutionEvents(assistantMessage(...calls))).pipe(
        Effect.provide(ToolRegistry.fromEntries(tools)),
        Effect.orDie
      )
      assert.deepStrictEqual(streamed, rec.events as ReadonlyArray<unknown>)
      assert.deepStrictEqual(
        streamed.filter((e) => e.type === "message_end").map((e) => (e as { message: ToolResultMessage }).message),
        result.messages as Array<ToolResultMessage>
      )
    }))
})

// ---------------------------------------------------------------------------------------------------------
// TE 6 Ordering
// ---------------------------------------------------------------------------------------------------------

describe("TE 6 ordering", () => {
  it.effect("TE 6 sequential: a call's five phases all happen before the next call starts", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [toolCall("1", "g"), toolCall("2", "nope"), toolCall("3", "g")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("g", gated(rec, gates))], rec.sink, {
          toolExecution: "sequential",
          afterToolCall: (c) => rec.mark(`after:${c.toolCall.id}`)
        })
      )
      yield* within(rec.reached("exec:1"), "call 1 executing")
      yield* settleFibers
      assert.deepStrictEqual(rec.trace, ["start:1", "exec:1"], "call 2 waits for call 1")
      yield* gates.open("3")
      yield* gates.open("1")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(rec.trace, [
        "start:1",
        "exec:1",
        "done:1",
        "after:1",
        "end:1",
        "msg_start:1",
        "msg_end:1",
        "start:2",
        "end:2",
        "msg_start:2",
        "msg_end:2",
        "start:3",
        "exec:3",
        "done:3",
        "after:3",
        "end:3",
        "msg_start:3",
        "msg_end:3"
      ])
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 6 sequential: message timestamps follow the calls", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const tool = scripted("sleepy", (_args, ctx) =>
        Effect.as(Effect.sleep(ctx.toolCallId === "1" ? "1 second" : "2 seconds"), { content: [], details: {} }))
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(toolCall("1", "sleepy"), toolCall("2", "sleepy")), [tool], rec.sink, {
          toolExecution: "sequential"
        })
      )
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("2 seconds")
      const result = yield* within(Fiber.join(fiber), "the batch")
      assert.deepStrictEqual(
        result.messages.map((m) =>
          m.timestamp
        ),
        [1_000, 3_000]
      )
    }).pipe(unblockOnExit))

  it.effect("TE 6 parallel: preflight runs in source order, one call at a time, hooks awaited", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [toolCall("1", "t"), toolCall("2", "t"), toolCall("3", "t")]
      const tool = scripted("t", marking(rec), {
        prepareArguments: (u) => Effect.as(rec.mark("shim"), u)
      })
      const fiber = yield* Effect.forkChild(runBatch(assistantMessage(...calls), [tool], rec.sink, {
        beforeToolCall: (c) =>
          rec.mark(`before:${c.toolCall.id}`).pipe(Effect.andThen(gates.wait(`before:${c.toolCall.id}`)))
      }))
      yield* within(rec.reached("before:1"), "the hook of call 1")
      yield* settleFibers
      assert.deepStrictEqual(rec.trace, ["start:1", "shim", "before:1"], "call 2 waits for call 1's hook")
      yield* gates.open("before:1")
      yield* within(rec.reached("before:2"), "the hook of call 2")
      yield* settleFibers
      assert.deepStrictEqual(rec.trace.slice(3), ["start:2", "shim", "before:2"])
      yield* gates.open("before:2")
      yield* gates.open("before:3")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(rec.trace.slice(0, 9), [
        "start:1",
        "shim",
        "before:1",
        "start:2",
        "shim",
        "before:2",
        "start:3",
        "shim",
        "before:3"
      ], "no call executes before every call is prepared")
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 6 parallel: an immediate outcome's end is emitted right away, before later calls start", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const calls = [
        toolCall("1", "num", { n: 1 }),
        toolCall("2", "nope"),
        toolCall("3", "num", { n: "x" }),
        toolCall("4", "num", { n: 2 })
      ]
      const result = yield* runBatch(assistantMessage(...calls), [
        scripted("num", marking(rec), { parameters: NumberArgs })
      ], rec.sink)
      assert.deepStrictEqual(rec.trace.slice(0, 6), ["start:1", "start:2", "end:2", "start:3", "end:3", "start:4"])
      assert.deepStrictEqual(rec.trace.slice(6).filter((e) => e.startsWith("exec:")).sort(), ["exec:1", "exec:4"])
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 6 parallel: prepared calls all execute together", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [toolCall("1", "g"), toolCall("2", "g"), toolCall("3", "g")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("g", gated(rec, gates))], rec.sink)
      )
      // every call is executing while none of them may finish
      yield* within(
        Effect.all([rec.reached("exec:1"), rec.reached("exec:2"), rec.reached("exec:3")]),
        "all three executing"
      )
      assert.isFalse(rec.trace.some((e) => e.startsWith("end:")))
      yield* gates.open("3")
      yield* gates.open("1")
      yield* gates.open("2")
      const result = yield* Fiber.join(fiber)
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 6 parallel: the concurrency limit is honoured", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const running = yield* Ref.make(0)
      const max = yield* Ref.make(0)
      const tool = scripted("g", (args, ctx) =>
        Effect.gen(function*() {
          const now = yield* Ref.updateAndGet(running, (n) => n + 1)
          yield* Ref.update(max, (m) => Math.max(m, now))
          return yield* gated(rec, gates)(args, ctx)
        }).pipe(Effect.ensuring(Ref.update(running, (n) => n - 1))))
      const calls = ["1", "2", "3", "4", "5"].map((id) => toolCall(id, "g"))
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [tool], rec.sink, { concurrency: 2 })
      )
      yield* within(Effect.all([rec.reached("exec:1"), rec.reached("exec:2")]), "two calls executing")
      yield* settleFibers
      assert.deepStrictEqual(rec.trace.filter((e) => e.startsWith("exec:")), ["exec:1", "exec:2"])
      yield* gates.open("2")
      yield* within(rec.reached("exec:3"), "call 3 takes the free slot")
      yield* settleFibers
      assert.deepStrictEqual(rec.trace.filter((e) => e.startsWith("exec:")), ["exec:1", "exec:2", "exec:3"])
      for (const id of ["1", "3", "4", "5"]) yield* gates.open(id)
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(yield* Ref.get(max), 2)
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 6 parallel: end events follow completion order; messages follow source order", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [toolCall("A", "g"), toolCall("B", "g"), toolCall("C", "g")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("g", gated(rec, gates))], rec.sink)
      )
      yield* within(Effect.all([rec.reached("exec:A"), rec.reached("exec:B"), rec.reached("exec:C")]), "executing")
      yield* gates.open("B")
      yield* within(rec.reached("end:B"), "end of B")
      yield* gates.open("C")
      yield* within(rec.reached("end:C"), "end of C")
      assert.isFalse(rec.trace.some((e) => e.startsWith("msg_")), "no message before every call has settled")
      yield* gates.open("A")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(rec.labels("end"), ["end:B", "end:C", "end:A"])
      assert.deepStrictEqual(rec.trace.slice(-6), [
        "msg_start:A",
        "msg_end:A",
        "msg_start:B",
        "msg_end:B",
        "msg_start:C",
        "msg_end:C"
      ])
      assert.deepStrictEqual(result.messages.map(textOf), ["done A", "done B", "done C"])
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 6 parallel: messages in source order with non-decreasing timestamps, returned list equals the events", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      yield* TestClock.setTime(10_000)
      const tool = scripted(
        "sleepy",
        (_args, ctx) => Effect.as(Effect.sleep(`${Number(ctx.toolCallId)} seconds`), { content: [], details: {} })
      )
      const calls = [toolCall("3", "sleepy"), toolCall("1", "sleepy"), toolCall("2", "sleepy")]
      const fiber = yield* Effect.forkChild(runBatch(assistantMessage(...calls), [tool], rec.sink))
      yield* TestClock.adjust("3 seconds")
      const result = yield* within(Fiber.join(fiber), "the batch")
      assert.deepStrictEqual(rec.labels("end"), ["end:1", "end:2", "end:3"])
      assert.deepStrictEqual(result.messages.map((m) => m.toolCallId), ["3", "1", "2"])
      const stamps = result.messages.map((m) => m.timestamp)
      stamps.forEach((t, i) => assert.isTrue(i === 0 || stamps[i - 1]! <= t, `non-decreasing: ${stamps}`))
      assert.isTrue(stamps[0]! >= 13_000, "created after every call settled")
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))
})

// ---------------------------------------------------------------------------------------------------------
// TE 7 Early termination
// ---------------------------------------------------------------------------------------------------------

describe("TE 7 early termination", () => {
  const terminating = scripted("stop", succeedWith("stopping", { terminate: true }))
  const normal = scripted("go", succeedWith("going"))
  const run = (calls: ReadonlyArray<ToolCall>, options: ToolExecutionOptions = {}) => {
    const rec = makeRecorder()
    return runBatch(assistantMessage(...calls), [terminating, normal], rec.sink, options).pipe(
      Effect.tap((result) => Effect.sync(() => assertBatchInvariants(rec.events, calls, result.messages)))
    )
  }

  it.effect("TE 7 every result terminates → the batch terminates", () =>
    Effect.gen(function*() {
      const result = yield* run([toolCall("1", "stop"), toolCall("2", "stop")])
      assert.isTrue(result.terminate)
      assert.isFalse(result.aborted)
    }))

  it.effect("TE 7 one result that does not terminate → the batch does not terminate", () =>
    Effect.gen(function*() {
      assert.isFalse((yield* run([toolCall("1", "stop"), toolCall("2", "go")])).terminate)
      assert.isFalse((yield* run([toolCall("1", "go")])).terminate)
    }))

  it.effect("TE 7 a block carries its terminate; a block without terminate does not terminate", () =>
    Effect.gen(function*() {
      const blockAll = (terminate: boolean) => ({
        beforeToolCall: (c: BeforeToolCallContext) =>
          Effect.succeed(c.toolCall.name === "go" ? { block: true, terminate } : undefined)
      })
      assert.isTrue((yield* run([toolCall("1", "stop"), toolCall("2", "go")], blockAll(true))).terminate)
      assert.isFalse((yield* run([toolCall("1", "stop"), toolCall("2", "go")], blockAll(false))).terminate)
      assert.isTrue((yield* run([toolCall("1", "go")], blockAll(true))).terminate)
    }))

  it.effect("TE 7 other immediate outcomes never terminate", () =>
    Effect.gen(function*() {
      assert.isFalse((yield* run([toolCall("1", "stop"), toolCall("2", "nope")])).terminate, "not found")
      assert.isFalse((yield* run([toolCall("1", "nope")])).terminate, "only not found")
      assert.isFalse(
        (yield* run([toolCall("1", "stop"), toolCall("2", "stop")], {
          beforeToolCall: (c) => c.toolCall.id === "2" ? Effect.fail("hook failed") : Effect.void
        })).terminate,
        "prepare failed"
      )
      const rec = makeRecorder()
      const duplicate = yield* runBatch(
        assistantMessage(toolCall("1", "stop"), toolCall("1", "stop")),
        [terminating],
        rec.sink
      )
      assert.isFalse(duplicate.terminate, "duplicate id")
    }))

  it.effect("TE 7 a failing tool does not terminate; afterToolCall's terminate counts", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const failing = scripted("bad", () => Effect.fail(new Error("x")))
      const calls = [toolCall("1", "bad"), toolCall("2", "go")]
      const plain = yield* runBatch(assistantMessage(...calls), [failing, normal], rec.sink)
      assert.isFalse(plain.terminate)
      const overridden = yield* runBatch(assistantMessage(...calls), [failing, normal], makeRecorder().sink, {
        afterToolCall: () => Effect.succeed({ terminate: true })
      })
      assert.isTrue(overridden.terminate)
      assert.isTrue(overridden.messages.every((m) => !("terminate" in m)))
      const vetoed = yield* run([toolCall("1", "stop")], { afterToolCall: () => Effect.succeed({ terminate: false }) })
      assert.isFalse(vetoed.terminate)
    }))

  it.effect("TE 7 an empty batch does not terminate and emits nothing", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const result = yield* runBatch(assistantMessage(), [terminating], rec.sink)
      assert.deepStrictEqual(result, { messages: [], terminate: false, aborted: false })
      assert.deepStrictEqual(rec.events, [])
    }))
})

// ---------------------------------------------------------------------------------------------------------
// TE 8 Abort and interruption
// ---------------------------------------------------------------------------------------------------------

describe("TE 8 abort and interruption", () => {
  it.effect("TE 8 abort by signal (parallel): running calls are interrupted, waiting calls never execute", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const controller = new AbortController()
      const calls = [toolCall("1", "c"), toolCall("2", "c"), toolCall("3", "c"), toolCall("4", "nope")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("c", cooperative(rec, gates))], rec.sink, {
          signal: controller.signal,
          concurrency: 2
        })
      )
      yield* within(Effect.all([rec.reached("exec:1"), rec.reached("exec:2")]), "two calls executing")
      yield* settleFibers
      yield* Effect.sync(() => controller.abort())
      const result = yield* within(Fiber.join(fiber), "the aborted batch")
      assert.isTrue(result.aborted)
      assert.isFalse(rec.trace.includes("exec:3"), "a waiting call never executes")
      for (const id of ["1", "2"]) {
        assertBefore(rec.trace, `interrupted:${id}`, `end:${id}`)
        assertBefore(rec.trace, `finalized:${id}`, `end:${id}`)
        assertBefore(rec.trace, `signal:${id}`, `end:${id}`)
      }
      assert.deepStrictEqual(result.messages.map(textOf), [
        interruptedText("c"),
        interruptedText("c"),
        notStartedText("c"),
        "Tool nope not found"
      ])
      assert.isTrue(result.messages.every((m) => m.isError))
      assert.deepStrictEqual(result.messages.map((m) => m.details), [
        { aborted: true, started: true, abandoned: false },
        { aborted: true, started: true, abandoned: false },
        { aborted: true, started: false },
        {}
      ])
      assert.isFalse(result.terminate)
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 8 abort by signal during preflight: the rest are never executed and still end", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const controller = new AbortController()
      const calls = [toolCall("1", "c"), toolCall("2", "c"), toolCall("3", "c")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("c", cooperative(rec, gates))], rec.sink, {
          signal: controller.signal,
          beforeToolCall: (c) =>
            c.toolCall.id === "2" ? Effect.andThen(rec.mark("before:2"), gates.wait("approve")) : Effect.void
        })
      )
      yield* within(rec.reached("before:2"), "the hook of call 2")
      yield* settleFibers
      yield* Effect.sync(() => controller.abort())
      const result = yield* within(Fiber.join(fiber), "the aborted batch")
      assert.isTrue(result.aborted)
      assert.isFalse(rec.trace.some((e) => e.startsWith("exec:")))
      assert.deepStrictEqual(result.messages.map(textOf), [
        notStartedText("c"),
        notStartedText("c"),
        notStartedText("c")
      ])
      // parallel order rules still hold: every start, then the ends, then the messages
      assert.deepStrictEqual(rec.labels("start", "end", "msg_start", "msg_end"), [
        "start:1",
        "start:2",
        "start:3",
        "end:1",
        "end:2",
        "end:3",
        "msg_start:1",
        "msg_end:1",
        "msg_start:2",
        "msg_end:2",
        "msg_start:3",
        "msg_end:3"
      ])
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 8 abort by signal (sequential): the running call is interrupted, later calls never execute", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const controller = new AbortController()
      const calls = [toolCall("1", "c"), toolCall("2", "c"), toolCall("3", "c")]
      yield* gates.open("1")
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("c", cooperative(rec, gates))], rec.sink, {
          signal: controller.signal,
          toolExecution: "sequential"
        })
      )
      yield* within(rec.reached("exec:2"), "call 2 executing")
      yield* settleFibers
      yield* Effect.sync(() => controller.abort())
      const result = yield* within(Fiber.join(fiber), "the aborted batch")
      assert.isTrue(result.aborted)
      assert.deepStrictEqual(result.messages.map(textOf), ["done 1", interruptedText("c"), notStartedText("c")])
      assert.deepStrictEqual(result.messages.map((m) => m.isError), [false, true, true])
      assert.deepStrictEqual(rec.labels("start", "end", "msg_start", "msg_end"), [
        "start:1",
        "end:1",
        "msg_start:1",
        "msg_end:1",
        "start:2",
        "end:2",
        "msg_start:2",
        "msg_end:2",
        "start:3",
        "end:3",
        "msg_start:3",
        "msg_end:3"
      ])
      assert.isFalse(rec.trace.includes("exec:3"))
      assertBefore(rec.trace, "finalized:2", "end:2")
      assertBefore(rec.trace, "signal:2", "end:2")
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 8 a signal aborted before the batch: nothing executes, every call still ends", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const controller = new AbortController()
      controller.abort()
      const calls = [toolCall("1", "a"), toolCall("2", "a")]
      const result = yield* runBatch(assistantMessage(...calls), [scripted("a", marking(rec))], rec.sink, {
        signal: controller.signal
      })
      assert.isTrue(result.aborted)
      assert.isFalse(rec.trace.some((e) => e.startsWith("exec:")))
      assert.deepStrictEqual(result.messages.map(textOf), [notStartedText("a"), notStartedText("a")])
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 8 abort by fiber interruption: running calls interrupted, others never execute, every call ends", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [toolCall("1", "c"), toolCall("2", "c"), toolCall("3", "c")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("c", cooperative(rec, gates))], rec.sink, { concurrency: 1 })
      )
      yield* within(rec.reached("exec:1"), "call 1 executing")
      yield* settleFibers
      yield* within(Fiber.interrupt(fiber), "interrupting the batch")
      const exit = fiber.pollUnsafe()
      assert.isDefined(exit)
      assert.isTrue(Exit.isFailure(exit!) && Exit.hasInterrupts(exit!), "the batch fiber ends interrupted")
      assert.isFalse(rec.trace.includes("exec:2"))
      assert.isFalse(rec.trace.includes("exec:3"))
      assertBefore(rec.trace, "interrupted:1", "end:1")
      assertBefore(rec.trace, "finalized:1", "end:1")
      assertBefore(rec.trace, "signal:1", "end:1")
      const messages = rec.ofType("message_end").map((e) => e.message as ToolResultMessage)
      assert.deepStrictEqual(messages.map(textOf), [interruptedText("c"), notStartedText("c"), notStartedText("c")])
      assertBatchInvariants(rec.events, calls, messages)
    }).pipe(unblockOnExit))

  // The work phase starts on a microtask once the batch fiber waits (src/internal/supervise.ts): an
  // interruption that lands before that microtask runs must start no tool, and still settle every call.
  it.effect.each(["parallel", "sequential"] as const)(
    "TE 8.1 interrupting the batch before its work has started starts no tool and settles every call (%s)",
    (mode) =>
      Effect.gen(function*() {
        const rec = makeRecorder()
        const gates = makeGates()
        const calls = [toolCall("1", "c"), toolCall("2", "c")]
        const fiber = yield* Effect.forkChild(
          runBatch(assistantMessage(...calls), [scripted("c", cooperative(rec, gates))], rec.sink, {
            toolExecution: mode
          }),
          { startImmediately: true }
        )
        // Synchronously, right after the batch fiber started waiting: the work's microtask has not run yet.
        assert.isUndefined(fiber.pollUnsafe())
        fiber.interruptUnsafe()
        yield* within(Fiber.await(fiber), "the batch returns")
        assert.isFalse(rec.trace.some((entry) => entry.startsWith("exec:")), "no tool executed")
        const messages = rec.ofType("message_end").map((e) => e.message as ToolResultMessage)
        assert.deepStrictEqual(messages.map(textOf), [notStartedText("c"), notStartedText("c")])
        assertBatchInvariants(rec.events, calls, messages)
      }).pipe(unblockOnExit)
  )

  it.effect("TE 8 fiber interruption the moment a tool has started (no pause) still interrupts it before its end", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [toolCall("1", "c"), toolCall("2", "c")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("c", cooperative(rec, gates))], rec.sink, { concurrency: 1 })
      )
      yield* within(rec.reached("exec:1"), "call 1 executing")
      // no settling: the interruption arrives as soon as the tool has begun
      yield* within(Fiber.interrupt(fiber), "interrupting the batch")
      assertBefore(rec.trace, "interrupted:1", "end:1")
      assertBefore(rec.trace, "finalized:1", "end:1")
      assertBefore(rec.trace, "signal:1", "end:1")
      const messages = rec.ofType("message_end").map((e) => e.message as ToolResultMessage)
      assert.deepStrictEqual(messages.map(textOf), [interruptedText("c"), notStartedText("c")])
      assertBatchInvariants(rec.events, calls, messages)
    }).pipe(unblockOnExit))

  it.effect("TE 8 a tool that ignores cancellation is abandoned after the grace period", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const controller = new AbortController()
      const calls = [toolCall("1", "stubborn"), toolCall("2", "c")]
      const fiber = yield* Effect.forkChild(
        runBatch(
          assistantMessage(...calls),
          [scripted("stubborn", stubborn(rec)), scripted("c", cooperative(rec, gates))],
          rec.sink,
          {
            signal: controller.signal
          }
        )
      )
      yield* within(Effect.all([rec.reached("exec:1"), rec.reached("exec:2")]), "both executing")
      yield* settleFibers
      yield* Effect.sync(() => controller.abort())
      yield* settleFibers
      yield* TestClock.adjust("1999 millis")
      assert.isUndefined(fiber.pollUnsafe(), "waits for the default grace period of 2 seconds")
      yield* TestClock.adjust("1 millis")
      const result = yield* within(Fiber.join(fiber), "the aborted batch")
      assert.isTrue(result.aborted)
      assert.deepStrictEqual(result.messages.map(textOf), [
        `${interruptedText("stubborn")} It did not stop when cancelled and was abandoned.`,
        interruptedText("c")
      ])
      assert.deepStrictEqual(result.messages[0]!.details, { aborted: true, started: true, abandoned: true })
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 8 abandonAfter sets the grace period", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const controller = new AbortController()
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(toolCall("1", "stubborn")), [scripted("stubborn", stubborn(rec))], rec.sink, {
          signal: controller.signal,
          abandonAfter: "100 millis"
        })
      )
      yield* within(rec.reached("exec:1"), "executing")
      yield* settleFibers
      yield* Effect.sync(() => controller.abort())
      yield* settleFibers
      yield* TestClock.adjust("100 millis")
      const result = yield* within(Fiber.join(fiber), "the aborted batch")
      assert.deepStrictEqual(result.messages.map(textOf), [
        `${interruptedText("stubborn")} It did not stop when cancelled and was abandoned.`
      ])
    }).pipe(unblockOnExit))

  // Issue 16 item 2: promise-based tools written with Tool.tryPromise get the grace period and the honest text.
  for (const mode of ["parallel", "sequential"] as const) {
    it.effect(`TE 8 a promise tool that ignores its signal gets the grace period, then is abandoned (${mode})`, () =>
      Effect.gen(function*() {
        const rec = makeRecorder()
        const controller = new AbortController()
        let toolSignal: AbortSignal | undefined
        const ignoring: Script = () =>
          Tool.tryPromise((signal) => {
            toolSignal = signal
            rec.markUnsafe("exec:1")
            return new Promise<ToolResult>(() => {})
          })
        const fiber = yield* Effect.forkChild(
          runBatch(assistantMessage(toolCall("1", "p")), [scripted("p", ignoring)], rec.sink, {
            signal: controller.signal,
            toolExecution: mode
          })
        )
        yield* within(rec.reached("exec:1"), "executing")
        yield* settleFibers
        yield* Effect.sync(() => controller.abort())
        yield* settleFibers
        assert.isTrue(toolSignal!.aborted, "the promise's signal fired")
        yield* TestClock.adjust("1999 millis")
        assert.isUndefined(fiber.pollUnsafe(), "the promise gets the grace period to settle")
        yield* TestClock.adjust("1 millis")
        const result = yield* within(Fiber.join(fiber), "the aborted batch")
        assert.deepStrictEqual(result.messages.map(textOf), [
          `${interruptedText("p")} It did not stop when cancelled and was abandoned.`
        ])
        assert.deepStrictEqual(result.messages[0]!.details, { aborted: true, started: true, abandoned: true })
      }).pipe(unblockOnExit))

    it.effect(`TE 8 a promise tool that settles on its signal within the grace period is interrupted, not abandoned (${mode})`, () =>
      Effect.gen(function*() {
        const rec = makeRecorder()
        const controller = new AbortController()
        let settle: (() => void) | undefined
        // Stops when asked, but takes its time: it rejects only when the test says so.
        const slowToStop: Script = () =>
          Tool.tryPromise((signal) =>
            new Promise<ToolResult>((_, reject) => {
              rec.markUnsafe("exec:1")
              signal.addEventListener("abort", () => {
                settle = () => {
                  rec.markUnsafe("settled:1")
                  reject(new Error("stopped"))
                }
              }, { once: true })
            })
          )
        const fiber = yield* Effect.forkChild(
          runBatch(assistantMessage(toolCall("1", "p")), [scripted("p", slowToStop)], rec.sink, {
            signal: controller.signal,
            toolExecution: mode
          })
        )
        yield* within(rec.reached("exec:1"), "executing")
        yield* settleFibers
        yield* Effect.sync(() => controller.abort())
        yield* settleFibers
        yield* TestClock.adjust("1 second")
        assert.isUndefined(fiber.pollUnsafe(), "the batch waits for the promise to settle")
        yield* Effect.sync(() => settle!())
        const result = yield* within(Fiber.join(fiber), "the aborted batch")
        assert.deepStrictEqual(result.messages.map(textOf), [interruptedText("p")])
        assert.deepStrictEqual(result.messages[0]!.details, { aborted: true, started: true, abandoned: false })
        assertBefore(rec.trace, "settled:1", "end:1")
      }).pipe(unblockOnExit))
  }

  it.effect("TE 3 a promise tool that ignores its signal times out, then is abandoned after the grace period", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const ignoring: Script = () =>
        Tool.tryPromise(() => {
          rec.markUnsafe("exec:1")
          return new Promise<ToolResult>(() => {})
        })
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(toolCall("1", "p")), [scripted("p", ignoring, { timeout: "1 second" })], rec.sink, {
          abandonAfter: "500 millis"
        })
      )
      yield* within(rec.reached("exec:1"), "executing")
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("499 millis")
      assert.isUndefined(fiber.pollUnsafe(), "still waiting within the grace period")
      yield* TestClock.adjust("1 millis")
      const result = yield* within(Fiber.join(fiber), "the batch")
      assert.strictEqual(
        textOf(result.messages[0]!),
        "Tool p timed out after 1s and was abandoned: it did not stop when cancelled"
      )
    }).pipe(unblockOnExit))

  it.effect("TE 3 a promise tool's rejection is an error result with the error's own message", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const failing: Script = () => Tool.tryPromise(() => Promise.reject(new Error("disk full")))
      const result = yield* runBatch(assistantMessage(toolCall("1", "p")), [scripted("p", failing)], rec.sink)
      assert.strictEqual(textOf(result.messages[0]!), "disk full")
      assert.isTrue(result.messages[0]!.isError)
    }))

  it.effect("TE 8 ctx.signal fires when interruption is requested, so a tool whose cleanup waits on it is not abandoned", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const controller = new AbortController()
      // A promise-style "process" that exits only when the tool's AbortSignal fires, and a release step that
      // waits for it to exit (a release runs uninterruptibly, as finalizers do).
      const processTool: Script = (_args, ctx) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            const signal = ctx.signal
            return new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }))
          }),
          () => Effect.andThen(rec.mark("exec:1"), Effect.never),
          (exited) => Effect.andThen(Effect.promise(() => exited), rec.mark("process-exited:1"))
        )
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(toolCall("1", "proc")), [scripted("proc", processTool)], rec.sink, {
          signal: controller.signal
        })
      )
      yield* within(rec.reached("exec:1"), "executing")
      yield* settleFibers
      yield* Effect.sync(() => controller.abort())
      yield* within(rec.reached("process-exited:1"), "the process exiting on its signal")
      const result = yield* within(Fiber.join(fiber), "the aborted batch")
      assert.deepStrictEqual(result.messages.map(textOf), [interruptedText("proc")])
      assert.deepStrictEqual(result.messages[0]!.details, { aborted: true, started: true, abandoned: false })
      assertBefore(rec.trace, "process-exited:1", "end:1")
    }).pipe(unblockOnExit))

  for (
    const [via, mode] of (["signal", "fiber interruption", "fiber interruption, no signal"] as const).flatMap((via) =>
      (["parallel", "sequential"] as const).map((mode) => [via, mode] as const)
    )
  ) {
    it.effect(`TE 8 an abort (${via}) arriving just as a tool starts still interrupts that tool (${mode})`, () =>
      Effect.gen(function*() {
        const rec = makeRecorder()
        const gates = makeGates()
        const controller = new AbortController()
        // eslint-disable-next-line prefer-const -- assigned after the tool closure that reads it is made
        let batch: Fiber.Fiber<unknown> | undefined
        // The abort lands while the tool is starting, before the batch has begun waiting for it.
        const tool: Script = (args, ctx) =>
          Effect.andThen(
            Effect.sync(() => via === "signal" ? controller.abort() : batch!.interruptUnsafe()),
            cooperative(rec, gates)(args, ctx)
          )
        const calls = [toolCall("1", "c")]
        batch = yield* Effect.forkChild(
          runBatch(
            assistantMessage(...calls),
            [scripted("c", tool)],
            rec.sink,
            via === "fiber interruption, no signal"
              ? { toolExecution: mode }
              : { signal: controller.signal, toolExecution: mode }
          )
        )
        yield* within(Fiber.await(batch), "the aborted batch")
        yield* settleFibers
        assert.include(rec.trace, "exec:1")
        assertBefore(rec.trace, "interrupted:1", "end:1")
        assertBefore(rec.trace, "finalized:1", "end:1")
        assertBefore(rec.trace, "signal:1", "end:1")
        const messages = rec.ofType("message_end").map((e) => e.message as ToolResultMessage)
        assert.deepStrictEqual(messages.map(textOf), [interruptedText("c")])
        assertBatchInvariants(rec.events, calls, messages)
      }).pipe(unblockOnExit))
  }

  it.effect("TE 8 a tool that aborts the run and returns at once is not finalized, nor is any later call (sequential)", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const controller = new AbortController()
      const afterCalls: Array<string> = []
      // The abort fires inside the tool's only step, which then returns: the batch is stopping by the time
      // the tool ends, and must not go on to finalize it (or to start the next call).
      const tool: Script = (_args, ctx) =>
        Effect.sync(() => {
          controller.abort()
          return { content: [{ type: "text" as const, text: `ok ${ctx.toolCallId}` }], details: {} }
        })
      const calls = [toolCall("1", "a"), toolCall("2", "m")]
      const result = yield* within(
        runBatch(assistantMessage(...calls), [scripted("a", tool), scripted("m", marking(rec))], rec.sink, {
          signal: controller.signal,
          toolExecution: "sequential",
          afterToolCall: (c) => Effect.sync(() => void afterCalls.push(c.toolCall.id))
        }),
        "the aborted batch"
      )
      assert.deepStrictEqual(afterCalls, [])
      assert.notInclude(rec.trace, "exec:2")
      assert.isTrue(result.aborted)
      assert.deepStrictEqual(result.messages.map(textOf), [interruptedText("a"), notStartedText("m")])
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  for (const mode of ["parallel", "sequential"] as const) {
    it.effect(`TE 8 an abandoned tool emits nothing after the batch's last message, and is never finalized (${mode})`, () =>
      Effect.gen(function*() {
        const rec = makeRecorder()
        const gates = makeGates()
        const controller = new AbortController()
        const afterCalls: Array<string> = []
        const tool: Script = (_args, ctx) =>
          Effect.uninterruptible(
            rec.mark("exec:1").pipe(
              Effect.andThen(gates.wait("wake")),
              Effect.andThen(ctx.update({ content: [], details: "zombie update" })),
              Effect.andThen(rec.mark("zombie-done")),
              Effect.as({ content: [], details: {} })
            )
          )
        const calls = [toolCall("1", "z")]
        const fiber = yield* Effect.forkChild(
          runBatch(assistantMessage(...calls), [scripted("z", tool)], rec.sink, {
            signal: controller.signal,
            abandonAfter: "1 second",
            toolExecution: mode,
            afterToolCall: (c) => Effect.sync(() => void afterCalls.push(c.toolCall.id))
          })
        )
        yield* within(rec.reached("exec:1"), "executing")
        yield* settleFibers
        yield* Effect.sync(() => controller.abort())
        yield* settleFibers
        yield* TestClock.adjust("1 second")
        const result = yield* within(Fiber.join(fiber), "the aborted batch")
        const count = rec.events.length
        yield* gates.open("wake")
        yield* within(rec.reached("zombie-done"), "the abandoned tool finishing")
        yield* settleFibers
        assert.strictEqual(rec.events.length, count, "no event after the batch")
        assert.deepStrictEqual(afterCalls, [], "afterToolCall never runs for an abandoned call")
        assertBatchInvariants(rec.events, calls, result.messages)
      }).pipe(unblockOnExit))
  }

  // Sequential mode runs a tool in the batch's work fiber: abandoning it abandons that fiber, and no later
  // call starts.
  it.effect("TE 8 a tool that ignores cancellation is abandoned after the grace period (sequential)", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const controller = new AbortController()
      const calls = [toolCall("1", "stubborn"), toolCall("2", "c")]
      const fiber = yield* Effect.forkChild(
        runBatch(
          assistantMessage(...calls),
          [scripted("stubborn", stubborn(rec)), scripted("c", cooperative(rec, gates))],
          rec.sink,
          { signal: controller.signal, toolExecution: "sequential" }
        )
      )
      yield* within(rec.reached("exec:1"), "executing")
      yield* settleFibers
      yield* Effect.sync(() => controller.abort())
      yield* settleFibers
      yield* TestClock.adjust("1999 millis")
      assert.isUndefined(fiber.pollUnsafe(), "waits for the default grace period of 2 seconds")
      yield* TestClock.adjust("1 millis")
      const result = yield* within(Fiber.join(fiber), "the aborted batch")
      assert.isTrue(result.aborted)
      assert.notInclude(rec.trace, "exec:2")
      assert.deepStrictEqual(result.messages.map(textOf), [
        `${interruptedText("stubborn")} It did not stop when cancelled and was abandoned.`,
        notStartedText("c")
      ])
      assert.deepStrictEqual(result.messages[0]!.details, { aborted: true, started: true, abandoned: true })
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))
})

// ---------------------------------------------------------------------------------------------------------
// TE 9 Bad input and faults
// ---------------------------------------------------------------------------------------------------------

describe("TE 9 bad input and faults", () => {
  for (const mode of ["parallel", "sequential"] as const) {
    it.effect(`TE 9 duplicate ids (${mode}): the first runs, a later duplicate gets an error naming the id`, () =>
      Effect.gen(function*() {
        const rec = makeRecorder()
        const calls = [toolCall("dup", "a"), toolCall("other", "a"), toolCall("dup", "a")]
        const result = yield* runBatch(assistantMessage(...calls), [scripted("a", marking(rec))], rec.sink, {
          toolExecution: mode
        })
        assert.deepStrictEqual(rec.trace.filter((e) => e.startsWith("exec:")).sort(), ["exec:dup", "exec:other"])
        assert.strictEqual(textOf(result.messages[0]!), "ok dup")
        assert.isFalse(result.messages[0]!.isError)
        assert.isTrue(result.messages[2]!.isError)
        const text = textOf(result.messages[2]!)
        assert.include(text, "\"dup\"")
        assert.include(text, "duplicate")
        assertBatchInvariants(rec.events, calls, result.messages)
      }))
  }

  it.effect("TE 9.4 outcome texts bound what they echo: a huge tool name, call id, and argument value", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const huge = "y".repeat(1_000_000)
      const calls = [
        toolCall("1", huge),
        toolCall("2", "n", { n: huge }),
        toolCall("1", "n", { n: 1 }),
        toolCall(huge, "n", { n: 1 }),
        toolCall(huge, "n", { n: 1 })
      ]
      const result = yield* runBatch(
        assistantMessage(...calls),
        [scripted("n", marking(rec), { parameters: NumberArgs })],
        rec.sink
      )
      const texts = result.messages.map(textOf)
      // Call 3 ran (its text is the test tool's own); every other call ended with an outcome text.
      for (const i of [0, 1, 2, 4]) assert.isBelow(texts[i]!.length, 3_000)
      assert.match(texts[0]!, /^Tool y+…\[\d+ characters left out\]…y+ not found$/)
      assert.include(texts[1]!, "Validation failed for tool \"n\"")
      assert.include(texts[1]!, "characters left out]")
      assert.include(texts[4]!, "duplicate")
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  const faultySink = (rec: Recorder, fault: (event: AgentEvent) => Effect.Effect<void>): EventSink.EventSinkShape => ({
    emit: (event) => Effect.andThen(rec.sink.emit(event), fault(event))
  })
  const faultCalls = [toolCall("1", "a"), toolCall("2", "nope"), toolCall("3", "a")]
  const expectNormal = (rec: Recorder, result: { messages: ReadonlyArray<ToolResultMessage>; aborted: boolean }) => {
    assert.isFalse(result.aborted)
    assert.deepStrictEqual(result.messages.map(textOf), ["ok 1", "Tool nope not found", "ok 3"])
    assertBatchInvariants(rec.events, faultCalls, result.messages)
  }

  it.effect("TE 9 a subscriber whose emit fails never breaks the batch", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const sink = faultySink(rec, () => Effect.fail(new Error("subscriber failed")) as unknown as Effect.Effect<void>)
      const result = yield* runBatch(assistantMessage(...faultCalls), [scripted("a", marking(rec))], sink)
      expectNormal(rec, result)
    }))

  it.effect("TE 9 a subscriber whose emit dies never breaks the batch", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const sink = faultySink(rec, () => Effect.die(new Error("subscriber crashed")))
      const result = yield* runBatch(assistantMessage(...faultCalls), [scripted("a", marking(rec))], sink)
      expectNormal(rec, result)
    }))

  it.effect("TE 9 a subscriber whose emit throws (instead of returning an Effect) never breaks the batch", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const sink: EventSink.EventSinkShape = {
        emit: (event) => {
          Effect.runSync(rec.sink.emit(event))
          throw new Error("subscriber threw")
        }
      }
      const result = yield* runBatch(assistantMessage(...faultCalls), [scripted("a", marking(rec))], sink)
      expectNormal(rec, result)
    }))

  for (const mode of ["parallel", "sequential"] as const) {
    it.effect(`TE 9 a synchronous subscriber that throws never breaks the batch, and each failure is logged in order (${mode})`, () =>
      Effect.gen(function*() {
        const rec = makeRecorder()
        const seen: Array<string> = []
        // A callback sink is delivered synchronously, without an Effect per event (the batch's fast path).
        const sink = EventSink.fromCallback((event) => {
          Effect.runSync(rec.sink.emit(event))
          seen.push(event.type)
          throw new Error("subscriber threw")
        })
        const logger = Logger.make((options) => {
          const message = options.message
          seen.push(`${options.logLevel}: ${Array.isArray(message) ? message[0] : String(message)}`)
        })
        const result = yield* runBatch(assistantMessage(...faultCalls), [scripted("a", marking(rec))], sink, {
          toolExecution: mode
        }).pipe(Effect.provideService(References.CurrentLoggers, new Set([logger])))
        expectNormal(rec, result)
        // Every delivery's warning comes right after it, before the next event (message_end included).
        const events = seen.filter((s) => !s.startsWith("Warn"))
        assert.strictEqual(events.length, 12)
        assert.strictEqual(seen.length, 24)
        for (let i = 0; i < seen.length; i += 2) {
          assert.strictEqual(seen[i + 1], `Warn: effect-agent: an event subscriber failed on ${seen[i]}`)
        }
      }))
  }

  const abortingEvents = ["tool_execution_start", "tool_execution_end", "message_start"] as const
  for (const mode of ["parallel", "sequential"] as const) {
    for (const on of abortingEvents) {
      it.effect(`TE 8.3, TE 9.2 a synchronous subscriber that aborts and throws on ${on} still gets every end and message (${mode})`, () =>
        Effect.gen(function*() {
          const rec = makeRecorder()
          const controller = new AbortController()
          // Found by the property test (sink "throwing"): the failed delivery's warning is an Effect, and an abort
          // raised by the same delivery must not cut a call off its end event or its message (it cut the
          // announcement between message_start and message_end).
          const sink = EventSink.fromCallback((event) => {
            Effect.runSync(rec.sink.emit(event))
            if (event.type === on) {
              controller.abort()
              throw new Error("subscriber threw")
            }
          })
          const result = yield* runBatch(assistantMessage(...faultCalls), [scripted("a", marking(rec))], sink, {
            toolExecution: mode,
            signal: controller.signal
          })
          assert.isTrue(result.aborted)
          assertBatchInvariants(rec.events, faultCalls, result.messages)
        }))
    }
  }

  it.effect("TE 9 a slow subscriber delays the batch but never breaks it or reorders events", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const sink = faultySink(rec, () => Effect.sleep("1 second"))
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...faultCalls), [scripted("a", marking(rec))], sink)
      )
      for (let i = 0; i < 20; i++) yield* TestClock.adjust("1 second")
      const result = yield* within(Fiber.join(fiber), "the batch")
      expectNormal(rec, result)
      const order = rec.labels("start", "end")
      assert.deepStrictEqual(order.slice(0, 4), ["start:1", "start:2", "end:2", "start:3"])
      assert.deepStrictEqual(order.slice(4).sort(), ["end:1", "end:3"])
    }).pipe(unblockOnExit))

  it.effect("TE 8.5, TE 9.2 an aborted batch still settles when a subscriber is stuck", () => {
    const gates = makeGates()
    return Effect.gen(function*() {
      const rec = makeRecorder()
      const controller = new AbortController()
      let stuck = false
      // From the first end event on, the subscriber never returns (until the test is over).
      const sink = faultySink(rec, (event) =>
        Effect.suspend(() => {
          if (event.type === "tool_execution_end") stuck = true
          return stuck ? gates.wait("test over") : Effect.void
        }))
      const calls = [toolCall("1", "a"), toolCall("2", "a")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [scripted("a", marking(rec))], sink, { signal: controller.signal })
      )
      yield* within(rec.reached("end:1"), "the first end event")
      yield* settleFibers
      yield* Effect.sync(() => controller.abort())
      for (let i = 0; i < 10; i++) yield* TestClock.adjust("2 seconds")
      const result = yield* within(Fiber.join(fiber), "the aborted batch")
      assert.isTrue(result.aborted)
      assert.strictEqual(result.messages.length, 2)
      assert.deepStrictEqual(result.messages.map((m) => m.toolCallId), ["1", "2"])
      assert.strictEqual(textOf(result.messages[0]!), "ok 1", "call 1 had settled: its real result is kept")
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(Effect.ensuring(gates.open("test over")), unblockOnExit)
  })

  // TE 9.5: however many calls complete at once, other fibers run while the batch works. A ticker fiber
  // counts its turns; each step reads the count at the first and the last call: the handler (execute), the
  // `beforeToolCall` hook when there is one (prepare), and the subscriber at each `message_end` (results).
  for (const mode of ["parallel", "sequential"] as const) {
    for (const shape of ["succeed", "sync", "sync with both hooks"] as const) {
      it.effect(`TE 9.5 a batch of 5000 instant calls (Effect.${shape}, ${mode}) lets other fibers run in every step`, () =>
        Effect.gen(function*() {
          const n = 5000
          const last = `c${n - 1}`
          let ticks = 0
          const seen: Record<"execute" | "prepare" | "results", Array<number>> = {
            execute: [],
            prepare: [],
            results: []
          }
          const read = (step: keyof typeof seen, id: string) => {
            if (id === "c0" || id === last) seen[step].push(ticks)
          }
          const ticker = yield* Effect.forkChild(Effect.forever(Effect.andThen(
            Effect.yieldNow,
            Effect.sync(() => {
              ticks++
            })
          )))
          const result = { content: [{ type: "text" as const, text: "ok" }], details: {} }
          const instant: Script = (_args, ctx) => {
            read("execute", ctx.toolCallId)
            return shape === "succeed" ? Effect.succeed(result) : Effect.sync(() => result)
          }
          const hooks = shape === "sync with both hooks"
            ? {
              beforeToolCall: (ctx: BeforeToolCallContext) => Effect.sync(() => read("prepare", ctx.toolCall.id)),
              afterToolCall: () => Effect.sync(() => undefined)
            }
            : {}
          const calls = Array.from({ length: n }, (_, i) => toolCall(`c${i}`, "t"))
          const batch = yield* runBatch(
            assistantMessage(...calls),
            [scripted("t", instant)],
            EventSink.fromCallback((event) => {
              if (event.type === "message_end" && event.message.role === "toolResult") {
                read("results", (event.message as ToolResultMessage).toolCallId)
              }
            }),
            { toolExecution: mode, ...hooks }
          )
          yield* Fiber.interrupt(ticker)
          assert.strictEqual(batch.messages.length, n)
          const steps = shape === "sync with both hooks"
            ? (["execute", "prepare", "results"] as const)
            : (["execute", "results"] as const)
          for (const step of steps) {
            assert.strictEqual(seen[step].length, 2, step)
            assert.isAbove(
              seen[step][1]!,
              seen[step][0]!,
              `the ticker ran between the first and the last call (${step})`
            )
          }
        }))
    }
  }
})
