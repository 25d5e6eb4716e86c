/**
 * What the interleaved A/B scripts share (`bench/ab.ts`, `scratchpad/callab.ts`, `scratchpad/turnab.ts`):
 * their command-line options, and another git ref's `bench/loop.ts` loaded from a temporary copy of that
 * ref's `src/` and `bench/` (`git archive`), which shares this tree's node_modules and so the same `effect`.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type * as Loop from "./loop.ts"

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
