import { assert, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BinaryFile, FileSystemError, OffsetBeyondEnd, WrongFileType } from "../../src/tools/errors.ts"
import { read } from "../../src/tools/index.ts"
import { platform, sandbox, textOf } from "./helpers.ts"

const numbered = (n: number, width = 0) =>
  Array.from({ length: n }, (_, i) => `line ${i + 1}`.padEnd(width, "x")).join("\n") + "\n"

describe("read", () => {
  it.effect("returns the whole text of a small file", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("src/a.ts", "export const a = 1\nexport const b = 2\n")
      const result = yield* box.run(read, { path: "src/a.ts" })
      assert.strictEqual(textOf(result), "export const a = 1\nexport const b = 2")
      assert.deepStrictEqual(result.details, {
        path: "src/a.ts",
        sizeBytes: 38,
        startLine: 1,
        endLine: 2,
        totalLines: 2,
        truncated: false,
        truncatedBy: undefined
      })
    }).pipe(Effect.provide(platform)))

  it.effect("reads a line range with offset and limit, saying where to continue", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("f.txt", numbered(10))
      const middle = yield* box.run(read, { path: "f.txt", offset: 3, limit: 2 })
      assert.strictEqual(textOf(middle), "line 3\nline 4\n\n[Showing lines 3-4 of 10. Use offset=5 to continue.]")
      assert.strictEqual(middle.details.truncatedBy, "limit")
      const tail = yield* box.run(read, { path: "f.txt", offset: 9, limit: 5 })
      assert.strictEqual(textOf(tail), "line 9\nline 10")
      assert.isFalse(tail.details.truncated)
      // numeric strings are not accepted here (the pipeline coerces them before validation)
      const last = yield* box.run(read, { path: "f.txt", offset: 10 })
      assert.strictEqual(textOf(last), "line 10")
    }).pipe(Effect.provide(platform)))

  it.effect("handles files without a final newline, CRLF line ends and empty files", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("no-eol.txt", "a\nb")
      yield* box.put("crlf.txt", "a\r\nb\r\n")
      yield* box.put("empty.txt", "")
      const noEol = yield* box.run(read, { path: "no-eol.txt" })
      assert.strictEqual(textOf(noEol), "a\nb")
      assert.strictEqual(noEol.details.totalLines, 2)
      assert.strictEqual(textOf(yield* box.run(read, { path: "crlf.txt" })), "a\nb")
      const empty = yield* box.run(read, { path: "empty.txt" })
      assert.strictEqual(textOf(empty), "(empty file)")
      assert.strictEqual(empty.details.totalLines, 0)
    }).pipe(Effect.provide(platform)))

  it.effect("truncates a huge file at the line limit and tells how to continue", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("huge.txt", numbered(200_000)) // ~2.4 MB
      const first = yield* box.run(read, { path: "huge.txt" })
      const text = textOf(first)
      const lines = text.split("\n")
      assert.strictEqual(lines[0], "line 1")
      assert.strictEqual(lines[1999], "line 2000")
      expect(text).toContain(
        "[Showing lines 1-2000 of 200000 (output limit: 2000 lines or 50.0 KB). Use offset=2001 to continue.]"
      )
      assert.isTrue(first.details.truncated)
      assert.strictEqual(first.details.truncatedBy, "lines")
      assert.strictEqual(first.details.endLine, 2000)
      const next = yield* box.run(read, { path: "huge.txt", offset: 2001, limit: 3 })
      expect(textOf(next)).toMatch(/^line 2001\nline 2002\nline 2003\n\n\[Showing lines 2001-2003 of 200000\./)
    }).pipe(Effect.provide(platform)))

  it.effect("truncates at the byte limit when lines are long", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("wide.txt", numbered(1000, 1000)) // 1000 lines of 1000 bytes
      const result = yield* box.run(read, { path: "wide.txt" })
      const body = textOf(result).split("\n\n[")[0]
      assert.isAtMost(Buffer.byteLength(body), 50 * 1024)
      assert.strictEqual(body.split("\n").length, 51) // 51 * 1001 - 1 <= 51200
      assert.strictEqual(result.details.truncatedBy, "bytes")
      expect(textOf(result)).toContain("Use offset=52 to continue.")
    }).pipe(Effect.provide(platform)))

  it.effect("shows only the start of a single line longer than the budget", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("one-line.min.js", "x".repeat(3_000_000))
      const result = yield* box.run(read, { path: "one-line.min.js" })
      assert.strictEqual(result.details.truncatedBy, "long-line")
      const [body, note] = textOf(result).split("\n\n")
      assert.strictEqual(body, "x".repeat(50 * 1024))
      expect(note).toContain("Line 1 is longer than the 50.0 KB output limit")
    }).pipe(Effect.provide(platform)))

  it.effect("limits can be configured", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ readMaxLines: 3 })
      yield* box.put("f.txt", numbered(5))
      const result = yield* box.run(read, { path: "f.txt" })
      expect(textOf(result)).toMatch(/^line 1\nline 2\nline 3\n\n\[Showing lines 1-3 of 5 \(output limit: 3 lines/)
    }).pipe(Effect.provide(platform)))

  it.effect("refuses binary files", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      // An ELF header: binary, and no image (images are returned as images: test/tools/read.image.test.ts).
      const bytes = new Uint8Array(4096)
      bytes.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])
      yield* box.put("program.png", bytes)
      const error = yield* box.fail(read, { path: "program.png" })
      assert.instanceOf(error, BinaryFile)
      expect(error.message).toContain("program.png looks like a binary file")
      assert.strictEqual(error.sizeBytes, 4096)
      // a NUL far past the sniffed prefix does not make a file binary
      yield* box.put("late-nul.txt", "a".repeat(20_000) + "\u0000")
      const late = yield* box.run(read, { path: "late-nul.txt" })
      assert.isFalse(late.details.truncated)
    }).pipe(Effect.provide(platform)))

  it.effect("clear errors for missing files, directories and offsets past the end", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("dir/f.txt", "one\ntwo\n")
      const missing = yield* box.fail(read, { path: "nope.txt" })
      assert.instanceOf(missing, FileSystemError)
      assert.strictEqual(missing.message, "No such file or directory: nope.txt")
      const dir = yield* box.fail(read, { path: "dir" })
      assert.instanceOf(dir, WrongFileType)
      assert.strictEqual(dir.message, "dir is a directory, not a file. Use ls to list it.")
      const past = yield* box.fail(read, { path: "dir/f.txt", offset: 3 })
      assert.instanceOf(past, OffsetBeyondEnd)
      assert.strictEqual(past.message, "Offset 3 is beyond the end of dir/f.txt, which has 2 lines.")
    }).pipe(Effect.provide(platform)))

  it.effect("the parameter JSON Schema is what a model needs", () =>
    Effect.sync(() => {
      const schema = read.jsonSchema as any
      assert.deepStrictEqual(schema.required, ["path"])
      assert.strictEqual(schema.properties.offset.type, "integer")
      assert.strictEqual(schema.properties.limit.type, "integer")
      assert.isString(schema.properties.path.description)
    }))
})
