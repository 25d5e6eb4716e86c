/** Sampling shared by the benchmark and its smoke test: alternation, repetitions, event-count checks. */
import { EVENTS_PER_CALL, PI_LOOP_EVENTS, type Side } from "./harness.ts"
import { collect, now } from "./stats.ts"

/**
 * How a comparison samples: runs per sample, untimed runs after the GC that starts each sample (right
 * after a full GC, V8 runs the next batches markedly slower: young generation shrunk, caches cold), warm-up
 * samples, samples, per-side time budget (µs).
 */
export interface Plan {
  readonly iters: number
  readonly rewarm?: number
  readonly warm: number
  readonly reps: number
  readonly budgetUs: number
  /** `false`: no full GC before each sample (the warm steady state of back-to-back runs). Default `true`. */
  readonly collect?: boolean
}

/** The events a batch of `n` calls must produce on a side (pi's loop adds its own). */
export const expected = (side: Side | "ours" | "pi", n: number): number =>
  EVENTS_PER_CALL * n + ((typeof side === "string" ? side : side.name) === "pi" ? PI_LOOP_EVENTS : 0)

/** pi's baseline run (two turns, no calls) produces this many events; ours produces none. */
export const baselineEvents = (side: Side): number => (side.name === "pi" ? PI_LOOP_EVENTS + 2 : 0)

/**
 * How long a CPU-timed sample waits, idle and still timed, after its runs: V8 finishes on its own threads
 * the work the runs started (optimizing compiles, parallel GC tasks; about 15 ms at most here), which the
 * process's CPU time counts. Without the wait that work lands in the next sample, which is often the other
 * side's; with it, each side pays for exactly the background work its own runs caused.
 */
export const SETTLE_MS = 20

const idle = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Calls per sample of a per-call row up to N = 1 000 (`bench/README.md`). */
export const CALLS_PER_SAMPLE = 10_000

/** Timed and untimed (re-warm) runs per sample of a per-call row of `n` calls: about `calls` calls per sample. */
export const perCallRuns = (
  n: number,
  calls = CALLS_PER_SAMPLE
): { readonly iters: number; readonly rewarm: number } => {
  const iters = Math.max(1, Math.round(calls / n))
  return { iters, rewarm: Math.max(1, Math.round(iters / 4)) }
}

/** Timed runs per sample of a turn row: 2 runs of 500 turns, 50 of 10 turns, 10 from a long transcript. */
export const turnRuns = (turns: number, transcript: number): number => turns >= 500 ? 2 : transcript > 0 ? 10 : 50

/**
 * Mean microseconds per run over `iters` back-to-back runs. A full GC first (so the other side's garbage
 * is not collected on this side's time), then `rewarm` untimed runs. Checks every run's event count. With
 * the CPU clock ({@link cpuNow}), the timed window ends {@link SETTLE_MS} after the last run.
 */
export const sample = async (
  run: () => Promise<number>,
  iters: number,
  events: number,
  label: string,
  rewarm = 0,
  clock: () => number = now,
  collectFirst = true
): Promise<number> => {
  if (collectFirst) collect()
  for (let i = 0; i < rewarm; i++) {
    const count = await run()
    if (count !== events) throw new Error(`${label}: consumed ${count} events, expected ${events}`)
  }
  const t0 = clock()
  for (let i = 0; i < iters; i++) {
    const count = await run()
    if (count !== events) throw new Error(`${label}: consumed ${count} events, expected ${events}`)
  }
  if (clock === cpuNow) await idle(SETTLE_MS)
  return (clock() - t0) / iters
}

/**
 * This process's CPU time (user + system, all threads) in microseconds. On a shared machine it counts only
 * the work this process did, not the time it waited for a core, so it is what CPU-bound rows are timed with.
 */
export const cpuNow = (): number => {
  const u = process.cpuUsage()
  return u.user + u.system
}

/**
 * Alternates the two sides (which goes first alternates too) until each has `reps` samples or has used
 * its time budget (after at least one sample); a side that is done stops taking turns. With `baselineOf`,
 * each sample is paired with a sample of the side's no-call run taken right before it, and the difference
 * is recorded, so drift in machine load cancels out.
 */
export const compare = async (
  pair: { readonly ours: Side; readonly pi: Side },
  runOf: (side: Side) => () => Promise<number>,
  eventsOf: (side: Side) => number,
  p: Plan,
  label: string,
  baselineOf?: (side: Side) => () => Promise<number>,
  clock: () => number = now
): Promise<{ ours: Array<number>; pi: Array<number> }> => {
  const samples = { ours: [] as Array<number>, pi: [] as Array<number> }
  const spent = { ours: 0, pi: 0 }
  const one = async (side: Side) => {
    const base = baselineOf === undefined
      ? 0
      : await sample(baselineOf(side), p.iters, baselineEvents(side), `${label} ${side.name} baseline`, p.rewarm, clock)
    return (await sample(runOf(side), p.iters, eventsOf(side), `${label} ${side.name}`, p.rewarm, clock)) - base
  }
  for (let w = 0; w < p.warm; w++) {
    for (const side of [pair.ours, pair.pi]) await one(side)
  }
  for (let r = 0; r < p.reps; r++) {
    const order = r % 2 === 0 ? [pair.ours, pair.pi] : [pair.pi, pair.ours]
    for (const side of order) {
      const mine = samples[side.name]
      if (mine.length > 0 && spent[side.name] > p.budgetUs) continue
      const t0 = now()
      mine.push(await one(side))
      spent[side.name] += now() - t0
    }
  }
  return samples
}

/** A run of one side that resolves with the number of events it consumed. */
export interface Runner {
  readonly run: () => Promise<number>
  readonly events: number
}

/** The same work on both sides, and optionally each side's no-call run to subtract. */
export interface RunnerPair {
  readonly ours: Runner
  readonly pi: Runner
  readonly baseline?: { readonly ours: Runner; readonly pi: Runner } | undefined
}

/**
 * Like {@link compare} for any pair of runners: the sides alternate (and which goes first alternates), each
 * sample is a mean over `iters` runs minus, when there is a baseline, a baseline sample taken right before
 * it on the same side, so drift in machine load cancels out. Every run's event count is checked.
 */
export const compareRunners = async (
  pair: RunnerPair,
  p: Plan,
  label: string,
  clock: () => number = now
): Promise<{ ours: Array<number>; pi: Array<number> }> => {
  const samples = { ours: [] as Array<number>, pi: [] as Array<number> }
  const spent = { ours: 0, pi: 0 }
  const one = async (name: "ours" | "pi") => {
    const base = pair.baseline?.[name]
    const b = base === undefined
      ? 0
      : await sample(base.run, p.iters, base.events, `${label} ${name} baseline`, p.rewarm, clock, p.collect !== false)
    const r = pair[name]
    return (await sample(r.run, p.iters, r.events, `${label} ${name}`, p.rewarm, clock, p.collect !== false)) - b
  }
  for (let w = 0; w < p.warm; w++) {
    for (const name of ["ours", "pi"] as const) await one(name)
  }
  for (let r = 0; r < p.reps; r++) {
    const order = r % 2 === 0 ? (["ours", "pi"] as const) : (["pi", "ours"] as const)
    for (const name of order) {
      if (samples[name].length > 0 && spent[name] > p.budgetUs) continue
      const t0 = now()
      samples[name].push(await one(name))
      spent[name] += now() - t0
    }
  }
  return samples
}
