// Live heap after a full GC, every 500 runs of a turnprof workload (a leak shows as growth):
// npx node --expose-gc scratchpad/heapgrowth.ts <workload> [rounds]
import { makeOurs, makePi, transcriptOf, turnsScript, type Work } from "../bench/loop.ts"

const [wl = "agent10", sideName = "ours", roundsArg = "5"] = process.argv.slice(2)
const side = sideName === "pi" ? makePi("succeed") : makeOurs("succeed")
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
