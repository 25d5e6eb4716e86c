/**
 * Many runners on one PostgreSQL store (docs/server.md, SV 4): PostgreSQL is started by the test (initdb in
 * a temporary folder, a free port), two `serve` runners (runner.ts) join it, 20 runs are submitted through
 * the HTTP API of both, the runs execute on both runners, one runner is killed with SIGKILL while its runs
 * are in their tool batch, and all 20 complete through the other. Every tool call appends its line to
 * out.txt: a finished call's line is there exactly once; a call cut by the kill at most once (it is settled
 * as crashed, not run again). The failover time is printed (bench/serve.ts measures it properly).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { crashedCallText } from "../../src/durable/DurableAgent.ts"
import { childEnv, NODE, ROOT } from "../cli/support.ts"
import { needs, postgresql } from "../support/components.ts"
import { freePort, type Postgres, startPostgres } from "./postgres.ts"

const RUNNER = join(ROOT, "test", "server", "runner.ts")
const TOKEN = "cluster-token"
const RUNS = 20
const CALLS = 3
const CALL_MILLIS = 3000

interface Runner {
  readonly name: string
  readonly child: ChildProcess
  readonly port: number
  readonly output: () => string
  readonly exited: Promise<void>
}

let pg: Postgres | undefined
let work = ""
const runners: Array<Runner> = []

const startRunner = async (name: string, url: string, root: string): Promise<Runner> => {
  const runnerPort = await freePort()
  const child = spawn(NODE, [RUNNER, url, "0", String(runnerPort), name, root, TOKEN], {
    cwd: ROOT,
    env: childEnv(),
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()))
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`runner ${name} did not start: ${output}`)), 30_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const ready = /READY (\d+)/.exec(output)
      if (ready) {
        clearTimeout(timer)
        resolve(Number(ready[1]))
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    void exited.then(() => reject(new Error(`runner ${name} exited: ${output}`)))
  })
  const runner = { name, child, port, output: () => output, exited }
  runners.push(runner)
  return runner
}

const api = async (runner: Runner, method: string, path: string, body?: unknown) => {
  const response = await fetch(`http://127.0.0.1:${runner.port}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, json: await response.json() as any }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const hasPostgres = needs(postgresql)
beforeAll(async () => {
  if (!hasPostgres) return
  work = mkdtempSync(join(tmpdir(), "effect-agent-serve-cluster-"))
  pg = await startPostgres()
}, 40_000)

afterAll(async () => {
  for (const runner of runners) {
    if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill("SIGKILL")
    await runner.exited
  }
  if (pg !== undefined) await pg.stop()
  if (work !== "") rmSync(work, { recursive: true, force: true })
}, 20_000)

const textOf = (message: any): string =>
  typeof message?.content === "string"
    ? message.content
    : (message?.content ?? []).map((c: any) => (c.type === "text" ? c.text : "")).join("")

describe("serve: a cluster on PostgreSQL", () => {
  it(
    "SV 4.1-4.3: 20 runs spread over two runners all complete after one is killed; no finished call repeated",
    async () => {
      const [a, b] = await Promise.all([startRunner("A", pg!.url, work), startRunner("B", pg!.url, work)])
      // Gate on the shard assignment having settled: probe runs until one has executed on each runner (a
      // runner that joins takes its shards over a few assignment rounds; runs moved meanwhile are replayed).
      const probed = new Set<string>()
      for (let i = 0; probed.size < 2; i++) {
        assert.isBelow(i, 100, "both runners executing probe runs")
        const { json } = await api(i % 2 === 0 ? a : b, "POST", "/runs", { prompt: `say probe${i}` })
        for (let tries = 0; tries < 100; tries++) {
          const view = (await api(a, "GET", `/runs/${json.runId}`)).json
          if (view.status === "completed") {
            if (view.runners.length === 1) probed.add(view.runners[0])
            break
          }
          await sleep(50)
        }
      }
      const ids: Array<string> = []
      for (let i = 0; i < RUNS; i++) {
        const response = await api(i % 2 === 0 ? a : b, "POST", "/runs", {
          prompt: `batch j${i} ${CALLS} ${CALL_MILLIS}`
        })
        assert.strictEqual(response.status, 201)
        ids.push(response.json.runId)
      }
      // Wait until every run is in its tool batch (its first response is finished); each names its runner.
      let views: Array<any> = []
      // Up to 30 s: on a loaded machine twenty runs take a while to reach their batch.
      for (let tries = 0; tries < 600; tries++) {
        views = await Promise.all(ids.map(async (id) => (await api(a, "GET", `/runs/${id}`)).json))
        if (views.every((v) => v.runners.length > 0 && v.messages.some((m: any) => m.role === "assistant"))) break
        if (tries === 599) {
          throw new Error(
            `runs did not start: ${JSON.stringify(views.map((v) => [v.status, v.runners, v.messages?.length]))}\nA: ${
              a.output().slice(-2000)
            }\nB: ${b.output().slice(-2000)}`
          )
        }
        await sleep(50)
      }
      const onB = views.filter((v) => v.runners[0] === "B").map((v) => v.runId as string)
      const onA = views.filter((v) => v.runners[0] === "A").map((v) => v.runId as string)
      assert.isAbove(onA.length, 0, "runs on A")
      assert.isAbove(onB.length, 0, "runs on B")
      assert.strictEqual(onA.length + onB.length, RUNS)

      // B dies in the middle of its runs' tool batches.
      const killedAt = Date.now()
      b.child.kill("SIGKILL")
      await b.exited
      // On a loaded machine a run of B may have finished its batch before the kill: it stays B's alone. A
      // cannot have taken anything over yet (B's shards are held until the lease expires, seconds from now).
      const endedOnB = new Set(
        (await Promise.all(onB.map(async (id) => (await api(a, "GET", `/runs/${id}`)).json)))
          .filter((v) => v.status !== "running").map((v) => v.runId as string)
      )
      const continued = onB.filter((id) => !endedOnB.has(id))
      assert.isAbove(continued.length, 0, "runs of B still in their batch when it was killed")

      const deadline = Date.now() + 40_000
      while (Date.now() < deadline) {
        views = await Promise.all(ids.map(async (id) => (await api(a, "GET", `/runs/${id}`)).json))
        if (views.every((v) => v.status !== "running")) break
        await sleep(100)
      }
      assert.deepStrictEqual(views.map((v) => v.status), ids.map(() => "completed"), a.output().slice(-3000))

      // Every run of B continued on A; when it did is in the execution_start event A stored.
      const takenOver: Array<number> = []
      for (const runId of endedOnB) assert.deepStrictEqual(views.find((v) => v.runId === runId).runners, ["B"])
      for (const runId of continued) {
        const view = views.find((v) => v.runId === runId)
        assert.deepStrictEqual(view.runners, ["B", "A"])
        const response = await fetch(`http://127.0.0.1:${a.port}/runs/${runId}/events`, {
          headers: { authorization: `Bearer ${TOKEN}` }
        })
        const starts = (await response.text()).split("\n").filter((l) => l.startsWith("data: ")).map((l) =>
          JSON.parse(l.slice(6))
        )
          .filter((e) => e.type === "execution_start")
        takenOver.push(starts[1].at - killedAt)
      }
      console.log(
        `failover after SIGKILL: first run continued after ${Math.min(...takenOver)} ms, last after ${
          Math.max(...takenOver)
        } ms`
      )

      // Side effects: a finished call's line exactly once; a call cut by the kill settled as crashed, at most once.
      const lines = readFileSync(join(work, "out.txt"), "utf8").split("\n").filter((l) => l !== "")
      const count = (line: string) => lines.filter((l) => l === line).length
      for (const line of new Set(lines)) assert.strictEqual(count(line), 1, line)
      let crashed = 0
      for (const view of views) {
        const results = view.messages.filter((m: any) => m.role === "toolResult")
        assert.strictEqual(results.length, CALLS)
        const tag = textOf(view.messages[0]).split(" ")[1]
        for (const result of results) {
          const line = `${tag}:${result.toolCallId}`
          if (textOf(result) === `appended ${line}`) assert.strictEqual(count(line), 1, line)
          else {
            assert.strictEqual(textOf(result), crashedCallText("append"))
            assert.isTrue(onB.includes(view.runId))
            crashed++
          }
        }
        assert.match(textOf(view.messages.at(-1)), new RegExp(`^done ${tag}:`))
      }
      // B died with calls running: those are settled as crashed (a call that had finished is replayed instead).
      assert.isAbove(crashed, 0)
      assert.isAtMost(crashed, onB.length * CALLS)
    },
    90_000
  )

  it("SV 3.1, 3.2: a message and an abort sent through one runner reach a run executing on another", async () => {
    // After the test above only A is alive; C joins it.
    const a = runners.find((r) => r.name === "A")!
    const c = await startRunner("C", pg!.url, work)
    // Runs with a 5-second call, until one is executing on each runner; only the latest run of each runner is
    // kept (an older one is aborted), so both are still in their call when the message and the abort go out.
    const byRunner = new Map<string, string>()
    // Still in its call: running, its response finished, no tool result yet.
    const inCall = async (runId: string) => {
      const view = (await api(a, "GET", `/runs/${runId}`)).json
      return view.status === "running" && !view.messages.some((m: any) => m.role === "toolResult")
    }
    for (let i = 0;; i++) {
      if (byRunner.has("A") && byRunner.has("C")) {
        // On a loaded machine the run found first may have finished its call while the other was sought.
        for (const [name, runId] of [...byRunner]) if (!(await inCall(runId))) byRunner.delete(name)
        if (byRunner.size === 2) break
      }
      assert.isBelow(i, 60, "runs executing on both runners")
      const { json } = await api(a, "POST", "/runs", { prompt: `batch x${i} 1 5000` })
      for (let tries = 0; tries < 200; tries++) {
        const view = (await api(a, "GET", `/runs/${json.runId}`)).json
        if (view.runners.length > 0 && view.messages.some((m: any) => m.role === "assistant")) {
          const older = byRunner.get(view.runners[0])
          if (older !== undefined) await api(a, "POST", `/runs/${older}/abort`)
          byRunner.set(view.runners[0], json.runId)
          break
        }
        await sleep(50)
      }
    }
    const onC = byRunner.get("C")!
    const onA = byRunner.get("A")!
    // Through A: steer the run on C; through C: abort the run on A.
    assert.strictEqual(
      (await api(a, "POST", `/runs/${onC}/messages`, { kind: "steer", text: "steered via A" })).status,
      202
    )
    assert.strictEqual((await api(c, "POST", `/runs/${onA}/abort`)).status, 202)
    const settle = async (runId: string) => {
      for (let tries = 0; tries < 400; tries++) {
        const view = (await api(c, "GET", `/runs/${runId}`)).json
        if (view.status !== "running") return view
        await sleep(50)
      }
      throw new Error(`run ${runId} did not end`)
    }
    const steered = await settle(onC)
    assert.strictEqual(steered.status, "completed")
    assert.strictEqual(steered.runners[0], "C")
    assert.match(textOf(steered.messages.at(-1)), /^done x\d+: steered via A$/)
    const aborted = await settle(onA)
    assert.strictEqual(aborted.status, "aborted")
    // C joining moves shards from A to C, so the run may have moved meanwhile; it began on A.
    assert.strictEqual(aborted.runners[0], "A")
    assert.notMatch(textOf(aborted.messages.at(-1)), /^done /, "no answer after the abort")
  }, 60_000)
})
