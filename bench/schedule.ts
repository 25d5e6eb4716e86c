/**
 * The scheduling row (`schedule`, bench/README.md): one assistant message of edits of different files, then
 * reads of the same files, every tool waiting the same time, through each side's public loop.
 *
 * - ours: `AgentLoop.agentLoopAsyncIterable` (events iterated with `for await`) in parallel mode; the edit tool
 *   declares `write(path)` and the read tool `read(path)` (`Tool.withResources`), so each read waits for its
 *   file's edit and for nothing else (docs/tool-execution.md, TE 11);
 * - pi: `agentLoop` (its `EventStream` iterated with `for await`) in parallel mode (all calls at once: each
 *   read races its file's edit) and in sequential mode (one call at a time).
 *
 * The tools are the same on both sides: `edit` and `read`, each validating `{ path: string }` (an Effect
 * Schema for us, typebox for pi), each marking when it begins, waiting (`Effect.sleep` / `setTimeout`),
 * marking when it ends, and returning a fresh result. The marks are sequence numbers, so the order check
 * after every run is exact whatever the timer's resolution.
 */
import {
  type AgentEvent as PiEvent,
  agentLoop as piAgentLoop,
  type AgentMessage as PiAgentMessage,
  type AgentTool
} from "@mariozechner/pi-agent-core"
import { Type } from "@mariozechner/pi-ai"
import { Effect, Layer, Schema } from "effect"
import { agentLoopAsyncIterable } from "../src/AgentLoop.ts"
import type { AssistantMessage, ToolCall } from "../src/Message.ts"
import { Model } from "../src/Model.ts"
import * as ResourceAccess from "../src/ResourceAccess.ts"
import * as Tool from "../src/Tool.ts"
import { entry, ToolRegistry, type ToolRegistryShape } from "../src/ToolRegistry.ts"
import { assistant, FINAL, loopEvents, ourModel, piConvert, piModel, piStreamFn, PROMPT } from "./loop.ts"
import { compareRunners, type Runner } from "./measure.ts"
import { median, round } from "./stats.ts"

/** Files edited (and read) by the row's message. */
export const FILES = 20

/** How long every tool of the row waits, in milliseconds. */
export const DELAY_MS = 10

/** Who runs the message: ours (scheduled by what the calls touch), or pi in one of its two modes. */
export type ScheduleSide = "ours" | "pi-parallel" | "pi-sequential"

// ---------------------------------------------------------------------------------------------------------
// The workload
// ---------------------------------------------------------------------------------------------------------

const pathOf = (file: number) => `file-${file}`

const fileOf = (path: string) => Number(path.slice("file-".length))

/**
 * One assistant message: `edit` of `file-0` … `file-<files − 1>`, then `read` of the same files in the same
 * order (the "edit, then read it back" pattern), followed by a final text.
 */
export const scheduleScript = (files: number): ReadonlyArray<AssistantMessage> => {
  const calls: Array<ToolCall> = []
  for (const name of ["edit", "read"] as const) {
    for (let i = 0; i < files; i++) {
      calls.push({ type: "toolCall", id: `${name}_${i}`, name, arguments: { path: pathOf(i) } })
    }
  }
  return [assistant(calls, "toolUse"), FINAL]
}

/**
 * The events both sides emit for the message (ours also emits `tool_execution_waiting` for a call that waits;
 * pi has no such event, so those are counted apart, {@link Tally}).
 */
export const scheduleEvents = (files: number): number =>
  loopEvents({ mode: "parallel", hooks: false, script: scheduleScript(files), context: [] })

// ---------------------------------------------------------------------------------------------------------
// The order of one run
// ---------------------------------------------------------------------------------------------------------

type Kind = "edit" | "read"

/** When one tool call began and ended, as sequence numbers of its run. */
interface Span {
  readonly start: number
  end: number
}

/** The spans of one run's calls, per kind and file. */
interface Trace {
  clock: number
  readonly edit: Array<Span | undefined>
  readonly read: Array<Span | undefined>
}

const emptyTrace = (): Trace => ({ clock: 0, edit: [], read: [] })

const begin = (trace: Trace, kind: Kind, path: string): Span => {
  const span = { start: ++trace.clock, end: 0 }
  trace[kind][fileOf(path)] = span
  return span
}

/** Marks the end of a call and returns its result (fresh, as the other rows' tools do). */
const finish = (trace: Trace, span: Span, kind: Kind, path: string) => {
  span.end = ++trace.clock
  return { content: [{ type: "text" as const, text: "ok" }], details: { kind, path } }
}

/** How the reads of one run stood against the edits of the same files. */
interface Order {
  /** Reads that began after their file's edit had ended. */
  readonly after: number
  /** Reads that ran, for some time, together with their file's edit: the race. */
  readonly overlapping: number
}

const orderOf = (trace: Trace, files: number, label: string): Order => {
  let after = 0
  let overlapping = 0
  for (let i = 0; i < files; i++) {
    const edit = trace.edit[i]
    const read = trace.read[i]
    if (edit === undefined || read === undefined || edit.end === 0 || read.end === 0) {
      throw new Error(`${label}: the edit or the read of ${pathOf(i)} did not run to its end`)
    }
    if (read.start > edit.end) after++
    if (read.start < edit.end && edit.start < read.end) overlapping++
  }
  return { after, overlapping }
}

/** What a side's runs did, over every run (re-warm runs included). */
export interface Tally {
  runs: number
  reads: number
  /** Reads that began after their file's edit ended (ours: every read, checked after every run). */
  readsAfterEdit: number
  /** Reads that overlapped their file's edit. */
  readsOverlapping: number
  /** `tool_execution_waiting` events (ours only). */
  waiting: number
}

/** A tally with nothing counted. */
export const emptyTally = (): Tally => ({ runs: 0, reads: 0, readsAfterEdit: 0, readsOverlapping: 0, waiting: 0 })

// ---------------------------------------------------------------------------------------------------------
// The two sides
// ---------------------------------------------------------------------------------------------------------

/** One run's events of the kinds both sides emit, and ours' `tool_execution_waiting` events apart. */
interface Consumed {
  readonly events: number
  readonly waiting: number
}

/** A reference to the trace of the run in progress (runs of a side never overlap). */
interface TraceRef {
  current: Trace
}

const PathArgs = Schema.Struct({ path: Schema.String })

const ourHandler = (kind: Kind, delayMs: number, ref: TraceRef) => (args: { readonly path: string }) =>
  // Suspended, so that the begin mark is when the batch runs the call, not when it builds the call's effect.
  Effect.suspend(() => {
    const trace = ref.current
    const span = begin(trace, kind, args.path)
    return Effect.map(Effect.sleep(delayMs), () => finish(trace, span, kind, args.path))
  })

const ourRegistry = (delayMs: number, ref: TraceRef): ToolRegistryShape => {
  const edit = Tool.make("edit", { description: "bench edit", parameters: PathArgs })
  const read = Tool.make("read", { description: "bench read", parameters: PathArgs })
  const entries = [
    entry(edit, Tool.withResources(ourHandler("edit", delayMs, ref), (args) => [ResourceAccess.write(args.path)])),
    entry(read, Tool.withResources(ourHandler("read", delayMs, ref), (args) => [ResourceAccess.read(args.path)]))
  ]
  return Effect.runSync(
    Effect.gen(function*() {
      return yield* ToolRegistry
    }).pipe(Effect.provide(ToolRegistry.fromEntries(entries)))
  )
}

const runOurs = async (
  script: ReadonlyArray<AssistantMessage>,
  registry: ToolRegistryShape
): Promise<Consumed> => {
  const layer = Layer.merge(Layer.succeed(Model, ourModel(script)), Layer.succeed(ToolRegistry, registry))
  const context = { systemPrompt: "", messages: [] }
  let events = 0
  let waiting = 0
  for await (const event of agentLoopAsyncIterable([PROMPT], context, { toolExecution: "parallel" }, layer)) {
    if (event.type === "tool_execution_waiting") waiting++
    else events++
  }
  return { events, waiting }
}

const piToolOf = (kind: Kind, delayMs: number, ref: TraceRef): AgentTool<any> => ({
  name: kind,
  label: kind,
  description: `bench ${kind}`,
  parameters: Type.Object({ path: Type.String() }),
  execute: async (_id, params: any) => {
    const trace = ref.current
    const span = begin(trace, kind, params.path)
    await new Promise<void>((resolve) => setTimeout(resolve, delayMs))
    return finish(trace, span, kind, params.path)
  }
})

const runPi = async (
  script: ReadonlyArray<AssistantMessage>,
  tools: Array<AgentTool<any>>,
  mode: "parallel" | "sequential"
): Promise<Consumed> => {
  const context = { systemPrompt: "", messages: [] as Array<PiAgentMessage>, tools }
  const config = { model: piModel, convertToLlm: piConvert, toolExecution: mode }
  const stream = piAgentLoop([PROMPT as PiAgentMessage], context, config, undefined, piStreamFn(script))
  let events = 0
  for await (const _ of stream as AsyncIterable<PiEvent>) events++
  await stream.result()
  return { events, waiting: 0 }
}

/**
 * One side's run of the message of `files` edits and reads, as the sampler takes it: resolves with the events
 * both sides emit (checked by the sampler), and after every run records in `tally` how its reads stood against
 * its edits. Throws if one of ours' reads began before its file's edit ended (TE 11.2), or if a call did not
 * run to its end.
 */
export const scheduleRunner = (
  side: ScheduleSide,
  tally: Tally,
  files = FILES,
  delayMs = DELAY_MS
): Runner => {
  const script = scheduleScript(files)
  const ref: TraceRef = { current: emptyTrace() }
  const run = side === "ours"
    ? (() => {
      const registry = ourRegistry(delayMs, ref)
      return () => runOurs(script, registry)
    })()
    : (() => {
      const tools = [piToolOf("edit", delayMs, ref), piToolOf("read", delayMs, ref)]
      const mode = side === "pi-parallel" ? "parallel" : "sequential"
      return () => runPi(script, tools, mode)
    })()
  return {
    run: async () => {
      ref.current = emptyTrace()
      const consumed = await run()
      const order = orderOf(ref.current, files, side)
      if (side === "ours" && order.after !== files) {
        throw new Error(`ours: ${files - order.after} of ${files} reads began before their file's edit ended`)
      }
      tally.runs++
      tally.reads += files
      tally.readsAfterEdit += order.after
      tally.readsOverlapping += order.overlapping
      tally.waiting += consumed.waiting
      return consumed.events
    },
    events: scheduleEvents(files)
  }
}

// ---------------------------------------------------------------------------------------------------------
// The row
// ---------------------------------------------------------------------------------------------------------

/** Ours against one of pi's modes on the message, wall time in milliseconds (medians). */
export interface ScheduleRow {
  readonly workload: string
  readonly pi_mode: "parallel" | "sequential"
  readonly calls: number
  readonly ours_ideal_ms: number
  readonly pi_ideal_ms: number
  readonly ours_ms: number
  readonly pi_ms: number
  readonly ratio: number
  readonly samples: number
  /** Runs of each side, re-warm runs included: the counts below are over these runs' reads. */
  readonly ours_runs: number
  readonly pi_runs: number
  readonly reads_per_run: number
  /** Every one of ours' reads (checked after every run: a run with an early read throws). */
  readonly ours_reads_after_their_edit: number
  readonly ours_waiting_events: number
  readonly pi_reads_after_their_edit: number
  /** pi's reads that ran, for some time, together with their file's edit. */
  readonly pi_reads_overlapping_their_edit: number
}

const WORKLOAD = `one message: ${FILES} edits of file-0..file-${FILES - 1}, then ${FILES} reads of the same files; ` +
  `every tool waits ${DELAY_MS} ms; agentLoop iterated; wall time of one run`

/**
 * Ours against pi parallel, then against pi sequential: wall time of one run, sampled as the `wall` rows are
 * (the sides alternate, a full GC and one untimed run before each sample, `reps` samples per side and pairing).
 * Every run's events and (ours) the order of every file's read after its edit are checked.
 */
export const scheduleRows = async (
  reps: number,
  log: (line: string) => void = console.log
): Promise<Array<ScheduleRow>> => {
  const rows: Array<ScheduleRow> = []
  for (const piMode of ["parallel", "sequential"] as const) {
    const tallies = { ours: emptyTally(), pi: emptyTally() }
    const samples = await compareRunners(
      { ours: scheduleRunner("ours", tallies.ours), pi: scheduleRunner(`pi-${piMode}`, tallies.pi) },
      { iters: 1, rewarm: 1, warm: 0, reps, budgetUs: 60e6 },
      `schedule vs pi ${piMode}`
    )
    const ours = median(samples.ours) / 1000
    const pi = median(samples.pi) / 1000
    const row: ScheduleRow = {
      workload: WORKLOAD,
      pi_mode: piMode,
      calls: 2 * FILES,
      // Ours: the edits together, then the reads together; pi: everything together, or one call at a time.
      ours_ideal_ms: 2 * DELAY_MS,
      pi_ideal_ms: piMode === "parallel" ? DELAY_MS : 2 * FILES * DELAY_MS,
      ours_ms: round(ours, 2),
      pi_ms: round(pi, 2),
      ratio: round(ours / pi),
      samples: Math.min(samples.ours.length, samples.pi.length),
      ours_runs: tallies.ours.runs,
      pi_runs: tallies.pi.runs,
      reads_per_run: FILES,
      ours_reads_after_their_edit: tallies.ours.readsAfterEdit,
      ours_waiting_events: tallies.ours.waiting,
      pi_reads_after_their_edit: tallies.pi.readsAfterEdit,
      pi_reads_overlapping_their_edit: tallies.pi.readsOverlapping
    }
    rows.push(row)
    log(
      `  ${FILES} edits + ${FILES} reads × ${DELAY_MS} ms: ours ${row.ours_ms} ms (ideal ${row.ours_ideal_ms})  ` +
        `pi ${piMode} ${row.pi_ms} ms (ideal ${row.pi_ideal_ms})  ratio ${row.ratio.toFixed(2)}; ` +
        `reads after their edit: ours ${tallies.ours.readsAfterEdit}/${tallies.ours.reads}, ` +
        `pi ${tallies.pi.readsAfterEdit}/${tallies.pi.reads} (racing it: ${tallies.pi.readsOverlapping})`
    )
  }
  return rows
}
