/**
 * TE 11: a parallel batch schedules by what its calls declare they touch (`Tool.withResources`). Ordering
 * is forced with Deferred gates; no test sleeps for real.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import type { ToolCall } from "../src/Message.ts"
import * as ResourceAccess from "../src/ResourceAccess.ts"
import * as Tool from "../src/Tool.ts"
import type { RegisteredTool } from "../src/ToolRegistry.ts"
import * as ToolRegistry from "../src/ToolRegistry.ts"
import {
  assertBatchInvariants,
  assistantMessage,
  gated,
  makeGates,
  makeRecorder,
  type Recorder,
  runBatch,
  settleFibers,
  textOf,
  toolCall,
  within
} from "./support/batch.ts"

const unblockOnExit = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.ensuring(self, TestClock.adjust("1 hour"))

/** A tool `t` whose calls declare, in their arguments, what they touch (`access`, absent: nothing). */
const Params = Schema.Struct({ access: Schema.optionalKey(Schema.Unknown) })
type Args = typeof Params.Type

const declared = (args: Args) => args.access as ReadonlyArray<ResourceAccess.ResourceAccess>

const touching = (script: Tool.Handler<Args>, resources: Tool.Resources<Args> = declared): RegisteredTool =>
  ToolRegistry.entry(
    Tool.make("t", { description: "test tool t", parameters: Params }),
    Tool.withResources(script, resources)
  )

const call = (id: string, ...access: ReadonlyArray<ResourceAccess.ResourceAccess>): ToolCall =>
  toolCall(id, "t", { access })

/** A call of `t` that declares nothing. */
const plain = (id: string): ToolCall => toolCall(id, "t", {})

const { exclusive, read, write } = ResourceAccess

/** The calls whose tool has begun and not finished, from the trace's `exec:` and `done:` marks. */
const running = (rec: Recorder): Array<string> => {
  const begun = rec.trace.filter((entry) => entry.startsWith("exec:")).map((entry) => entry.slice(5))
  return begun.filter((id) => !rec.trace.includes(`done:${id}`))
}

describe("TE 11 resources", () => {
  it.effect("TE 11.2 two writes of one key run in source order; a read of another key runs beside them", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [call("w1", write("a")), call("w2", write("a")), call("r", read("b"))]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [touching(gated(rec, gates))], rec.sink)
      )
      yield* within(Effect.all([rec.reached("exec:w1"), rec.reached("exec:r")]), "w1 and r executing")
      yield* settleFibers
      assert.deepStrictEqual(running(rec), ["w1", "r"], "w2 waits for w1")
      const waiting = rec.ofType("tool_execution_waiting")
      assert.deepStrictEqual(waiting, [{
        type: "tool_execution_waiting",
        toolCallId: "w2",
        toolName: "t",
        waitingFor: ["w1"]
      }])
      yield* gates.open("w2")
      yield* gates.open("r")
      yield* within(rec.reached("done:r"), "r done")
      yield* settleFibers
      assert.notInclude(rec.trace, "exec:w2", "a read of another key does not let w2 go")
      yield* gates.open("w1")
      const result = yield* Fiber.join(fiber)
      const trace = rec.trace.filter((entry) => !entry.startsWith("msg_"))
      assert.isBelow(trace.indexOf("end:w1"), trace.indexOf("exec:w2"), "w2 starts after w1 ended")
      assertBatchInvariants(rec.events, calls, result.messages)
      assert.deepStrictEqual(result.messages.map(textOf), ["done w1", "done w2", "done r"])
    }).pipe(unblockOnExit))

  it.effect("TE 11.1 reads of one key run together; a write of it waits for all of them, then the next read waits for the write", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [call("r1", read("k")), call("r2", read("k")), call("w", write("k")), call("r3", read("k"))]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [touching(gated(rec, gates))], rec.sink)
      )
      yield* within(Effect.all([rec.reached("exec:r1"), rec.reached("exec:r2")]), "r1 and r2 executing")
      yield* settleFibers
      assert.deepStrictEqual(running(rec), ["r1", "r2"])
      assert.deepStrictEqual(rec.ofType("tool_execution_waiting").map((e) => [e.toolCallId, e.waitingFor]), [
        ["w", ["r1", "r2"]],
        ["r3", ["w"]]
      ])
      yield* gates.open("r1")
      yield* within(rec.reached("done:r1"), "r1 done")
      yield* settleFibers
      assert.deepStrictEqual(running(rec), ["r2"], "the write waits for every read before it")
      yield* gates.open("r2")
      yield* within(rec.reached("exec:w"), "w executing")
      yield* settleFibers
      assert.deepStrictEqual(running(rec), ["w"])
      yield* gates.open("w")
      yield* within(rec.reached("exec:r3"), "r3 executing")
      yield* gates.open("r3")
      const result = yield* Fiber.join(fiber)
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 11.1 a key covers the keys below it: a folder read waits for a write of a file in it", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [
        call("edit", write("/w/src/math.ts")),
        call("other", write("/w/src/format.ts")),
        call("ls", read("/w/src")),
        call("sibling", read("/w/srcs"))
      ]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [touching(gated(rec, gates))], rec.sink)
      )
      yield* within(Effect.all(["edit", "other", "sibling"].map((id) => rec.reached(`exec:${id}`))), "three executing")
      yield* settleFibers
      assert.deepStrictEqual(
        running(rec),
        ["edit", "other", "sibling"],
        "two files of one folder, and a sibling folder"
      )
      assert.deepStrictEqual(rec.ofType("tool_execution_waiting").map((e) => [e.toolCallId, e.waitingFor]), [
        ["ls", ["edit", "other"]]
      ])
      for (const id of ["edit", "sibling", "other", "ls"]) yield* gates.open(id)
      const result = yield* Fiber.join(fiber)
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 11.1 an exclusive call runs alone: after every call before it, before every call after it", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [call("a", read("a")), plain("u"), call("x", exclusive), call("b", read("b")), plain("v")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [touching(gated(rec, gates))], rec.sink)
      )
      yield* within(Effect.all([rec.reached("exec:a"), rec.reached("exec:u")]), "a and u executing")
      yield* settleFibers
      assert.deepStrictEqual(running(rec), ["a", "u"])
      assert.deepStrictEqual(rec.ofType("tool_execution_waiting").map((e) => [e.toolCallId, e.waitingFor]), [
        ["x", ["a", "u"]],
        ["b", ["x"]],
        ["v", ["x"]]
      ])
      yield* gates.open("a")
      yield* gates.open("u")
      yield* within(rec.reached("exec:x"), "x executing")
      yield* settleFibers
      assert.deepStrictEqual(running(rec), ["x"])
      yield* gates.open("x")
      yield* within(Effect.all([rec.reached("exec:b"), rec.reached("exec:v")]), "b and v executing")
      yield* gates.open("b")
      yield* gates.open("v")
      const result = yield* Fiber.join(fiber)
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 11.3 calls that declare nothing run as before: together, with no waiting event", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const calls = [plain("1"), plain("2"), plain("3")]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [touching(gated(rec, gates))], rec.sink)
      )
      yield* within(Effect.all(calls.map((c) => rec.reached(`exec:${c.id}`))), "all executing")
      for (const c of calls) yield* gates.open(c.id)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(rec.ofType("tool_execution_waiting"), [])
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 11.3 a waiting event names only the earlier calls still running", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      // `fast` ends at once, before `slow` and `last` are reached by the execution step.
      const script: Tool.Handler<Args> = (args, ctx) =>
        ctx.toolCallId === "fast"
          ? Effect.succeed(Tool.textResult("fast"))
          : gated(rec, gates)(args, ctx)
      const calls = [call("fast", write("k")), call("slow", write("j")), call("last", write("k"), write("j"))]
      const fiber = yield* Effect.forkChild(runBatch(assistantMessage(...calls), [touching(script)], rec.sink))
      yield* within(rec.reached("exec:slow"), "slow executing")
      yield* settleFibers
      assert.deepStrictEqual(rec.ofType("tool_execution_waiting").map((e) => [e.toolCallId, e.waitingFor]), [
        ["last", ["slow"]]
      ])
      yield* gates.open("slow")
      yield* gates.open("last")
      const result = yield* Fiber.join(fiber)
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 11.4 a sequential batch never asks what its calls touch", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      let asked = 0
      const tool = touching((_args, ctx) => Effect.succeed(Tool.textResult(`ok ${ctx.toolCallId}`)), (args) => {
        asked++
        return declared(args)
      })
      const calls = [call("1", write("a")), call("2", write("a"))]
      const result = yield* runBatch(assistantMessage(...calls), [tool], rec.sink, { toolExecution: "sequential" })
      assert.strictEqual(asked, 0)
      assert.deepStrictEqual(result.messages.map(textOf), ["ok 1", "ok 2"])
      const parallel = yield* runBatch(assistantMessage(...calls), [tool], makeRecorder().sink)
      assert.strictEqual(asked, 2, "asked once per call in a parallel batch")
      assert.deepStrictEqual(parallel.messages.map(textOf), ["ok 1", "ok 2"])
    }))

  it.effect("TE 11.4 resources are asked of the arguments the tool will run with (after beforeToolCall)", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const tool = touching((_args) => Effect.succeed(Tool.textResult("ok")), (args) => {
        seen.push(args.access)
        return Effect.succeed(declared(args))
      })
      yield* runBatch(assistantMessage(call("1", read("given"))), [tool], makeRecorder().sink, {
        beforeToolCall: () => Effect.succeed({ args: { access: [write("replaced")] } })
      })
      assert.deepStrictEqual(seen, [[write("replaced")]])
    }))

  it.effect("TE 11.4 a resources function that dies ends its call as PrepareFailed; the tool never runs", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const ran: Array<string> = []
      const tool = touching((_args, ctx) => Effect.sync(() => (ran.push(ctx.toolCallId), Tool.textResult("ok"))), (
        args
      ) => {
        if (args.access === undefined) throw new Error("cannot tell what this touches")
        return declared(args)
      })
      const calls = [plain("broken"), call("fine", write("a"))]
      const result = yield* runBatch(assistantMessage(...calls), [tool], rec.sink)
      assert.deepStrictEqual(ran, ["fine"])
      assert.strictEqual(textOf(result.messages[0]!), "cannot tell what this touches")
      assert.isTrue(result.messages[0]!.isError)
      assert.deepStrictEqual(result.messages[1]!.isError, false)
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 11.4 a declaration that is not a list of accesses ends its call alone as PrepareFailed", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const ran: Array<string> = []
      const tool = touching((_args, ctx) => Effect.sync(() => (ran.push(ctx.toolCallId), Tool.textResult("ok"))))
      // A read whose key the model left out, and a single access instead of a list.
      const calls = [
        toolCall("keyless", "t", { access: [{ _tag: "Read" }] }),
        toolCall("single", "t", { access: write("a") }),
        call("fine", write("a"))
      ]
      const result = yield* runBatch(assistantMessage(...calls), [tool], rec.sink)
      assert.deepStrictEqual(ran, ["fine"])
      assert.strictEqual(
        textOf(result.messages[0]!),
        `what the call touches is not a list of accesses (read, write, exclusive): [{"_tag":"Read"}]`
      )
      assert.isTrue(result.messages[0]!.isError)
      assert.isTrue(result.messages[1]!.isError)
      assert.isFalse(result.messages[2]!.isError)
      assertBatchInvariants(rec.events, calls, result.messages)
    }))

  it.effect("TE 11.4 an entry written as a plain object keeps its handler's declaration", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const tool: RegisteredTool = {
        tool: Tool.make("t", { description: "test tool t", parameters: Params }),
        handler: Tool.withResources(gated(rec, gates), declared)
      }
      const calls = [call("w1", write("a")), call("w2", write("a"))]
      const fiber = yield* Effect.forkChild(runBatch(assistantMessage(...calls), [tool], rec.sink))
      yield* within(rec.reached("exec:w1"), "w1 executing")
      yield* settleFibers
      assert.deepStrictEqual(running(rec), ["w1"], "w2 waits for w1")
      yield* gates.open("w2")
      yield* gates.open("w1")
      const result = yield* Fiber.join(fiber)
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 11.5 an abort while a call waits: it never starts, and its result says so", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const gates = makeGates()
      const controller = new AbortController()
      const calls = [call("first", write("a")), call("second", write("a"))]
      const fiber = yield* Effect.forkChild(
        runBatch(assistantMessage(...calls), [touching(gated(rec, gates))], rec.sink, {
          signal: controller.signal,
          abandonAfter: "1 second"
        })
      )
      yield* within(rec.reached("exec:first"), "first executing")
      yield* within(rec.reached("tool_execution_waiting"), "second waiting")
      controller.abort()
      const result = yield* Fiber.join(fiber)
      assert.isTrue(result.aborted)
      assert.notInclude(rec.trace, "exec:second")
      assert.strictEqual(
        textOf(result.messages[1]!),
        "Tool t was not executed: the run was aborted before it started."
      )
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  it.effect("TE 11.5 a call lets the ones waiting for it go however it ends: failure, defect, timeout", () =>
    Effect.gen(function*() {
      const rec = makeRecorder()
      const script: Tool.Handler<Args> = (_args, ctx) => {
        switch (ctx.toolCallId) {
          case "fails":
            return Effect.fail(new Error("no"))
          case "dies":
            return Effect.die(new Error("boom"))
          case "slow":
            return Effect.as(Effect.never, Tool.textResult("never"))
          default:
            return Effect.as(rec.mark(`exec:${ctx.toolCallId}`), Tool.textResult(`ok ${ctx.toolCallId}`))
        }
      }
      const calls = [
        call("fails", write("a")),
        call("after-fails", write("a")),
        call("dies", write("b")),
        call("after-dies", write("b")),
        call("slow", write("c")),
        call("after-slow", write("c"))
      ]
      const fiber = yield* Effect.forkChild(runBatch(assistantMessage(...calls), [touching(script)], rec.sink, {
        timeout: "1 second"
      }))
      yield* within(Effect.all([rec.reached("exec:after-fails"), rec.reached("exec:after-dies")]), "two executed")
      yield* settleFibers
      assert.notInclude(rec.trace, "exec:after-slow")
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(result.messages.map(textOf), [
        "no",
        "ok after-fails",
        "boom",
        "ok after-dies",
        "Tool t timed out after 1s",
        "ok after-slow"
      ])
      assertBatchInvariants(rec.events, calls, result.messages)
    }).pipe(unblockOnExit))

  for (const concurrency of [1, 2]) {
    it.effect(`TE 11.6 under a concurrency limit of ${concurrency}, conflicting calls still run in source order`, () =>
      Effect.gen(function*() {
        const rec = makeRecorder()
        const tool = touching((_args, ctx) =>
          Effect.as(rec.mark(`exec:${ctx.toolCallId}`), Tool.textResult(`ok ${ctx.toolCallId}`))
        )
        const calls = [
          call("1", write("a")),
          call("2", read("b")),
          call("3", write("a")),
          call("4", write("b")),
          call("5", read("a"))
        ]
        const result = yield* runBatch(assistantMessage(...calls), [tool], rec.sink, { concurrency })
        const order = rec.trace.filter((e) => e.startsWith("exec:")).map((e) => e.slice(5))
        assert.isBelow(order.indexOf("1"), order.indexOf("3"))
        assert.isBelow(order.indexOf("3"), order.indexOf("5"))
        assert.isBelow(order.indexOf("2"), order.indexOf("4"))
        assertBatchInvariants(rec.events, calls, result.messages)
      }))
  }
})

// ---------------------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------------------

type Declared = ReadonlyArray<ResourceAccess.ResourceAccess> | undefined

/** The rule itself, pairwise: a call that declared nothing writes a key of its own that only "" covers. */
const callsConflict = (a: Declared, ai: number, b: Declared, bi: number): boolean => {
  const left = a ?? [write(`\u0000${ai}`)]
  const right = b ?? [write(`\u0000${bi}`)]
  return left.some((x) => right.some((y) => ResourceAccess.conflicts(x, y)))
}

const Key = Schema.Literals(["", "a", "a/x", "a/y", "b"])
const AccessArb = Schema.Union([
  Schema.TaggedStruct("Read", { key: Key }),
  Schema.TaggedStruct("Write", { key: Key }),
  Schema.TaggedStruct("Exclusive", {})
])
const DeclaredArb = Schema.UndefinedOr(Schema.Array(AccessArb).check(Schema.isMaxLength(2)))
const BatchArb = Schema.Array(DeclaredArb).check(Schema.isMinLength(1), Schema.isMaxLength(7))
const Picks = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 100 }))).check(
  Schema.isMinLength(7),
  Schema.isMaxLength(7)
)
const runs = (n: number) => Math.max(1, Math.round(n * Number(process.env.PROP_RUNS_FACTOR ?? 1)))

const callsOf = (batch: ReadonlyArray<Declared>): Array<ToolCall> =>
  batch.map((access, i) => (access === undefined ? plain(`c${i}`) : call(`c${i}`, ...access)))

describe("TE 11 properties", () => {
  it.effect.prop(
    "a call is handed to its tool exactly when every earlier call it conflicts with has ended, and never before",
    [BatchArb, Picks],
    ([batch, picks]) =>
      Effect.gen(function*() {
        const rec = makeRecorder()
        const gates = makeGates()
        const index = (id: string) => Number(id.slice(1))
        const ended = () => new Set(rec.ofType("tool_execution_end").map((e) => index(e.toolCallId)))
        const called: Array<number> = []
        const problems: Array<string> = []
        // Checked as the handler is called, that is as the call starts executing (TE 8.1's sense).
        const script: Tool.Handler<Args> = (args, ctx) => {
          const i = index(ctx.toolCallId)
          const done = ended()
          for (let e = 0; e < i; e++) {
            if (callsConflict(batch[i], i, batch[e], e) && !done.has(e)) problems.push(`c${i} started while c${e} ran`)
          }
          called.push(i)
          return gated(rec, gates)(args, ctx)
        }
        const calls = callsOf(batch)
        const fiber = yield* Effect.forkChild(runBatch(assistantMessage(...calls), [touching(script)], rec.sink))
        for (let step = 0; ended().size < batch.length; step++) {
          const done = ended()
          const ready = batch.flatMap((_, i) =>
            !done.has(i) && batch.every((_, e) => e >= i || done.has(e) || !callsConflict(batch[i], i, batch[e], e))
              ? [i]
              : []
          )
          yield* within(Effect.all(ready.map((i) => rec.reached(`exec:c${i}`))), `c${ready} executing`)
          const pick = ready[picks[step % picks.length]! % ready.length]!
          yield* gates.open(`c${pick}`)
          yield* within(rec.reached(`end:c${pick}`), `c${pick} ended`)
        }
        const result = yield* Fiber.join(fiber)
        assert.deepStrictEqual(problems, [])
        assert.deepStrictEqual([...called].sort(), batch.map((_, i) => i), "every call ran once")
        assertBatchInvariants(rec.events, calls, result.messages)
        for (const waiting of rec.ofType("tool_execution_waiting")) {
          const i = index(waiting.toolCallId)
          for (const id of waiting.waitingFor) {
            const e = index(id)
            assert.isTrue(e < i && callsConflict(batch[i], i, batch[e], e), `${waiting.toolCallId} waits for ${id}`)
          }
        }
      }).pipe(unblockOnExit),
    { timeout: 60_000, arbitrary: { runs: runs(150) } }
  )

  it.effect.prop(
    "tools that read and write a store give the results of a sequential run, whatever order they finish in",
    [BatchArb, Picks],
    ([batch, picks]) =>
      Effect.gen(function*() {
        // Each call reads what is under its keys when it starts and writes its id under them when it ends,
        // some virtual time later: two conflicting calls that overlapped would see what a sequential run
        // does not.
        const store = new Map<string, Array<string>>()
        const under = (key: string) =>
          [...store.entries()].filter(([k]) => ResourceAccess.conflicts(write(key), read(k))).flatMap(([k, v]) =>
            v.map((id) => `${k}=${id}`)
          ).sort()
        const script: Tool.Handler<Args> = (args, ctx) => {
          const access = args.access as Declared ?? []
          const keys = access.map((item) => (item._tag === "Exclusive" ? "" : item.key))
          const seen = keys.map(under)
          const i = Number(ctx.toolCallId.slice(1))
          return Effect.sleep(picks[i % picks.length]! % 7).pipe(
            Effect.andThen(Effect.sync(() => {
              for (const [n, item] of access.entries()) {
                if (item._tag !== "Read") store.set(keys[n]!, [...(store.get(keys[n]!) ?? []), ctx.toolCallId])
              }
              return Tool.textResult(JSON.stringify(seen))
            }))
          )
        }
        const calls = callsOf(batch)
        const runWith = (options: { readonly toolExecution?: "sequential" }) =>
          Effect.gen(function*() {
            store.clear()
            const fiber = yield* Effect.forkChild(
              runBatch(assistantMessage(...calls), [touching(script)], makeRecorder().sink, options)
            )
            for (let t = 0; t < 8 * calls.length && fiber.pollUnsafe() === undefined; t++) {
              yield* TestClock.adjust(1)
            }
            return (yield* Fiber.join(fiber)).messages.map(textOf)
          })
        const sequential = yield* runWith({ toolExecution: "sequential" })
        const parallel = yield* runWith({})
        assert.deepStrictEqual(parallel, sequential)
      }),
    { timeout: 60_000, arbitrary: { runs: runs(150) } }
  )
})
