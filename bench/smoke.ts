/**
 * A fast check that the benchmark still works: every workload of `run.ts`, tiny and once, on both sides,
 * asserting the number of events each run consumed. No timing is asserted.
 *
 *   node --experimental-strip-types --expose-gc bench/smoke.ts   (also spawns the memory and startup probes)
 */
import { pathToFileURL } from "node:url"
import { makeMessage, makeOurs as makeOursBatch, makePi as makePiBatch } from "./harness.ts"
import {
  callsMessage,
  type Consumer,
  FINAL,
  loopEvents,
  type LoopSide,
  makeOurs,
  makePi,
  type Mode,
  type Shape,
  transcriptOf,
  turnsScript,
  type Work
} from "./loop.ts"
import { compare, compareRunners, cpuNow, expected } from "./measure.ts"
import { spawnMemory } from "./memory.ts"
import { emptyTally, scheduleRunner, type ScheduleSide } from "./schedule.ts"
import { spawnStartup } from "./startup.ts"

export interface SmokeReport {
  /** Workloads checked, each on both sides. */
  readonly checks: number
  /** Events consumed in total, both sides. */
  readonly events: number
}

const MODES: ReadonlyArray<Mode> = ["parallel", "sequential"]
const SHAPES: ReadonlyArray<Shape> = ["succeed", "sync", "promise"]
const CONSUMERS: ReadonlyArray<Consumer> = ["iterate", "callback"]
const ONCE = { iters: 1, warm: 0, reps: 1, budgetUs: Infinity }

const assertEqual = (actual: unknown, wanted: unknown, what: string) => {
  if (actual !== wanted) throw new Error(`bench smoke: ${what}: got ${String(actual)}, expected ${String(wanted)}`)
}

export const smoke = async (n = 5): Promise<SmokeReport> => {
  let checks = 0
  let events = 0
  const both = async (sides: ReadonlyArray<LoopSide>, work: Work, consumer: Consumer, what: string) => {
    for (const side of sides) {
      const count = await side.loop(work, consumer)
      assertEqual(count, loopEvents(work), `${side.name} ${what}`)
      events += count
    }
    checks++
  }
  // Per call: every shape, mode, hooks and consumer, and each side's no-call baseline.
  for (const shape of SHAPES) {
    const sides = [makeOurs(shape), makePi(shape)]
    for (const mode of MODES) {
      for (const hooks of [false, true]) {
        for (const consumer of CONSUMERS) {
          await both(
            sides,
            { mode, hooks, script: [callsMessage(n), FINAL], context: [] },
            consumer,
            `${shape} ${mode} ${consumer}`
          )
          await both(sides, { mode, hooks, script: [FINAL, FINAL], context: [], followUp: true }, consumer, "baseline")
        }
      }
    }
  }
  // The sampler itself, once per side with a baseline.
  const [ours, pi] = [makeOurs("succeed"), makePi("succeed")]
  const work: Work = { mode: "parallel", hooks: false, script: [callsMessage(n), FINAL], context: [] }
  const base: Work = { mode: "parallel", hooks: false, script: [FINAL, FINAL], context: [], followUp: true }
  const runner = (side: LoopSide, w: Work) => ({ run: () => side.loop(w, "iterate"), events: loopEvents(w) })
  const samples = await compareRunners(
    { ours: runner(ours, work), pi: runner(pi, work), baseline: { ours: runner(ours, base), pi: runner(pi, base) } },
    ONCE,
    "smoke sampler",
    cpuNow
  )
  assertEqual(samples.ours.length + samples.pi.length, 2, "one sample per side")
  checks++
  // Tools that wait 10 ms.
  const slow = [makeOurs("succeed", 10), makePi("succeed", 10)]
  for (const mode of MODES) {
    await both(slow, { mode, hooks: false, script: [callsMessage(2), FINAL], context: [] }, "iterate", `10 ms ${mode}`)
  }
  // Edits, then reads of the same files (the scheduling row): ours' reads each after their edit (the runner
  // throws otherwise) and no read racing one, pi sequential the same, pi parallel every read racing its edit.
  for (const side of ["ours", "pi-sequential", "pi-parallel"] as const satisfies ReadonlyArray<ScheduleSide>) {
    const tally = emptyTally()
    const runner = scheduleRunner(side, tally, 3, 5)
    assertEqual(await runner.run(), runner.events, `schedule ${side} events`)
    assertEqual(tally.readsOverlapping, side === "pi-parallel" ? 3 : 0, `schedule ${side} reads racing their edit`)
    events += runner.events
    checks++
  }
  // Turns, from an empty and from a long transcript, through the loop and the stateful agents.
  for (const context of [[], transcriptOf(40)]) {
    const turns: Work = { mode: "parallel", hooks: false, script: turnsScript(3), context }
    await both([ours, pi], turns, "iterate", `3 turns from ${context.length} messages`)
    for (const side of [ours, pi]) {
      await side.agent.reset(context, turns.script)
      const count = await side.agent.prompt()
      assertEqual(count, loopEvents(turns), `${side.name} agent 3 turns from ${context.length} messages`)
      events += count
    }
    checks++
  }
  await ours.agent.dispose()
  await pi.agent.dispose()
  // executeToolCalls alone against pi's agentLoop.
  const batch = { ours: makeOursBatch({ toolCount: 1, delayMs: 0 }), pi: makePiBatch({ toolCount: 1, delayMs: 0 }) }
  for (const mode of MODES) {
    const message = makeMessage(n, 1)
    const s = await compare(
      batch,
      (side) => () => side.run(message, { mode, hooks: false }),
      (side) => expected(side, n),
      ONCE,
      `smoke executeToolCalls ${mode}`,
      (side) => side.baseline,
      cpuNow
    )
    assertEqual(s.ours.length + s.pi.length, 2, "one executeToolCalls sample per side")
    events += expected("ours", n) + expected("pi", n)
    checks++
  }
  return { checks, events }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const report = await smoke()
  for (const side of ["ours", "pi"] as const) {
    const m = await spawnMemory(side, "parallel", 20)
    assertEqual(
      m.events,
      loopEvents({ mode: "parallel", hooks: false, script: [callsMessage(20), FINAL], context: [] }),
      `memory probe ${side} events`
    )
    const s = await spawnStartup(side)
    assertEqual(s.first_event, "agent_start", `startup probe ${side}`)
  }
  console.log(`bench smoke ok: ${report.checks} checks, ${report.events} events, memory and startup probes ok`)
}
