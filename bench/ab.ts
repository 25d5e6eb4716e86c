/**
 * Interleaved A/B of our loop against another git ref's (default `main`), same process, same `effect`:
 *
 *   npm run bench:ab                       this tree against main
 *   npm run bench:ab -- --ref <ref> --reps 9
 *
 * The ref's `src/` and `bench/` are extracted with `git archive` into a temporary folder (removed at the
 * end) that shares this tree's node_modules. Rows are a subset of `run.ts`'s: per-call CPU time of one
 * `agentLoop` run with N instant calls minus a two-turn run without calls (both modes, with and without
 * hooks, N = 100 and 1 000), and CPU time per model call over 500 turns. The two sides alternate (which goes
 * first alternates too); medians of `--reps` samples. Ratios are this tree over the ref: below 1 is faster.
 */
import * as os from "node:os"
import * as Here from "./loop.ts"
import { perCallRuns, turnRuns } from "./measure.ts"
import { compareLoops, option, withRefLoop } from "./refTree.ts"
import { median, table } from "./stats.ts"

const ref = option("--ref", "main")
const reps = Number(option("--reps", "7"))

await withRefLoop(ref, async (There) => {
  const rows: Array<ReadonlyArray<string>> = []
  const sides = new Map<string, { readonly base: Here.LoopSide; readonly mine: Here.LoopSide }>()
  const sidesFor = (shape: Here.Shape) => {
    let s = sides.get(shape)
    if (s === undefined) {
      s = { base: There.makeOurs(shape), mine: Here.makeOurs(shape) }
      sides.set(shape, s)
    }
    return s
  }
  const row = async (
    label: string,
    shape: Here.Shape,
    work: Here.Work,
    baseline: Here.Work | undefined,
    per: number,
    runs: { readonly iters: number; readonly rewarm: number }
  ) => {
    const { base, mine } = sidesFor(shape)
    const s = await compareLoops(base, mine, work, baseline, label, runs, reps)
    const a = median(s.ours) / per
    const b = median(s.pi) / per
    rows.push([label, a.toFixed(2), b.toFixed(2), (b / a).toFixed(3)])
    console.error(`${label}: ${(b / a).toFixed(3)}`)
  }
  for (const n of [100, 1000]) {
    for (const mode of ["parallel", "sequential"] as const) {
      for (const hooks of [false, true]) {
        const work: Here.Work = { mode, hooks, script: [Here.callsMessage(n), Here.FINAL], context: [] }
        await row(
          `per call, ${mode}, succeed${hooks ? ", hooks" : ""}, N = ${n}`,
          "succeed",
          work,
          Here.baselineWork(mode, hooks),
          n,
          perCallRuns(n)
        )
      }
    }
  }
  const promise: Here.Work = {
    mode: "parallel",
    hooks: true,
    script: [Here.callsMessage(1000), Here.FINAL],
    context: []
  }
  await row(
    "per call, parallel, promise, hooks, N = 1000",
    "promise",
    promise,
    Here.baselineWork("parallel", true),
    1000,
    perCallRuns(1000)
  )
  await row(
    "500 turns, per model call",
    "succeed",
    { mode: "parallel", hooks: false, script: Here.turnsScript(500), context: [] },
    undefined,
    501,
    { iters: turnRuns(500, 0), rewarm: 1 }
  )
  console.log(table(["row", `${ref} (µs)`, "this tree (µs)", "ratio"], rows))
  const geomean = Math.exp(rows.reduce((sum, r) => sum + Math.log(Number(r[3])), 0) / rows.length)
  console.log(
    `geometric mean of the ratios: ${geomean.toFixed(3)}; load average now: ${
      os.loadavg().map((x) => x.toFixed(1)).join(" ")
    }`
  )
})
