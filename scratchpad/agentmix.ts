// The agent's 500-turn sample as the bench takes it (a full GC, one untimed run, two timed runs, the 20 ms
// settle), eight times, for ours and pi alternating in one process (`mixed`, as the bench runs them) or one
// side alone (`solo ours|pi`): per sample, the process's CPU and the main thread's, µs per model call (the
// difference is V8's background work). Each sample is marked `=== SAMPLE k side` on stdout, so that with
// `--no-concurrent-recompilation --trace-opt --trace-deopt` what is compiled again, and why ("weak
// objects": a hidden class or object the optimized code depended on died), can be read per sample.
// npx node --expose-gc [V8 flags] scratchpad/agentmix.ts mixed | solo ours | solo pi
import * as Here from "../bench/loop.ts"
import { cpuNow, SETTLE_MS } from "../bench/measure.ts"

const gc = (globalThis as any).gc as () => void
const mainThread = () => {
  const u = process.threadCpuUsage()
  return u.user + u.system
}
const sides = process.argv[2] !== "solo"
  ? [Here.makeOurs("succeed"), Here.makePi("succeed")]
  : [process.argv[3] === "pi" ? Here.makePi("succeed") : Here.makeOurs("succeed")]
const script = Here.turnsScript(500)
const calls = 2 * (script.length)
const run = async (side: Here.LoopSide) => {
  await side.agent.reset([], script)
  return side.agent.prompt()
}
for (const side of sides) for (let i = 0; i < 5; i++) await run(side)
const results: Record<string, Array<string>> = {}
for (let rep = 0; rep < 8; rep++) {
  for (const side of sides) {
    console.log(`=== SAMPLE ${rep} ${side.name}`)
    gc()
    await run(side)
    const p0 = cpuNow()
    const m0 = mainThread()
    await run(side)
    await run(side)
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
    const process_ = (cpuNow() - p0) / calls
    const main = (mainThread() - m0) / calls
    ;(results[side.name] ??= []).push(`${process_.toFixed(0)}/${main.toFixed(0)}`)
  }
}
for (const [name, samples] of Object.entries(results)) console.log(name, samples.join(" "))
