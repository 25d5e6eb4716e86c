import { assert, describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import type * as Tool from "../../src/Tool.ts"
import { bash, type BashDetails, CommandFailed, CommandTimedOut } from "../../src/tools/index.ts"
import { aliveInGroup, isAlive, platform, sandbox, textOf } from "./helpers.ts"

/** A command that leaves two children in its process group and prints the pids. */
const spawnsChildren = `echo "pgid $$"; sleep 30 & echo "bg $!"; (sleep 30; echo never) & echo "sub $!"; sleep 30; wait`

const pidsIn = (text: string) => {
  const pgid = Number(/pgid (\d+)/.exec(text)?.[1])
  const bg = Number(/bg (\d+)/.exec(text)?.[1])
  const sub = Number(/sub (\d+)/.exec(text)?.[1])
  assert.isTrue(pgid > 0 && bg > 0 && sub > 0, `pids not found in ${JSON.stringify(text)}`)
  return { pgid, bg, sub }
}

const waitUntil = (condition: () => boolean, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 500; i++) {
      if (condition()) return
      yield* Effect.sleep(10)
    }
    assert.fail(`timed out waiting for ${what}`)
  })

describe("bash", () => {
  it.live("runs in the workspace root and returns stdout and stderr", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("marker.txt", "")
      const result = yield* box.run(bash, { command: "pwd; ls; echo oops >&2" })
      const real = yield* box.fs.realPath(box.root)
      // stdout and stderr arrive through two pipes: their relative order is not defined, each one's is.
      const lines = textOf(result).split("\n")
      assert.deepStrictEqual([...lines].sort(), [real, "marker.txt", "oops"].sort())
      assert.isBelow(lines.indexOf(real), lines.indexOf("marker.txt"))
      assert.strictEqual(result.details.exitCode, 0)
      assert.isFalse(result.details.truncated)
      assert.strictEqual(textOf(yield* box.run(bash, { command: "true" })), "(no output)")
      // stdin is closed: a command reading it does not hang
      assert.strictEqual(textOf(yield* box.run(bash, { command: "cat; echo done" })), "done")
      assert.strictEqual(bash.executionMode, "sequential")
    }).pipe(Effect.provide(platform)))

  it.live("a non-zero exit code is an error carrying the output", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const error = yield* box.fail(bash, { command: "echo before; ls /definitely-missing; exit 3" })
      assert.instanceOf(error, CommandFailed)
      assert.strictEqual(error.exitCode, 3)
      expect(error.message).toMatch(/^before\n.*definitely-missing.*\n\nCommand exited with code 3$/s)
    }).pipe(Effect.provide(platform)))

  it.live("streams output as partial results while the command runs", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const updates: Array<Tool.ToolResult<BashDetails>> = []
      const result = yield* box.run(bash, { command: "for i in 1 2 3; do echo line $i; sleep 0.3; done" }, updates)
      const final = "line 1\nline 2\nline 3"
      assert.strictEqual(textOf(result), final)
      // lines arrive as they are printed (chunks may merge lines written close together)
      assert.isAtLeast(updates.length, 2)
      assert.notInclude(textOf(updates[0]), "line 3")
      for (const update of updates) assert.isTrue(final.startsWith(textOf(update)), textOf(update))
      assert.strictEqual(textOf(updates[updates.length - 1]), final)
      assert.isTrue(updates.every((u) => u.details.running && u.details.exitCode === null))
      assert.isNumber(updates[0].details.pid)
    }).pipe(Effect.provide(platform)))

  it.live("on timeout, the whole process group is killed and the output so far is returned", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const started = Date.now()
      const error = yield* box.fail(bash, { command: spawnsChildren, timeout: 1 })
      const elapsed = Date.now() - started
      assert.instanceOf(error, CommandTimedOut)
      assert.strictEqual(error.timeoutSeconds, 1)
      expect(error.message).toMatch(/Command timed out after 1 seconds; it and all its child processes were killed\.$/)
      const { bg, pgid, sub } = pidsIn(error.output)
      assert.isBelow(elapsed, 5000)
      assert.deepStrictEqual(aliveInGroup(pgid), [])
      assert.isFalse(isAlive(pgid))
      assert.isFalse(isAlive(bg))
      assert.isFalse(isAlive(sub))
    }).pipe(Effect.provide(platform)))

  it.live("a child that ignores SIGTERM is killed with SIGKILL after the grace period", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ bashKillGraceMillis: 300 })
      const error = yield* box.fail(bash, {
        command: `echo "pgid $$"; bash -c 'trap "" TERM; echo "bg $$"; echo "sub $$"; sleep 30' & wait`,
        timeout: 1
      })
      assert.instanceOf(error, CommandTimedOut)
      const { bg, pgid } = pidsIn(error.output)
      assert.deepStrictEqual(aliveInGroup(pgid), [])
      assert.isFalse(isAlive(bg))
    }).pipe(Effect.provide(platform)))

  it.live("on abort (interruption), the whole process group is killed", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const updates: Array<Tool.ToolResult<BashDetails>> = []
      const fiber = yield* Effect.forkChild(box.run(bash, { command: spawnsChildren }, updates))
      const output = () => updates.length > 0 ? textOf(updates[updates.length - 1]) : ""
      yield* waitUntil(() => /sub \d+/.test(output()), "the command to start its children")
      const { bg, pgid, sub } = pidsIn(output())
      assert.isTrue(isAlive(bg) && isAlive(sub), "children should be running before the abort")
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(aliveInGroup(pgid), [])
      assert.isFalse(isAlive(bg))
      assert.isFalse(isAlive(sub))
    }).pipe(Effect.provide(platform)))

  it.live("background children still running when the shell exits are killed", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const started = Date.now()
      const result = yield* box.run(bash, { command: `echo "pgid $$"; sleep 30 & echo "bg $!"; echo "sub $!"` })
      assert.isBelow(Date.now() - started, 5000)
      const { bg, pgid } = pidsIn(textOf(result))
      assert.deepStrictEqual(aliveInGroup(pgid), [])
      assert.isFalse(isAlive(bg))
    }).pipe(Effect.provide(platform)))

  it.live("caps the output, keeping the tail, and says so", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const result = yield* box.run(bash, { command: "seq 1 100000" })
      const [body, note] = textOf(result).split("\n\n")
      const lines = body.split("\n")
      assert.strictEqual(lines.length, 2000)
      assert.strictEqual(lines[0], "98001")
      assert.strictEqual(lines[1999], "100000")
      assert.strictEqual(note, "[Output truncated: showing the last 2000 of 100000 lines (575.1 KB in total).]")
      assert.isTrue(result.details.truncated)
      assert.strictEqual(result.details.totalLines, 100000)
      // byte cap, with long lines
      const small = yield* sandbox({ bashMaxBytes: 1000 })
      const wide = yield* small.run(bash, { command: "for i in $(seq 1 50); do printf '%099d\\n' $i; done" })
      const wideBody = textOf(wide).split("\n\n")[0]
      assert.isAtMost(Buffer.byteLength(wideBody), 1000)
      assert.isTrue(wideBody.endsWith("050"))
      // one endless line cannot exhaust memory
      const endless = yield* small.run(bash, { command: "head -c 5000000 /dev/zero | tr '\\0' a" })
      const endlessBody = textOf(endless).split("\n\n")[0]
      assert.strictEqual(endlessBody, "a".repeat(1000))
      assert.strictEqual(endless.details.totalBytes, 5_000_000)
    }).pipe(Effect.provide(platform)))
})
