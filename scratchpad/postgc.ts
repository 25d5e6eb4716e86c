// The recovery after a full GC, run by run: npx node --expose-gc scratchpad/postgc.ts <workload> <side> [rounds] [runs after each GC]
// Warm first (300 runs), then `rounds` times: a full GC, then `runs` runs each timed alone (CPU µs per model call);
// prints the median over rounds of each run's position after the GC (run 1 = first after the GC). NOGC=1: no GC
// (the steady state); THREAD=1: count the main thread's CPU only.
import { turnWorkload } from "./workload.ts"

const [wl = "loop10", sideName = "ours", roundsArg = "15", runsArg = "12"] = process.argv.slice(2)
const { once, side, turns } = turnWorkload(wl, sideName)
const gc = (globalThis as { gc?: () => void }).gc!
// THREAD=1: this thread's CPU only (leaves out the collector's helper threads).
const thread = process.env["THREAD"] === "1"
const cpu = () => {
  const u = thread ? process.threadCpuUsage() : process.cpuUsage()
  return u.user + u.system
}
for (let i = 0; i < Number(process.env["WARM"] ?? 300); i++) await once()
const rounds = Number(roundsArg)
const runs = Number(runsArg)
const table: Array<Array<number>> = Array.from({ length: runs }, () => [])
for (let r = 0; r < rounds; r++) {
  if (process.env["NOGC"] !== "1") gc()
  for (let i = 0; i < runs; i++) {
    const t0 = cpu()
    await once()
    table[i]!.push((cpu() - t0) / (turns + 1))
  }
}
const med = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
console.log(`${wl} ${sideName}: µs per model call by run after GC: ${table.map((xs) => med(xs).toFixed(0)).join(" ")}`)
await side.agent.dispose()
