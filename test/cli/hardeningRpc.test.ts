/**
 * RPC mode on hostile input (docs/cli.md CLI 12.7, 11.3): a command line of any length is never held in
 * memory past the limit; it gets one failed response and the lines after it are served.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as Agent from "../../src/Agent.ts"
import * as Rpc from "../../src/cli/Rpc.ts"
import { Model } from "../../src/Model.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import { ToolRegistry } from "../../src/ToolRegistry.ts"

const split = (chunks: ReadonlyArray<string>, max: number) =>
  Stream.runCollect(Stream.fromIterable(chunks).pipe(Rpc.splitCommandLines(max)))

describe("Rpc.splitCommandLines (CLI 12.7)", () => {
  it.effect("lines across chunks, CRLF, a last line without newline", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* split(["a\r", "\nb", "c\n\nd"], 10), ["a", "bc", "", "d"])
      assert.deepStrictEqual(yield* split(["x\n"], 10), ["x"])
    }))

  it.effect("a line past the limit, even cut in many chunks, is one LineTooLong and the next line is read", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* split(["ok\n12345", "67890", "12", "3\nnext\n"], 10), [
        "ok",
        { _tag: "LineTooLong", length: 13 },
        "next"
      ])
      assert.deepStrictEqual(yield* split(["0123456789ABC\nx"], 10), [{ _tag: "LineTooLong", length: 13 }, "x"])
      assert.deepStrictEqual(yield* split(["0123456789", "ABC"], 10), [{ _tag: "LineTooLong", length: 13 }])
      // Exactly the limit is a line.
      assert.deepStrictEqual(yield* split(["0123456789\n"], 10), ["0123456789"])
    }))

  it.effect("50 MB without a newline holds no more than the limit: memory stays flat", () =>
    Effect.gen(function*() {
      const mb = "x".repeat(1024 * 1024)
      const before = process.memoryUsage().heapUsed
      const out = yield* Stream.runCollect(
        Stream.range(1, 50).pipe(
          Stream.map(() => mb),
          Stream.concat(Stream.make("\n{}\n")),
          Rpc.splitCommandLines(1024)
        )
      )
      assert.deepStrictEqual(out, [{ _tag: "LineTooLong", length: 50 * 1024 * 1024 }, "{}"])
      // Generous: the old splitter kept the whole 50 MB (100 MB of UTF-16) line.
      assert.isBelow(process.memoryUsage().heapUsed - before, 40 * 1024 * 1024)
    }))
})

describe("Rpc.serve with a too long line (CLI 12.7)", () => {
  it.effect("the line gets one failed response naming it, the next command is answered", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.make({}).pipe(
        Effect.provideService(Model, yield* ScriptedModel.make([])),
        Effect.provide(ToolRegistry.fromEntries([])),
        Effect.orDie
      )
      const out: Array<any> = []
      yield* Rpc.serve({
        agent,
        lines: Stream.make<ReadonlyArray<string | Rpc.LineTooLong>>(
          { _tag: "LineTooLong", length: 20_000_000 },
          `{"type":"get_state","id":"s"}`
        ),
        writeLine: (line) => Effect.sync(() => void out.push(JSON.parse(line)))
      })
      assert.deepStrictEqual(out[0], {
        type: "response",
        success: false,
        error: "line 1: longer than 10 MB (20000000 characters): not read"
      })
      assert.strictEqual(out[1].id, "s")
      assert.isTrue(out[1].success)
    }))
})
