// Interleaved A/B of per-call rows (through agentLoop, iterated, minus a two-turn no-call run, as run.ts) of
// this tree against a git ref or pi: npx node --expose-gc scratchpad/callab.ts [--ref main] [--vs pi] [--reps 7]
// [--rows promise:seq:hooks:100,promise:par:hooks:1000,sync:par:hooks:100]. Ratio = this tree / ref (or / pi).
import * as os from "node:os"
import * as Here from "../bench/loop.ts"
import { perCallRuns } from "../bench/measure.ts"
import { compareLoops, option, withRefLoop } from "../bench/refTree.ts"
import { median } from "../bench/stats.ts"

const ref = option("--ref", "main")
const reps = Number(option("--reps", "7"))
const vsPi = option("--vs", "ref") === "pi"
const wanted = option(
  "--rows",
  "promise:seq:hooks:100,promise:seq:hooks:1000,promise:par:hooks:1000,sync:par:hooks:100"
)
  .split(",")
// With `--vs pi` no ref is extracted: the other side is pi's agent.
const go = async (There: typeof Here) => {
  const out: Array<string> = []
  for (const row of wanted) {
    const [shape, m, h, ns] = row.split(":") as [Here.Shape, string, string, string]
    const n = Number(ns)
    const mode: Here.Mode = m === "seq" ? "sequential" : "parallel"
    const hooks = h === "hooks"
    const base = vsPi ? Here.makePi(shape) : There.makeOurs(shape)
    const mine = Here.makeOurs(shape)
    const work: Here.Work = { mode, hooks, script: [Here.callsMessage(n), Here.FINAL], context: [] }
    // Sampled as bench/run.ts samples: about 10 000 calls per sample.
    const s = await compareLoops(base, mine, work, Here.baselineWork(mode, hooks), row, perCallRuns(n), reps)
    const a = median(s.ours) / n
    const b = median(s.pi) / n
    const spread = (xs: Array<number>) => `${(Math.min(...xs) / n).toFixed(1)}..${(Math.max(...xs) / n).toFixed(1)}`
    const line = `${row}: ${vsPi ? "pi" : ref} ${a.toFixed(2)} [${spread(s.ours)}]  this ${b.toFixed(2)} [${
      spread(s.pi)
    }]  ratio ${(b / a).toFixed(3)}`
    console.log(line)
    out.push(line)
  }
  console.log(`load average: ${os.loadavg().map((x) => x.toFixed(1)).join(" ")}`)
}
await (vsPi ? go(Here) : withRefLoop(ref, go))
