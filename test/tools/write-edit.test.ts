import { assert, describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { BinaryFile, EditMatchError, EditNoChange, FileSystemError, WrongFileType } from "../../src/tools/errors.ts"
import { edit, write } from "../../src/tools/index.ts"
import { platform, type Sandbox, sandbox, textOf } from "./helpers.ts"

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

/** The bytes of a file in the sandbox. */
const bytesOf = (box: Sandbox, relative: string) =>
  Effect.map(box.fs.readFile(box.path.join(box.root, relative)), (bytes) => Array.from(bytes))
const latin1 = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0))
const utf8 = (s: string) => new TextEncoder().encode(s)
/** The bytes of the parts one after the other, as a plain array (to compare with {@link bytesOf}). */
const concat = (...parts: Array<Uint8Array>): Array<number> => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return Array.from(out)
}

describe("edit changes no byte outside the replaced text (issue 16, item 4)", () => {
  it.effect("Latin-1 bytes elsewhere in the file stay as they were", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("latin.txt", latin1("caf\xe9 cr\xe8me\nhello world\nna\xefve\xff"))
      const result = yield* box.run(edit, { path: "latin.txt", oldText: "hello world", newText: "héllo there" })
      assert.deepStrictEqual(
        yield* bytesOf(box, "latin.txt"),
        concat(latin1("caf\xe9 cr\xe8me\n"), utf8("héllo there"), latin1("\nna\xefve\xff"))
      )
      assert.deepStrictEqual(result.details, {
        path: "latin.txt",
        line: 2,
        linesRemoved: 1,
        linesAdded: 1,
        crlf: false
      })
    }).pipe(Effect.provide(platform)))

  it.effect("an oldText that spans bytes which are not UTF-8 is refused with a clear message, file untouched", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const original = latin1("caf\xe9 cr\xe8me\n")
      yield* box.put("latin.txt", original)
      // read shows such bytes as U+FFFD: that text is not in the file.
      const error = yield* box.fail(edit, { path: "latin.txt", oldText: "caf\uFFFD", newText: "cafe" })
      assert.instanceOf(error, EditMatchError)
      assert.strictEqual(error.count, 0)
      expect(error.message).toContain("latin.txt is not valid UTF-8")
      expect(error.message).toContain("U+FFFD")
      assert.deepStrictEqual(yield* bytesOf(box, "latin.txt"), Array.from(original))
    }).pipe(Effect.provide(platform)))

  it.effect("CRLF, a BOM and a missing final newline stay byte for byte", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("win.txt", utf8("\uFEFFone\r\ntwo\r\nthree"))
      yield* box.run(edit, { path: "win.txt", oldText: "three", newText: "THREE" })
      assert.deepStrictEqual(yield* bytesOf(box, "win.txt"), concat(utf8("\uFEFFone\r\ntwo\r\nTHREE")))
      yield* box.put("unix.txt", utf8("one\ntwo"))
      yield* box.run(edit, { path: "unix.txt", oldText: "one", newText: "1" })
      assert.deepStrictEqual(yield* bytesOf(box, "unix.txt"), concat(utf8("1\ntwo")))
    }).pipe(Effect.provide(platform)))

  it.effect("in a file whose line ends are all CRLF, line breaks of newText are written as CRLF", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("win.txt", utf8("one\r\ntwo\r\n"))
      const result = yield* box.run(edit, { path: "win.txt", oldText: "two", newText: "two\nthree" })
      assert.deepStrictEqual(yield* bytesOf(box, "win.txt"), concat(utf8("one\r\ntwo\r\nthree\r\n")))
      assert.isTrue(result.details.crlf)
      // A file with LF line ends keeps LF.
      yield* box.put("mixed.txt", utf8("a\r\nb\nc\n"))
      yield* box.run(edit, { path: "mixed.txt", oldText: "c", newText: "c\nd" })
      assert.deepStrictEqual(yield* bytesOf(box, "mixed.txt"), concat(utf8("a\r\nb\nc\nd\n")))
    }).pipe(Effect.provide(platform)))

  it.effect("the file's mode is kept by edit and by write", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const file = yield* box.put("run.sh", "#!/bin/sh\necho one\n")
      yield* box.fs.chmod(file, 0o755)
      yield* box.run(edit, { path: "run.sh", oldText: "one", newText: "two" })
      assert.strictEqual((yield* box.fs.stat(file)).mode & 0o777, 0o755)
      yield* box.run(write, { path: "run.sh", content: "#!/bin/sh\necho three\n" })
      assert.strictEqual((yield* box.fs.stat(file)).mode & 0o777, 0o755)
      assert.strictEqual(yield* box.get("run.sh"), "#!/bin/sh\necho three\n")
    }).pipe(Effect.provide(platform)))

  /** Bytes without NUL, rich in non-UTF-8 bytes and line breaks; "@" is kept out to mark the target. */
  const Noise = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 255 })))
  it.effect.prop(
    "whatever the bytes around it, only the target changes",
    { before: Noise, after: Noise },
    ({ after, before }) =>
      Effect.gen(function*() {
        const box = yield* sandbox()
        const clean = (xs: ReadonlyArray<number>) => Uint8Array.from(xs.filter((x) => x !== 64))
        const head = clean(before)
        const tail = clean(after)
        yield* box.put("f.bin", Uint8Array.from(concat(head, utf8("@target@"), tail)))
        yield* box.run(edit, { path: "f.bin", oldText: "@target@", newText: "@done@" })
        assert.deepStrictEqual(yield* bytesOf(box, "f.bin"), concat(head, utf8("@done@"), tail))
      }).pipe(Effect.provide(platform)),
    { arbitrary: { runs: 60, size: 60 } }
  )
})
