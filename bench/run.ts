/**
 * effect-agent vs pi-agent-core 0.73.1, both through their public loop and agent. See README.md for what
 * each row times.
 *
 *   npm run bench                 full run (about 5 to 10 minutes on 2 busy cores)
 *   npm run bench -- --quick      no N = 100 000, fewer samples (a sanity check, 1 to 3 minutes)
 *
 * Writes results.json next to this file, keeping any top-level key it does not write (e.g. "grep"). Needs
 * --expose-gc (the npm script passes it) so that each sample starts from a collected heap.
 */
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { AgentMessage } from "../src/Message.ts"
import { makeMessage, makeOurs as makeOursBatch, makePi as makePiBatch } from "./harness.ts"
import {
  baselineWork,
  callsMessage,
  type Consumer,
  FINAL,
  loopEvents,
  loopRunner,
  type LoopSide,
  makeOurs,
  makePi,
  type Mode,
  type Shape,
  transcriptOf,
  turnsScript,
  type Work
} from "./loop.ts"
import {
  CALLS_PER_SAMPLE,
  compare,
  compareRunners,
  cpuNow,
  expected,
  perCallRuns,
  type Plan,
  type Runner,
  type RunnerPair,
  turnRuns
} from "./measure.ts"
import { type MemoryResult, spawnMemory } from "./memory.ts"
import { scheduleRows } from "./schedule.ts"
import { buildPackage, type Side, spawnStartup, type StartupResult } from "./startup.ts"
import { median, round, summarize, table } from "./stats.ts"

const here = dirname(fileURLToPath(import.meta.url))
const argv = new Set(process.argv.slice(2))
const QUICK = argv.has("--quick")

if ((globalThis as { gc?: unknown }).gc === undefined) {
  console.warn("warning: run with --expose-gc (npm run bench does) for comparable samples")
}

const SIZES = QUICK ? [10, 100, 1000, 10_000] : [10, 100, 1000, 10_000, 100_000]
const MODES: ReadonlyArray<Mode> = ["parallel", "sequential"]
const SHAPES: ReadonlyArray<Shape> = ["succeed", "sync", "promise"]

/**
 * Samples per size: about 10 000 calls per sample up to N = 1 000 (so that the background work a sample
 * ends with, see `SETTLE_MS`, is a small share of it), one run per sample above.
 */
const plan = (n: number): Plan => {
  if (n <= 1000) {
    // The small sizes are the noisiest (a call costs about what a sample's noise does): more samples.
    const reps = QUICK ? 3 : n <= 100 ? 9 : 5
    return { ...perCallRuns(n, QUICK ? 2000 : CALLS_PER_SAMPLE), warm: 1, reps, budgetUs: 10e6 }
  }
  if (n <= 10_000) return { iters: 1, rewarm: 1, warm: 0, reps: QUICK ? 2 : 3, budgetUs: 5e6 }
  // N = 100 000: the median of three runs per side (pi's parallel run alone takes about half a minute).
  return { iters: 1, rewarm: 0, warm: 0, reps: QUICK ? 1 : 3, budgetUs: QUICK ? 0 : 120e6 }
}

const fmt = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2))

const sideCache = new Map<string, { ours: LoopSide; pi: LoopSide }>()
const sidesFor = (shape: Shape, delayMs = 0) => {
  const key = `${shape}/${delayMs}`
  let s = sideCache.get(key)
  if (s === undefined) {
    s = { ours: makeOurs(shape, delayMs), pi: makePi(shape, delayMs) }
    sideCache.set(key, s)
  }
  return s
}

// ---------------------------------------------------------------------------------------------------------
// 1. Per call, through agentLoop
// ---------------------------------------------------------------------------------------------------------

interface PerCallRow {
  readonly api: string
  readonly consumer: Consumer
  readonly mode: Mode
  readonly n: number
  readonly shape: Shape
  readonly hooks: boolean
  readonly ours_us_per_call: number
  readonly pi_us_per_call: number
  readonly ratio: number
  readonly ours_spread_pct: number
  readonly pi_spread_pct: number
  readonly samples: number
  readonly iters_per_sample: number
}

const perCall = async (
  n: number,
  mode: Mode,
  shape: Shape,
  hooks: boolean,
  consumer: Consumer
): Promise<PerCallRow> => {
  const pair = sidesFor(shape)
  const work: Work = { mode, hooks, script: [callsMessage(n), FINAL], context: [] }
  const base = baselineWork(mode, hooks)
  const p = plan(n)
  // Up to N = 10 000 each sample is paired with a fresh no-call sample; at 100 000 the fixed cost is noise.
  const runners: RunnerPair = {
    ours: loopRunner(pair.ours, work, consumer),
    pi: loopRunner(pair.pi, work, consumer),
    baseline: n <= 10_000
      ? { ours: loopRunner(pair.ours, base, consumer), pi: loopRunner(pair.pi, base, consumer) }
      : undefined
  }
  const label = `${consumer} ${mode} n=${n} ${shape}${hooks ? " +hooks" : ""}`
  const samples = await compareRunners(runners, p, label, cpuNow)
  const ours = summarize(samples.ours.map((t) => t / n))
  const pi = summarize(samples.pi.map((t) => t / n))
  const row: PerCallRow = {
    api: "agentLoop",
    consumer,
    mode,
    n,
    shape,
    hooks,
    ours_us_per_call: round(ours.median),
    pi_us_per_call: round(pi.median),
    ratio: round(ours.median / pi.median),
    ours_spread_pct: round(ours.spreadPct, 1),
    pi_spread_pct: round(pi.spreadPct, 1),
    samples: Math.min(ours.samples, pi.samples),
    iters_per_sample: p.iters
  }
  console.log(
    `  ${label.padEnd(44)} ours ${fmt(row.ours_us_per_call)} µs  pi ${fmt(row.pi_us_per_call)} µs  ratio ${
      row.ratio.toFixed(2)
    }`
  )
  return row
}

const perCallRows = async (): Promise<Array<PerCallRow>> => {
  const rows: Array<PerCallRow> = []
  for (const n of SIZES) {
    for (const mode of MODES) {
      // At 100 000 one shape without hooks (pi's parallel run alone takes about half a minute).
      const shapes = n >= 100_000 ? (["succeed"] as const) : SHAPES
      for (const shape of shapes) {
        for (const hooks of n >= 100_000 ? [false] : [false, true]) {
          rows.push(await perCall(n, mode, shape, hooks, "iterate"))
        }
      }
    }
  }
  return rows
}

/** The callback consumer on both sides (ours: an `EventSink.fromCallback`; pi: `runAgentLoop`'s emit). */
const callbackRows = async (): Promise<Array<PerCallRow>> => {
  const rows: Array<PerCallRow> = []
  for (const n of [10, 1000, 10_000]) {
    for (const mode of MODES) rows.push(await perCall(n, mode, "succeed", false, "callback"))
  }
  return rows
}

/**
 * An Effect application's consumer (ours: `agentLoop` read with `Stream.runForEach`) against pi's iterated
 * `EventStream`, and ours iterated, with handlers that wait one event-loop turn (and instant ones).
 */
const streamRows = async (): Promise<Array<PerCallRow>> => {
  const rows: Array<PerCallRow> = []
  for (const n of [10, 1000]) {
    for (const mode of MODES) {
      for (const shape of ["succeed", "immediate"] as const) {
        for (const consumer of ["stream", "iterate"] as const) {
          if (consumer === "iterate" && shape === "succeed") continue
          rows.push(await perCall(n, mode, shape, false, consumer))
        }
      }
    }
  }
  return rows
}

// ---------------------------------------------------------------------------------------------------------
// 2. executeToolCalls alone (ours) against pi's agentLoop, as the earlier benchmark measured it
// ---------------------------------------------------------------------------------------------------------

const batchRows = async () => {
  const pair = { ours: makeOursBatch({ toolCount: 1, delayMs: 0 }), pi: makePiBatch({ toolCount: 1, delayMs: 0 }) }
  const rows: Array<Record<string, unknown>> = []
  for (const n of [10, 1000, 10_000]) {
    for (const mode of MODES) {
      const message = makeMessage(n, 1)
      const p = plan(n)
      const samples = await compare(
        pair,
        (side) => () => side.run(message, { mode, hooks: false }),
        (side) => expected(side, n),
        p,
        `executeToolCalls ${mode} ${n}`,
        (side) => side.baseline,
        cpuNow
      )
      const ours = median(samples.ours) / n
      const pi = median(samples.pi) / n
      rows.push({
        api: "ours executeToolCalls (sync callback sink) vs pi agentLoop (iterated)",
        mode,
        n,
        ours_us_per_call: round(ours),
        pi_us_per_call: round(pi),
        ratio: round(ours / pi)
      })
      console.log(
        `  executeToolCalls ${mode} n=${n}: ours ${fmt(ours)} µs  pi agentLoop ${fmt(pi)} µs  ratio ${
          (ours / pi).toFixed(2)
        }`
      )
    }
  }
  return rows
}

// ---------------------------------------------------------------------------------------------------------
// 3. Wall time, tools that wait 10 ms
// ---------------------------------------------------------------------------------------------------------

const wallRows = async () => {
  const pair = sidesFor("succeed", 10)
  const cases: Array<{ mode: Mode; n: number; reps: number }> = [
    { mode: "parallel", n: 100, reps: QUICK ? 3 : 7 },
    { mode: "parallel", n: 1000, reps: QUICK ? 3 : 7 },
    { mode: "sequential", n: 100, reps: QUICK ? 1 : 3 }
  ]
  const rows: Array<Record<string, unknown>> = []
  for (const c of cases) {
    const work: Work = { mode: c.mode, hooks: false, script: [callsMessage(c.n), FINAL], context: [] }
    const samples = await compareRunners(
      { ours: loopRunner(pair.ours, work, "iterate"), pi: loopRunner(pair.pi, work, "iterate") },
      { iters: 1, rewarm: c.mode === "parallel" ? 1 : 0, warm: 0, reps: c.reps, budgetUs: 60e6 },
      `wall ${c.mode} ${c.n}`
    )
    const ideal = c.mode === "parallel" ? 10 : 10 * c.n
    const ours = median(samples.ours) / 1000
    const pi = median(samples.pi) / 1000
    const row = {
      workload: "tools of 10 ms, agentLoop iterated",
      mode: c.mode,
      n: c.n,
      ideal_ms: ideal,
      ours_ms: round(ours, 2),
      pi_ms: round(pi, 2),
      ratio: round(ours / pi),
      samples: samples.ours.length
    }
    rows.push(row)
    console.log(
      `  ${c.mode} ${c.n} × 10 ms: ours ${fmt(ours)} ms  pi ${fmt(pi)} ms  (ideal ${ideal})  ratio ${
        row.ratio.toFixed(2)
      }`
    )
  }
  return rows
}

// ---------------------------------------------------------------------------------------------------------
// 4. Turns: 500 short turns, and turns at a 20 000-message transcript (loop and stateful agent)
// ---------------------------------------------------------------------------------------------------------

const agentRunner = (
  side: LoopSide,
  messages: ReadonlyArray<AgentMessage>,
  script: ReturnType<typeof turnsScript>,
  events: number
): Runner => ({
  run: async () => {
    await side.agent.reset(messages, script)
    return side.agent.prompt()
  },
  events
})

/**
 * The turn rows. `steady`: the warm steady state instead, no full GC before a sample and many runs per
 * sample (a process running turns back to back); reported beside the rows the targets use, because the
 * two regimes favour different code (after a GC, whatever keeps its optimized code; warm, fewer steps).
 */
const turnRows = async (steady = false) => {
  const pair = sidesFor("succeed")
  const rows: Array<Record<string, unknown>> = []
  const cases = [
    { name: "500 short turns", turns: 500, context: 0, reps: QUICK ? 3 : 5 },
    { name: "10 turns from an empty transcript", turns: 10, context: 0, reps: QUICK ? 3 : 5 },
    { name: "10 turns from a 20 000-message transcript", turns: 10, context: 20_000, reps: QUICK ? 3 : 5 }
  ]
  for (const c of cases) {
    const context = transcriptOf(c.context)
    const script = turnsScript(c.turns)
    const work: Work = { mode: "parallel", hooks: false, script, context }
    const events = loopEvents(work)
    const iters = turnRuns(c.turns, c.context) * (steady ? 10 : 1)
    for (const api of ["agentLoop", "agent.prompt"] as const) {
      const pairOf: RunnerPair = api === "agentLoop"
        ? { ours: loopRunner(pair.ours, work, "iterate"), pi: loopRunner(pair.pi, work, "iterate") }
        : { ours: agentRunner(pair.ours, context, script, events), pi: agentRunner(pair.pi, context, script, events) }
      const samples = await compareRunners(
        pairOf,
        { iters, rewarm: 1, warm: steady ? 2 : 1, reps: c.reps, budgetUs: 20e6, collect: !steady },
        `${c.name} ${api}${steady ? " steady" : ""}`,
        cpuNow
      )
      // Per model call: the run's turns plus the final answer.
      const calls = c.turns + 1
      const ours = median(samples.ours) / calls
      const pi = median(samples.pi) / calls
      rows.push({
        workload: c.name,
        api,
        transcript: c.context,
        turns: calls,
        ours_us_per_turn: round(ours, 1),
        pi_us_per_turn: round(pi, 1),
        ratio: round(ours / pi)
      })
      console.log(
        `  ${c.name} (${api}${steady ? ", steady" : ""}): ours ${fmt(ours)} µs/turn  pi ${fmt(pi)} µs/turn  ratio ${
          (ours / pi).toFixed(2)
        }`
      )
    }
  }
  await pair.ours.agent.dispose()
  await pair.pi.agent.dispose()
  return rows
}

// ---------------------------------------------------------------------------------------------------------
// 5. Memory at N = 10 000 and import to first event, each in fresh processes
// ---------------------------------------------------------------------------------------------------------

const memoryRows = async () => {
  const rows: Array<Record<string, unknown>> = []
  const n = 10_000
  for (const mode of MODES) {
    const results: Record<"ours" | "pi", Array<MemoryResult>> = { ours: [], pi: [] }
    for (let r = 0; r < (QUICK ? 1 : 3); r++) {
      for (const side of r % 2 === 0 ? (["ours", "pi"] as const) : (["pi", "ours"] as const)) {
        results[side].push(await spawnMemory(side, mode, n))
      }
    }
    const pick = (xs: Array<MemoryResult>, k: keyof MemoryResult) => round(median(xs.map((x) => x[k] as number)), 1)
    const row = {
      mode,
      n,
      ours_heap_delta_mb: pick(results.ours, "heap_delta_mb"),
      pi_heap_delta_mb: pick(results.pi, "heap_delta_mb"),
      ours_rss_delta_mb: pick(results.ours, "rss_delta_mb"),
      pi_rss_delta_mb: pick(results.pi, "rss_delta_mb"),
      ours_peak_rss_mb: pick(results.ours, "peak_rss_mb"),
      pi_peak_rss_mb: pick(results.pi, "peak_rss_mb"),
      ours_live_heap_mb: pick(results.ours, "live_heap_delta_mb"),
      pi_live_heap_mb: pick(results.pi, "live_heap_delta_mb"),
      processes_per_side: results.ours.length
    }
    rows.push(row)
    console.log(
      `  ${mode} n=${n}: peak heap growth ours ${row.ours_heap_delta_mb} MB pi ${row.pi_heap_delta_mb} MB; RSS growth ours ${row.ours_rss_delta_mb} MB pi ${row.pi_rss_delta_mb} MB; live ours ${row.ours_live_heap_mb} MB pi ${row.pi_live_heap_mb} MB`
    )
  }
  return rows
}

const startupRows = async () => {
  await buildPackage()
  const sides = ["ours", "ours-src", "pi"] as const
  const results: Record<Side, Array<StartupResult>> = { ours: [], "ours-src": [], pi: [] }
  for (let r = 0; r < (QUICK ? 1 : 3); r++) {
    for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
      results[side].push(await spawnStartup(side))
    }
  }
  const cpu = (side: Side) => median(results[side].map((x) => x.cpu_ms))
  const wall = (side: Side) => median(results[side].map((x) => x.wall_ms))
  const row = {
    ours_cpu_ms: cpu("ours"),
    pi_cpu_ms: cpu("pi"),
    cpu_ratio: round(cpu("ours") / cpu("pi")),
    ours_wall_ms: wall("ours"),
    pi_wall_ms: wall("pi"),
    ours_src_cpu_ms: cpu("ours-src"),
    ours_src_wall_ms: wall("ours-src"),
    processes_per_side: results.ours.length,
    note:
      "ours imported from its published JavaScript (dist/, built with tsconfig.build.json), pi from its published JavaScript; ours_src_* imports src/*.ts through Node's type stripping (not compared)"
  }
  console.log(
    `  import to first event: CPU ours ${row.ours_cpu_ms} ms pi ${row.pi_cpu_ms} ms (ratio ${row.cpu_ratio}); wall ours ${row.ours_wall_ms} ms pi ${row.pi_wall_ms} ms; from sources CPU ${row.ours_src_cpu_ms} ms`
  )
  return row
}

// ---------------------------------------------------------------------------------------------------------
// Targets (issue 9)
// ---------------------------------------------------------------------------------------------------------

interface Target {
  readonly target: string
  readonly met: boolean
  readonly actual: string
}

const evaluateTargets = (
  rows: ReadonlyArray<PerCallRow>,
  wall: ReadonlyArray<Record<string, unknown>>,
  turns: ReadonlyArray<Record<string, unknown>>,
  memory: ReadonlyArray<Record<string, unknown>>
): Array<Target> => {
  const out: Array<Target> = []
  const worst = rows.reduce((a, r) => (r.ratio > a.ratio ? r : a), rows[0]!)
  const over = rows.filter((r) => r.ratio > 1)
  out.push({
    target: "every per-call row (agentLoop, iterated, N >= 10, both modes, hooks or not, every shape): ours/pi <= 1.0",
    met: over.length === 0,
    actual:
      `${over.length} of ${rows.length} rows above 1.0; worst ${worst.ratio} (${worst.mode} n=${worst.n} ${worst.shape}${
        worst.hooks ? " +hooks" : ""
      })`
  })
  const p10k = rows.filter((r) => r.n === 10_000 && r.mode === "parallel")
  if (p10k.length > 0) {
    const m = Math.max(...p10k.map((r) => r.ratio))
    out.push({ target: "N = 10 000 parallel: ours/pi <= 0.5", met: m <= 0.5, actual: `worst ${m}` })
  }
  for (const mode of MODES) {
    const big = rows.find((r) => r.n === 100_000 && r.mode === mode)
    const ref = rows.find((r) => r.n === 1000 && r.mode === mode && r.shape === "succeed" && !r.hooks)
    if (big !== undefined && ref !== undefined) {
      const k = big.ours_us_per_call / ref.ours_us_per_call
      out.push({
        target: `${mode}: per-call cost at N = 100 000 <= 1.5 × at N = 1 000 (linear)`,
        met: k <= 1.5,
        actual: `${round(k, 2)} × (${big.ours_us_per_call} vs ${ref.ours_us_per_call} µs)`
      })
    }
  }
  const w = wall.find((x) => x["mode"] === "parallel" && x["n"] === 1000)
  if (w !== undefined) {
    out.push({
      target: "wall time of 1 000 × 10 ms parallel <= pi's",
      met: (w["ratio"] as number) <= 1,
      actual: `ours ${String(w["ours_ms"])} ms, pi ${String(w["pi_ms"])} ms`
    })
  }
  for (const t of turns.filter((t) => t["workload"] !== "10 turns from an empty transcript")) {
    out.push({
      target: `${String(t["workload"])} (${String(t["api"])}) <= pi's`,
      met: (t["ratio"] as number) <= 1,
      actual: `ours ${String(t["ours_us_per_turn"])} µs/turn, pi ${String(t["pi_us_per_turn"])} µs/turn (${
        String(t["ratio"])
      })`
    })
  }
  for (const m of memory) {
    out.push({
      target: `memory at N = 10 000 ${String(m["mode"])}: peak heap and RSS growth <= pi's`,
      met: (m["ours_heap_delta_mb"] as number) <= (m["pi_heap_delta_mb"] as number) &&
        (m["ours_rss_delta_mb"] as number) <= (m["pi_rss_delta_mb"] as number),
      actual: `heap ours +${String(m["ours_heap_delta_mb"])} MB pi +${String(m["pi_heap_delta_mb"])} MB; RSS ours +${
        String(m["ours_rss_delta_mb"])
      } MB pi +${String(m["pi_rss_delta_mb"])} MB`
    })
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------

const packageVersion = (name: string): string => {
  try {
    const path = join(here, "..", "node_modules", ...name.split("/"), "package.json")
    return (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version
  } catch {
    return "unknown"
  }
}

/** Which code was measured: the commit, and whether src/ had uncommitted changes (with a digest of them). */
const sourceState = () => {
  const git = (...args: Array<string>) => {
    try {
      return execFileSync("git", args, { cwd: join(here, ".."), encoding: "utf8" }).trim()
    } catch {
      return ""
    }
  }
  const dirty = git("status", "--porcelain", "--", "src").split("\n").filter((l) => l.length > 0)
  const diff = git("diff", "HEAD", "--", "src")
  return {
    commit: git("rev-parse", "--short", "HEAD") || "unknown",
    src_dirty_files: dirty.length,
    src_diff_sha1: diff.length > 0 ? createHash("sha1").update(diff).digest("hex").slice(0, 12) : null
  }
}

const warmUp = async () => {
  for (const shape of SHAPES) {
    const pair = sidesFor(shape)
    for (const mode of MODES) {
      for (const hooks of [false, true]) {
        for (const [n, times] of [[10, 100], [100, 20], [1000, 2]] as const) {
          const work: Work = { mode, hooks, script: [callsMessage(n), FINAL], context: [] }
          for (let i = 0; i < times; i++) {
            await pair.ours.loop(work, "iterate")
            await pair.pi.loop(work, "iterate")
          }
        }
      }
    }
  }
}

const main = async () => {
  const started = Date.now()
  const cpus = os.cpus()
  const machine = {
    cpu: cpus[0]?.model ?? "unknown",
    cores: cpus.length,
    memory_gb: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    date: new Date().toISOString(),
    quick: QUICK,
    load_average_at_start: os.loadavg().map((x) => round(x, 2)),
    versions: {
      effect: packageVersion("effect"),
      "@mariozechner/pi-agent-core": packageVersion("@mariozechner/pi-agent-core")
    },
    source: sourceState()
  }
  console.log(`effect-agent vs pi-agent-core: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}`)
  console.log("warming up …")
  await warmUp()
  console.log("per call through agentLoop, events iterated (µs per call, median):")
  const rows = await perCallRows()
  console.log("per call, callback consumer on both sides:")
  const callback = await callbackRows()
  console.log("per call, an Effect Stream consumer (ours) and tools that wait one event-loop turn:")
  const stream = await streamRows()
  console.log("executeToolCalls alone (ours) vs pi's agentLoop:")
  const batch = await batchRows()
  console.log("tools that wait 10 ms (wall time):")
  const wall = await wallRows()
  console.log("20 edits, then 20 reads of the same files, tools of 10 ms (wall time; ours schedules by resources):")
  const schedule = await scheduleRows(QUICK ? 3 : 7)
  console.log("turns:")
  const turns = await turnRows()
  console.log("turns, warm steady state (no GC before a sample):")
  const turnsSteady = await turnRows(true)
  console.log("memory (fresh process per side and run):")
  const memory = await memoryRows()
  console.log("import to first event (fresh process per side and run):")
  const startup = await startupRows()
  const targets = evaluateTargets(rows, wall, turns, memory)

  const path = join(here, "results.json")
  let previous: Record<string, unknown> = {}
  if (existsSync(path)) {
    try {
      previous = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>
    } catch {
      previous = {}
    }
  }
  const mine = {
    machine,
    method: {
      per_call:
        "(mean time of `iters` back-to-back runs with N calls − mean time of the same side's run with no tool calls, taken right before it) / N; the no-call run has two model turns like the N-call run (a follow-up starts the second); median over samples; sides alternate; each sample starts with a full GC then untimed re-warm runs. N = 100 000: one run, fixed cost not subtracted.",
      ours:
        "AgentLoop.agentLoopAsyncIterable (for await) with a scripted Model layer and a ToolRegistry; callback rows: runAgentLoop + EventSink.fromCallback; stream rows: AgentLoop.agentLoop read with Stream.runForEach",
      pi:
        "agentLoop (for await over its EventStream) with a scripted streamFn; callback rows: runAgentLoop with an emit callback; stream rows: the same for await (pi has no Stream)",
      shapes:
        "succeed: Effect.succeed / hooks Effect.void (pi: async fn returning at once); sync: Effect.sync (pi: the same async fn); promise: Effect.promise(async () => { await null; … }) (pi: async fn with the same await); immediate: a handler resolving after one setImmediate (both sides)",
      conversion:
        "both sides keep user/assistant/toolResult messages (ours: default convertToLlm; pi: the filter its Agent uses by default)",
      schedule:
        "wall time of one run of one message (edit file-0..19, then read file-0..19; tools `edit` and `read` of { path }, each waiting 10 ms); ours parallel with edit declaring write(path) and read declaring read(path) (Tool.withResources), against pi parallel and pi sequential; medians; sides alternate; each sample a full GC, one untimed run, one timed run. Counts are over every run (untimed ones included): a read is after its edit when it began after the edit ended, overlapping when the two ran together for some time"
    },
    rows,
    callback,
    stream,
    execute_tool_calls: batch,
    wall,
    schedule,
    turns,
    turns_steady: turnsSteady,
    memory,
    startup,
    targets,
    load_average_at_end: os.loadavg().map((x) => round(x, 2)),
    elapsed_s: Math.round((Date.now() - started) / 1000)
  }
  // Keys this run does not write (another benchmark's, e.g. "grep") are kept as they were.
  const drop = new Set(["floor"])
  const kept = Object.fromEntries(Object.entries(previous).filter(([k]) => !(k in mine) && !drop.has(k)))
  writeFileSync(path, JSON.stringify({ ...mine, ...kept }, null, 2) + "\n")

  console.log(
    "\n" + table(
      ["mode", "shape", "N", "hooks", "ours µs/call", "pi µs/call", "ours/pi"],
      [...rows, ...callback, ...stream].map((r) => [
        r.mode,
        `${r.shape}${r.consumer === "iterate" ? "" : ` (${r.consumer})`}`,
        String(r.n),
        r.hooks ? "yes" : "no",
        fmt(r.ours_us_per_call),
        fmt(r.pi_us_per_call),
        r.ratio.toFixed(2)
      ])
    )
  )
  console.log(
    "\n" + table(
      ["workload", "api", "transcript", "ours µs/turn", "pi µs/turn", "ours/pi"],
      [...turns, ...turnsSteady.map((t): Record<string, unknown> => ({ ...t, api: `${t["api"]} (steady)` }))].map((
        t
      ) => [
        String(t["workload"]),
        String(t["api"]),
        String(t["transcript"]),
        fmt(t["ours_us_per_turn"] as number),
        fmt(t["pi_us_per_turn"] as number),
        (t["ratio"] as number).toFixed(2)
      ])
    )
  )
  console.log(
    "\n" + table(
      [
        "message",
        "pi mode",
        "ideal ms ours / pi",
        "ours ms",
        "pi ms",
        "ours/pi",
        "ours reads after edit",
        "pi reads racing edit"
      ],
      schedule.map((r) => [
        `${r.calls / 2} edits, then ${r.calls / 2} reads`,
        r.pi_mode,
        `${r.ours_ideal_ms} / ${r.pi_ideal_ms}`,
        fmt(r.ours_ms),
        fmt(r.pi_ms),
        r.ratio.toFixed(2),
        `${r.ours_reads_after_their_edit} of ${r.ours_runs * r.reads_per_run}`,
        `${r.pi_reads_overlapping_their_edit} of ${r.pi_runs * r.reads_per_run}`
      ])
    )
  )
  console.log("\ntargets:")
  for (const t of targets) console.log(`  ${t.met ? "met   " : "MISSED"}  ${t.target}: ${t.actual}`)
  console.log(`\nwrote ${path} (${mine.elapsed_s} s)`)
}

await main()
