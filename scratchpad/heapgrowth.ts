// Live heap after a full GC, every 500 runs of a turnprof workload (a leak shows as growth):
// npx node --expose-gc scratchpad/heapgrowth.ts <workload> [rounds]
import { turnWorkload } from "./workload.ts"

const [wl = "agent10", sideName = "ours", roundsArg = "5"] = process.argv.slice(2)
const { once, side } = turnWorkload(wl, sideName)
const gc = (globalThis as { gc?: () => void }).gc!
for (let r = 0; r < Number(roundsArg); r++) {
  for (let i = 0; i < 500; i++) await once()
  gc()
  const t0 = process.hrtime.bigint()
  gc()
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  console.log(
    `${wl} ${sideName} after ${(r + 1) * 500} runs: heapUsed ${
      (process.memoryUsage().heapUsed / 2 ** 20).toFixed(1)
    } MiB, full GC ${ms.toFixed(1)} ms`
  )
}
await side.agent.dispose()
