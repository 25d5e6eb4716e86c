// Wall time of one agentLoop run whose N tools each wait 10 ms (as run.ts's wall rows), ours and pi
// alternating: npx node --expose-gc scratchpad/callwall.ts [N] [reps] [parallel|sequential]
import * as Here from "../bench/loop.ts"

const n = Number(process.argv[2] ?? 1000)
const reps = Number(process.argv[3] ?? 15)
const mode = (process.argv[4] ?? "parallel") as Here.Mode
const sides = [Here.makeOurs("succeed", 10), Here.makePi("succeed", 10)]
const work: Here.Work = { mode, hooks: false, script: [Here.callsMessage(n), Here.FINAL], context: [] }
const times: Record<string, Array<number>> = { ours: [], pi: [] }
for (let r = 0; r < reps; r++) {
  for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
    ;(globalThis as any).gc?.()
    await side.loop(work, "iterate")
    const t0 = performance.now()
    await side.loop(work, "iterate")
    times[side.name]!.push(performance.now() - t0)
  }
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
console.log(`wall ${mode} N=${n}: ours ${median(times.ours!).toFixed(1)} ms, pi ${median(times.pi!).toFixed(1)} ms`)
