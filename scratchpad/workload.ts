// The turn workloads the profiling probes share (allocprof, heapgrowth, turnprof): one
// run of a bench turn row, by name: `agent<turns>` (the stateful agent's prompt), `loop<turns>` (agentLoop,
// iterated) or `cb<turns>` (agentLoop, callback sink), with `x20k` / `20k` for a 20 000-message transcript
// (agent10, agent500, loop10, loop500, loop0, agent10x20k, cb500). Per-call workloads
// (callprof): see callWorkload; allocationProfile samples a workload for allocprof.
import {
  callsMessage,
  FINAL,
  type LoopSide,
  makeOurs,
  makePi,
  type Shape,
  transcriptOf,
  turnsScript,
  type Work
} from "../bench/loop.ts"

export interface TurnWorkload {
  readonly side: LoopSide
  readonly turns: number
  readonly once: () => Promise<unknown>
}

export const turnWorkload = (name: string, sideName = "ours"): TurnWorkload => {
  const side = sideName === "pi" ? makePi("succeed") : makeOurs("succeed")
  const turns = Number(/^(?:agent|loop|cb)(\d+)/.exec(name)?.[1] ?? 10)
  const context = transcriptOf(name.includes("20k") ? 20_000 : 0)
  const script = turnsScript(turns)
  const work: Work = { mode: "parallel", hooks: false, script, context }
  const once = name.startsWith("agent")
    ? async () => {
      await side.agent.reset(context, script)
      return side.agent.prompt()
    }
    : () => side.loop(work, name.startsWith("cb") ? "callback" : "iterate")
  return { side, turns, once }
}

/**
 * A per-call workload as the bench's rows: one agentLoop run with `n` calls of `shape`, then a final answer;
 * `mode` is `seq` or `par`, `hooks` is `hooks` or `none`.
 */
export const callWorkload = (
  shape: Shape,
  mode: string,
  hooks: string,
  n: number,
  sideName = "ours"
): { readonly side: LoopSide; readonly work: Work } => ({
  side: sideName === "pi" ? makePi(shape) : makeOurs(shape),
  work: {
    mode: mode === "seq" ? "sequential" : "parallel",
    hooks: hooks === "hooks",
    script: [callsMessage(n), FINAL],
    context: []
  }
})

/**
 * Runs `once` for `seconds` under V8's sampling heap profiler (collected objects included, one sample per
 * `interval` bytes) and returns the profile with the number of runs: what allocprof.ts prints.
 */
export const allocationProfile = async (
  once: () => Promise<unknown>,
  seconds: number,
  interval: number
): Promise<{ readonly profile: unknown; readonly runs: number }> => {
  const { Session } = await import("node:inspector/promises")
  const session = new Session()
  session.connect()
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: interval,
    includeObjectsCollectedByMajorGC: true,
    // PROMOTED=1: leave out what a scavenge collects, so what is left outlived the young generation.
    includeObjectsCollectedByMinorGC: process.env.PROMOTED !== "1"
  })
  const end = Date.now() + seconds * 1000
  let runs = 0
  while (Date.now() < end) {
    await once()
    runs++
  }
  const { profile } = await session.post("HeapProfiler.stopSampling")
  session.disconnect()
  return { profile, runs }
}
