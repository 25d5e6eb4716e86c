// Rounds of "full GC, then runs" on a per-call workload, marked for scratchpad/optpos.py (what V8 compiles and
// deoptimizes again after each GC): npx node --expose-gc --trace-opt --trace-deopt --log-code --logfile=/tmp/v8.log
// --no-logfile-per-isolate scratchpad/callrounds.ts <shape> <seq|par> <hooks|none> <N> [ours|pi] [rounds] [runs per round]
import type * as Here from "../bench/loop.ts"
import { callWorkload } from "./workload.ts"

const [shape, m, h, ns, who = "ours", rounds = "4", per = "50"] = process.argv.slice(2) as [
  Here.Shape,
  string,
  string,
  string,
  string,
  string,
  string
]
const { side, work } = callWorkload(shape, m, h, Number(ns), who)
const gc = (globalThis as { gc?: () => void }).gc!
for (let i = 0; i < 300; i++) await side.loop(work, "iterate")
for (let r = 0; r < Number(rounds); r++) {
  await new Promise((resolve) => setTimeout(resolve, 20))
  console.log(`=== ROUND ${r} START`)
  gc()
  for (let i = 0; i < Number(per); i++) await side.loop(work, "iterate")
  console.log(`=== ROUND ${r} END`)
}
