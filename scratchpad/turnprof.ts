// Profiling probe for the per-turn / per-prompt rows: npx node [--cpu-prof] scratchpad/turnprof.ts <workload> <side> [seconds]
// workload: agent10 | agent500 | loop10 | loop500 | agent10x20k ; side: ours | pi
import { PerformanceObserver } from "node:perf_hooks"
import { turnWorkload } from "./workload.ts"

const [wl = "agent10", sideName = "ours", secs = "3"] = process.argv.slice(2)
const { once, side, turns } = turnWorkload(wl, sideName)
const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}
console.log("events of one run:", await once())
for (let i = 0; i < 50; i++) await once()
let gcs = 0
let gcMs = 0
const obs = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcs++
    gcMs += e.duration
  }
})
obs.observe({ entryTypes: ["gc"] })
const end = Date.now() + Number(secs) * 1000
let runs = 0
const t0 = cpu()
const gc = process.env["GC"] === "1" ? (globalThis as { gc?: () => void }).gc : undefined
let gcCpu = 0
while (Date.now() < end) {
  if (gc !== undefined) {
    const g0 = cpu()
    gc()
    gcCpu += cpu() - g0
  }
  await once()
  runs++
}
const us = (cpu() - t0 - gcCpu) / runs
obs.disconnect()
console.log(
  `${wl} ${sideName}: ${runs} runs, ${us.toFixed(0)} µs/run, ${(us / (turns + 1)).toFixed(1)} µs/model call, ${
    (gcs / runs).toFixed(2)
  } GCs/run, GC ${(gcMs * 1000 / runs / (turns + 1)).toFixed(1)} µs/model call`
)
await side.agent.dispose()
