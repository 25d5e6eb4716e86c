/**
 * Durable agent runs: the loop of `AgentLoop.ts` run as an `effect/workflow` Workflow whose steps are
 * Activities, so a run survives the death of its process and a resume continues it without repeating
 * finished work.
 *
 * - Each model response is one activity (`model/<n>`): a stored response is replayed, never requested
 *   again.
 * - Each tool call is one activity (`tool/<n>/<call id>`), run by the loop's own batch (so a parallel batch
 *   is still one `Effect.forEach` with its concurrency): a stored result is replayed, never run again.
 * - A tool call that was running when the process died is run again only if its tool is idempotent
 *   (`read`, `ls`, `find`, `grep`, or one named in `idempotentTools` or declaring `idempotent: true`); any
 *   other is settled with an error result saying it was interrupted by a crash and may have had side
 *   effects.
 * - `beforeToolCall` (approvals) is an activity too (`approve/<n>/<call id>`): a decision a person made is
 *   stored and not asked for again.
 *
 * The loop itself is unchanged: the durable run hands it a `Model` and a `ToolRegistry` whose calls go
 * through activities, so a run without a crash emits the events of the in-memory loop, in the same order
 * (step results are what the store holds, JSON: keys holding `undefined` are absent).
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Effect, Exit, Layer, Option, Queue, Schema, Stream } from "effect"
import { Activity, Workflow, WorkflowEngine } from "effect/workflow"
import type { AgentEvent } from "../AgentEvent.ts"
import { type AgentLoopConfig, runAgentLoop } from "../AgentLoop.ts"
import { AssistantMessageEvent } from "../AssistantMessageEvent.ts"
import * as EventSink from "../EventSink.ts"
import { interruptOnAbort } from "../internal/abort.ts"
import { causeMessage } from "../internal/errorText.ts"
import { AssistantMessage, isMessage, Message } from "../Message.ts"
import { Model, type ModelShape } from "../Model.ts"
import type { Handler, Tool, ToolContext, ToolResult } from "../Tool.ts"
import type { BeforeToolCallContext } from "../ToolExecution.ts"
import { ToolRegistry, type ToolRegistryShape } from "../ToolRegistry.ts"
import { Inbox, type InboxKind, type RunEntry, RunIndex, StartLedger } from "./RunState.ts"
import { ToolAttempt } from "./ToolAttempt.ts"

/** The built-in tools that only read: running one again after a crash does no harm. */
export const DEFAULT_IDEMPOTENT_TOOLS: ReadonlyArray<string> = ["read", "ls", "find", "grep"]

/** The text a non-idempotent call gets when the process died while it was running. */
export const crashedCallText = (toolName: string): string =>
  `Tool ${toolName} was interrupted by a crash after it started; it may have had side effects. It was not run again.`

/** The text a call stopped by an abort is stored with (the batch reports the same). */
const abortedCallText = (toolName: string): string =>
  `Tool ${toolName} was interrupted after it started: the run was aborted. It may have had side effects.`

/**
 * The durable run workflow. The execution id is derived from the run id alone, so executing the same run id
 * again joins the existing run (its stored payload wins) instead of starting a second one.
 */
export const AgentRun = Workflow.make("effect-agent/AgentRun", {
  payload: {
    runId: Schema.String,
    systemPrompt: Schema.String,
    /** The transcript before the run. */
    history: Schema.Array(Message),
    /** The new messages that start the run. */
    prompts: Schema.Array(Message)
  },
  success: Schema.Array(Message),
  idempotencyKey: ({ runId }) => runId
})

/** How durable runs behave: the loop's configuration, minus what cannot survive a process, plus idempotency. */
export interface DurableRunConfig<R = never>
  extends Omit<AgentLoopConfig<R>, "signal" | "getSteeringMessages" | "getFollowUpMessages">
{
  /**
   * Tools that may run again when the process died while they ran. Default {@link DEFAULT_IDEMPOTENT_TOOLS};
   * a tool object with `idempotent: true` counts as well.
   */
  readonly idempotentTools?: ReadonlyArray<string> | undefined
  /**
   * Read steering and follow-up messages sent with {@link steer} and {@link followUp}. Each read is a step
   * of its own (one per batch and one when the run would stop), so it is off by default.
   */
  readonly inbox?: boolean | undefined
  /**
   * Where the events of an execution go while nobody in this process listens to the run (see {@link run}):
   * e.g. a server that stores them for clients on other processes. Called once at the start of each execution
   * of a run (a resume after a crash is a new execution). Default: such events are dropped.
   */
  readonly eventSink?: ((runId: string) => EventSink.EventSinkShape) | undefined
}

/** What this process holds for a run it is executing or listening to. */
export interface RunHandle {
  /** Where the run's events go while someone listens (see {@link run}). */
  sink: EventSink.EventSinkShape | undefined
  /** Aborts the run's current execution in this process (a new one per execution). */
  controller: AbortController
  /** Whether this process is executing the run now. */
  executing: boolean
}

/**
 * The runs this process is executing or listening to. Events of a run nobody listens to (e.g. one the
 * engine resumed on its own after a restart) are dropped; its transcript is still stored.
 */
export class RunListeners extends Context.Service<RunListeners, Map<string, RunHandle>>()(
  "effect-agent/durable/RunListeners"
) {
  /** An empty set of listeners. */
  static readonly layer: Layer.Layer<RunListeners> = Layer.sync(RunListeners, () => new Map())
}

/** Forgets a run nobody listens to and this process does not execute, so the map does not grow forever. */
const release = (listeners: Map<string, RunHandle>, runId: string, handle: RunHandle) => {
  if (handle.sink === undefined && !handle.executing && listeners.get(runId) === handle) listeners.delete(runId)
}

const handleOf = (listeners: Map<string, RunHandle>, runId: string): RunHandle => {
  let handle = listeners.get(runId)
  if (handle === undefined) {
    handle = { sink: undefined, controller: new AbortController(), executing: false }
    listeners.set(runId, handle)
  }
  return handle
}

// ---------------------------------------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------------------------------------

/** A finished model step: the last partial message seen, and the final event or the failure's text. */
const ModelOutcome = Schema.Struct({
  partial: Schema.optionalKey(AssistantMessage),
  final: Schema.optionalKey(AssistantMessageEvent),
  failure: Schema.optionalKey(Schema.String)
})
type ModelOutcome = typeof ModelOutcome.Type

/** A finished tool or hook step: its value, or the text of its failure. */
const StepOutcome = Schema.Union([
  Schema.Struct({ _tag: Schema.Literal("ok"), value: Schema.optionalKey(Schema.Unknown) }),
  Schema.Struct({ _tag: Schema.Literal("failed"), message: Schema.String })
])
type StepOutcome = typeof StepOutcome.Type

/** A failure whose text is exactly the stored text: the batch and the loop read failures by their message. */
const replayFailure = (message: string) => Effect.fail(new Error(message))

/**
 * The value as the store will give it back: JSON, so keys holding `undefined` are dropped. The live run
 * continues with this same value, so a replay cannot differ from it. A value JSON cannot hold (a bigint, a
 * cycle) becomes a failure saying so, rather than a run that cannot be stored.
 */
const storable = (value: unknown): StepOutcome => {
  if (value === undefined) return { _tag: "ok" }
  try {
    const json = JSON.stringify(value)
    return json === undefined ? { _tag: "ok" } : { _tag: "ok", value: JSON.parse(json) }
  } catch (error) {
    return { _tag: "failed", message: `The result cannot be stored in the run: ${causeMessage(Cause.die(error))}` }
  }
}

/** Runs `effect` and turns its result or failure into a storable outcome; an interruption stays one. */
const toOutcome = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<StepOutcome, never, R> =>
  Effect.matchCauseEffect(effect, {
    onSuccess: (value) => Effect.succeed(storable(value)),
    onFailure: (cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.succeed<StepOutcome>({ _tag: "failed", message: causeMessage(cause) })
  })

const fromOutcome = (outcome: StepOutcome): Effect.Effect<unknown, Error> =>
  outcome._tag === "ok" ? Effect.succeed(outcome.value) : replayFailure(outcome.message)

/** The state of one execution of the workflow body (a replay starts a fresh one). */
interface Execution {
  readonly runId: string
  readonly services: Context.Context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance>
  readonly ledger: StartLedger["Service"]
  readonly inbox: Inbox["Service"]
  /**
   * The run's abort signal in this process. Steps watch it themselves, so a step stops at the abort even
   * where the interruption of the fiber waiting for it does not reach the step, and an aborted step is
   * stored with the aborted text instead of ending as an interruption (which an Activity retries).
   */
  readonly signal: AbortSignal
  readonly idempotent: (tool: Tool.Any) => boolean
  /** How many model steps this execution has asked for; names the next one. */
  modelSteps: number
  /** How many inbox reads this execution has made; names the next one. */
  inboxReads: number
}

const inWorkflow = <A, E>(execution: Execution, effect: Effect.Effect<A, E, any>): Effect.Effect<A, E> =>
  Effect.provideContext(effect, execution.services) as Effect.Effect<A, E>

/**
 * The model, one activity per response. While the activity runs, the real stream's events are passed on
 * as they come, so a live run's events are the in-memory loop's; a replayed response is announced by its
 * `start` and final events only.
 */
const durableModel = (execution: Execution, model: ModelShape): ModelShape => ({
  info: model.info,
  stream: (request) =>
    Stream.callback<AssistantMessageEvent, never>((queue) =>
      Effect.gen(function*() {
        const step = execution.modelSteps++
        let live = false
        const execute = Effect.suspend(() => {
          live = true
          let partial: AssistantMessage | undefined
          let final: AssistantMessageEvent | undefined
          return model.stream(request).pipe(
            Stream.takeUntil((event) => event.type === "done" || event.type === "error"),
            Stream.runForEach((event) =>
              Effect.sync(() => {
                if (event.type === "done" || event.type === "error") final = event
                else partial = event.partial
                Queue.offerUnsafe(queue, event)
              })
            ),
            (streaming) => interruptOnAbort(streaming, execution.signal),
            Effect.matchCauseEffect({
              onSuccess: (): Effect.Effect<ModelOutcome> =>
                Effect.succeed({ ...(partial ? { partial } : {}), ...(final ? { final } : {}) }),
              onFailure: (cause): Effect.Effect<ModelOutcome> =>
                Cause.hasInterruptsOnly(cause) && !execution.signal.aborted
                  ? Effect.failCause(cause as Cause.Cause<never>)
                  : Effect.succeed({
                    ...(partial ? { partial } : {}),
                    failure: execution.signal.aborted ? "Request was aborted" : causeMessage(cause)
                  })
            })
          )
        })
        const outcome = yield* inWorkflow(
          execution,
          Activity.make({ name: `model/${step}`, success: ModelOutcome, execute })
        )
        if (!live) {
          const final = outcome.final
          const start = outcome.partial ??
            (final?.type === "done" ? final.message : final?.type === "error" ? final.error : undefined)
          if (start !== undefined) Queue.offerUnsafe(queue, { type: "start", partial: start })
          if (outcome.final !== undefined) Queue.offerUnsafe(queue, outcome.final)
        }
        if (outcome.failure !== undefined) return yield* Effect.die(new Error(outcome.failure))
        yield* Queue.end(queue)
      })
    )
})

/** One tool call as an activity, with the crash rule for a call that was running when the process died. */
const durableHandler = (execution: Execution, tool: Tool.Any, handler: Handler<any, any>): Handler<any, any> =>
(args: unknown, context: ToolContext) => {
  const turn = execution.modelSteps
  const name = `tool/${turn}/${context.toolCallId}`
  const execute = Effect.gen(function*() {
    const attempt = yield* execution.ledger.start(execution.runId, name)
    if (attempt > 1 && !execution.idempotent(tool)) {
      return { _tag: "failed", message: crashedCallText(tool.name) } as const
    }
    const ran = Effect.suspend(() => handler(args, context)).pipe(
      Effect.provideService(ToolAttempt, { idempotencyKey: `${execution.runId}/${context.toolCallId}`, attempt })
    )
    return yield* toOutcome(interruptOnAbort(ran, execution.signal)).pipe(
      Effect.catchCause((cause) =>
        execution.signal.aborted
          ? Effect.succeed<StepOutcome>({ _tag: "failed", message: abortedCallText(tool.name) })
          : Effect.failCause(cause)
      )
    )
  })
  return Effect.flatMap(
    inWorkflow(execution, Activity.make({ name, success: StepOutcome, execute })),
    fromOutcome
  ) as Effect.Effect<ToolResult, unknown>
}

const durableRegistry = (execution: Execution, registry: ToolRegistryShape): ToolRegistryShape => {
  const tools = registry.tools.map(({ handler, tool }) => ({ tool, handler: durableHandler(execution, tool, handler) }))
  const byName = new Map(tools.map((entry) => [entry.tool.name, entry]))
  return { tools, get: (name) => byName.get(name) }
}

/** `beforeToolCall` as an activity: an approval given (or refused) is stored and not asked for again. */
const durableBefore = <R>(
  execution: Execution,
  before: NonNullable<AgentLoopConfig<R>["beforeToolCall"]>
) =>
(context: BeforeToolCallContext) =>
  Effect.flatMap(
    inWorkflow(
      execution,
      Activity.make({
        name: `approve/${execution.modelSteps}/${context.toolCall.id}`,
        success: StepOutcome,
        execute: toOutcome(Effect.suspend(() => before(context)))
      })
    ),
    fromOutcome
  ) as ReturnType<typeof before>

/**
 * A read of the run's inbox as an activity: what it took is stored, so a replay reads the same messages at
 * the same point, and a message sent later waits for the next read.
 */
const inboxRead = (execution: Execution, kind: InboxKind): Effect.Effect<ReadonlyArray<Message>> =>
  Effect.suspend(() => {
    const name = `inbox/${execution.inboxReads++}/${kind}`
    return inWorkflow(
      execution,
      Activity.make({
        name,
        success: Schema.Array(Message),
        execute: Effect.flatMap(
          execution.inbox.take(execution.runId, kind, name),
          (messages) => Effect.orDie(Schema.decodeUnknownEffect(Schema.Array(Message))(messages))
        )
      })
    )
  })

// ---------------------------------------------------------------------------------------------------------
// Layers and entry points
// ---------------------------------------------------------------------------------------------------------

/**
 * Registers the durable run workflow with the engine in context. Its runs use the `Model` and
 * `ToolRegistry` of this layer's context and record step starts in the `StartLedger`.
 */
export const layer = <R = never>(
  config: DurableRunConfig<R> = {}
): Layer.Layer<
  RunListeners,
  never,
  | WorkflowEngine.WorkflowEngine
  | Model
  | ToolRegistry
  | StartLedger
  | Inbox
  | Exclude<R, WorkflowEngine.WorkflowInstance>
> => {
  const idempotentNames = new Set(config.idempotentTools ?? DEFAULT_IDEMPOTENT_TOOLS)
  const idempotent = (tool: Tool.Any) =>
    idempotentNames.has(tool.name) || (tool as { readonly idempotent?: unknown }).idempotent === true
  const { idempotentTools: _, inbox: readInbox, eventSink, ...loopConfig } = config
  const workflow = AgentRun.toLayer(Effect.fnUntraced(function*(payload) {
    const model = yield* Model
    const registry = yield* ToolRegistry
    const listeners = yield* RunListeners
    const handle = handleOf(listeners, payload.runId)
    // An abort ends one execution; a later resume of the run starts unaborted.
    if (handle.controller.signal.aborted) handle.controller = new AbortController()
    handle.executing = true
    const execution: Execution = {
      runId: payload.runId,
      services: yield* Effect.context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance>(),
      ledger: yield* StartLedger,
      inbox: yield* Inbox,
      signal: handle.controller.signal,
      idempotent,
      modelSteps: 0,
      inboxReads: 0
    }
    // Looked up per event: a process that attaches to a resumed run gets the events from then on.
    const fallback = eventSink?.(payload.runId)
    const sink: EventSink.EventSinkShape = {
      emit: (event: AgentEvent) => handle.sink?.emit(event) ?? fallback?.emit(event) ?? Effect.void
    }
    const before = loopConfig.beforeToolCall
    const messages = yield* runAgentLoop(
      payload.prompts,
      { systemPrompt: payload.systemPrompt, messages: payload.history },
      {
        ...loopConfig,
        signal: handle.controller.signal,
        beforeToolCall: before && durableBefore(execution, before),
        ...(readInbox === true
          ? {
            getSteeringMessages: inboxRead(execution, "steer"),
            getFollowUpMessages: inboxRead(execution, "followUp")
          }
          : {})
      }
    ).pipe(
      Effect.provideService(Model, durableModel(execution, model)),
      Effect.provideService(ToolRegistry, durableRegistry(execution, registry)),
      Effect.provideService(EventSink.EventSink, sink),
      Effect.ensuring(Effect.sync(() => {
        handle.executing = false
        release(listeners, payload.runId, handle)
      }))
    )
    // Stored as JSON: keys holding `undefined` (e.g. a result without details) are dropped, not refused.
    return JSON.parse(JSON.stringify(messages.filter(isMessage))) as Array<Message>
  }))
  return Layer.provideMerge(workflow, RunListeners.layer) as any
}

/** What a durable run ended with. */
export interface DurableRunResult {
  readonly runId: string
  /** The messages the run added, prompts included. */
  readonly messages: ReadonlyArray<Message>
}

/** A new run id: sortable by start time, unique without coordination. */
export const newRunId = (): string => `run-${Date.now().toString(36)}-${crypto.randomUUID().slice(0, 8)}`

/**
 * Starts a durable run (or joins the run with this id if it exists) and waits for its end, sending its
 * events to the `EventSink` in context while this fiber waits.
 */
export const run = Effect.fn("DurableAgent.run")(function*(options: {
  readonly runId?: string | undefined
  readonly systemPrompt?: string | undefined
  readonly history?: ReadonlyArray<Message> | undefined
  readonly prompts: ReadonlyArray<Message>
}) {
  const runId = options.runId ?? newRunId()
  const listeners = yield* RunListeners
  const sink = yield* EventSink.EventSink
  if (options.prompts.length > 0) {
    const first = options.prompts[0]!
    const text = typeof first.content === "string"
      ? first.content
      : first.content.map((c) => (c.type === "text" ? c.text : "")).join(" ")
    yield* (yield* RunIndex).record({ runId, startedAt: yield* Clock.currentTimeMillis, title: text.slice(0, 200) })
  }
  return yield* Effect.acquireUseRelease(
    Effect.sync(() => {
      handleOf(listeners, runId).sink = sink
    }),
    () =>
      AgentRun.execute({
        runId,
        systemPrompt: options.systemPrompt ?? "",
        history: options.history ?? [],
        prompts: options.prompts
      }),
    () =>
      Effect.sync(() => {
        const handle = listeners.get(runId)
        if (handle !== undefined) {
          handle.sink = undefined
          release(listeners, runId, handle)
        }
      })
  ).pipe(Effect.map((messages): DurableRunResult => ({ runId, messages })))
})

/**
 * Continues a run after a crash or a stop and waits for its end. The run's stored payload is used; the
 * finished steps are replayed from the store (their events are emitted again, in order), the rest run.
 */
export const resume = (runId: string) => run({ runId, prompts: [] })

/**
 * Where a run stands, as the engine reports it. The engine keeps no row for a run id it never saw, so
 * `"pending"` means "not finished": running, stopped by a crash, or unknown.
 */
export type RunStatus = "pending" | "suspended" | "completed" | "failed"

/** The status of a run. */
export const status = Effect.fn("DurableAgent.status")(function*(runId: string) {
  const result = yield* AgentRun.poll(yield* AgentRun.executionId({ runId, systemPrompt: "", history: [], prompts: [] }))
  if (Option.isNone(result)) return "pending" as RunStatus
  const value = result.value
  if (value._tag === "Suspended") return "suspended" as RunStatus
  return (Exit.isSuccess(value.exit) ? "completed" : "failed") as RunStatus
})

/**
 * Queues a steering message for a run: it is read after the current batch (runs with `inbox: true`). It is
 * stored at once, so a message sent while no process runs the run is read when the run resumes.
 */
export const steer = Effect.fn("DurableAgent.steer")(function*(runId: string, message: Message) {
  yield* (yield* Inbox).send(runId, "steer", message)
})

/** Queues a follow-up message for a run: it is read when the run would otherwise stop (runs with `inbox: true`). */
export const followUp = Effect.fn("DurableAgent.followUp")(function*(runId: string, message: Message) {
  yield* (yield* Inbox).send(runId, "followUp", message)
})

/**
 * Aborts a run that this process is executing: the loop's abort, so the run settles like an aborted
 * in-memory run (the current response ends `aborted`, every started call gets a result, no model call
 * follows) and completes with that transcript. A run executing in another process is not reached.
 */
export const abort = Effect.fn("DurableAgent.abort")(function*(runId: string) {
  const listeners = yield* RunListeners
  listeners.get(runId)?.controller.abort()
})

/** A run of the store with its status. */
export interface RunSummary extends RunEntry {
  readonly status: RunStatus
}

/** The runs started through {@link run} in this store, newest first, with their status. */
export const list = Effect.fn("DurableAgent.list")(function*() {
  const entries = yield* (yield* RunIndex).list
  return yield* Effect.forEach(entries, (entry) =>
    Effect.map(status(entry.runId), (s): RunSummary => ({ ...entry, status: s })))
})
