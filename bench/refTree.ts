/**
 * What the interleaved A/B scripts share (`bench/ab.ts`, `scratchpad/turnab.ts`):
 * their command-line options, another git ref's `bench/loop.ts` loaded from a temporary copy of that ref's
 * `src/` and `bench/` (`git archive`), which shares this tree's node_modules and so the same `effect`, and
 * the comparison of two loops sampled as `run.ts` samples.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as Loop from "./loop.ts"
import { compareRunners, cpuNow } from "./measure.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")

/** `--name value` from this process's arguments, or `fallback`. */
export const option = (name: string, fallback: string): string => {
  const args = process.argv.slice(2)
  const i = args.indexOf(name)
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback
}

/** Runs `use` with the `bench/loop.ts` of git ref `ref`; the temporary copy is removed afterwards. */
export const withRefLoop = async <A>(ref: string, use: (there: typeof Loop) => Promise<A>): Promise<A> => {
  const dir = mkdtempSync(join(tmpdir(), "effect-agent-ab-"))
  try {
    const archive = execFileSync("git", ["archive", ref, "src", "bench", "package.json"], {
      cwd: root,
      maxBuffer: 1 << 28
    })
    execFileSync("tar", ["-x", "-C", dir], { input: archive })
    symlinkSync(join(root, "node_modules"), join(dir, "node_modules"))
    return await use(await import(pathToFileURL(join(dir, "bench", "loop.ts")).href))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * `ref` against `here` through `agentLoop` (events iterated), each sample minus the same side's `baseline`
 * run when there is one, CPU time, with `iters` timed and `rewarm` untimed runs per sample. The sampler names
 * its two sides `ours` (here `ref`) and `pi` (here `here`).
 */
export const compareLoops = (
  ref: Loop.LoopSide,
  here: Loop.LoopSide,
  work: Loop.Work,
  baseline: Loop.Work | undefined,
  label: string,
  runs: { readonly iters: number; readonly rewarm: number },
  reps: number
): Promise<{ ours: Array<number>; pi: Array<number> }> =>
  compareRunners(
    {
      ours: Loop.loopRunner(ref, work),
      pi: Loop.loopRunner(here, work),
      ...(baseline === undefined
        ? {}
        : { baseline: { ours: Loop.loopRunner(ref, baseline), pi: Loop.loopRunner(here, baseline) } })
    },
    { ...runs, warm: 1, reps, budgetUs: 1e9 },
    label,
    cpuNow
  )
