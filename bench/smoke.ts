/**
 * A fast check that the benchmark still works: tiny batches, one repetition, every workload of the bench
 * (instant calls in both modes with and without hooks and with 20 tools, 10 ms tools, the floor), on both
 * sides, asserting each produces the expected events. No timing is asserted.
 *
 *   node --experimental-strip-types --expose-gc bench/smoke.ts   (also spawns the memory probe once per side)
 */
import { pathToFileURL } from "node:url"
import { floorArgs, floorEffect, floorPromise, makeMessage, makeOurs, makePi, type Mode, type Side } from "./harness.ts"
import { baselineEvents, compare, expected } from "./measure.ts"
import { spawnMemory } from "./memory.ts"

export interface SmokeReport {
  /** Workloads checked, each on both sides. */
  readonly checks: number
  /** Events consumed in total, both sides. */
  readonly events: number
}

const MODES: ReadonlyArray<Mode> = ["parallel", "sequential"]
const ONCE = { iters: 1, warm: 0, reps: 1, budgetUs: Infinity }

const assertEqual = (actual: unknown, wanted: unknown, what: string) => {
  if (actual !== wanted) throw new Error(`bench smoke: ${what}: got ${String(actual)}, expected ${String(wanted)}`)
}

/** Runs one batch on a side and checks the events by kind: each call's 4 events, pi's loop events. */
const checkKinds = async (side: Side, n: number, mode: Mode, hooks: boolean, toolCount: number) => {
  const kinds = new Map<string, number>()
  side.onEvent = (type) => kinds.set(type, (kinds.get(type) ?? 0) + 1)
  try {
    const total = await side.run(makeMessage(n, toolCount), { mode, hooks })
    assertEqual(total, expected(side, n), `${side.name} ${mode} events`)
    assertEqual(kinds.get("tool_execution_start"), n, `${side.name} ${mode} starts`)
    assertEqual(kinds.get("tool_execution_end"), n, `${side.name} ${mode} ends`)
    assertEqual(kinds.get("tool_execution_update") ?? 0, 0, `${side.name} ${mode} updates`)
    // pi also announces the prompt, both assistant messages: 3 more message_start/message_end pairs.
    const extra = side.name === "pi" ? 3 : 0
    assertEqual(kinds.get("message_start"), n + extra, `${side.name} ${mode} message_start`)
    assertEqual(kinds.get("message_end"), n + extra, `${side.name} ${mode} message_end`)
    return total
  } finally {
    side.onEvent = undefined
  }
}

export const smoke = async (n = 5): Promise<SmokeReport> => {
  let checks = 0
  let events = 0
  for (const toolCount of [1, 20]) {
    const pair = { ours: makeOurs({ toolCount, delayMs: 0 }), pi: makePi({ toolCount, delayMs: 0 }) }
    for (const side of [pair.ours, pair.pi]) {
      assertEqual(await side.baseline(), baselineEvents(side), `${side.name} baseline events`)
    }
    for (const mode of MODES) {
      for (const hooks of [false, true]) {
        for (const side of [pair.ours, pair.pi]) events += await checkKinds(side, n, mode, hooks, toolCount)
        const message = makeMessage(n, toolCount)
        const samples = await compare(
          pair,
          (side) => () => side.run(message, { mode, hooks }),
          (side) => expected(side, n),
          ONCE,
          `smoke ${mode} ${toolCount} tools${hooks ? " + hooks" : ""}`
        )
        assertEqual(samples.ours.length + samples.pi.length, 2, "one sample per side")
        events += expected("ours", n) + expected("pi", n)
        checks++
      }
    }
  }
  // Tools that wait 10 ms.
  const slow = { ours: makeOurs({ toolCount: 1, delayMs: 10 }), pi: makePi({ toolCount: 1, delayMs: 10 }) }
  for (const mode of MODES) {
    for (const side of [slow.ours, slow.pi]) events += await checkKinds(side, 2, mode, false, 1)
    checks++
  }
  // The floor.
  for (const mode of MODES) {
    assertEqual(await floorPromise(floorArgs(n), mode), n, `floor promise ${mode}`)
    assertEqual(await floorEffect(floorArgs(n), mode), n, `floor effect ${mode}`)
    checks++
  }
  return { checks, events }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const report = await smoke()
  for (const side of ["ours", "pi"] as const) {
    const m = await spawnMemory(side, "parallel", 20)
    assertEqual(m.events, expected(side, 20), `memory probe ${side} events`)
  }
  console.log(`bench smoke ok: ${report.checks} checks, ${report.events} events, memory probe ok`)
}
