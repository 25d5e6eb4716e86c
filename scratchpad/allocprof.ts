// Allocation profile (every sampled allocation, collected or not) of one workload of turnprof.ts:
// npx node scratchpad/allocprof.ts <workload> [seconds] [ours|pi] > out.heapprofile; then scratchpad/heapself.mjs out.heapprofile
import { Session } from "node:inspector/promises"
import { turnWorkload } from "./workload.ts"

const [wl = "loop0", secs = "3", sideName = "ours"] = process.argv.slice(2)
const { once, side } = turnWorkload(wl, sideName)
for (let i = 0; i < 200; i++) await once()
const session = new Session()
session.connect()
await session.post("HeapProfiler.startSampling", {
  samplingInterval: 1024,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true
})
const end = Date.now() + Number(secs) * 1000
let runs = 0
while (Date.now() < end) {
  await once()
  runs++
}
const { profile } = await session.post("HeapProfiler.stopSampling")
process.stdout.write(JSON.stringify(profile))
process.stderr.write(`${runs} runs\n`)
await side.agent.dispose()
