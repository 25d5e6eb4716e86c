// One turn-row sample as bench/run.ts takes it (a full GC, one untimed run, `iters` timed runs, then the 20 ms
// idle wait of bench/measure.ts), repeated: the median CPU µs per model call of the process and of its main
// thread alone (the difference is V8's background work: optimizing compiles, parallel GC).
// npx node --expose-gc scratchpad/turnsample.ts <workload> [ours|pi] [rounds] [iters]
import { SETTLE_MS } from "../bench/measure.ts"
import { turnWorkload } from "./workload.ts"

const [wl = "agent500", who = "ours", rounds = "12", itersArg = "1"] = process.argv.slice(2)
const { once, side, turns } = turnWorkload(wl, who)
const gc = (globalThis as { gc?: () => void }).gc!
const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}
const mainThread = () => {
  const u = process.threadCpuUsage()
  return u.user + u.system
}
const iters = Number(itersArg)
for (let i = 0; i < 20; i++) await once()
const all: Array<number> = []
const main: Array<number> = []
for (let r = 0; r < Number(rounds); r++) {
  gc()
  await once()
  const c0 = cpu()
  const t0 = mainThread()
  for (let i = 0; i < iters; i++) await once()
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
  all.push((cpu() - c0) / iters / (turns + 1))
  main.push((mainThread() - t0) / iters / (turns + 1))
}
const med = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
console.log(`${wl} ${who}: process ${med(all).toFixed(1)}, main thread ${med(main).toFixed(1)} µs per model call`)
await side.agent.dispose()
