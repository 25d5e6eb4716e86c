// Allocation profile (collected objects included) of a per-call workload through agentLoop:
// npx node scratchpad/callalloc.ts <shape> <seq|par> <hooks|none> <N> [seconds] [ours|pi] > out.heapprofile 2> runs
// then npx node scratchpad/heapself.mjs out.heapprofile 40 <runs × N> for bytes per call.
import type * as Here from "../bench/loop.ts"
import { allocationProfile, callWorkload } from "./workload.ts"

const [shape, m, h, ns, secs = "3", who = "ours"] = process.argv.slice(2) as [
  Here.Shape,
  string,
  string,
  string,
  string,
  string
]
const n = Number(ns)
const { side, work } = callWorkload(shape, m, h, n, who)
for (let i = 0; i < 50; i++) await side.loop(work, "iterate")
const { profile, runs } = await allocationProfile(() => side.loop(work, "iterate"), Number(secs), 256)
process.stdout.write(JSON.stringify(profile))
process.stderr.write(`${runs * n}\n`)
