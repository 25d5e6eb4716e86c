// CPU µs per call of each of the first 30 runs after a full GC (averaged over 40 GCs), to see how long a
// workload takes to get its speed back: npx node --expose-gc scratchpad/callpos.ts <shape> <seq|par> <hooks|none> <N> [ours|pi]
// (NOGC=1: no GC, the steady state).
import { cpuNow } from "../bench/measure.ts"
import { callWorkload } from "./workload.ts"
const [shape, m, h, ns, who] = process.argv.slice(2) as any
const n = Number(ns)
const { side, work } = callWorkload(shape, m, h, n, who)
for (let i = 0; i < 20; i++) await side.loop(work, "iterate")
const K = 30
const pos = new Array(K).fill(0)
const S = 40
for (let s = 0; s < S; s++) {
  if (process.env.NOGC !== "1") (globalThis as any).gc()
  for (let k = 0; k < K; k++) {
    const t = cpuNow()
    await side.loop(work, "iterate")
    pos[k] += cpuNow() - t
  }
}
console.log(who, pos.map((x) => (x / S / n).toFixed(1)).join(" "))
