/**
 * effect-agent vs pi-agent-core 0.73.1: tool-batch execution benchmark.
 *
 *   npm run bench                 full run (about 4 to 5 minutes on 2 cores)
 *   npm run bench -- --quick      no N = 100 000, fewer repetitions (sanity check, 1 to 3 minutes)
 *   npm run bench -- --no-seq1000 skip the sequential 1000 × 10 ms wall run (~21 s)
 *
 * Writes results.json next to this file. Needs --expose-gc (the npm script passes it) so that each sample
 * starts from a collected heap and garbage from one side is not charged to the other. See README.md.
 */
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { readFileSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import {
  floorArgs,
  floorEffect,
  floorPromise,
  makeMessage,
  makeOurs,
  makePi,
  type Mode,
  type Side
} from "./harness.ts"
import { baselineEvents, compare, expected, sample } from "./measure.ts"
import { type MemoryResult, spawnMemory } from "./memory.ts"
import { median, round, summarize, type Summary, table } from "./stats.ts"

const here = dirname(fileURLToPath(import.meta.url))
const argv = new Set(process.argv.slice(2))
const QUICK = argv.has("--quick")
const SEQ1000 = !argv.has("--no-seq1000") && !QUICK

if ((globalThis as { gc?: unknown }).gc === undefined) {
  console.warn("warning: run with --expose-gc (npm run bench does) for comparable samples")
}

const SIZES = QUICK ? [1, 10, 100, 1000, 10_000] : [1, 10, 100, 1000, 10_000, 100_000]
const MODES: ReadonlyArray<Mode> = ["parallel", "sequential"]
const VARIANTS = [
  { variant: "1 tool", toolCount: 1, hooks: false },
  { variant: "1 tool + hooks", toolCount: 1, hooks: true },
  { variant: "20 tools", toolCount: 20, hooks: false }
] as const

/** Repetitions and inner iterations per sample, and a per-side time budget for huge N. */
const plan = (n: number) => {
  if (n <= 1000) {
    const iters = Math.max(1, Math.round((n === 1 ? 2000 : 4000) / n))
    return { iters, rewarm: iters, warm: 1, reps: QUICK ? 3 : 11, budgetUs: 10e6 }
  }
  if (n <= 10_000) return { iters: 1, rewarm: 1, warm: 1, reps: QUICK ? 3 : 5, budgetUs: 15e6 }
  return { iters: 1, rewarm: 0, warm: 0, reps: 3, budgetUs: 12e6 }
}

// ---------------------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------------------

const sides = new Map<number, { ours: Side; pi: Side }>()
const sidesFor = (toolCount: number, delayMs = 0) => {
  const key = toolCount * 1000 + delayMs
  let s = sides.get(key)
  if (s === undefined) {
    s = { ours: makeOurs({ toolCount, delayMs }), pi: makePi({ toolCount, delayMs }) }
    sides.set(key, s)
  }
  return s
}

// ---------------------------------------------------------------------------------------------------------
// 1. Per-call cost of instant tool calls
// ---------------------------------------------------------------------------------------------------------

interface Row {
  readonly workload: string
  readonly mode: Mode
  readonly n: number
  readonly variant: string
  readonly ours_us_per_call: number
  readonly pi_us_per_call: number
  readonly ratio: number
  readonly ours_min: number
  readonly ours_max: number
  readonly pi_min: number
  readonly pi_max: number
  readonly ours_spread_pct: number
  readonly pi_spread_pct: number
  readonly ours_samples: number
  readonly pi_samples: number
  readonly iters_per_sample: number
}

const warmUp = async () => {
  for (const toolCount of [1, 20]) {
    const pair = sidesFor(toolCount)
    for (const mode of MODES) {
      for (const hooks of [false, true]) {
        for (const [n, times] of [[10, 200], [100, 40], [1000, 4]] as const) {
          const message = makeMessage(n, toolCount)
          for (let i = 0; i < times; i++) {
            await pair.ours.run(message, { mode, hooks })
            await pair.pi.run(message, { mode, hooks })
          }
        }
      }
    }
    for (let i = 0; i < 500; i++) {
      await pair.ours.baseline()
      await pair.pi.baseline()
    }
  }
}

/** Fixed per-run cost of each side (a run with no tool calls), in microseconds. */
const measureBaselines = async () => {
  const out = new Map<number, { ours: number; pi: number }>()
  for (const toolCount of [1, 20]) {
    const pair = sidesFor(toolCount)
    const samples = await compare(
      pair,
      (side) => side.baseline,
      baselineEvents,
      { iters: 2000, rewarm: 2000, warm: 1, reps: 7, budgetUs: 10e6 },
      "baseline"
    )
    out.set(toolCount, { ours: median(samples.ours), pi: median(samples.pi) })
  }
  return out
}

const instantRows = async (baselines: Map<number, { ours: number; pi: number }>): Promise<Array<Row>> => {
  const rows: Array<Row> = []
  for (const n of SIZES) {
    for (const mode of MODES) {
      for (const v of VARIANTS) {
        const pair = sidesFor(v.toolCount)
        const base = baselines.get(v.toolCount)!
        const message = makeMessage(n, v.toolCount)
        const label = `instant ${mode} n=${n} ${v.variant}`
        const p = plan(n)
        // Up to N = 1000 each sample is paired with a fresh no-call sample; above, the fixed cost is noise.
        const paired = n <= 1000
        const samples = await compare(
          pair,
          (side) => () => side.run(message, { mode, hooks: v.hooks }),
          (side) => expected(side, n),
          p,
          label,
          paired ? (side) => side.baseline : undefined
        )
        const perCall = (xs: Array<number>, b: number): Summary => summarize(xs.map((t) => (t - b) / n))
        const ours = perCall(samples.ours, paired ? 0 : base.ours)
        const pi = perCall(samples.pi, paired ? 0 : base.pi)
        const row: Row = {
          workload: "instant",
          mode,
          n,
          variant: v.variant,
          ours_us_per_call: round(ours.median),
          pi_us_per_call: round(pi.median),
          ratio: round(ours.median / pi.median),
          ours_min: round(ours.min),
          ours_max: round(ours.max),
          pi_min: round(pi.min),
          pi_max: round(pi.max),
          ours_spread_pct: round(ours.spreadPct, 1),
          pi_spread_pct: round(pi.spreadPct, 1),
          ours_samples: ours.samples,
          pi_samples: pi.samples,
          iters_per_sample: p.iters
        }
        rows.push(row)
        console.log(
          `  ${label.padEnd(44)} ours ${fmt(row.ours_us_per_call)} µs (±${row.ours_spread_pct}%)  pi ${
            fmt(row.pi_us_per_call)
          } µs (±${row.pi_spread_pct}%)  ratio ${row.ratio.toFixed(2)}`
        )
      }
    }
  }
  return rows
}

const fmt = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2))

// ---------------------------------------------------------------------------------------------------------
// 2. Wall time with tools that wait 10 ms
// ---------------------------------------------------------------------------------------------------------

interface WallRow {
  readonly workload: string
  readonly mode: Mode
  readonly n: number
  readonly ideal_ms: number
  readonly ours_ms: number
  readonly pi_ms: number
  readonly ours_over_ideal: number
  readonly pi_over_ideal: number
  readonly ratio: number
  readonly ours_min_ms: number
  readonly ours_max_ms: number
  readonly pi_min_ms: number
  readonly pi_max_ms: number
  readonly samples: number
}

const wallRows = async (): Promise<Array<WallRow>> => {
  const pair = sidesFor(1, 10)
  for (let i = 0; i < 3; i++) {
    for (const side of [pair.ours, pair.pi]) await side.run(makeMessage(100, 1), { mode: "parallel", hooks: false })
  }
  const cases: Array<{ mode: Mode; n: number; reps: number }> = [
    { mode: "parallel", n: 100, reps: QUICK ? 3 : 7 },
    { mode: "parallel", n: 1000, reps: QUICK ? 3 : 7 },
    { mode: "sequential", n: 100, reps: QUICK ? 1 : 3 },
    ...(SEQ1000 ? [{ mode: "sequential" as const, n: 1000, reps: 1 }] : [])
  ]
  const rows: Array<WallRow> = []
  for (const c of cases) {
    const message = makeMessage(c.n, 1)
    const samples = await compare(
      pair,
      (side) => () => side.run(message, { mode: c.mode, hooks: false }),
      (side) => expected(side, c.n),
      { iters: 1, rewarm: c.mode === "parallel" ? 1 : 0, warm: 0, reps: c.reps, budgetUs: 60e6 },
      `wall ${c.mode} ${c.n}`
    )
    const ideal = c.mode === "parallel" ? 10 : 10 * c.n
    const ours = summarize(samples.ours.map((us) => us / 1000))
    const pi = summarize(samples.pi.map((us) => us / 1000))
    const row: WallRow = {
      workload: "sleep 10ms",
      mode: c.mode,
      n: c.n,
      ideal_ms: ideal,
      ours_ms: round(ours.median, 2),
      pi_ms: round(pi.median, 2),
      ours_over_ideal: round(ours.median / ideal),
      pi_over_ideal: round(pi.median / ideal),
      ratio: round(ours.median / pi.median),
      ours_min_ms: round(ours.min, 2),
      ours_max_ms: round(ours.max, 2),
      pi_min_ms: round(pi.min, 2),
      pi_max_ms: round(pi.max, 2),
      samples: ours.samples
    }
    rows.push(row)
    console.log(
      `  wall ${c.mode} ${c.n}×10ms: ideal ${ideal} ms, ours ${row.ours_ms} ms, pi ${row.pi_ms} ms, ratio ${
        row.ratio.toFixed(2)
      }`
    )
  }
  return rows
}

// ---------------------------------------------------------------------------------------------------------
// 3. Peak memory at N = 10 000, each side in a fresh process
// ---------------------------------------------------------------------------------------------------------

const memoryRows = async () => {
  const rows: Array<Record<string, unknown>> = []
  const n = 10_000
  for (const mode of MODES) {
    const results: Record<"ours" | "pi", Array<MemoryResult>> = { ours: [], pi: [] }
    for (let r = 0; r < 3; r++) {
      for (const side of r % 2 === 0 ? (["ours", "pi"] as const) : (["pi", "ours"] as const)) {
        const result = await spawnMemory(side, mode, n)
        if (result.events !== expected(side, n)) {
          throw new Error(`memory ${side}: wrong event count ${result.events}`)
        }
        results[side].push(result)
      }
    }
    const pick = (xs: Array<MemoryResult>, k: keyof MemoryResult) => round(median(xs.map((x) => x[k] as number)), 1)
    const row = {
      n,
      mode,
      ours_peak_heap_mb: pick(results.ours, "peak_heap_mb"),
      pi_peak_heap_mb: pick(results.pi, "peak_heap_mb"),
      ours_heap_delta_mb: pick(results.ours, "heap_delta_mb"),
      pi_heap_delta_mb: pick(results.pi, "heap_delta_mb"),
      ours_peak_rss_mb: pick(results.ours, "peak_rss_mb"),
      pi_peak_rss_mb: pick(results.pi, "peak_rss_mb"),
      ours_rss_delta_mb: pick(results.ours, "rss_delta_mb"),
      pi_rss_delta_mb: pick(results.pi, "rss_delta_mb"),
      ours_live_heap_mb: pick(results.ours, "live_heap_delta_mb"),
      pi_live_heap_mb: pick(results.pi, "live_heap_delta_mb"),
      heap_ratio: 0,
      rss_ratio: 0,
      runs: results
    }
    row.heap_ratio = round(row.ours_heap_delta_mb / row.pi_heap_delta_mb)
    row.rss_ratio = round(row.ours_peak_rss_mb / row.pi_peak_rss_mb)
    rows.push(row)
    console.log(
      `  memory ${mode} n=${n}: heap peak ours ${row.ours_peak_heap_mb} MB (+${row.ours_heap_delta_mb}) pi ${row.pi_peak_heap_mb} MB (+${row.pi_heap_delta_mb}); RSS peak ours ${row.ours_peak_rss_mb} MB pi ${row.pi_peak_rss_mb} MB; live at batch end ours +${row.ours_live_heap_mb} MB pi +${row.pi_live_heap_mb} MB`
    )
  }
  return rows
}

// ---------------------------------------------------------------------------------------------------------
// 4. The floor: the bodies with no pipeline
// ---------------------------------------------------------------------------------------------------------

const floorRows = async (rows: ReadonlyArray<Row>) => {
  const out: Array<Record<string, unknown>> = []
  for (const n of SIZES.filter((n) => n >= 100)) {
    const args = floorArgs(n)
    for (const mode of MODES) {
      const p = plan(n)
      const runners = [
        { runner: mode === "parallel" ? "Promise.all" : "for await", f: () => floorPromise(args, mode) },
        { runner: mode === "parallel" ? "Effect.forEach unbounded" : "Effect.forEach", f: () => floorEffect(args, mode) }
      ]
      for (const r of runners) {
        for (let w = 0; w < p.warm + 1; w++) await sample(r.f, p.iters, n, r.runner)
        const xs: Array<number> = []
        for (let i = 0; i < p.reps; i++) xs.push((await sample(r.f, p.iters, n, r.runner, p.rewarm)) / n)
        const s = summarize(xs)
        const ref = rows.find((row) => row.n === n && row.mode === mode && row.variant === "1 tool")
        out.push({
          n,
          mode,
          runner: r.runner,
          us_per_call: round(s.median),
          min: round(s.min),
          max: round(s.max),
          ours_us_per_call: ref?.ours_us_per_call,
          pi_us_per_call: ref?.pi_us_per_call
        })
        console.log(`  floor ${mode} n=${n} ${r.runner}: ${fmt(s.median)} µs/call`)
      }
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------------------
// Targets (issue 6)
// ---------------------------------------------------------------------------------------------------------

interface Target {
  readonly target: string
  readonly met: boolean
  readonly actual: string
}

const evaluateTargets = (
  rows: ReadonlyArray<Row>,
  wall: ReadonlyArray<WallRow>,
  memory: ReadonlyArray<Record<string, unknown>>
): Array<Target> => {
  const out: Array<Target> = []
  const ratios = (pick: (r: Row) => boolean) =>
    rows.filter(pick).map((r) => `${r.mode} ${r.variant} ${r.ratio.toFixed(2)}`)
  for (const n of [100, 1000]) {
    for (const mode of MODES) {
      const sel = rows.filter((r) => r.n === n && r.mode === mode)
      if (sel.length === 0) continue
      out.push({
        target: `ours/pi per call <= 1.0 at N=${n} ${mode}`,
        met: sel.every((r) => r.ratio <= 1.0),
        actual: ratios((r) => r.n === n && r.mode === mode).map((x) => x.replace(`${mode} `, "")).join(", ")
      })
    }
  }
  const p10k = rows.filter((r) => r.n === 10_000 && r.mode === "parallel")
  if (p10k.length > 0) {
    out.push({
      target: "ours/pi per call <= 0.5 at N=10000 parallel",
      met: p10k.every((r) => r.ratio <= 0.5),
      actual: p10k.map((r) => `${r.variant} ${r.ratio.toFixed(2)}`).join(", ")
    })
  }
  const big = rows.filter((r) => r.n === 100_000)
  if (big.length > 0) {
    const scaling = big.map((r) => {
      const ref = rows.find((x) => x.n === 1000 && x.mode === r.mode && x.variant === r.variant)!
      return { r, k: r.ours_us_per_call / ref.ours_us_per_call }
    })
    out.push({
      target: "ours per call at N=100000 <= 1.5x ours at N=1000",
      met: scaling.every((x) => x.k <= 1.5),
      actual: scaling.map((x) => `${x.r.mode} ${x.r.variant} ${x.k.toFixed(2)}x`).join(", ")
    })
  }
  const w = wall.find((x) => x.mode === "parallel" && x.n === 1000)
  if (w !== undefined) {
    out.push({
      target: "parallel wall 1000x10ms: ours <= pi",
      met: w.ours_ms <= w.pi_ms,
      actual: `ours ${w.ours_ms} ms, pi ${w.pi_ms} ms (ideal 10 ms)`
    })
  }
  // Peaks are compared as growth over each process's own baseline: the baseline RSS of a fresh process
  // varies by several MB from run to run for reasons unrelated to the batch.
  for (const m of memory) {
    const heapOk = (m["ours_heap_delta_mb"] as number) <= (m["pi_heap_delta_mb"] as number)
    const rssOk = (m["ours_rss_delta_mb"] as number) <= (m["pi_rss_delta_mb"] as number)
    out.push({
      target: `peak memory at N=10000 ${String(m["mode"])}: ours <= pi (peak heap and peak RSS growth)`,
      met: heapOk && rssOk,
      actual: `peak heap +${m["ours_heap_delta_mb"]} vs +${m["pi_heap_delta_mb"]} MB, peak RSS +${
        m["ours_rss_delta_mb"]
      } vs +${m["pi_rss_delta_mb"]} MB (absolute ${m["ours_peak_rss_mb"]} vs ${m["pi_peak_rss_mb"]} MB), live at batch end +${
        m["ours_live_heap_mb"]
      } vs +${m["pi_live_heap_mb"]} MB`
    })
  }
  return out
}

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
  const baselines = await measureBaselines()
  for (const [k, b] of baselines) {
    console.log(`  fixed per-run cost (${k} tools): ours ${fmt(b.ours)} µs, pi ${fmt(b.pi)} µs (subtracted)`)
  }

  console.log("instant tool calls (µs per call, median over samples):")
  const rows = await instantRows(baselines)
  console.log("tools that wait 10 ms (wall time):")
  const wall = await wallRows()
  console.log("memory (fresh process per side):")
  const memory = await memoryRows()
  console.log("floor (bare bodies):")
  const floor = await floorRows(rows)

  const targets = evaluateTargets(rows, wall, memory)
  const results = {
    machine,
    method: {
      per_call:
        "(mean run time over iters back-to-back runs − the side's run with no tool calls, paired per sample up to N=1000) / N; median over samples; sides alternate; each sample starts with a full GC then untimed re-warm runs",
      ours: "executeToolCalls + counting EventSink, registry provided, one Effect.runPromise per batch",
      pi: "agentLoop with a scripted stream fn (tool-call message, then final text), events iterated; baseline = 2 turns, 0 calls",
      baselines_us: Object.fromEntries([...baselines].map(([k, b]) => [`${k}_tools`, { ours: round(b.ours), pi: round(b.pi) }]))
    },
    rows,
    wall,
    memory,
    floor,
    targets,
    load_average_at_end: os.loadavg().map((x) => round(x, 2)),
    elapsed_s: Math.round((Date.now() - started) / 1000)
  }
  writeFileSync(join(here, "results.json"), JSON.stringify(results, null, 2) + "\n")

  console.log("\n" + table(
    ["mode", "variant", "N", "ours µs/call", "±%", "pi µs/call", "±%", "ours/pi"],
    rows.map((r) => [
      r.mode,
      r.variant,
      String(r.n),
      fmt(r.ours_us_per_call),
      r.ours_spread_pct.toFixed(0),
      fmt(r.pi_us_per_call),
      r.pi_spread_pct.toFixed(0),
      r.ratio.toFixed(2)
    ])
  ))
  console.log("\n" + table(
    ["mode", "workload", "N", "ideal ms", "ours ms", "pi ms", "ours/pi"],
    wall.map((w) => [
      w.mode,
      w.workload,
      String(w.n),
      String(w.ideal_ms),
      w.ours_ms.toFixed(1),
      w.pi_ms.toFixed(1),
      w.ratio.toFixed(2)
    ])
  ))
  console.log("\n" + table(
    ["mode", "N", "", "ours peak heap+ MB", "pi peak heap+ MB", "ours live+ MB", "pi live+ MB", "ours RSS+ MB", "pi RSS+ MB", "ours RSS MB", "pi RSS MB"],
    memory.map((m) => [
      String(m["mode"]),
      String(m["n"]),
      "",
      String(m["ours_heap_delta_mb"]),
      String(m["pi_heap_delta_mb"]),
      String(m["ours_live_heap_mb"]),
      String(m["pi_live_heap_mb"]),
      String(m["ours_rss_delta_mb"]),
      String(m["pi_rss_delta_mb"]),
      String(m["ours_peak_rss_mb"]),
      String(m["pi_peak_rss_mb"])
    ])
  ))
  console.log("\n" + table(
    ["mode", "runner", "N", "µs/call", "ours", "pi"],
    floor.map((f) => [
      String(f["mode"]),
      String(f["runner"]),
      String(f["n"]),
      fmt(f["us_per_call"] as number),
      fmt(f["ours_us_per_call"] as number),
      fmt(f["pi_us_per_call"] as number)
    ])
  ))
  console.log("\ntargets:")
  for (const t of targets) console.log(`  ${t.met ? "met   " : "MISSED"}  ${t.target}: ${t.actual}`)
  console.log(`\nwrote ${join(here, "results.json")} (${results.elapsed_s} s)`)
}

await main()
