// The fixed cost of a tool batch, warm, through agentLoop (iterated), bench sides: CPU µs per run of the
// no-call baseline (bench/loop.ts baselineWork) and of runs with 1, 2 and 10 calls; the batch's fixed cost
// is (run(1) − baseline) − (run(2) − run(1)), the marginal per call run(2) − run(1).
// npx node scratchpad/fixedcost.ts [succeed|sync|promise] [parallel|sequential] [hooks|none] [rounds] [ms per case]
// [iterate|callback]
import {
  baselineWork,
  callsMessage,
  type Consumer,
  FINAL,
  type LoopSide,
  makeOurs,
  makePi,
  type Mode,
  type Shape,
  type Work
} from "../bench/loop.ts"
import { cpuNow } from "../bench/measure.ts"
import { median } from "../bench/stats.ts"

const shape = (process.argv[2] ?? "succeed") as Shape
const mode = (process.argv[3] ?? "parallel") as Mode
const hooks = process.argv[4] === "hooks"
const rounds = Number(process.argv[5] ?? 5)
const ms = Number(process.argv[6] ?? 400)
const consumer = (process.argv[7] ?? "iterate") as Consumer
const sides: ReadonlyArray<LoopSide> = [makeOurs(shape), makePi(shape)]
const works: Record<string, Work> = {
  base: baselineWork(mode, hooks),
  n1: { mode, hooks, script: [callsMessage(1), FINAL], context: [] },
  n2: { mode, hooks, script: [callsMessage(2), FINAL], context: [] },
  n10: { mode, hooks, script: [callsMessage(10), FINAL], context: [] }
}
const perRun = async (side: LoopSide, work: Work) => {
  const until = performance.now() + ms
  let runs = 0
  const t0 = cpuNow()
  while (performance.now() < until) {
    await side.loop(work, consumer)
    runs++
  }
  return (cpuNow() - t0) / runs
}
const got: Record<string, Record<string, Array<number>>> = { ours: {}, pi: {} }
for (const side of sides) {
  for (const w of Object.values(works)) for (let i = 0; i < 300; i++) await side.loop(w, consumer)
}
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
    for (const [name, w] of Object.entries(works)) (got[side.name]![name] ??= []).push(await perRun(side, w))
  }
}
for (const side of sides) {
  const m = (k: string) => median(got[side.name]![k]!)
  const fixed = m("n1") - m("base") - (m("n2") - m("n1"))
  console.log(
    `${side.name} ${mode} ${shape}${hooks ? " +hooks" : ""}: base ${m("base").toFixed(1)} n1 ${m("n1").toFixed(1)} n2 ${
      m("n2").toFixed(1)
    } n10 ${m("n10").toFixed(1)} µs/run; per call ${(m("n2") - m("n1")).toFixed(2)}, batch fixed ${
      fixed.toFixed(1)
    }, (n10 − base)/10 ${((m("n10") - m("base")) / 10).toFixed(2)}`
  )
}
