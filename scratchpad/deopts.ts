// Deopts after a full GC on a turn workload: npx node --expose-gc --trace-deopt scratchpad/deopts.ts <workload> [warm runs] [rounds] [ours|pi] [runs per round]
// workload as in turnprof.ts (agent10, agent500, loop10, loop500, agent10x20k, cb500). Prints markers around each
// "full GC, then one run" round so the deopts of that run can be told apart from warm-up ones; pipe through
// `npx node scratchpad/deoptsum.mjs` for a summary per function and reason.
import { turnWorkload } from "./workload.ts"

const [wl = "loop10", warmArg = "200", roundsArg = "3", sideName = "ours", perRound = "1"] = process.argv.slice(2)
const { once, side } = turnWorkload(wl, sideName)
const gc = (globalThis as { gc?: () => void }).gc!
for (let i = 0; i < Number(warmArg); i++) await once()
for (let r = 0; r < Number(roundsArg); r++) {
  await new Promise((resolve) => setTimeout(resolve, 20))
  console.log(`=== ROUND ${r} START`)
  gc()
  for (let i = 0; i < Number(perRound); i++) await once()
  console.log(`=== ROUND ${r} END`)
}
await side.agent.dispose()
