/**
 * `!command` (docs/cli.md CLI 12.8, 2.9): a command that ignores SIGTERM is still stopped, a background job
 * holding the output does not keep the prompt away after a stop, and a session ending mid-command leaves
 * no process of it behind.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Shell from "../../src/cli/interactive/Shell.ts"

/** Processes of group `pgid` that still run (zombies, killed and waiting to be reaped, do not count). */
const running = (pgid: number): Array<string> =>
  readdirSync("/proc").filter((name) => /^\d+$/.test(name)).filter((name) => {
    try {
      // pid (comm) state ppid pgrp ...: comm may hold spaces, so read after its closing parenthesis.
      const stat = readFileSync(`/proc/${name}/stat`, "utf8")
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      return Number(pgrp) === pgid && state !== "Z"
    } catch {
      return false
    }
  })

/** Whether the group has stopped running, looking for up to 2 s: SIGKILL is delivered at once, not acted on. */
const groupGone = (pid: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 40 && running(pid).length > 0; i++) yield* Effect.sleep("50 millis")
    return running(pid).length === 0
  })

/** Runs `command` until it printed `ready`; gives the fiber, the group id and the stop switch. */
const started = (command: string) =>
  Effect.gen(function*() {
    const ready = yield* Deferred.make<number>()
    const stop = yield* Deferred.make<void>()
    let pid = 0
    let out = ""
    const fiber = yield* Effect.forkChild(Shell.run(command, {
      cwd: tmpdir(),
      output: (chunk) => {
        out += chunk.toString()
        if (out.includes("ready")) Deferred.doneUnsafe(ready, Effect.succeed(pid))
      },
      stopRequested: Deferred.await(stop),
      grace: "200 millis",
      onStart: (p) => void (pid = p)
    }))
    yield* Deferred.await(ready)
    return { fiber, pid, stop: Deferred.succeed(stop, undefined) }
  })

describe("!command (CLI 12.8)", () => {
  it.live("a command ignoring SIGTERM is killed after the grace period; its exit is the signal", () =>
    Effect.gen(function*() {
      const { fiber, pid, stop } = yield* started("trap '' TERM; echo ready; while :; do sleep 0.05; done")
      yield* stop
      const code = yield* Fiber.join(fiber).pipe(Effect.timeout("10 seconds"))
      assert.strictEqual(code, "SIGKILL")
      assert.isTrue(yield* groupGone(pid))
    }))

  it.live("after a stop, a background job that keeps the pipes open does not hold the prompt", () =>
    Effect.gen(function*() {
      const { fiber, pid, stop } = yield* started("(trap '' TERM; while :; do sleep 0.05; done) & echo ready; wait")
      yield* stop
      yield* Fiber.join(fiber).pipe(Effect.timeout("10 seconds"))
      assert.isTrue(yield* groupGone(pid))
    }))

  it.live("the session ending mid-command kills the whole group at once", () =>
    Effect.gen(function*() {
      const { fiber, pid } = yield* started("trap '' TERM; (trap '' TERM; sleep 30) & echo ready; wait")
      yield* Fiber.interrupt(fiber)
      assert.isTrue(yield* groupGone(pid))
    }))

  it.live("a plain command gives its exit status and output", () =>
    Effect.gen(function*() {
      let out = ""
      const code = yield* Shell.run("echo ready; exit 3", {
        cwd: tmpdir(),
        output: (chunk) => void (out += chunk.toString()),
        stopRequested: Effect.never
      })
      assert.strictEqual(code, 3)
      assert.strictEqual(out, "ready\n")
    }))
})
