// Allocation profile (every sampled allocation, collected or not) of one workload of turnprof.ts:
// npx node scratchpad/allocprof.ts <workload> [seconds] > out.heapprofile; then scratchpad/heapself.mjs out.heapprofile
import { Session } from "node:inspector/promises"
import { makeOurs, transcriptOf, turnsScript, type Work } from "../bench/loop.ts"

const [wl = "loop0", secs = "3"] = process.argv.slice(2)
const side = makeOurs("succeed")
const turns = wl.includes("500") ? 500 : wl.includes("10") ? 10 : 0
const context = transcriptOf(wl.includes("20k") ? 20_000 : 0)
const script = turnsScript(turns)
const work: Work = { mode: "parallel", hooks: false, script, context }
const once = wl.startsWith("agent")
  ? async () => {
    await side.agent.reset(context, script)
    return side.agent.prompt()
  }
  : () => side.loop(work, "iterate")
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
