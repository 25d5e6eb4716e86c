// Allocation profile (every sampled allocation, collected or not) of one workload of turnprof.ts:
// npx node scratchpad/allocprof.ts <workload> [seconds] [ours|pi] > out.heapprofile; then scratchpad/heapself.mjs out.heapprofile
import { allocationProfile, turnWorkload } from "./workload.ts"

const [wl = "loop0", secs = "3", sideName = "ours"] = process.argv.slice(2)
const { once, side } = turnWorkload(wl, sideName)
for (let i = 0; i < 200; i++) await once()
const { profile, runs } = await allocationProfile(once, Number(secs), 1024)
process.stdout.write(JSON.stringify(profile))
process.stderr.write(`${runs} runs\n`)
await side.agent.dispose()
