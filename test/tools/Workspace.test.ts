import { assert, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, FileSystem, Path } from "effect"
import { PathOutsideWorkspace } from "../../src/tools/errors.ts"
import * as BuiltinTools from "../../src/tools/index.ts"
import { Workspace } from "../../src/tools/index.ts"
import { make as makeWorkspace } from "../../src/tools/Workspace.ts"
import { platform, sandbox, textOf } from "./helpers.ts"

const refused = (exit: Exit.Exit<unknown, unknown>, reason: PathOutsideWorkspace["reason"], shown: string) => {
  assert.isTrue(Exit.isFailure(exit), "expected the path to be refused")
  if (Exit.isFailure(exit)) {
    const error = exit.cause.reasons[0]
    assert.strictEqual(error?._tag, "Fail")
    const value = (error as any).error
    assert.instanceOf(value, PathOutsideWorkspace)
    assert.strictEqual(value.reason, reason)
    expect(value.message).toContain(`"${shown}"`)
    expect(value.message).toContain("outside the workspace")
  }
}

describe("Workspace.resolve", () => {
  it.effect("resolves relative and absolute paths inside the root", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const ws = Context.get(box.context, Workspace)
      const real = ws.root
      assert.strictEqual(yield* ws.resolve("a.txt"), `${real}/a.txt`)
      assert.strictEqual(yield* ws.resolve("./sub/../b.txt"), `${real}/b.txt`)
      assert.strictEqual(yield* ws.resolve(""), real)
      assert.strictEqual(yield* ws.resolve("."), real)
      assert.strictEqual(yield* ws.resolve(`${box.root}/c/d.txt`), `${real}/c/d.txt`) // spelled via the given root
      assert.strictEqual(yield* ws.resolve(`${real}/c/d.txt`), `${real}/c/d.txt`)
      assert.strictEqual(yield* ws.resolve("..x"), `${real}/..x`) // a name starting with dots is fine
      assert.strictEqual(ws.display(`${real}/c/d.txt`), "c/d.txt")
      assert.strictEqual(ws.display(real), ".")
    }).pipe(Effect.provide(platform)))

  it.effect("refuses .. escapes and absolute paths outside", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const ws = Context.get(box.context, Workspace)
      refused(yield* Effect.exit(ws.resolve("../x")), "parent-escape", "../x")
      refused(yield* Effect.exit(ws.resolve("..")), "parent-escape", "..")
      refused(yield* Effect.exit(ws.resolve("sub/../../x")), "parent-escape", "sub/../../x")
      refused(yield* Effect.exit(ws.resolve("/etc/passwd")), "absolute", "/etc/passwd")
      refused(yield* Effect.exit(ws.resolve(`${box.outside}/secret.txt`)), "absolute", `${box.outside}/secret.txt`)
      refused(yield* Effect.exit(ws.resolve(`${box.root}-sibling/x`)), "absolute", `${box.root}-sibling/x`)
    }).pipe(Effect.provide(platform)))

  it.effect("refuses symbolic links that lead outside, even to files that do not exist yet", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const { fs, path } = box
      yield* fs.writeFileString(path.join(box.outside, "secret.txt"), "secret")
      yield* fs.symlink(path.join(box.outside, "secret.txt"), path.join(box.root, "file-link"))
      yield* fs.symlink(box.outside, path.join(box.root, "dir-link"))
      yield* fs.symlink(path.join(box.outside, "nope", "x.txt"), path.join(box.root, "dangling"))
      yield* fs.symlink("../outside", path.join(box.root, "relative-link"))
      yield* fs.makeDirectory(path.join(box.root, "inner"))
      yield* fs.symlink(path.join(box.root, "inner"), path.join(box.root, "inner-link"))
      yield* fs.symlink(path.join(box.root, "loop-b"), path.join(box.root, "loop-a"))
      yield* fs.symlink(path.join(box.root, "loop-a"), path.join(box.root, "loop-b"))
      const ws = Context.get(box.context, Workspace)

      refused(yield* Effect.exit(ws.resolve("file-link")), "symlink", "file-link")
      refused(yield* Effect.exit(ws.resolve("dir-link")), "symlink", "dir-link")
      refused(yield* Effect.exit(ws.resolve("dir-link/secret.txt")), "symlink", "dir-link/secret.txt")
      refused(yield* Effect.exit(ws.resolve("dir-link/new.txt")), "symlink", "dir-link/new.txt")
      refused(yield* Effect.exit(ws.resolve("dir-link/a/b/new.txt")), "symlink", "dir-link/a/b/new.txt")
      refused(yield* Effect.exit(ws.resolve("dangling")), "symlink", "dangling")
      refused(yield* Effect.exit(ws.resolve("relative-link/secret.txt")), "symlink", "relative-link/secret.txt")
      refused(yield* Effect.exit(ws.resolve("loop-a/x")), "symlink-loop", "loop-a/x")
      // links that stay inside are fine
      assert.strictEqual(yield* ws.resolve("inner-link/new.txt"), `${ws.root}/inner/new.txt`)
    }).pipe(Effect.provide(platform)))

  it.effect("works when the root itself is reached through a symbolic link", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const { fs, path } = box
      const alias = path.join(box.outside, "alias")
      yield* fs.symlink(box.root, alias)
      const ws = yield* makeWorkspace(alias)
      const real = yield* fs.realPath(box.root)
      assert.strictEqual(ws.root, real)
      assert.strictEqual(yield* ws.resolve(`${alias}/x.txt`), `${real}/x.txt`)
      refused(yield* Effect.exit(ws.resolve(`${alias}/../x.txt`)), "absolute", `${alias}/../x.txt`)
    }).pipe(Effect.provide(platform)))

  it.effect("the layer fails when the root does not exist", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Effect.gen(function*() {
          return yield* Workspace
        }).pipe(Effect.provide(Workspace.layer("/definitely/not/here")))
      )
      assert.isTrue(Exit.isFailure(exit))
    }).pipe(Effect.provide(platform)))
})

describe("every path-taking tool stays inside the workspace", () => {
  const cases = [
    ["read", (p: string) => [BuiltinTools.read, { path: p }]],
    ["ls", (p: string) => [BuiltinTools.ls, { path: p }]],
    ["find", (p: string) => [BuiltinTools.find, { pattern: "*", path: p }]],
    ["grep", (p: string) => [BuiltinTools.grep, { pattern: "secret", path: p }]],
    ["write", (p: string) => [BuiltinTools.write, { path: p, content: "pwned" }]],
    ["edit", (p: string) => [BuiltinTools.edit, { path: p, oldText: "secret", newText: "pwned" }]]
  ] as const

  for (const [name, call] of cases) {
    it.effect(`${name}: ../x, absolute outside, symlinked file and directory are refused before any I/O`, () =>
      Effect.gen(function*() {
        const box = yield* sandbox()
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const secret = path.join(box.outside, "secret.txt")
        yield* fs.writeFileString(secret, "secret\n")
        yield* fs.symlink(secret, path.join(box.root, "file-link"))
        yield* fs.symlink(box.outside, path.join(box.root, "dir-link"))
        const isDirTool = name === "ls" || name === "find"
        const attempts = isDirTool
          ? ["../outside", box.outside, "dir-link", "dir-link/."]
          : ["../outside/secret.txt", secret, "file-link", "dir-link/secret.txt", "dir-link/new/deep.txt"]
        for (const attempt of attempts) {
          const [tool, args] = call(attempt)
          const error = yield* box.fail(tool as any, args)
          assert.instanceOf(error, PathOutsideWorkspace, `${name} ${attempt}`)
          expect(error.message).toContain(attempt)
        }
        // nothing outside was read into a result, nor written
        assert.strictEqual(yield* fs.readFileString(secret), "secret\n")
        assert.deepStrictEqual((yield* fs.readDirectory(box.outside)).sort(), ["secret.txt"])
      }).pipe(Effect.provide(platform)))
  }

  it.effect("a refused path fails the tool with a message the model can act on", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const error = yield* box.fail(BuiltinTools.read, { path: "../x" })
      expect(error.message).toMatch(/^Path "\.\.\/x" is outside the workspace .*give a path relative to it\.$/)
      // and a proper path works in the same sandbox
      yield* box.put("x", "fine")
      assert.strictEqual(textOf(yield* box.run(BuiltinTools.read, { path: "x" })), "fine")
    }).pipe(Effect.provide(platform)))
})
