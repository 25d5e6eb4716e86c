/** Issue 16, item 6: `ls`, `find` and `grep` respect .gitignore files (nested ones too) and never show .git. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { find, grep, ls } from "../../src/tools/index.ts"
import { platform, type Sandbox, sandbox, textOf } from "./helpers.ts"

/** Every file holds a TODO line, so what grep prints is what it searched. */
const ignoredProject = (box: Sandbox) =>
  Effect.gen(function*() {
    yield* box.put(".gitignore", "# build output\n*.log\nbuild/\n/secret.txt\n!keep.log\n")
    yield* box.put(".git/config", "TODO in git\n")
    yield* box.put("a.log", "TODO log\n")
    yield* box.put("keep.log", "TODO keep\n")
    yield* box.put("build/out.js", "TODO build\n")
    yield* box.put("secret.txt", "TODO secret\n")
    yield* box.put("docs/b.tmp", "TODO docs tmp\n")
    yield* box.put("src/.gitignore", "generated/\n!important.log\n*.tmp\n")
    yield* box.put("src/secret.txt", "TODO not the root one\n")
    yield* box.put("src/generated/x.ts", "TODO generated\n")
    yield* box.put("src/important.log", "TODO important\n")
    yield* box.put("src/main.ts", "TODO main\n")
    yield* box.put("src/a.tmp", "TODO tmp\n")
    // A worktree's .git is a file: not listed either.
    yield* box.put("wt/.git", "gitdir: elsewhere TODO\n")
    yield* box.put("wt/code.ts", "TODO worktree\n")
  })

const searched = [
  "docs/b.tmp:1: TODO docs tmp",
  "keep.log:1: TODO keep",
  "src/important.log:1: TODO important",
  "src/main.ts:1: TODO main",
  "src/secret.txt:1: TODO not the root one",
  "wt/code.ts:1: TODO worktree"
].join("\n")

describe(".gitignore in grep, find and ls", () => {
  it.effect("grep skips what the .gitignore files ignore: root and nested rules, anchors, negations", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* ignoredProject(box)
      assert.strictEqual(textOf(yield* box.run(grep, { pattern: "TODO" })), searched)
    }).pipe(Effect.provide(platform)))

  it.effect("find lists neither ignored entries nor .git", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* ignoredProject(box)
      assert.strictEqual(
        textOf(yield* box.run(find, { pattern: "*" })),
        [
          ".gitignore",
          "docs/",
          "docs/b.tmp",
          "keep.log",
          "src/",
          "src/.gitignore",
          "src/important.log",
          "src/main.ts",
          "src/secret.txt",
          "wt/",
          "wt/code.ts"
        ].join("\n")
      )
      // Searching from a subdirectory still applies the rules above it.
      assert.strictEqual(textOf(yield* box.run(find, { pattern: "*.log", path: "src" })), "src/important.log")
    }).pipe(Effect.provide(platform)))

  it.effect("ls leaves out ignored entries and .git, and says how many it left out", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* ignoredProject(box)
      const root = yield* box.run(ls, {})
      assert.strictEqual(
        textOf(root),
        ".gitignore\ndocs/\nkeep.log\nsrc/\nwt/\n\n[3 entries ignored by .gitignore not shown.]"
      )
      assert.strictEqual(root.details.ignored, 3)
      assert.strictEqual(root.details.total, 5)
      assert.strictEqual(
        textOf(yield* box.run(ls, { path: "src" })),
        ".gitignore\nimportant.log\nmain.ts\nsecret.txt\n\n[2 entries ignored by .gitignore not shown.]"
      )
      assert.strictEqual(textOf(yield* box.run(ls, { path: "wt" })), "code.ts")
    }).pipe(Effect.provide(platform)))

  it.effect("a directory named on purpose is searched and listed even though it is ignored", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* ignoredProject(box)
      assert.strictEqual(textOf(yield* box.run(grep, { pattern: "TODO", path: "build" })), "build/out.js:1: TODO build")
      assert.strictEqual(textOf(yield* box.run(ls, { path: "build" })), "out.js")
      assert.strictEqual(textOf(yield* box.run(find, { pattern: "*", path: "src/generated" })), "src/generated/x.ts")
      // A file named on purpose too.
      assert.strictEqual(textOf(yield* box.run(grep, { pattern: "TODO", path: "a.log" })), "a.log:1: TODO log")
    }).pipe(Effect.provide(platform)))

  it.effect("reading through FileSystem (DirectFileReads false) gives the same results", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({}, { directFileReads: false })
      yield* ignoredProject(box)
      assert.strictEqual(textOf(yield* box.run(grep, { pattern: "TODO" })), searched)
      const direct = yield* sandbox({}, { directFileReads: true })
      yield* ignoredProject(direct)
      for (const args of [{ pattern: "*" }, { pattern: "*.ts", path: "src" }]) {
        assert.strictEqual(textOf(yield* box.run(find, args)), textOf(yield* direct.run(find, args)))
      }
    }).pipe(Effect.provide(platform)))

  it.effect("a .gitignore that is a symbolic link is not read (it could lead out of the workspace)", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.fs.writeFileString(box.path.join(box.outside, "rules"), "*.ts\n")
      yield* box.put("a.ts", "TODO a\n")
      yield* box.put("sub/b.ts", "TODO b\n")
      yield* box.fs.symlink(box.path.join(box.outside, "rules"), box.path.join(box.root, ".gitignore"))
      yield* box.fs.symlink(box.path.join(box.outside, "rules"), box.path.join(box.root, "sub", ".gitignore"))
      assert.strictEqual(textOf(yield* box.run(find, { pattern: "*.ts" })), "a.ts\nsub/b.ts")
      assert.strictEqual(textOf(yield* box.run(ls, {})), ".gitignore\na.ts\nsub/")
    }).pipe(Effect.provide(platform)))
})
