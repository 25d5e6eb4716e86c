// The large per-call rows (succeed, no hooks, N = 1 000 / 10 000 / 100 000, both modes) sampled as bench/run.ts
// samples them, optionally after a prelude of the bench's smaller rows, with V8's GC time inside each side's
// timed runs and the heap's state before them: what do the earlier rows leave that the large batches pay for?
// npx node --expose-gc scratchpad/bigrows.ts [prelude: none|ours|both] [sides: ours|both] [sizes: 1000,10000,100000]
import { PerformanceObserver } from "node:perf_hooks"
import * as v8 from "node:v8"
import {
  baselineWork,
  callsMessage,
  FINAL,
  loopRunner,
  type LoopSide,
  makeOurs,
  makePi,
  type Mode,
  type Shape,
  type Work
} from "../bench/loop.ts"
import { compareRunners, cpuNow, perCallRuns, type Runner } from "../bench/measure.ts"
import { median } from "../bench/stats.ts"

const prelude = process.argv[2] ?? "both"
const sidesArg = process.argv[3] ?? "both"
const sizes = (process.argv[4] ?? "1000,10000,100000").split(",").map(Number)
const MODES: ReadonlyArray<Mode> = ["parallel", "sequential"]
const SHAPES: ReadonlyArray<Shape> = ["succeed", "sync", "promise"]

interface GcEntry {
  readonly start: number
  readonly duration: number
  readonly kind: number
}
const gcs: Array<GcEntry> = []
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcs.push({
      start: e.startTime,
      duration: e.duration,
      kind: (e as unknown as { detail: { kind: number } }).detail.kind
    })
  }
}).observe({ entryTypes: ["gc"] })

const sides = new Map<Shape, { ours: LoopSide; pi: LoopSide }>()
const sideOf = (shape: Shape) => {
  let s = sides.get(shape)
  if (s === undefined) sides.set(shape, s = { ours: makeOurs(shape), pi: makePi(shape) })
  return s
}

// Timed windows of the large rows' runs, per side (performance.now() clock, the one GC entries use).
const windows: Record<"ours" | "pi", Array<[number, number]>> = { ours: [], pi: [] }
const watched = (r: Runner, name: "ours" | "pi"): Runner => ({
  events: r.events,
  run: async () => {
    const t0 = performance.now()
    const n = await r.run()
    windows[name].push([t0, performance.now()])
    return n
  }
})

const heapLine = () => {
  const h = v8.getHeapStatistics()
  const space = (name: string) => v8.getHeapSpaceStatistics().find((s) => s.space_name === name)
  const mb = (x: number | undefined) => ((x ?? 0) / 1e6).toFixed(1)
  return `heap used ${mb(h.used_heap_size)} total ${mb(h.total_heap_size)} old ${
    mb(space("old_space")?.space_size)
  } new ${mb(space("new_space")?.space_size)} code ${mb(space("code_space")?.space_used_size)} MB`
}

const preludeRows = async (withPi: boolean) => {
  for (const n of [10, 100, 1000]) {
    for (const mode of MODES) {
      for (const shape of SHAPES) {
        for (const hooks of [false, true]) {
          const s = sideOf(shape)
          const work: Work = { mode, hooks, script: [callsMessage(n), FINAL], context: [] }
          const base = baselineWork(mode, hooks)
          const runs = perCallRuns(n)
          const pi = withPi ? s.pi : s.ours
          await compareRunners(
            {
              ours: loopRunner(s.ours, work),
              pi: loopRunner(pi, work),
              baseline: { ours: loopRunner(s.ours, base), pi: loopRunner(pi, base) }
            },
            { ...runs, warm: 1, reps: n <= 100 ? 9 : 5, budgetUs: 10e6 },
            "prelude",
            cpuNow
          )
        }
      }
    }
  }
}

const t0 = performance.now()
if (prelude !== "none") await preludeRows(prelude === "both")
console.log(`prelude ${prelude}: ${((performance.now() - t0) / 1e3).toFixed(0)} s; ${heapLine()}`)

for (const n of sizes) {
  for (const mode of MODES) {
    const s = sideOf("succeed")
    const work: Work = { mode, hooks: false, script: [callsMessage(n), FINAL], context: [] }
    const base = baselineWork(mode, false)
    const plan = n <= 1000
      ? { ...perCallRuns(n), warm: 1, reps: 5, budgetUs: 10e6 }
      : n <= 10_000
      ? { iters: 1, rewarm: 1, warm: 0, reps: 3, budgetUs: 5e6 }
      : { iters: 1, rewarm: 0, warm: 0, reps: 3, budgetUs: 120e6 }
    const other = sidesArg === "both" ? s.pi : s.ours
    windows.ours = []
    windows.pi = []
    const before = heapLine()
    const g0 = gcs.length
    const samples = await compareRunners(
      {
        ours: watched(loopRunner(s.ours, work), "ours"),
        pi: watched(loopRunner(other, work), "pi"),
        baseline: n <= 10_000 ? { ours: loopRunner(s.ours, base), pi: loopRunner(other, base) } : undefined
      },
      plan,
      `${mode} ${n}`,
      cpuNow
    )
    await new Promise((r) => setTimeout(r, 50))
    const inside = (name: "ours" | "pi") => {
      let minor = 0, major = 0, minorMs = 0, majorMs = 0
      for (const g of gcs.slice(g0)) {
        if (!windows[name].some(([a, b]) => g.start >= a && g.start <= b)) continue
        // Node's kinds: 1 is a scavenge, the others (4 major, 8 incremental, 16 weak callbacks) full-GC work.
        if (g.kind === 1) {
          minor++
          minorMs += g.duration
        } else {
          major++
          majorMs += g.duration
        }
      }
      const runs = windows[name].length
      return `${name} ${(median(samples[name]) / n).toFixed(2)} µs/call; per run: ${(minor / runs).toFixed(1)} minor ${
        (minorMs / runs).toFixed(1)
      } ms, ${(major / runs).toFixed(1)} major ${(majorMs / runs).toFixed(1)} ms (${runs} runs)`
    }
    console.log(`${mode} n=${n}: ${inside("ours")} | ${inside("pi")}\n    before: ${before}`)
  }
}
