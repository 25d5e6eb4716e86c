/**
 * `effect-agent serve` as a process (docs/server.md): it refuses to start without a token, serves on the
 * embedded SQLite store without --store, logs JSON lines (SV 5.2), stops gracefully on SIGTERM with
 * exit code 143 (SV 5.1), and says in one line what kept it from starting (SV 5.3).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { childEnv, MAIN, NODE, ROOT } from "../cli/support.ts"

const work = mkdtempSync(join(tmpdir(), "effect-agent-serve-cli-"))
const children: Array<ChildProcess> = []

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  rmSync(work, { recursive: true, force: true })
})

const serve = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}) => {
  const child = spawn(NODE, [MAIN, "serve", ...args], {
    cwd: ROOT,
    env: childEnv({ EFFECT_AGENT_HOME: join(work, "home"), EFFECT_AGENT_TOKEN: undefined, ...env }),
    stdio: ["ignore", "pipe", "pipe"]
  })
  children.push(child)
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal }))
  )
  return { child, exit, stdout: () => stdout, stderr: () => stderr }
}

describe("serve: the command", () => {
  it("SV 1.2: refuses to start without a token", async () => {
    const run = serve(["--port", "0", "--workspaces", work])
    const { code } = await run.exit
    assert.notStrictEqual(code, 0)
    assert.include(run.stderr(), "serve needs a token")
  }, 30_000)

  it("SV 5.1, 5.2: serves on the embedded store, logs JSON lines, stops on SIGTERM with 143", async () => {
    const root = join(work, "workspaces")
    mkdirSync(root)
    const run = serve(["--port", "0", "--workspaces", root, "--sandbox", "off"], { EFFECT_AGENT_TOKEN: "cli-token" })
    let base = ""
    for (let i = 0; i < 300 && base === ""; i++) {
      const listening = /\{"listening":"([^"]+)"\}/.exec(run.stdout())
      if (listening) base = listening[1]!
      else await new Promise((r) => setTimeout(r, 50))
    }
    assert.notStrictEqual(base, "", run.stderr())
    assert.strictEqual((await fetch(`${base}/health`)).status, 200)
    const created = await fetch(`${base}/runs`, {
      method: "POST",
      headers: { authorization: "Bearer cli-token", "content-type": "application/json" },
      body: JSON.stringify({ prompt: "look around", workspace: "w" })
    })
    assert.strictEqual(created.status, 201)
    run.child.kill("SIGTERM")
    const { code } = await run.exit
    assert.strictEqual(code, 143)
    const lines = run.stdout().split("\n").filter((l) => l !== "")
    for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), line)
    const logs = lines.map((l) => JSON.parse(l)).filter((l) => l.level !== undefined)
    assert.isTrue(logs.some((l) => l.message === "run accepted" && typeof l.annotations.runId === "string"))
    assert.strictEqual(logs.at(-1).message, "stopped")
  }, 60_000)

  it("SV 5.3: an HTTP port in use: exit 1 and one line naming the address, the reason and --port", async () => {
    const blocker = await listening()
    try {
      const port = (blocker.address() as { port: number }).port
      const run = serve(["--port", String(port), "--workspaces", work, "--store", join(work, "blocked.db")], {
        EFFECT_AGENT_TOKEN: "cli-token"
      })
      const { code } = await run.exit
      assert.strictEqual(code, 1)
      // On the embedded store Node's own notice that node:sqlite is experimental comes first (two lines).
      const ours = run.stderr().split("\n").filter((l) =>
        l !== "" && !/ExperimentalWarning: SQLite|--trace-warnings/.test(l)
      )
      assert.strictEqual(ours.length, 1, run.stderr())
      assert.match(
        ours[0]!,
        new RegExp(
          `^effect-agent: cannot listen for HTTP on 127\\.0\\.0\\.1:${port}: listen EADDRINUSE.*pass another --port`
        )
      )
    } finally {
      blocker.close()
    }
  }, 60_000)

  it("SV 5.3: a PostgreSQL store that refuses: exit 1 and one line with the URL, without its password", async () => {
    // A port nothing listens on: taken from the system, then released.
    const free = await listening()
    const port = (free.address() as { port: number }).port
    await new Promise((resolve) => free.close(resolve))
    const run = serve([
      "--port",
      "0",
      "--workspaces",
      work,
      "--store",
      `postgres://agent:s3cret@127.0.0.1:${port}/runs`
    ], {
      EFFECT_AGENT_TOKEN: "cli-token"
    })
    const { code } = await run.exit
    assert.strictEqual(code, 1)
    assert.deepStrictEqual(run.stderr().split("\n").filter((l) => l !== "").length, 1, run.stderr())
    assert.match(
      run.stderr(),
      new RegExp(
        `^effect-agent: cannot use the store postgres://agent:\\*\\*\\*@127\\.0\\.0\\.1:${port}/runs: .*ECONNREFUSED`
      )
    )
    assert.notInclude(run.stderr(), "s3cret")
  }, 60_000)
})

/** A TCP server listening on a port of the system's choice on 127.0.0.1. */
const listening = () =>
  new Promise<Server>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve(server))
  })
