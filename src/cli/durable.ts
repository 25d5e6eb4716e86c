/**
 * Durable runs on the command line: `--durable` runs the task as a durable run in the embedded store and
 * prints its id; `runs` lists the store's runs; `resume <run-id>` continues one after a crash or Ctrl-C.
 */
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Terminal from "effect/Terminal"
import { mkdirSync } from "node:fs"
import { dirname, resolve } from "node:path"
import type { AgentEvent } from "../AgentEvent.ts"
import * as DurableAgent from "../durable/DurableAgent.ts"
import * as DurableStore from "../durable/DurableStore.ts"
import * as EventSink from "../EventSink.ts"
import { clip } from "../internal/clip.ts"
import type { Model } from "../Model.ts"
import type { ToolRegistry } from "../ToolRegistry.ts"
import { makeJsonLineEncoder } from "./JsonLines.ts"
import * as LiveView from "./LiveView.ts"

/** What a durable run from the command line needs. */
export interface DurableTask {
  /** `--store`, or the default store in the state folder. */
  readonly store: string | undefined
  readonly json: boolean
  readonly systemPrompt: string
  readonly config: DurableAgent.DurableRunConfig
  readonly model: Layer.Layer<Model, unknown>
  readonly tools: Layer.Layer<ToolRegistry, unknown>
}

/**
 * The store file: `--store`, else `runs.db` in the state folder (`EFFECT_AGENT_HOME` through `Config`); its
 * folder is made when missing.
 */
export const storeFile = (store: string | undefined): Effect.Effect<string> =>
  Effect.map(
    store === undefined ? DurableStore.defaultStoreFile : Effect.sync(() => resolve(store)),
    (file) => {
      mkdirSync(dirname(file), { recursive: true })
      return file
    }
  )

const storeLayer = (store: string | undefined) =>
  Layer.unwrap(Effect.map(storeFile(store), (filename) => DurableStore.layer({ filename })))

/** Standard output through the `Terminal` service; a closed output is not an error of the run. */
const display = (text: string): Effect.Effect<void, never, Terminal.Terminal> =>
  Effect.gen(function*() {
    const terminal = yield* Terminal.Terminal
    yield* terminal.display(text).pipe(Effect.catch(() => Effect.void))
  })

/** Prints the events of a run: JSON lines with `--json`, else the plain view. */
const printer = (json: boolean) =>
  Effect.gen(function*() {
    const terminal = yield* Terminal.Terminal
    const write = (text: string) => terminal.display(text).pipe(Effect.catch(() => Effect.void))
    if (json) {
      const encoder = makeJsonLineEncoder()
      const sink: EventSink.EventSinkShape = { emit: (event: AgentEvent) => write(encoder.encode(event) + "\n") }
      return { sink, close: Effect.void }
    }
    const view = yield* LiveView.make({ live: false, color: false, columns: 100, write })
    return { sink: { emit: view.handle } as EventSink.EventSinkShape, close: view.close }
  })

const announce = (runId: string, json: boolean) =>
  json ? display(JSON.stringify({ type: "run_start", runId }) + "\n") : Console.log(`run: ${runId}`)

const runWith = (
  task: DurableTask,
  go: (runId: string) => Effect.Effect<DurableAgent.DurableRunResult, never, any>,
  runId: string
) =>
  Effect.gen(function*() {
    yield* announce(runId, task.json)
    const out = yield* printer(task.json)
    let events = 0
    const counted: EventSink.EventSinkShape = {
      emit: (event) =>
        Effect.suspend(() => {
          events++
          return out.sink.emit(event)
        })
    }
    const result = yield* go(runId).pipe(Effect.provideService(EventSink.EventSink, counted))
    yield* out.close
    // A finished run is not run again: say so, rather than print nothing.
    if (events === 0 && !task.json) {
      yield* Console.log(`run ${runId} had already finished (${result.messages.length} messages)`)
    }
    return result
  }).pipe(
    Effect.scoped,
    Effect.provide(
      DurableAgent.layer(task.config).pipe(
        Layer.provide([task.model, task.tools]),
        Layer.provideMerge(storeLayer(task.store))
      )
    )
  ) as Effect.Effect<DurableAgent.DurableRunResult, unknown>

/** Runs `prompt` as a new durable run, printing `run: <id>` (or a `run_start` JSON line) first. */
export const runTask = (task: DurableTask, prompt: string) =>
  runWith(
    task,
    (runId) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        DurableAgent.run({
          runId,
          systemPrompt: task.systemPrompt,
          prompts: [{ role: "user", content: prompt, timestamp: now }]
        })),
    DurableAgent.newRunId()
  )

/** Continues the run `runId` of the store; finished steps are replayed, the rest runs. */
export const resumeRun = (task: DurableTask, runId: string) => runWith(task, DurableAgent.resume, runId)

/** Lists the store's runs, newest first: one line each, or JSON lines with `--json`. */
export const listRuns = (store: string | undefined, json: boolean) =>
  Effect.gen(function*() {
    const runs = yield* DurableAgent.list()
    for (const run of runs) {
      yield* json
        ? display(JSON.stringify(run) + "\n")
        : Console.log(`${run.runId}  ${run.status.padEnd(9)}  ${new Date(run.startedAt).toISOString()}  ${run.title}`)
    }
  }).pipe(
    // A client of the store: it lists while another process runs the store (DR 3.1).
    Effect.provide(Layer.unwrap(Effect.map(storeFile(store), (filename) => DurableStore.layerClient({ filename }))))
  )

/** `abort <run-id>` named a run the store does not hold. */
export class UnknownRun extends Schema.TaggedError<UnknownRun>()("UnknownRun", { runId: Schema.String }) {
  override get message() {
    return `no run ${clip(this.runId, 80)} in the store (effect-agent runs lists them)`
  }
}

/**
 * Aborts the run `runId` of the store, wherever it executes (DR 3.2): a process running it stops it within
 * its abort poll interval; a run no process runs stops at its first step when resumed. A run the store does
 * not hold is refused with {@link UnknownRun}; a finished one is left as it is and said so.
 */
export const abortRun = (store: string | undefined, runId: string) =>
  Effect.gen(function*() {
    const runs: ReadonlyArray<DurableAgent.RunSummary> = yield* DurableAgent.list()
    const run = runs.find((entry) => entry.runId === runId)
    if (run === undefined) return yield* new UnknownRun({ runId })
    if (run.status === "completed" || run.status === "failed") {
      return yield* Console.log(`run ${runId} had already finished (${run.status})`)
    }
    yield* DurableAgent.abort(runId)
    yield* Console.log(`abort sent to run ${runId}`)
  }).pipe(
    Effect.provide(Layer.unwrap(Effect.map(storeFile(store), (filename) => DurableStore.layerClient({ filename }))))
  )
