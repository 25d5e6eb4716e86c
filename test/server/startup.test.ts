/**
 * Start-up of `effect-agent serve` against PostgreSQL, as an operator runs it (docs/server.md, SV 5.3):
 * PostgreSQL started by the test, the real command. Two runners on one machine start side by side with
 * `--port 0 --runner-port 0` and answer `/health`; a runner whose `--runner-port` another process holds
 * exits 1 with one line saying so (the outside check's `effect-agent: Open` was that case, unexplained).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { childEnv, MAIN, NODE, ROOT } from "../cli/support.ts"
import { needs, postgresql } from "../support/components.ts"
import { type Postgres, startPostgres } from "./postgres.ts"

let pg: Postgres | undefined
let work = ""
const children: Array<ChildProcess> = []
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const hasPostgres = needs(postgresql)
beforeAll(async () => {
  if (!hasPostgres) return
  work = mkdtempSync(join(tmpdir(), "effect-agent-serve-startup-"))
  mkdirSync(join(work, "workspaces"))
  pg = await startPostgres()
}, 40_000)

afterAll(async () => {
  await Promise.all(children.map((child) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      child.on("exit", () => resolve())
      child.kill("SIGKILL")
    })
  ))
  await pg?.stop()
  if (work !== "") rmSync(work, { recursive: true, force: true })
}, 20_000)

/** `serve` on the test's PostgreSQL, its stdout and stderr collected together. */
const serve = (name: string, runnerPort: number) => {
  const child = spawn(NODE, [
    MAIN,
    "serve",
    ...["--store", pg!.url, "--port", "0", "--runner-port", String(runnerPort), "--name", name],
    ...["--token", "startup-token", "--workspaces", join(work, "workspaces")]
  ], { cwd: ROOT, env: childEnv({ EFFECT_AGENT_HOME: join(work, `home-${name}`) }), stdio: ["ignore", "pipe", "pipe"] })
  children.push(child)
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return { child, exit, stdout: () => stdout, stderr: () => stderr }
}

describe("serve: start-up on PostgreSQL", () => {
  it("SV 5.3: two runners on one machine with --runner-port 0 both start and answer /health", async () => {
    const runners = [serve("A", 0), serve("B", 0)]
    const bases = await Promise.all(runners.map(async (run) => {
      for (const started = Date.now(); Date.now() - started < 60_000; await sleep(100)) {
        if (run.child.exitCode !== null) throw new Error(`exited at start-up: ${run.stderr()}`)
        const listening = /\{"listening":"([^"]+)"\}/.exec(run.stdout())
        if (listening) return listening[1]!
      }
      throw new Error(`did not start within 60 s: ${run.stderr()}`)
    }))
    for (const [i, base] of bases.entries()) {
      const response = await fetch(`${base}/health`)
      assert.strictEqual(response.status, 200)
      assert.strictEqual(((await response.json()) as any).runner, ["A", "B"][i])
    }
    // A PostgreSQL runner writes nothing on stderr while it starts: no node:sqlite warning (its notices, such
    // as bash running without a sandbox, are JSON log lines on stdout).
    for (const run of runners) assert.strictEqual(run.stderr(), "")
  }, 90_000)

  it("SV 5.3: a --runner-port another process holds: exit 1 and one line saying so", async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve))
    try {
      const port = (blocker.address() as { port: number }).port
      const run = serve("blocked", port)
      assert.strictEqual(await run.exit, 1)
      assert.strictEqual(run.stderr().split("\n").filter((l) => l !== "").length, 1, run.stderr())
      assert.match(
        run.stderr(),
        new RegExp(
          `^effect-agent: cannot listen for the other runners on 127\\.0\\.0\\.1:${port}: listen EADDRINUSE.*--runner-port 0`
        )
      )
    } finally {
      blocker.close()
    }
  }, 60_000)
})
