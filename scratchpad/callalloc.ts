// Allocation profile of one per-call workload (as callprof.ts runs it): bytes allocated per call by site.
// npx node scratchpad/callalloc.ts <shape> <seq|par> <hooks|none> <N> [seconds] [ours|pi] > out.heapprofile
// then: npx node scratchpad/heapself.mjs out.heapprofile 40 <runs × N> (runs is printed on stderr).
// PROMOTED=1 keeps only what outlived a scavenge.
import type * as Here from "../bench/loop.ts"
import { allocationProfile, callWorkload } from "./workload.ts"

const [shape, m, h, ns, secs = "3", who = "ours"] = process.argv.slice(2) as [Here.Shape, string, string, string]
const { side, work } = callWorkload(shape, m, h, Number(ns), who)
for (let i = 0; i < 20; i++) await side.loop(work, "iterate")
const { profile, runs } = await allocationProfile(() => side.loop(work, "iterate"), Number(secs), 1024)
process.stdout.write(JSON.stringify(profile))
process.stderr.write(`${runs} runs; pass ${runs * Number(ns)} to heapself.mjs for bytes per call\n`)
