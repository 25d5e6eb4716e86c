// Interleaved A/B of the turn rows (agentLoop and agent prompt; 500 turns, 10 turns from empty, 10 turns from
// 20 000 messages) of this tree against a git ref: npx node --expose-gc scratchpad/turnab.ts [--ref main] [--reps 7]
// [--rows agent10,agent500,loop10,loop500,agent20k,loop20k] [--vs pi]. CPU time per model call; ratio = this tree / ref
// (or / pi with --vs pi).
import * as os from "node:os"
import * as Here from "../bench/loop.ts"
import { compareRunners, cpuNow, type RunnerPair, turnRuns } from "../bench/measure.ts"
import { option, withRefLoop } from "../bench/refTree.ts"
import { median } from "../bench/stats.ts"

const ref = option("--ref", "main")
const reps = Number(option("--reps", "7"))
const wanted = option("--rows", "agent10,agent500,loop10,loop500").split(",")
// `--vs pi`: the ref's side is pi's agent instead of our code at the ref (no ref is extracted).
const vsPi = option("--vs", "ref") === "pi"
const go = async (There: typeof Here) => {
  const base = vsPi ? Here.makePi("succeed") : There.makeOurs("succeed")
  const mine = Here.makeOurs("succeed")
  for (const row of wanted) {
    const turns = row.includes("500") ? 500 : 10
    const context = Here.transcriptOf(row.includes("20k") ? 20_000 : 0)
    const script = Here.turnsScript(turns)
    const work: Here.Work = { mode: "parallel", hooks: false, script, context }
    const events = Here.loopEvents(work)
    const runnerOf = (side: Here.LoopSide) =>
      row.startsWith("agent")
        ? {
          run: async () => {
            await side.agent.reset(context, script)
            return side.agent.prompt()
          },
          events
        }
        : { run: () => side.loop(work, "iterate"), events }
    const pair: RunnerPair = { ours: runnerOf(base), pi: runnerOf(mine) }
    // As bench/run.ts samples the turn rows.
    const iters = turnRuns(turns, context.length)
    const s = await compareRunners(pair, { iters, rewarm: 1, warm: 1, reps, budgetUs: 1e9 }, row, cpuNow)
    const a = median(s.ours) / (turns + 1)
    const b = median(s.pi) / (turns + 1)
    const spread = (xs: Array<number>) =>
      `${(Math.min(...xs) / (turns + 1)).toFixed(1)}..${(Math.max(...xs) / (turns + 1)).toFixed(1)}`
    console.log(
      `${row}: ${vsPi ? "pi" : ref} ${a.toFixed(1)} µs/call [${spread(s.ours)}]  this ${b.toFixed(1)} [${
        spread(s.pi)
      }]  ratio ${(b / a).toFixed(3)}`
    )
  }
  await base.agent.dispose()
  await mine.agent.dispose()
  console.log(`load average: ${os.loadavg().map((x) => x.toFixed(1)).join(" ")}`)
}
await (vsPi ? go(Here) : withRefLoop(ref, go))
