/** Issue 16, item 6: nothing a built-in tool returns grows with its arguments. */
import { assert, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { FileSystemError, InvalidPattern, PathOutsideWorkspace, PathTooLong } from "../../src/tools/errors.ts"
import { edit, find, grep, ls, read, write } from "../../src/tools/index.ts"
import { platform, sandbox, textOf } from "./helpers.ts"

/** Generous: the echo itself is capped at a few hundred characters, the rest is the sentence around it. */
const BOUND = 1200

const huge = "d/" + "x".repeat(1_000_000)
const long = "missing-" + "y".repeat(3000)

describe("error results cap what they echo back", () => {
  it.effect("a 1 MB path is refused by every tool with a short message, before the file system is asked", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const calls = [
        [read, { path: huge }],
        [ls, { path: huge }],
        [find, { pattern: "*", path: huge }],
        [grep, { pattern: "x", path: huge }],
        [write, { path: huge, content: "x" }],
        [edit, { path: huge, oldText: "a", newText: "b" }]
      ] as const
      for (const [tool, args] of calls) {
        const error = yield* box.fail(tool as any, args)
        assert.instanceOf(error, PathTooLong, tool.name)
        expect(error.message.length, tool.name).toBeLessThan(BOUND)
        expect(error.message).toMatch(/^Path "d\/xxxx.*characters left out.*xxxx" is 1000002 characters long/)
        expect(error.path.length).toBeLessThan(BOUND)
      }
    }).pipe(Effect.provide(platform)))

  it.effect("a long path the file system rejects is echoed cut, whatever the tool", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const calls = [
        [read, { path: long }],
        [ls, { path: long }],
        [find, { pattern: "*", path: long }],
        [grep, { pattern: "x", path: long }],
        [write, { path: `${long}/f.txt`, content: "x" }],
        [edit, { path: long, oldText: "a", newText: "b" }]
      ] as const
      for (const [tool, args] of calls) {
        const error = yield* box.fail(tool as any, args)
        assert.instanceOf(error, FileSystemError, tool.name)
        expect(error.message.length, tool.name).toBeLessThan(BOUND)
        expect(error.message, tool.name).toContain("missing-yyyy")
        expect(error.message, tool.name).toContain("characters left out")
        expect(error.path.length).toBeLessThan(BOUND)
      }
      const outside = yield* box.fail(read, { path: `../${long}` })
      assert.instanceOf(outside, PathOutsideWorkspace)
      expect(outside.message.length).toBeLessThan(BOUND)
    }).pipe(Effect.provide(platform)))

  it.effect("an invalid 1 MB regular expression is named by its start and end only", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const error = yield* box.fail(grep, { pattern: "(" + "a".repeat(1_000_000) })
      assert.instanceOf(error, InvalidPattern)
      expect(error.message.length).toBeLessThan(BOUND)
      expect(error.message).toMatch(
        /^Invalid regular expression "\(aaa.*characters left out.*aaa": Unterminated group\./
      )
      expect(error.pattern.length).toBeLessThan(BOUND)
    }).pipe(Effect.provide(platform)))
})

describe("outcome texts cap the arguments they echo", () => {
  it.effect("find and grep with a 10 000-character pattern that matches nothing", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("a.txt", "hello\n")
      const pattern = "q".repeat(10_000)
      const found = yield* box.run(find, { pattern })
      expect(textOf(found).length).toBeLessThan(BOUND)
      expect(textOf(found)).toMatch(/^No files found matching qqq.*characters left out/)
      expect(found.details.pattern.length).toBeLessThan(BOUND)
      const grepped = yield* box.run(grep, { pattern })
      assert.strictEqual(textOf(grepped), "No matches found")
      expect(grepped.details.pattern.length).toBeLessThan(BOUND)
    }).pipe(Effect.provide(platform)))

  it.effect("a regular expression too large to compile is a typed error, not a defect", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("a.txt", "x\n")
      // V8 parses it, and refuses it only when it first runs it.
      const error = yield* box.fail(grep, { pattern: "g".repeat(100_000) })
      assert.instanceOf(error, InvalidPattern)
      expect(error.message.length).toBeLessThan(BOUND)
      expect(error.message).toMatch(
        /^Invalid regular expression "ggg.*characters left out.*ggg": Regular expression too large\./
      )
    }).pipe(Effect.provide(platform)))

  it.effect("a real path longer than the echo cap is listed whole by find and grep (only arguments are cut)", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const deep = `${"d".repeat(100)}/${"e".repeat(100)}/${"f".repeat(100)}.txt`
      yield* box.put(deep, "needle\n")
      assert.strictEqual(textOf(yield* box.run(find, { pattern: "*.txt" })), deep)
      assert.strictEqual(textOf(yield* box.run(grep, { pattern: "needle" })), `${deep}:1: needle`)
    }).pipe(Effect.provide(platform)))
})
