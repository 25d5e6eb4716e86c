/**
 * Peak memory of one side running one batch through its public `agentLoop` (events iterated), in a fresh
 * process so the two sides never share a heap.
 *
 *   node --experimental-strip-types --expose-gc bench/memory.ts <ours|pi> <parallel|sequential> <n>
 *
 * Prints one JSON line. Heap is sampled while events flow (every 64 events, and on a 1 ms timer when the
 * event loop gets a turn); RSS peak is the OS high-water mark (`resourceUsage().maxRSS`).
 */
import { execFile } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { promisify } from "node:util"
import { callsMessage, FINAL, loopEvents, type LoopSide, makeOurs, makePi, type Mode, type Work } from "./loop.ts"
import { collect } from "./stats.ts"

export interface MemoryResult {
  readonly side: "ours" | "pi"
  readonly mode: Mode
  readonly n: number
  readonly events: number
  readonly baseline_heap_mb: number
  readonly peak_heap_mb: number
  readonly heap_delta_mb: number
  readonly baseline_rss_mb: number
  readonly peak_rss_mb: number
  readonly rss_delta_mb: number
  /** Live heap (after a full GC) at the batch's last event, when every result exists: what the batch holds. */
  readonly live_heap_delta_mb: number
  readonly wall_ms: number
}

const MB = 1024 * 1024

export const measureMemory = async (sideName: "ours" | "pi", mode: Mode, n: number): Promise<MemoryResult> => {
  const side: LoopSide = sideName === "ours" ? makeOurs("succeed") : makePi("succeed")
  const warm: Work = { mode, hooks: false, script: [callsMessage(100), FINAL], context: [] }
  for (let i = 0; i < 5; i++) await side.loop(warm, "iterate")
  const work: Work = { mode, hooks: false, script: [callsMessage(n), FINAL], context: [] }
  collect()
  collect()
  const base = process.memoryUsage()
  let peakHeap = base.heapUsed
  let peakRss = base.rss
  const sample = () => {
    const m = process.memoryUsage()
    if (m.heapUsed > peakHeap) peakHeap = m.heapUsed
    if (m.rss > peakRss) peakRss = m.rss
  }
  let k = 0
  // The batch's last event: 6 loop events (agent_start, turn_start, the prompt, the assistant) come before it.
  const lastOfBatch = 4 * n + 6
  let live = Number.NaN
  const onEvent = () => {
    if ((++k & 63) === 0) sample()
    if (k === lastOfBatch) {
      sample()
      collect()
      live = process.memoryUsage().heapUsed - base.heapUsed
    }
  }
  const timer = setInterval(sample, 1)
  const t0 = performance.now()
  const events = await side.loop(work, "iterate", onEvent)
  if (events !== loopEvents(work)) throw new Error(`memory ${sideName}: ${events} events, expected ${loopEvents(work)}`)
  const wall = performance.now() - t0
  sample()
  clearInterval(timer)
  const maxRss = process.resourceUsage().maxRSS * 1024
  if (maxRss > peakRss) peakRss = maxRss
  const r = (x: number) => Math.round((x / MB) * 10) / 10
  return {
    side: sideName,
    mode,
    n,
    events,
    baseline_heap_mb: r(base.heapUsed),
    peak_heap_mb: r(peakHeap),
    heap_delta_mb: r(peakHeap - base.heapUsed),
    baseline_rss_mb: r(base.rss),
    peak_rss_mb: r(peakRss),
    rss_delta_mb: r(peakRss - base.rss),
    live_heap_delta_mb: r(live),
    wall_ms: Math.round(wall)
  }
}

const run = promisify(execFile)
const here = dirname(fileURLToPath(import.meta.url))

/** Runs the probe in a fresh Node process with this process's flags (type stripping, --expose-gc). */
export const spawnMemory = async (side: "ours" | "pi", mode: Mode, n: number): Promise<MemoryResult> => {
  const { stdout } = await run(
    process.execPath,
    [...process.execArgv, join(here, "memory.ts"), side, mode, String(n)],
    {
      maxBuffer: 1 << 20
    }
  )
  return JSON.parse(stdout.trim().split("\n").pop()!) as MemoryResult
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [side, mode, n] = process.argv.slice(2)
  if ((side !== "ours" && side !== "pi") || (mode !== "parallel" && mode !== "sequential") || !n) {
    console.error("usage: memory.ts <ours|pi> <parallel|sequential> <n>")
    process.exit(2)
  }
  const result = await measureMemory(side, mode, Number(n))
  process.stdout.write(JSON.stringify(result) + "\n")
}
