import { assert, describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { InvalidPattern, WrongFileType } from "../../src/tools/errors.ts"
import { find, grep, ls } from "../../src/tools/index.ts"
import { platform, type Sandbox, sandbox, textOf } from "./helpers.ts"

/** A small project tree with the usual noise. */
const project = (box: Sandbox) =>
  Effect.gen(function*() {
    yield* box.put("README.md", "# Demo\nTODO: write docs\n")
    yield* box.put(".env", "SECRET_TODO=1\n")
    yield* box.put("src/index.ts", "export * from './a.ts'\n// TODO: more\n")
    yield* box.put("src/a.ts", "export const a = 1 // todo lowercase\nexport const price = '$5.00'\n")
    yield* box.put("src/deep/b.test.ts", "test('b', () => {})\n// TODO in test\n")
    yield* box.put("Zeta.txt", "zeta\n")
    yield* box.put("node_modules/lib/index.ts", "// TODO in a dependency\n")
    yield* box.put(".git/HEAD", "ref: refs/heads/main TODO\n")
    yield* box.put("bin/blob.bin", new Uint8Array([84, 79, 68, 79, 0, 1, 2, 3]))
    yield* box.fs.makeDirectory(box.path.join(box.root, "empty"))
    yield* box.fs.writeFileString(box.path.join(box.outside, "o.ts"), "// TODO outside\n")
    yield* box.fs.symlink(box.outside, box.path.join(box.root, "out-link"))
  })

describe("ls", () => {
  it.effect("lists entries sorted, directories with a trailing slash, hidden ones included but never .git", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* project(box)
      const result = yield* box.run(ls, {})
      assert.strictEqual(
        textOf(result),
        [".env", "bin/", "empty/", "node_modules/", "out-link/", "README.md", "src/", "Zeta.txt"].join("\n")
      )
      assert.strictEqual(result.details.total, 8)
      assert.isFalse(result.details.truncated)
      assert.strictEqual(textOf(yield* box.run(ls, { path: "src" })), "a.ts\ndeep/\nindex.ts")
      assert.strictEqual(textOf(yield* box.run(ls, { path: "empty" })), "(empty directory)")
    }).pipe(Effect.provide(platform)))

  it.effect("caps the number of entries and says so", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      for (let i = 0; i < 30; i++) yield* box.put(`f${String(i).padStart(2, "0")}.txt`, "")
      const result = yield* box.run(ls, { limit: 10 })
      const [list, note] = textOf(result).split("\n\n")
      const expected = Array.from({ length: 10 }, (_, i) => `f${String(i).padStart(2, "0")}.txt`)
      assert.deepStrictEqual(list.split("\n"), expected)
      assert.strictEqual(note, "[Showing 10 of 30 entries. Use limit=30 to see more.]")
      assert.isTrue(result.details.truncated)
      const capped = yield* sandbox({ lsDefaultEntries: 5 })
      for (let i = 0; i < 7; i++) yield* capped.put(`g${i}`, "")
      expect(textOf(yield* capped.run(ls, {}))).toContain("[Showing 5 of 7 entries.")
    }).pipe(Effect.provide(platform)))

  it.effect("a file is not a directory", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("f.txt", "x")
      const error = yield* box.fail(ls, { path: "f.txt" })
      assert.instanceOf(error, WrongFileType)
      assert.strictEqual(error.message, "f.txt is not a directory; use read to see a file.")
    }).pipe(Effect.provide(platform)))
})

describe("find", () => {
  it.effect("matches names at any depth, skipping .git and node_modules and not following links", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* project(box)
      const result = yield* box.run(find, { pattern: "*.ts" })
      assert.strictEqual(textOf(result), "src/a.ts\nsrc/deep/b.test.ts\nsrc/index.ts")
      assert.deepStrictEqual(result.details.matches, ["src/a.ts", "src/deep/b.test.ts", "src/index.ts"])
      // path patterns, braces, directories
      assert.strictEqual(textOf(yield* box.run(find, { pattern: "src/**/*.test.ts" })), "src/deep/b.test.ts")
      assert.strictEqual(textOf(yield* box.run(find, { pattern: "*.{md,txt}" })), "README.md\nZeta.txt")
      assert.strictEqual(textOf(yield* box.run(find, { pattern: "deep" })), "src/deep/")
      assert.strictEqual(textOf(yield* box.run(find, { pattern: ".env" })), ".env")
      // a search path: results stay relative to the workspace root
      assert.strictEqual(textOf(yield* box.run(find, { pattern: "*.ts", path: "src/deep" })), "src/deep/b.test.ts")
      assert.strictEqual(textOf(yield* box.run(find, { pattern: "*.nothing" })), "No files found matching *.nothing")
    }).pipe(Effect.provide(platform)))

  it.effect("caps the results and says so", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      for (let i = 0; i < 25; i++) yield* box.put(`d${i % 3}/f${i}.log`, "")
      const result = yield* box.run(find, { pattern: "*.log", limit: 7 })
      const [list, note] = textOf(result).split("\n\n")
      assert.strictEqual(list.split("\n").length, 7)
      expect(note).toMatch(/^\[Stopped at 7 results; there are more\./)
      assert.isTrue(result.details.truncated)
      const all = yield* box.run(find, { pattern: "*.log" })
      assert.strictEqual(all.details.matches.length, 25)
      assert.isFalse(all.details.truncated)
    }).pipe(Effect.provide(platform)))
})

describe("grep", () => {
  it.effect("prints path:line: text for regex matches, skipping binary files, .git, node_modules and links", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* project(box)
      const result = yield* box.run(grep, { pattern: "TODO" })
      assert.strictEqual(
        textOf(result),
        [
          ".env:1: SECRET_TODO=1",
          "README.md:2: TODO: write docs",
          "src/deep/b.test.ts:2: // TODO in test",
          "src/index.ts:2: // TODO: more"
        ].join("\n")
      )
      assert.strictEqual(result.details.matches, 4)
      assert.strictEqual(result.details.filesWithMatches, 4)
      assert.strictEqual(result.details.skippedBinary, 1)
      const regex = yield* box.run(grep, { pattern: "^export const \\w+ = \\d" })
      assert.strictEqual(textOf(regex), "src/a.ts:1: export const a = 1 // todo lowercase")
    }).pipe(Effect.provide(platform)))

  it.effect("ignoreCase, literal, glob filter and a single file", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* project(box)
      const insensitive = yield* box.run(grep, { pattern: "todo", ignoreCase: true, glob: "*.ts" })
      assert.strictEqual(
        textOf(insensitive),
        [
          "src/a.ts:1: export const a = 1 // todo lowercase",
          "src/deep/b.test.ts:2: // TODO in test",
          "src/index.ts:2: // TODO: more"
        ].join("\n")
      )
      const pathGlob = yield* box.run(grep, { pattern: "TODO", glob: "src/deep/**" })
      assert.strictEqual(textOf(pathGlob), "src/deep/b.test.ts:2: // TODO in test")
      const literal = yield* box.run(grep, { pattern: "$5.00", literal: true })
      assert.strictEqual(textOf(literal), "src/a.ts:2: export const price = '$5.00'")
      const asRegex = yield* box.run(grep, { pattern: "$5.00" })
      assert.strictEqual(textOf(asRegex), "No matches found")
      const single = yield* box.run(grep, { pattern: "Demo", path: "README.md" })
      assert.strictEqual(textOf(single), "README.md:1: # Demo")
    }).pipe(Effect.provide(platform)))

  it.effect("caps the matches and cuts long lines, saying so", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("many.txt", Array.from({ length: 500 }, (_, i) => `hit ${i}`).join("\n"))
      yield* box.put("wide.txt", `hit ${"y".repeat(2000)}\n`)
      const result = yield* box.run(grep, { pattern: "hit", path: "many.txt" })
      const [list, note] = textOf(result).split("\n\n")
      assert.strictEqual(list.split("\n").length, 100)
      assert.strictEqual(list.split("\n")[99], "many.txt:100: hit 99")
      expect(note).toContain("Stopped at 100 matches; there are more.")
      assert.isTrue(result.details.truncated)
      const wide = yield* box.run(grep, { pattern: "hit", path: "wide.txt" })
      const line = textOf(wide).split("\n")[0]
      assert.strictEqual(line, `wide.txt:1: hit ${"y".repeat(496)}... [line cut]`)
      assert.strictEqual(wide.details.linesCut, 1)
    }).pipe(Effect.provide(platform)))

  it.effect("an invalid regular expression is a clear error", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const error = yield* box.fail(grep, { pattern: "foo(" })
      assert.instanceOf(error, InvalidPattern)
      expect(error.message).toMatch(/^Invalid regular expression "foo\(": .*pass literal: true/)
    }).pipe(Effect.provide(platform)))
})

describe("grep: the whole-text prefilter never changes what is found", () => {
  const Piece = Schema.Literals(["a", "b", "ab", " ", "\n", "\r\n", "\r", "\u2028", "é"])
  const Pattern = Schema.Literals([
    "a",
    "^a",
    "b$",
    "^$",
    "a\\s*b",
    "a(?=\\n)",
    "b(?!.)",
    "(?<=^)b",
    "b(?![\\s\\S])",
    "(?<![\\s\\S])a",
    "\\bab\\b",
    "a|^b",
    "[^a]b",
    "a.b"
  ])
  it.effect.prop(
    "grep prints exactly the lines a line-by-line search matches",
    { pieces: Schema.Array(Piece), pattern: Pattern, ignoreCase: Schema.Boolean },
    ({ ignoreCase, pattern, pieces }) =>
      Effect.gen(function*() {
        const box = yield* sandbox()
        const content = pieces.join("")
        yield* box.put("f.txt", content)
        const regex = new RegExp(pattern, ignoreCase ? "i" : "")
        const expected = content.split("\n")
          .map((line, i) => [i + 1, line.endsWith("\r") ? line.slice(0, -1) : line] as const)
          .filter(([, line]) => regex.test(line))
          .map(([n, line]) => `f.txt:${n}: ${line}`)
        const result = yield* box.run(grep, { pattern, path: "f.txt", ignoreCase, limit: 1000 })
        assert.strictEqual(textOf(result), expected.length === 0 ? "No matches found" : expected.join("\n"))
      }).pipe(Effect.provide(platform)),
    { arbitrary: { runs: 80, size: 60 } }
  )
})
