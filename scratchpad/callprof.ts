// One per-call workload through agentLoop (iterated), warm, in a loop for some seconds: CPU µs per call.
// npx node [--cpu-prof] --expose-gc scratchpad/callprof.ts <shape> <seq|par> <hooks|none> <N> [seconds] [ours|pi]
// GC=1 runs a full GC before every 2000 calls (as the benchmark's samples do).
import { PerformanceObserver } from "node:perf_hooks"
import * as Here from "../bench/loop.ts"
import { cpuNow } from "../bench/measure.ts"
import { callWorkload } from "./workload.ts"

// GC time inside the timed windows (entries carry their start time).
const windows: Array<[number, number]> = []
const gcs: Array<{ start: number; duration: number; kind: number }> = []
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcs.push({ start: e.startTime, duration: e.duration, kind: (e as any).detail?.kind ?? 0 })
  }
}).observe({ entryTypes: ["gc"] })

const [shape, m, h, ns, secs, who] = process.argv.slice(2) as [Here.Shape, string, string, string, string, string]
const n = Number(ns)
const { side, work } = callWorkload(shape, m, h, n, who)
const events = Here.loopEvents(work)
const per = Math.max(1, Math.round(2000 / n))
for (let i = 0; i < 20; i++) await side.loop(work, "iterate")
const gc = (globalThis as any).gc
const until = performance.now() + Number(secs ?? 3) * 1000
let runs = 0
let cpu = 0
const run = async () => {
  const count = await side.loop(work, "iterate")
  if (count !== events) throw new Error(`events ${count} != ${events}`)
}
// GC=1: as a benchmark sample, a full GC, then per/4 untimed runs, then `per` timed runs.
const gcMode = process.env.GC === "1"
while (performance.now() < until) {
  if (gcMode) {
    gc()
    for (let i = 0; i < Math.max(1, Math.round(per / 4)); i++) await run()
  }
  const t0 = cpuNow()
  const w0 = performance.now()
  for (let i = 0; i < per; i++) await run()
  cpu += cpuNow() - t0
  windows.push([w0, performance.now()])
  runs += per
}
await new Promise((r) => setTimeout(r, 50))
let inGc = 0
let count = 0
for (const g of gcs) {
  if (windows.some(([a, b]) => g.start >= a && g.start <= b)) {
    inGc += g.duration
    count++
  }
}
console.log(
  `gc in timed windows: ${(inGc * 1000 / runs / n).toFixed(2)} µs/call, ${
    (count / windows.length).toFixed(1)
  } GCs per sample`
)
console.log(
  `${who ?? "ours"} ${shape} ${m} ${h} N=${n}${gcMode ? " GC" : ""}: ${
    (cpu / runs / n).toFixed(2)
  } µs/call (incl. run) over ${runs} runs`
)
