// Interleaved A/B of per-call rows (through agentLoop, iterated, minus a two-turn no-call run, as run.ts) of
// this tree against a git ref or pi: npx node --expose-gc scratchpad/callab.ts [--ref main] [--vs pi] [--reps 7]
// [--rows promise:seq:hooks:100,promise:par:hooks:1000,sync:par:hooks:100]. Ratio = this tree / ref (or / pi).
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, symlinkSync } from "node:fs"
import * as os from "node:os"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as Here from "../bench/loop.ts"
import { compareRunners, cpuNow, type RunnerPair } from "../bench/measure.ts"
import { median } from "../bench/stats.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name)
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback
}
const ref = option("--ref", "main")
const reps = Number(option("--reps", "7"))
const vsPi = option("--vs", "ref") === "pi"
const wanted = option(
  "--rows",
  "promise:seq:hooks:100,promise:seq:hooks:1000,promise:par:hooks:1000,sync:par:hooks:100"
)
  .split(",")
const dir = mkdtempSync(join(tmpdir(), "calls-ab-"))
try {
  let There: typeof Here = Here
  if (!vsPi) {
    const archive = execFileSync("git", ["archive", ref, "src", "bench", "package.json"], {
      cwd: root,
      maxBuffer: 1 << 28
    })
    execFileSync("tar", ["-x", "-C", dir], { input: archive })
    symlinkSync(join(root, "node_modules"), join(dir, "node_modules"))
    There = await import(pathToFileURL(join(dir, "bench", "loop.ts")).href)
  }
  const out: Array<string> = []
  for (const row of wanted) {
    const [shape, m, h, ns] = row.split(":") as [Here.Shape, string, string, string]
    const n = Number(ns)
    const mode: Here.Mode = m === "seq" ? "sequential" : "parallel"
    const hooks = h === "hooks"
    const base = vsPi ? Here.makePi(shape) : There.makeOurs(shape)
    const mine = Here.makeOurs(shape)
    const work: Here.Work = { mode, hooks, script: [Here.callsMessage(n), Here.FINAL], context: [] }
    const baseline: Here.Work = { mode, hooks, script: [Here.FINAL, Here.FINAL], context: [], followUp: true }
    const runner = (side: Here.LoopSide, w: Here.Work) => ({
      run: () => side.loop(w, "iterate"),
      events: Here.loopEvents(w)
    })
    const pair: RunnerPair = {
      ours: runner(base, work),
      pi: runner(mine, work),
      baseline: { ours: runner(base, baseline), pi: runner(mine, baseline) }
    }
    const iters = Math.max(1, Math.round(2000 / n))
    const s = await compareRunners(
      pair,
      { iters, rewarm: Math.max(1, Math.round(iters / 4)), warm: 1, reps, budgetUs: 1e9 },
      row,
      cpuNow
    )
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
} finally {
  rmSync(dir, { recursive: true, force: true })
}
