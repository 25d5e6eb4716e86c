import { assert, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  BinaryFile,
  edit,
  EditMatchError,
  EditNoChange,
  FileSystemError,
  write,
  WrongFileType
} from "../../src/tools/index.ts"
import { platform, sandbox, textOf } from "./helpers.ts"

describe("write", () => {
  it.effect("creates a file and its missing parent directories, then overwrites it", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const created = yield* box.run(write, { path: "a/b/c/new.txt", content: "héllo\n" })
      assert.strictEqual(textOf(created), "Created a/b/c/new.txt (7 bytes).")
      assert.deepStrictEqual(created.details, { path: "a/b/c/new.txt", bytes: 7, created: true })
      assert.strictEqual(yield* box.get("a/b/c/new.txt"), "héllo\n")
      const overwritten = yield* box.run(write, { path: `${box.root}/a/b/c/new.txt`, content: "" })
      assert.strictEqual(textOf(overwritten), "Overwrote a/b/c/new.txt (0 bytes).")
      assert.strictEqual(yield* box.get("a/b/c/new.txt"), "")
      assert.strictEqual(write.executionMode, "sequential")
    }).pipe(Effect.provide(platform)))

  it.effect("refuses to write over a directory, or under a file", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("dir/x.txt", "x")
      const overDir = yield* box.fail(write, { path: "dir", content: "nope" })
      assert.instanceOf(overDir, WrongFileType)
      assert.strictEqual(overDir.message, "dir is a directory; write only writes regular files.")
      const underFile = yield* box.fail(write, { path: "dir/x.txt/y.txt", content: "nope" })
      assert.instanceOf(underFile, FileSystemError)
      expect(underFile.message).toMatch(/^Cannot create directory dir\/x\.txt: /)
      assert.strictEqual(yield* box.get("dir/x.txt"), "x")
    }).pipe(Effect.provide(platform)))
})

describe("edit", () => {
  const source = "function a() {\n  return 1\n}\n\nfunction b() {\n  return 1\n}\n"

  it.effect("replaces the one exact occurrence", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("f.ts", source)
      const result = yield* box.run(edit, {
        path: "f.ts",
        oldText: "function b() {\n  return 1",
        newText: "function b() {\n  // two\n  return 2"
      })
      assert.strictEqual(yield* box.get("f.ts"), source.replace("b() {\n  return 1", "b() {\n  // two\n  return 2"))
      assert.strictEqual(textOf(result), "Edited f.ts: replaced 2 line(s) at line 5 with 3 line(s).")
      assert.deepStrictEqual(result.details, { path: "f.ts", line: 5, linesRemoved: 2, linesAdded: 3, crlf: false })
      assert.strictEqual(edit.executionMode, "sequential")
    }).pipe(Effect.provide(platform)))

  it.effect("zero matches is an error naming the count, and the file is untouched", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("f.ts", source)
      const error = yield* box.fail(edit, { path: "f.ts", oldText: "return  1", newText: "return 3" })
      assert.instanceOf(error, EditMatchError)
      assert.strictEqual(error.count, 0)
      expect(error.message).toMatch(/^oldText was not found in f\.ts \(0 occurrences\)\. It must match the file/)
      assert.strictEqual(yield* box.get("f.ts"), source)
    }).pipe(Effect.provide(platform)))

  it.effect("several matches is an error naming the count, and the file is untouched", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("f.ts", source + "function c() {\n  return 1\n}\n")
      const error = yield* box.fail(edit, { path: "f.ts", oldText: "  return 1\n", newText: "  return 3\n" })
      assert.instanceOf(error, EditMatchError)
      assert.strictEqual(error.count, 3)
      assert.strictEqual(
        error.message,
        "oldText occurs 3 times in f.ts; it must occur exactly once. " +
          "Include more surrounding lines in oldText to pick one occurrence."
      )
      assert.strictEqual(yield* box.get("f.ts"), source + "function c() {\n  return 1\n}\n")
    }).pipe(Effect.provide(platform)))

  it.effect("an identical replacement, an empty oldText, a missing file and a binary file are refused", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("f.ts", source)
      const same = yield* box.fail(edit, { path: "f.ts", oldText: "function a", newText: "function a" })
      assert.instanceOf(same, EditNoChange)
      const empty = yield* box.fail(edit, { path: "f.ts", oldText: "", newText: "x" })
      assert.strictEqual(empty._tag, "SchemaError") // rejected by the parameter Schema
      const missing = yield* box.fail(edit, { path: "nope.ts", oldText: "a", newText: "b" })
      assert.instanceOf(missing, FileSystemError)
      assert.strictEqual(missing.message, "No such file or directory: nope.ts")
      yield* box.put("blob", new Uint8Array([97, 0, 98]))
      assert.instanceOf(yield* box.fail(edit, { path: "blob", oldText: "a", newText: "c" }), BinaryFile)
    }).pipe(Effect.provide(platform)))

  it.effect("matches text with LF line ends in a CRLF file, keeping CRLF and a BOM", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("win.txt", "\uFEFFone\r\ntwo\r\nthree\r\n")
      const result = yield* box.run(edit, { path: "win.txt", oldText: "one\ntwo", newText: "1\n2" })
      assert.isTrue(result.details.crlf)
      const bytes = yield* box.fs.readFile(box.path.join(box.root, "win.txt"))
      assert.strictEqual(new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes), "\uFEFF1\r\n2\r\nthree\r\n")
    }).pipe(Effect.provide(platform)))
})
