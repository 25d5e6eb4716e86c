// What outlives the young generation on a loop workload: with --trace-gc-nvp, the bytes V8 promoted per
// scavenge; with PROFILE=1, an allocation profile of what outlived a scavenge (objects a minor GC collected
// left out) on stdout for heapself.mjs, runs on stderr.
// npx node [--trace-gc-nvp] scratchpad/promoted.ts <baseline|calls> <iterate|callback> <ours|pi> [N] [seconds]; MODE=seq for sequential calls
import { baselineWork, type Consumer, makeOurs, makePi } from "../bench/loop.ts"
import { allocationProfile, callWorkload } from "./workload.ts"

const [kind, consumer, who, ns, secs] = process.argv.slice(2) as [string, Consumer, string, string, string]
const side = who === "pi" ? makePi("succeed") : makeOurs("succeed")
const work = kind === "baseline"
  ? baselineWork("parallel", false)
  : callWorkload("succeed", process.env.MODE ?? "par", "none", Number(ns ?? 10)).work
const once = () => side.loop(work, consumer)
const seconds = Number(secs ?? 2)
if (process.env.PROFILE === "1") {
  process.env.PROMOTED = "1"
  for (let i = 0; i < 200; i++) await once()
  const { profile, runs } = await allocationProfile(once, seconds, 512)
  console.log(JSON.stringify(profile))
  console.error(runs)
} else {
  const until = performance.now() + seconds * 1000
  let runs = 0
  while (performance.now() < until) {
    await once()
    runs++
  }
  console.log(`runs ${runs}`)
}
