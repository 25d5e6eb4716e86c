import { assert, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Logger, References } from "effect"
import { execFileSync } from "node:child_process"
import { createServer } from "node:net"
import type * as Tool from "../../src/Tool.ts"
import { type BashDetails } from "../../src/tools/bash.ts"
import { CommandFailed, CommandTimedOut } from "../../src/tools/errors.ts"
import { bash, BashSandbox, defaultSandboxSettings, SandboxUnavailable } from "../../src/tools/index.ts"
import { type ToolLimitsShape } from "../../src/tools/limits.ts"
import { bubblewrap, needs } from "../support/components.ts"
import { aliveInGroup, isAlive, platform, sandbox, textOf } from "./helpers.ts"

/**
 * A workspace whose `bash` runs unconfined: the process-group rules below are about the shell's own
 * process group, which these tests watch from outside through the pids the command prints (inside the
 * sandbox's PID namespace those pids mean nothing out here). The sandbox has its own tests.
 */
const unconfined = (limits: Partial<ToolLimitsShape> = {}) =>
  sandbox(limits).pipe(Effect.provideService(BashSandbox, { ...defaultSandboxSettings, mode: "off" }))

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
      const box = yield* unconfined()
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
      const box = yield* unconfined({ bashKillGraceMillis: 300 })
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
      const box = yield* unconfined()
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
      const box = yield* unconfined()
      const started = Date.now()
      const result = yield* box.run(bash, { command: `echo "pgid $$"; sleep 30 & echo "bg $!"; echo "sub $!"` })
      assert.isBelow(Date.now() - started, 5000)
      const { bg, pgid } = pidsIn(textOf(result))
      assert.deepStrictEqual(aliveInGroup(pgid), [])
      assert.isFalse(isAlive(bg))
    }).pipe(Effect.provide(platform)))

  it.live("unconfined, all the output comes through the relays, stdout and stderr", () =>
    Effect.gen(function*() {
      const box = yield* unconfined()
      const result = yield* box.run(bash, { command: "seq 1 30000; seq 1 20000 >&2; echo last" })
      assert.isFalse(result.details.sandboxed)
      assert.strictEqual(result.details.totalLines, 50001)
      assert.strictEqual(result.details.totalBytes, 168_894 + 108_894 + 5)
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

/** A workspace whose `bash` must run in the sandbox (the layer fails when bubblewrap does not work here). */
const confined = (allowNetwork = false) =>
  sandbox().pipe(Effect.provideService(BashSandbox, { ...defaultSandboxSettings, mode: "require", allowNetwork }))

/** Host processes whose command line contains `marker`, as pids. */
const processesWith = (marker: string): Array<number> =>
  execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" }).split("\n")
    .filter((row) => row.includes(marker))
    .map((row) => Number(row.trim().split(/\s+/)[0]))

/**
 * A `sleep` argument no other process uses, so the processes of one test can be found from outside the
 * sandbox; whatever is still running with it when the test ends is killed (by pid), so a failing test
 * leaves nothing behind.
 */
const uniqueSleep = Effect.acquireRelease(
  Effect.sync(() => `${900 + Math.floor(Math.random() * 99)}.${process.pid}${Math.floor(Math.random() * 1000)}`),
  (seconds) =>
    Effect.sync(() => {
      for (const pid of processesWith(`sleep ${seconds}`)) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {
          // already gone
        }
      }
    })
)

describe("bash sandbox (issue 16, item 5)", () => {
  needs(bubblewrap)

  it.live("the file system is read-only outside the workspace, which stays writable", () =>
    Effect.gen(function*() {
      const box = yield* confined()
      const elsewhere = yield* box.fs.makeTempDirectoryScoped({ directory: "/var/tmp", prefix: "effect-agent-bash-" })
      const error = yield* box.fail(bash, { command: `echo escaped > ${elsewhere}/file` })
      assert.instanceOf(error, CommandFailed)
      expect(error.message).toMatch(/Read-only file system/)
      assert.isFalse(yield* box.fs.exists(`${elsewhere}/file`))
      // The workspace's sibling under /tmp is not even there: /tmp is a private one.
      const sibling = yield* box.fail(bash, { command: `echo escaped > ${box.outside}/file` })
      assert.instanceOf(sibling, CommandFailed)
      assert.isFalse(yield* box.fs.exists(`${box.outside}/file`))
      const result = yield* box.run(bash, { command: "echo inside > made.txt && mkdir -p sub && echo ok" })
      assert.strictEqual(textOf(result), "ok")
      assert.isTrue(result.details.sandboxed)
      assert.strictEqual(yield* box.get("made.txt"), "inside\n")
      // No capabilities, even for root: nothing to remount or bypass permissions with.
      const caps = yield* box.run(bash, { command: "awk '/^CapEff/ {print $2}' /proc/self/status" })
      assert.strictEqual(textOf(caps), "0000000000000000")
    }).pipe(Effect.provide(platform)))

  it.live("/tmp is private: the host's files are not there and the command's do not leak out", () =>
    Effect.gen(function*() {
      const box = yield* confined()
      const hostFile = yield* box.fs.makeTempFileScoped({ prefix: "effect-agent-host-" })
      yield* box.fs.writeFileString(hostFile, "host secret")
      const leaked = `/tmp/effect-agent-from-sandbox-${process.pid}-${Date.now()}`
      yield* Effect.addFinalizer(() => box.fs.remove(leaked, { force: true }).pipe(Effect.ignore))
      const result = yield* box.run(bash, {
        command: `test -e ${hostFile} && echo visible || echo hidden; echo mine > ${leaked} && cat ${leaked}`
      })
      assert.strictEqual(textOf(result), "hidden\nmine")
      assert.isFalse(yield* box.fs.exists(leaked))
    }).pipe(Effect.provide(platform)))

  it.live("the network is unreachable, even the host's loopback, unless allowed", () =>
    Effect.gen(function*() {
      const connected = yield* Deferred.make<void>()
      const server = createServer((socket) => {
        socket.destroy()
        Deferred.doneUnsafe(connected, Exit.void)
      })
      const port = yield* Effect.acquireRelease(
        Effect.callback<number>((resume) => {
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as { port: number }).port)))
        }),
        () => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const connect = `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`
      const box = yield* confined()
      const error = yield* box.fail(bash, { command: connect })
      assert.instanceOf(error, CommandFailed)
      expect(error.message).toMatch(/Connection refused|Network is unreachable/)
      assert.isFalse(yield* Deferred.isDone(connected))
      const open = yield* confined(true)
      assert.strictEqual(textOf(yield* open.run(bash, { command: connect })), "connected")
      yield* Deferred.await(connected)
    }).pipe(Effect.provide(platform)))

  it.live("no process outlives the call, not even one that left the process group with setsid", () =>
    Effect.gen(function*() {
      const box = yield* confined()
      const seconds = yield* uniqueSleep
      const result = yield* box.run(bash, {
        command: `setsid sleep ${seconds} > /dev/null 2>&1 & sleep ${seconds} & nohup sleep ${seconds} & echo started`
      })
      assert.strictEqual(textOf(result), "started")
      assert.deepStrictEqual(processesWith(`sleep ${seconds}`), [])
    }).pipe(Effect.provide(platform)))

  it.live("on timeout and on abort, everything the command started is gone", () =>
    Effect.gen(function*() {
      const box = yield* confined()
      const seconds = yield* uniqueSleep
      const command = `setsid sleep ${seconds} & sleep ${seconds} & echo started; sleep ${seconds}`
      const timedOut = yield* box.fail(bash, { command, timeout: 1 })
      assert.instanceOf(timedOut, CommandTimedOut)
      assert.deepStrictEqual(processesWith(`sleep ${seconds}`), [])

      const updates: Array<Tool.ToolResult<BashDetails>> = []
      const fiber = yield* Effect.forkChild(box.run(bash, { command }, updates))
      yield* waitUntil(() => updates.some((u) => textOf(u) === "started"), "the command to start its children")
      assert.isNotEmpty(processesWith(`sleep ${seconds}`))
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(processesWith(`sleep ${seconds}`), [])
    }).pipe(Effect.provide(platform)))
})

describe("bash sandbox without bubblewrap (issue 16, item 5)", () => {
  it.live("without a working bubblewrap it says so once and runs unconfined, or refuses when required", () =>
    Effect.gen(function*() {
      const logs: Array<string> = []
      const logger = Logger.make((options) => {
        const message = options.message
        logs.push(`${options.logLevel}: ${Array.isArray(message) ? message.join(" ") : String(message)}`)
      })
      const missing = "/nonexistent/effect-agent/bwrap"
      const box = yield* sandbox().pipe(
        Effect.provideService(BashSandbox, { ...defaultSandboxSettings, bwrap: missing }),
        Effect.provideService(References.CurrentLoggers, new Set([logger]))
      )
      assert.strictEqual(logs.length, 1, logs.join("\n"))
      expect(logs[0]).toMatch(/^Warn: effect-agent: bash runs unconfined, without a sandbox: /)
      expect(logs[0]).toContain(missing)
      const result = yield* box.run(bash, { command: "echo still runs" })
      assert.strictEqual(textOf(result), "still runs")
      assert.isFalse(result.details.sandboxed)
      yield* box.run(bash, { command: "true" })
      assert.strictEqual(logs.length, 1, "said once, when the layer was built, not on every call")

      const refused = yield* Effect.flip(
        sandbox().pipe(
          Effect.provideService(BashSandbox, { ...defaultSandboxSettings, mode: "require", bwrap: missing })
        )
      )
      assert.instanceOf(refused, SandboxUnavailable)
      expect(refused.message).toContain(missing)

      // Turned off on purpose: unconfined, and nothing to warn about.
      logs.length = 0
      const off = yield* sandbox().pipe(
        Effect.provideService(BashSandbox, { ...defaultSandboxSettings, mode: "off", bwrap: missing }),
        Effect.provideService(References.CurrentLoggers, new Set([logger]))
      )
      assert.isFalse((yield* off.run(bash, { command: "true" })).details.sandboxed)
      assert.deepStrictEqual(logs, [])
    }).pipe(Effect.provide(platform)))
})
