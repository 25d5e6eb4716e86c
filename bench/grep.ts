/**
 * The `grep` tool against GNU `grep -r` over a tree of 100 000 small files.
 *
 *   npm run bench:grep                    100 000 files, 5 timed runs per side
 *   npm run bench:grep -- --files 20000   a smaller tree (the row records the size)
 *   npm run bench:grep -- --runs 3
 *
 * Builds the tree in a temporary folder (removed at the end, also on failure), then alternates the two
 * sides after one untimed warm-up run each, so both read from a warm page cache:
 *
 * - ours: the `grep` handler taken from `BuiltinTools.layerAt(tree)` on `NodeServices`, called through its
 *   public Effect API with `{ pattern, limit: 1000 }`, one `Effect.runPromise` per run;
 * - GNU: `grep -rnE PATTERN .` in the tree, stdout to a pipe that is read to the end.
 *
 * The pattern matches one line in a few dozen files, fewer than the limit, so both sides read every file.
 * The match counts of both sides are checked to be equal. Writes the row under the key "grep" of
 * `results.json`, keeping the other keys.
 */
import { NodeServices } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as BuiltinTools from "../src/tools/index.ts"
import { median, round } from "./stats.ts"

const here = dirname(fileURLToPath(import.meta.url))
const args = process.argv.slice(2)
const option = (name: string, fallback: number): number => {
  const at = args.indexOf(name)
  return at === -1 ? fallback : Number(args[at + 1])
}
const FILES = option("--files", 100_000)
const RUNS = option("--runs", 5)
const PATTERN = "needle_[0-9]+_found"
const EVERY = 2000

/** 100 top folders of 10 folders of FILES / 1000 files each; a root .gitignore that matches none of them. */
const buildTree = (root: string): number => {
  writeFileSync(join(root, ".gitignore"), "*.log\n/build/\ntmp/\n")
  const perDir = Math.max(1, Math.round(FILES / 1000))
  const body = Array.from(
    { length: 30 },
    (_, i) => `export const value${i} = compute(${i}, "some text on line ${i}") // a comment about it`
  ).join("\n")
  let n = 0
  let planted = 0
  for (let a = 0; a < 100 && n < FILES; a++) {
    for (let b = 0; b < 10 && n < FILES; b++) {
      const dir = join(root, `pkg${a}`, `mod${b}`)
      mkdirSync(dir, { recursive: true })
      for (let c = 0; c < perDir && n < FILES; c++, n++) {
        const hit = n % EVERY === EVERY / 2
        if (hit) planted++
        writeFileSync(join(dir, `file${c}.ts`), hit ? `${body}\n// needle_${n}_found here\n` : `${body}\n`)
      }
    }
  }
  return planted
}

const gnuGrep = (root: string): Promise<{ ms: number; matches: number }> =>
  new Promise((resolve, reject) => {
    const start = performance.now()
    const child = spawn("grep", ["-rnE", PATTERN, "."], { cwd: root, stdio: ["ignore", "pipe", "inherit"] })
    let lines = 0
    child.stdout.on("data", (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
    })
    child.on("error", reject)
    child.on("close", (code) => {
      if (code !== 0) reject(new Error(`grep exited with ${code}`))
      else resolve({ ms: performance.now() - start, matches: lines })
    })
  })

const main = async () => {
  const base = mkdtempSync(join(os.tmpdir(), "effect-agent-bench-grep-"))
  // Interrupted (Ctrl-C, a timeout's SIGTERM): remove the tree before going.
  const removeAndExit = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: removing ${base}`)
    rmSync(base, { recursive: true, force: true })
    process.exit(130)
  }
  process.once("SIGINT", removeAndExit)
  process.once("SIGTERM", removeAndExit)
  try {
    const root = join(base, "tree")
    mkdirSync(root)
    const buildStart = performance.now()
    const planted = buildTree(root)
    console.log(
      `built ${FILES} files (${planted} with a match) in ${round((performance.now() - buildStart) / 1000, 1)} s`
    )

    const context = await Effect.runPromise(
      Layer.build(BuiltinTools.layerAt(root).pipe(Layer.provide(NodeServices.layer))).pipe(Effect.scoped)
    )
    const handler = Context.get(context, BuiltinTools.grep.Handler)
    const controller = new AbortController()
    const ours = async (): Promise<{ ms: number; matches: number }> => {
      const start = performance.now()
      const result = await Effect.runPromise(
        handler({ pattern: PATTERN, limit: 1000 }, {
          toolCallId: "bench",
          signal: controller.signal,
          update: () => Effect.void
        })
      )
      return { ms: performance.now() - start, matches: result.details.matches }
    }

    const oursMs: Array<number> = []
    const gnuMs: Array<number> = []
    const warmOurs = await ours()
    const warmGnu = await gnuGrep(root)
    if (warmOurs.matches !== planted || warmGnu.matches !== planted) {
      throw new Error(`match counts differ: ours ${warmOurs.matches}, grep ${warmGnu.matches}, planted ${planted}`)
    }
    for (let i = 0; i < RUNS; i++) {
      // Alternate which side goes first, so neither always runs on the other's leftovers.
      const pair = i % 2 === 0 ? [ours, () => gnuGrep(root)] : [() => gnuGrep(root), ours]
      for (const side of pair) {
        const run = await side()
        if (run.matches !== planted) throw new Error(`a run found ${run.matches} matches, expected ${planted}`)
        ;(side === ours ? oursMs : gnuMs).push(run.ms)
      }
      console.log(`run ${i + 1}: ours ${round(oursMs[i], 0)} ms, grep -r ${round(gnuMs[i], 0)} ms`)
    }

    const row = {
      what: "grep tool (handler via BuiltinTools.layerAt on NodeServices, one Effect.runPromise per run) vs " +
        "GNU grep -rnE over the same tree, stdout piped and read; median of timed runs after one warm-up each",
      files: FILES,
      files_with_match: planted,
      pattern: PATTERN,
      runs: RUNS,
      ours_ms_median: round(median(oursMs), 1),
      gnu_grep_ms_median: round(median(gnuMs), 1),
      ratio: round(median(oursMs) / median(gnuMs), 2),
      ours_ms: oursMs.map((x) => round(x, 1)),
      gnu_grep_ms: gnuMs.map((x) => round(x, 1)),
      machine: {
        cores: os.cpus().length,
        node: process.version,
        load_average_at_end: os.loadavg().map((x) => round(x, 2)),
        date: new Date().toISOString()
      }
    }
    console.log(
      `\nmedian: ours ${row.ours_ms_median} ms, grep -r ${row.gnu_grep_ms_median} ms, ratio ${row.ratio}`
    )
    const file = join(here, "results.json")
    const results = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown> : {}
    results.grep = row
    writeFileSync(file, JSON.stringify(results, null, 2) + "\n")
    console.log(`wrote the "grep" row of ${file}`)
  } finally {
    const start = performance.now()
    rmSync(base, { recursive: true, force: true })
    console.log(`removed the tree in ${round((performance.now() - start) / 1000, 1)} s`)
  }
}

await main()
