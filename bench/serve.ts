/**
 * `serve` on PostgreSQL: runs per second and per-call overhead with one and with two runners, and the
 * failover time after a runner is killed with SIGKILL.
 *
 * - throughput: 100 runs of 5 parallel calls of a tool that appends a line (no sleep) are submitted at once
 *   through the HTTP API (spread over the runners' APIs), and the time until all 100 have completed is
 *   measured; the same with 100 runs of no tool call gives the per-run cost, so per-call overhead =
 *   (time with 5 calls - time with none) / 500. Runs per second = 100 / time with 5 calls.
 * - failover: two runners, 20 runs with one 3-second call each, one runner SIGKILLed once every run is in
 *   its batch; the time from the kill until the killed runner's runs are executing on the other (first
 *   and last) is read from the `execution_start` events the survivor stores.
 *
 * PostgreSQL is started here (initdb in a temporary folder; see test/server/postgres.ts); each scenario gets
 * a fresh database. Run: `npx node bench/serve.ts`. Writes the "serve" key of bench/results.json.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import { findPostgresBin, freePort, startPostgres } from "../test/server/postgres.ts"

const here = import.meta.dirname
const ROOT = join(here, "..")
const NODE = existsSync(join(ROOT, "node_modules", ".bin", "node"))
  ? join(ROOT, "node_modules", ".bin", "node")
  : process.execPath
const RUNNER = join(ROOT, "test", "server", "runner.ts")
const TOKEN = "bench-token"
const RUNS = 100
const CALLS = 5

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Runner {
  readonly child: ChildProcess
  readonly port: number
  readonly exited: Promise<void>
}

const startRunner = async (name: string, url: string, root: string, inbox = true): Promise<Runner> => {
  const runnerPort = await freePort()
  const child = spawn(NODE, [RUNNER, url, "0", String(runnerPort), name, root, TOKEN], {
    cwd: ROOT,
    env: { ...process.env, SERVE_INBOX: inbox ? "1" : "0" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()))
  let output = ""
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const ready = /READY (\d+)/.exec(output)
      if (ready) resolve(Number(ready[1]))
    })
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    void exited.then(() => reject(new Error(`runner ${name} exited: ${output.slice(-2000)}`)))
  })
  // Its logs go to a file (kept for a look when a scenario fails), so it never blocks on a full pipe.
  const log = createWriteStream(join(os.tmpdir(), `effect-agent-bench-serve-${name}.log`))
  log.write(output)
  child.stdout!.removeAllListeners("data")
  child.stdout!.pipe(log)
  child.stderr!.pipe(log)
  return { child, port, exited }
}

const stop = async (runners: ReadonlyArray<Runner>) => {
  for (const runner of runners) {
    if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill("SIGKILL")
    await runner.exited
  }
}

const api = async (runner: Runner, method: string, path: string, body?: unknown) => {
  const response = await fetch(`http://127.0.0.1:${runner.port}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`)
  return await response.json() as any
}

/** Submits `prompts` spread over the runners at once; resolves with the run ids when all have completed. */
const runAll = async (runners: ReadonlyArray<Runner>, prompts: ReadonlyArray<string>) => {
  const start = performance.now()
  const ids: Array<string> = await Promise.all(
    prompts.map(async (prompt, i) => (await api(runners[i % runners.length]!, "POST", "/runs", { prompt })).runId)
  )
  const pending = new Set(ids)
  const views = new Map<string, any>()
  while (pending.size > 0) {
    await sleep(100)
    if (performance.now() - start > 120_000) {
      const stuck = await Promise.all([...pending].slice(0, 10).map((id) => api(runners[0]!, "GET", `/runs/${id}`)))
      throw new Error(
        `${pending.size} runs did not complete in 120 s: ${
          JSON.stringify(stuck.map((v) => [v.runId, v.runners, v.messages.length]))
        }`
      )
    }
    for (const id of [...pending]) {
      const view = await api(runners[0]!, "GET", `/runs/${id}`)
      if (view.status !== "running") {
        if (view.status !== "completed") throw new Error(`run ${id} ended ${view.status}`)
        pending.delete(id)
        views.set(id, view)
      }
    }
  }
  return { ms: performance.now() - start, views: [...views.values()] }
}

/** A fresh database on the server, for one scenario. */
const database = (url: string, name: string) => {
  const psql = join(findPostgresBin()!, "psql")
  execFileSync(psql, [url, "-c", `CREATE DATABASE ${name}`], { stdio: "pipe" })
  return url.replace(/\/postgres$/, `/${name}`)
}

const throughput = async (url: string, runnerCount: number, label: string, inbox = true) => {
  const root = mkdtempSync(join(os.tmpdir(), "effect-agent-bench-serve-"))
  const runners: Array<Runner> = []
  try {
    const db = database(url, `bench_${label}`)
    for (let i = 0; i < runnerCount; i++) runners.push(await startRunner(`R${i}`, db, root, inbox))
    // Let the shard assignment settle (a runner that just joined takes its shards over a few seconds).
    await sleep(5000)
    // Warm-up: a few runs on every runner, untimed.
    await runAll(runners, Array.from({ length: 4 * runnerCount }, (_, i) => `batch warm${i} 1 0`))
    const none = await runAll(runners, Array.from({ length: RUNS }, (_, i) => `say n${i}`))
    const withCalls = await runAll(runners, Array.from({ length: RUNS }, (_, i) => `batch r${i} ${CALLS} 0`))
    const spread = new Map<string, number>()
    for (const view of withCalls.views) spread.set(view.runners[0], (spread.get(view.runners[0]) ?? 0) + 1)
    const lines = readFileSync(join(root, "out.txt"), "utf8").split("\n").filter((l) => l.startsWith("r")).length
    if (lines !== RUNS * CALLS) throw new Error(`expected ${RUNS * CALLS} side effects, saw ${lines}`)
    const row = {
      runners: runnerCount,
      inbox,
      runs: RUNS,
      calls_per_run: CALLS,
      ms_with_calls: round(withCalls.ms),
      ms_without_calls: round(none.ms),
      runs_per_second: round(RUNS / (withCalls.ms / 1000), 2),
      overhead_ms_per_call: round((withCalls.ms - none.ms) / (RUNS * CALLS), 2),
      runs_per_runner: Object.fromEntries(spread)
    }
    console.log(JSON.stringify(row))
    return row
  } finally {
    await stop(runners)
    rmSync(root, { recursive: true, force: true })
  }
}

const failover = async (url: string) => {
  const root = mkdtempSync(join(os.tmpdir(), "effect-agent-bench-serve-"))
  const runners: Array<Runner> = []
  try {
    const db = database(url, "bench_failover")
    runners.push(await startRunner("A", db, root), await startRunner("B", db, root))
    await sleep(5000)
    const [a, b] = runners as [Runner, Runner]
    const ids: Array<string> = []
    for (let i = 0; i < 20; i++) {
      ids.push((await api(runners[i % 2]!, "POST", "/runs", { prompt: `batch f${i} 1 3000` })).runId)
    }
    let views: Array<any> = []
    while (true) {
      views = await Promise.all(ids.map((id) => api(a, "GET", `/runs/${id}`)))
      if (views.every((v) => v.messages.some((m: any) => m.role === "assistant"))) break
      await sleep(50)
    }
    const onB = views.filter((v) => v.runners[0] === "B").map((v) => v.runId as string)
    const killedAt = Date.now()
    b.child.kill("SIGKILL")
    await b.exited
    const taken: Array<number> = []
    const pending = new Set(onB)
    while (pending.size > 0) {
      await sleep(50)
      for (const id of [...pending]) {
        const text = await (await fetch(`http://127.0.0.1:${a.port}/runs/${id}/events?after=0`, {
          headers: { authorization: `Bearer ${TOKEN}` },
          signal: AbortSignal.timeout(200)
        }).then((r) => r.text()).catch(() => ""))
        const starts = text.split("\n").filter((l) => l.startsWith("data: {\"type\":\"execution_start\""))
        if (starts.length >= 2) {
          taken.push(JSON.parse(starts[1]!.slice(6)).at - killedAt)
          pending.delete(id)
        }
      }
      if (Date.now() - killedAt > 60_000) throw new Error("no failover within 60 s")
    }
    const row = {
      runs: 20,
      runs_on_killed_runner: onB.length,
      first_continued_ms: Math.min(...taken),
      last_continued_ms: Math.max(...taken)
    }
    console.log(JSON.stringify(row))
    return row
  } finally {
    await stop(runners)
    rmSync(root, { recursive: true, force: true })
  }
}

const main = async () => {
  const started = Date.now()
  const load = os.loadavg().map((x) => round(x, 2))
  const pg = await startPostgres()
  try {
    // A scenario that fails is recorded as such (with its reason), not dropped.
    const attempt = async <A>(scenario: () => Promise<A>) => {
      try {
        return await scenario()
      } catch (error) {
        console.log(`scenario failed: ${String(error).slice(0, 500)}`)
        return { error: String(error).slice(0, 500) }
      }
    }
    const one = await attempt(() => throughput(pg.url, 1, "one"))
    const two = await attempt(() => throughput(pg.url, 2, "two"))
    // Without the inbox (no steering or follow-ups: two steps fewer per turn).
    const twoNoInbox = await attempt(() => throughput(pg.url, 2, "two_no_inbox", false))
    const kill = await attempt(() => failover(pg.url))
    const serve = {
      what:
        "effect-agent serve on PostgreSQL 15 (test/server/runner.ts: scripted model, an append tool), HTTP API on 127.0.0.1",
      method:
        "100 runs submitted at once over the runners' HTTP APIs, timed until all completed; per-call overhead = (time with 5 calls per run - time with none) / 500; failover: SIGKILL of one of two runners with 20 runs in a 3 s call, time until its runs executed on the other",
      timings: {
        shard_lock_refresh_ms: 2500,
        shard_lock_expiration_ms: 7500,
        refresh_assignments_ms: 1000,
        health_check_ms: 2000,
        shards: 64
      },
      throughput: [one, two, twoNoInbox],
      failover: kill,
      machine: {
        cores: os.cpus().length,
        node: process.version,
        postgres: execFileSync(join(findPostgresBin()!, "postgres"), ["--version"]).toString().trim(),
        load_average_at_start: load,
        load_average_at_end: os.loadavg().map((x) => round(x, 2)),
        shared: "the machine was shared with other jobs while this ran",
        date: new Date().toISOString()
      },
      elapsed_s: round((Date.now() - started) / 1000)
    }
    const file = join(here, "results.json")
    const results = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown> : {}
    results.serve = serve
    writeFileSync(file, JSON.stringify(results, null, 2) + "\n")
    console.log(`wrote the "serve" key of ${file}`)
    console.log(JSON.stringify(serve, null, 1))
  } finally {
    await pg.stop()
  }
}

await main()
