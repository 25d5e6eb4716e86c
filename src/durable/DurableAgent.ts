/**
 * Durable agent runs: the loop of `AgentLoop.ts` run as an `effect/workflow` Workflow whose steps are
 * Activities, so a run survives the death of its process and a resume continues it without repeating
 * finished work. The contract is docs/durability.md (DR n.m).
 *
 * - Each model response is one activity (`model/<n>`): a stored response is replayed, never requested
 *   again (DR 1.1).
 * - Each tool call is one activity (`tool/<n>/<call id>`), run by the loop's own batch (so a parallel batch
 *   is still one `Effect.forEach` with its concurrency): a stored result is replayed, never run again (DR 1.2).
 * - A tool call that was running when the process died is run again only if its tool is idempotent; any
 *   other is settled with an error result saying it was interrupted by a crash (DR 2.1).
 * - `beforeToolCall` (approvals) is an activity too (`approve/<n>/<call id>`): a decision a person made is
 *   stored and not asked for again (DR 2.3).
 * - Steering, follow-ups and aborts from outside are durable deferreds of the run (DR 3).
 * - Results are stored with a faithful codec: what a replay gives back is what the live run had (DR 4).
 *
 * The loop itself is unchanged: the durable run hands it a `Model` and a `ToolRegistry` whose calls go
 * through activities, so a run without a crash emits the events of the in-memory loop, in the same order.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Activity from "effect/workflow/Activity"
import * as DurableDeferred from "effect/workflow/DurableDeferred"
import * as Workflow from "effect/workflow/Workflow"
import * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import type { AgentEvent } from "../AgentEvent.ts"
import { type AgentLoopConfig, runAgentLoop } from "../AgentLoop.ts"
import type { AssistantMessageEvent } from "../AssistantMessageEvent.ts"
import * as EventSink from "../EventSink.ts"
import { interruptOnAbort } from "../internal/abort.ts"
import { causeMessage } from "../internal/errorText.ts"
import { LimitClock } from "../internal/limits.ts"
import { type AgentMessage, type AssistantMessage, isMessage, type Message } from "../Message.ts"
import { Model, type ModelShape } from "../Model.ts"
import { type Handler, type Tool, type ToolContext, type ToolResult, withResources } from "../Tool.ts"
import { type BeforeToolCallContext, ToolErrorResult } from "../ToolExecution.ts"
import { type RegisteredTool, ToolRegistry, type ToolRegistryShape } from "../ToolRegistry.ts"
import { encodeStored, Stored } from "./internal/stored.ts"
import { type RunEntry, RunIndex, StartLedger } from "./RunState.ts"
import { ToolAttempt } from "./ToolAttempt.ts"

/** The built-in tools that only read: running one again after a crash does no harm (DR 2.1). */
const DEFAULT_IDEMPOTENT_TOOLS: ReadonlyArray<string> = ["read", "ls", "find", "grep"]

/** The text a non-idempotent call gets when the process died while it was running (DR 2.1). @internal */
export const crashedCallText = (toolName: string): string =>
  `Tool ${toolName} was interrupted by a crash after it started; it may have had side effects. It was not run again.`

/** The text a call stopped by an abort is stored with (the batch reports the same). */
const abortedCallText = (toolName: string): string =>
  `Tool ${toolName} was interrupted after it started: the run was aborted. It may have had side effects.`

/** The text of a call the abort reached before its tool started (the batch's own text for such a call). */
const notStartedText = (toolName: string): string =>
  `Tool ${toolName} was not executed: the run was aborted before it started.`

/** The text the batch gives a call that timed out; a durable run stores and replays it (DR 4.2). */
const timedOutText = (toolName: string, timeout: Duration.Duration, abandoned: boolean) =>
  `Tool ${toolName} timed out after ${Duration.format(timeout)}${
    abandoned ? " and was abandoned: it did not stop when cancelled" : ""
  }`

/**
 * The durable run workflow. The execution id is derived from the run id alone, so executing the same run id
 * again joins the existing run (its stored payload wins) instead of starting a second one. The transcript
 * it returns is stored with the faithful codec (DR 4.1). {@link layer} registers it.
 *
 * @internal
 */
export const AgentRun = Workflow.make("effect-agent/AgentRun", {
  payload: {
    runId: Schema.String,
    systemPrompt: Schema.String,
    /** The transcript before the run. */
    history: Schema.Array(Stored),
    /** The new messages that start the run. */
    prompts: Schema.Array(Stored)
  },
  success: Schema.Array(Stored),
  idempotencyKey: ({ runId }) => runId
})

/** Which queue of a run a message from outside goes to. */
type InboxKind = "steer" | "followUp"

/**
 * Slot `n` of a run's steering or follow-up queue: a durable deferred of the run, completed by the sender
 * (DR 3.1). The first completion of a slot wins; the sender's `id` tells it whether it won the slot.
 */
const inboxSlot = (kind: InboxKind, n: number) =>
  DurableDeferred.make(`inbox/${kind}/${n}`, {
    success: Schema.Struct({ id: Schema.String, message: Stored })
  })

/** The run's abort request: a durable deferred completed by {@link abort} (DR 3.2). */
const AbortRequest = DurableDeferred.make("effect-agent/abort")

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
   * How often a running run reads its abort request from the store, so an {@link abort} sent by another
   * process reaches it (DR 3.2). Default 250 ms. An abort sent in this process is seen at once.
   */
  readonly abortPollInterval?: Duration.Input | undefined
  /**
   * Where the events of an execution go while nobody in this process listens to the run (see {@link run}):
   * e.g. a server that stores them for clients on other processes. Called once at the start of each execution
   * of a run (a resume after a crash is a new execution). Default: such events are dropped.
   */
  readonly eventSink?: ((runId: string) => EventSink.EventSinkShape) | undefined
}

/** What this process holds for a run it is executing or listening to. */
interface RunHandle {
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
  partial: Schema.optionalKey(Stored),
  final: Schema.optionalKey(Stored),
  failure: Schema.optionalKey(Schema.String)
})
type ModelOutcome = typeof ModelOutcome.Type

/**
 * A finished tool or hook step: its value; the text of its failure; or an exact error result (a timeout,
 * DR 4.2). Values go through the faithful codec (DR 4.1).
 */
const StepOutcome = Schema.Union([
  Schema.Struct({ _tag: Schema.Literal("ok"), value: Stored }),
  Schema.Struct({ _tag: Schema.Literal("failed"), message: Schema.String }),
  Schema.Struct({ _tag: Schema.Literal("errorResult"), result: Stored })
])
type StepOutcome = typeof StepOutcome.Type

/** A failure whose text is exactly the stored text: the batch and the loop read failures by their message. */
const replayFailure = (message: string) => Effect.fail(new Error(message))

/**
 * The value as a step outcome. A value the store cannot hold (a class instance, a function, a cycle)
 * becomes a failure saying so, rather than a run that cannot be stored.
 */
const storable = (value: unknown): Effect.Effect<StepOutcome> =>
  Effect.match(encodeStored(value), {
    onSuccess: (): StepOutcome => ({ _tag: "ok", value }),
    onFailure: (issue): StepOutcome => ({
      _tag: "failed",
      message: `The result cannot be stored in the run: ${String(issue)}`
    })
  })

/** Runs `effect` and turns its result or failure into a storable outcome; an interruption stays one. */
const toOutcome = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<StepOutcome, never, R> =>
  Effect.matchCauseEffect(effect, {
    onSuccess: storable,
    onFailure: (cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.succeed<StepOutcome>({ _tag: "failed", message: causeMessage(cause) })
  })

const fromOutcome = (outcome: StepOutcome): Effect.Effect<unknown, Error> => {
  switch (outcome._tag) {
    case "ok":
      return Effect.succeed(outcome.value)
    case "failed":
      return replayFailure(outcome.message)
    case "errorResult":
      return Effect.fail(new ToolErrorResult(outcome.result as ToolResult))
  }
}

/** The state of one execution of the workflow body (a replay starts a fresh one). */
interface Execution {
  readonly runId: string
  readonly services: Context.Context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance>
  readonly ledger: StartLedger["Service"]
  /**
   * The run's abort signal in this process. Steps watch it themselves, so a step stops at the abort even
   * where the interruption of the fiber waiting for it does not reach the step, and an aborted step is
   * stored with the aborted text instead of ending as an interruption (which an Activity retries).
   */
  readonly signal: AbortSignal
  readonly abort: () => void
  readonly idempotent: (tool: Tool.Any) => boolean
  /** Per tool name: the timeout the batch would apply, applied inside the step instead (DR 4.2). */
  readonly timeoutOf: (tool: Tool.Any) => Duration.Duration | undefined
  readonly grace: Duration.Duration
  /** How many model steps this execution has asked for; names the next one. */
  modelSteps: number
  /** How many inbox reads this execution has made; names the next one. */
  inboxReads: number
  /** How many readings of the limits' clock this execution has made; names the next one (AL 5.5). */
  clockReads: number
  /** Per queue, how many slots this run has taken (rebuilt by replay from the stored reads). */
  readonly cursors: Record<InboxKind, number>
  /** How many steps of this execution ran live (not replayed): an abort is applied from the first (DR 3.2). */
  liveSteps: number
  /** Whether this execution has read a stored abort request (DR 3.2). */
  abortSeen: boolean
}

const inWorkflow = <A, E>(execution: Execution, effect: Effect.Effect<A, E, any>): Effect.Effect<A, E> =>
  Effect.provideContext(effect, execution.services) as Effect.Effect<A, E>

/**
 * AL 5.5: the clock a run's wall-time limit reads, as steps: a replay reads what the first execution read,
 * so it stops where that one would have, and time counts from the run's first start across crashes.
 */
const durableClock = (execution: Execution): Effect.Effect<number> =>
  Effect.suspend(() =>
    inWorkflow(
      execution,
      Activity.make({
        name: `clock/${execution.clockReads++}`,
        success: Schema.Number,
        execute: Clock.currentTimeMillis
      })
    )
  )

/** Whether an abort of the run is stored (DR 3.2). */
const abortRequested = (execution: Execution): Effect.Effect<boolean> =>
  inWorkflow(
    execution,
    Effect.flatMap(WorkflowEngine.WorkflowEngine, (engine) => engine.deferredResult(AbortRequest)).pipe(
      Effect.map(Option.isSome)
    )
  )

/**
 * Called first by every step that runs live. Returns whether an abort request was read before (when the
 * execution started, or by the watcher during a replay) and not applied yet: the step then stores its
 * aborted outcome without doing anything; a model step then aborts the run once it has returned
 * ({@link applyAbort}), so the loop settles it with the stored outcome and asks for nothing more. A run
 * aborted while no process ran it thus stops at its first live step; replayed steps are untouched. No read
 * of its own: a step costs no extra query.
 */
const startLive = (execution: Execution): Effect.Effect<boolean> =>
  Effect.sync(() => {
    execution.liveSteps++
    return execution.abortSeen && !execution.signal.aborted
  })

/** Aborts the run after a step returned, if an abort request was read and a step ran live (DR 3.2). */
const applyAbort = (execution: Execution): Effect.Effect<void> =>
  Effect.sync(() => {
    if (execution.abortSeen && execution.liveSteps > 0 && !execution.signal.aborted) execution.abort()
  })

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
          const streamed = model.stream(request).pipe(
            Stream.takeUntil((event) => event.type === "done" || event.type === "error"),
            Stream.runForEach((event) =>
              Effect.sync(() => {
                if (event.type === "done" || event.type === "error") final = event
                else partial = event.partial
                Queue.offerUnsafe(queue, event)
              })
            ),
            (streaming) => interruptOnAbort(streaming, execution.signal)
          )
          return startLive(execution).pipe(
            Effect.flatMap((abortNow) => abortNow ? Effect.fail(new Error("Request was aborted")) : streamed),
            Effect.matchCauseEffect({
              onSuccess: (): Effect.Effect<ModelOutcome> =>
                Effect.succeed({ ...(partial ? { partial } : {}), ...(final ? { final } : {}) }),
              onFailure: (cause): Effect.Effect<ModelOutcome> =>
                Cause.hasInterruptsOnly(cause) && !execution.signal.aborted
                  ? Effect.failCause(cause as Cause.Cause<never>)
                  : Effect.succeed({
                    ...(partial ? { partial } : {}),
                    failure: execution.signal.aborted || execution.abortSeen
                      ? "Request was aborted"
                      : causeMessage(cause)
                  })
            })
          )
        })
        const outcome = yield* inWorkflow(
          execution,
          Activity.make({ name: `model/${step}`, success: ModelOutcome, execute })
        )
        yield* applyAbort(execution)
        if (!live) {
          const final = outcome.final as AssistantMessageEvent | undefined
          const start = (outcome.partial as AssistantMessage | undefined) ??
            (final?.type === "done" ? final.message : final?.type === "error" ? final.error : undefined)
          if (start !== undefined) Queue.offerUnsafe(queue, { type: "start", partial: start })
          if (final !== undefined) Queue.offerUnsafe(queue, final)
        }
        if (outcome.failure !== undefined) return yield* Effect.die(new Error(outcome.failure))
        yield* Queue.end(queue)
      })
    )
})

/**
 * Runs a tool handler with the timeout the batch would have applied (DR 4.2): on expiry the tool's signal
 * is aborted and its fiber interrupted, waiting at most the grace period, and the outcome is the batch's
 * own timeout result, stored like any other.
 */
const withTimeout = (
  execution: Execution,
  tool: Tool.Any,
  context: ToolContext,
  run: Effect.Effect<StepOutcome>
): Effect.Effect<StepOutcome> => {
  const timeout = execution.timeoutOf(tool)
  if (timeout === undefined) return run
  return Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      Effect.forkChild(restore(run), { startImmediately: true }),
      (fiber) =>
        restore(Effect.timeoutOption(Fiber.join(fiber), timeout)).pipe(
          Effect.onInterrupt(() => Fiber.interrupt(fiber)),
          Effect.flatMap((done) =>
            Option.isSome(done) ? Effect.succeed(done.value) : Effect.gen(function*() {
              ;(context as { abort?: () => void }).abort?.()
              const stopped = yield* Effect.timeoutOption(Effect.interruptible(Fiber.interrupt(fiber)), execution.grace)
              const abandoned = Option.isNone(stopped)
              return {
                _tag: "errorResult",
                result: {
                  content: [{ type: "text", text: timedOutText(tool.name, timeout, abandoned) }],
                  details: { timedOut: true, abandoned }
                }
              } as const
            })
          )
        )
    )
  )
}

/** One tool call as an activity, with the crash rule for a call that was running when the process died. */
const durableHandler =
  (execution: Execution, tool: Tool.Any, handler: Handler<any, any>): Handler<any, any> =>
  (args: unknown, context: ToolContext) => {
    const turn = execution.modelSteps
    const name = `tool/${turn}/${context.toolCallId}`
    const execute = Effect.gen(function*() {
      const abortNow = yield* startLive(execution)
      // DR 2.1: the start is committed before the tool runs, so a second start means the first one died.
      const attempt = yield* execution.ledger.start(execution.runId, name)
      if (attempt > 1 && !execution.idempotent(tool)) {
        return { _tag: "failed", message: crashedCallText(tool.name) } as const
      }
      // Aborted before this step began (DR 3.2): the tool is not started, as the batch says of such a call.
      if (abortNow || execution.signal.aborted) return { _tag: "failed", message: notStartedText(tool.name) } as const
      const ran = Effect.suspend(() => handler(args, context)).pipe(
        Effect.provideService(ToolAttempt, { idempotencyKey: `${execution.runId}/${context.toolCallId}`, attempt })
      )
      return yield* withTimeout(execution, tool, context, toOutcome(interruptOnAbort(ran, execution.signal))).pipe(
        Effect.catchCause((cause) =>
          execution.signal.aborted
            ? Effect.succeed<StepOutcome>({ _tag: "failed", message: abortedCallText(tool.name) })
            : Effect.failCause(cause)
        )
      )
    })
    // No abort is applied here: the batch would take it for an abort of this running call. The next model
    // step applies it (DR 3.2).
    return Effect.flatMap(
      inWorkflow(execution, Activity.make({ name, success: StepOutcome, execute })),
      fromOutcome
    ) as Effect.Effect<ToolResult, unknown>
  }

/** The registry the loop sees: each call an activity; timeouts applied inside the activity (DR 4.2). */
const durableRegistry = (execution: Execution, registry: ToolRegistryShape): ToolRegistryShape => {
  const tools = registry.tools.map(({ handler, tool }): RegisteredTool => ({
    tool: tool.timeout === undefined ? tool : { ...tool, timeout: undefined },
    // TE 11: the batch schedules a durable call by what the tool declared.
    handler: withResources(durableHandler(execution, tool, handler), handler.resources)
  }))
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
        execute: Effect.andThen(startLive(execution), toOutcome(Effect.suspend(() => before(context))))
      })
    ),
    fromOutcome
  ) as ReturnType<typeof before>

/**
 * A read of a run's queue as an activity (DR 3.1): it takes the completed slots from the run's cursor on,
 * and what it took is stored, so a replay takes the same messages at the same point and a message sent
 * later waits for the next read.
 */
const inboxRead = (execution: Execution, kind: InboxKind): Effect.Effect<ReadonlyArray<AgentMessage>> =>
  Effect.suspend(() => {
    const name = `inbox/${execution.inboxReads++}/${kind}`
    const from = execution.cursors[kind]
    const take = Effect.gen(function*() {
      const engine = yield* WorkflowEngine.WorkflowEngine
      const taken: Array<unknown> = []
      while (true) {
        const slot = yield* engine.deferredResult(inboxSlot(kind, from + taken.length))
        if (Option.isNone(slot) || Exit.isFailure(slot.value)) break
        taken.push(slot.value.value.message)
      }
      return taken
    })
    return inWorkflow(
      execution,
      Activity.make({ name, success: Schema.Array(Stored), execute: take })
    ).pipe(
      Effect.map((messages) => {
        execution.cursors[kind] = from + messages.length
        return messages as ReadonlyArray<AgentMessage>
      })
    )
  })

/**
 * Reads the run's abort request every `interval` until it is there (DR 3.2), then aborts the run at once if
 * a step already ran live, else at its first live step (see {@link startLive}).
 */
const watchAbort = (execution: Execution, interval: Duration.Input): Effect.Effect<void> =>
  Effect.gen(function*() {
    while (!execution.signal.aborted && !execution.abortSeen) {
      yield* Effect.sleep(interval)
      if (yield* abortRequested(execution)) {
        execution.abortSeen = true
        if (execution.liveSteps > 0) execution.abort()
      }
    }
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
  | Exclude<R, WorkflowEngine.WorkflowInstance>
> => {
  const idempotentNames = new Set(config.idempotentTools ?? DEFAULT_IDEMPOTENT_TOOLS)
  const idempotent = (tool: Tool.Any) =>
    idempotentNames.has(tool.name) || (tool as { readonly idempotent?: unknown }).idempotent === true
  const { abortPollInterval, idempotentTools: _, inbox: readInbox, eventSink, ...loopConfig } = config
  const defaultTimeout = loopConfig.timeout === undefined ? undefined : Duration.fromInputUnsafe(loopConfig.timeout)
  const timeoutOf = (tool: Tool.Any) =>
    tool.timeout === undefined ? defaultTimeout : Duration.fromInputUnsafe(tool.timeout)
  const grace = Duration.fromInputUnsafe(loopConfig.abandonAfter ?? "2 seconds")
  const workflow = AgentRun.toLayer(Effect.fnUntraced(function*(payload) {
    const model = yield* Model
    const registry = yield* ToolRegistry
    const listeners = yield* RunListeners
    const handle = handleOf(listeners, payload.runId)
    // An abort ends one execution; a later resume of the run starts unaborted (a stored abort applies again).
    if (handle.controller.signal.aborted) handle.controller = new AbortController()
    const controller = handle.controller
    handle.executing = true
    const execution: Execution = {
      runId: payload.runId,
      services: yield* Effect.context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance>(),
      ledger: yield* StartLedger,
      signal: controller.signal,
      abort: () => controller.abort(),
      idempotent,
      timeoutOf,
      grace,
      modelSteps: 0,
      inboxReads: 0,
      clockReads: 0,
      cursors: { steer: 0, followUp: 0 },
      liveSteps: 0,
      abortSeen: false
    }
    execution.abortSeen = yield* abortRequested(execution)
    // Looked up per event: a process that attaches to a resumed run gets the events from then on.
    const fallback = eventSink?.(payload.runId)
    const sink: EventSink.EventSinkShape = {
      emit: (event: AgentEvent) => handle.sink?.emit(event) ?? fallback?.emit(event) ?? Effect.void
    }
    const before = loopConfig.beforeToolCall
    const loop = runAgentLoop(
      payload.prompts as ReadonlyArray<AgentMessage>,
      { systemPrompt: payload.systemPrompt, messages: payload.history as ReadonlyArray<AgentMessage> },
      {
        ...loopConfig,
        // Applied inside each tool step instead, so a timeout is stored as one (DR 4.2).
        timeout: undefined,
        signal: controller.signal,
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
      Effect.provideService(LimitClock, durableClock(execution)),
      Effect.provideService(ToolRegistry, durableRegistry(execution, registry)),
      Effect.provideService(EventSink.EventSink, sink)
    )
    const messages = yield* Effect.raceFirst(
      loop,
      Effect.andThen(watchAbort(execution, abortPollInterval ?? "250 millis"), Effect.never)
    ).pipe(
      Effect.ensuring(Effect.sync(() => {
        handle.executing = false
        release(listeners, payload.runId, handle)
      }))
    )
    return messages.filter(isMessage) as Array<unknown>
  }))
  return Layer.provideMerge(workflow, RunListeners.layer) as any
}

/** What a durable run ended with. */
export interface DurableRunResult {
  readonly runId: string
  /** The messages the run added, prompts included. */
  readonly messages: ReadonlyArray<Message>
}

/** A new run id: sortable by start time, unique without coordination. @internal */
export const newRunId = (): string => `run-${Date.now().toString(36)}-${crypto.randomUUID().slice(0, 8)}`

const executionIdOf = (runId: string) => AgentRun.executionId({ runId, systemPrompt: "", history: [], prompts: [] })

/**
 * Starts a durable run (or joins the run with this id if it exists) and waits for its end, sending its
 * events to the `EventSink` in context while this fiber waits.
 */
export const run = Effect.fn("DurableAgent.run")(function*(options: {
  readonly runId?: string | undefined
  readonly systemPrompt?: string | undefined
  readonly history?: ReadonlyArray<AgentMessage> | undefined
  readonly prompts: ReadonlyArray<AgentMessage>
}) {
  const runId = options.runId ?? newRunId()
  const listeners = yield* RunListeners
  const sink = yield* EventSink.EventSink
  if (options.prompts.length > 0) {
    const first = options.prompts[0]! as { readonly content?: unknown }
    const text = typeof first.content === "string"
      ? first.content
      : Array.isArray(first.content)
      ? first.content.map((c: { type?: string; text?: string }) => (c.type === "text" ? c.text : "")).join(" ")
      : ""
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
  ).pipe(Effect.map((messages): DurableRunResult => ({ runId, messages: messages as ReadonlyArray<Message> })))
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
  const result = yield* AgentRun.poll(yield* executionIdOf(runId))
  if (Option.isNone(result)) return "pending" as RunStatus
  const value = result.value
  if (value._tag === "Suspended") return "suspended" as RunStatus
  return (Exit.isSuccess(value.exit) ? "completed" : "failed") as RunStatus
})

/**
 * Sends `message` to slot after slot of the run's queue until it holds one (DR 3.1). The slots are durable
 * deferreds of the run: the message is in the store when this returns, whether or not a process runs the
 * run, and concurrent senders never share a slot (the first completion of a slot wins and each sender
 * checks it won).
 */
const send = Effect.fnUntraced(function*(runId: string, kind: InboxKind, message: AgentMessage) {
  const engine = yield* WorkflowEngine.WorkflowEngine
  const executionId = yield* executionIdOf(runId)
  const instance = WorkflowEngine.WorkflowInstance.initial(AgentRun, executionId)
  const id = crypto.randomUUID()
  for (let n = 0;; n++) {
    const slot = inboxSlot(kind, n)
    const read = Effect.provideService(engine.deferredResult(slot), WorkflowEngine.WorkflowInstance, instance)
    let held = yield* read
    if (Option.isNone(held)) {
      yield* DurableDeferred.succeed(slot, {
        token: DurableDeferred.tokenFromExecutionId(slot, { workflow: AgentRun, executionId }),
        value: { id, message }
      })
      held = yield* read
    }
    if (Option.isSome(held) && Exit.isSuccess(held.value) && held.value.value.id === id) return
  }
})

/**
 * Queues a steering message for a run: it is read after the current batch (runs with `inbox: true`). It is
 * stored at once, so a message sent while no process runs the run is read when the run resumes (DR 3.1).
 */
export const steer = Effect.fn("DurableAgent.steer")(function*(runId: string, message: AgentMessage) {
  yield* send(runId, "steer", message)
})

/** Queues a follow-up message for a run: it is read when the run would otherwise stop (runs with `inbox: true`). */
export const followUp = Effect.fn("DurableAgent.followUp")(function*(runId: string, message: AgentMessage) {
  yield* send(runId, "followUp", message)
})

/**
 * Aborts a run wherever it executes (DR 3.2): the abort request is stored as the run's durable deferred,
 * which the executing process reads within `abortPollInterval` (at once when it is this process). The run
 * settles like an aborted in-memory run (the current response ends `aborted`, every started call gets a
 * result, no model call follows) and completes with that transcript. A run no process executes now stops
 * at its first live step when it resumes.
 */
export const abort = Effect.fn("DurableAgent.abort")(function*(runId: string) {
  const executionId = yield* executionIdOf(runId)
  yield* DurableDeferred.done(AbortRequest, {
    token: DurableDeferred.tokenFromExecutionId(AbortRequest, { workflow: AgentRun, executionId }),
    exit: Exit.void
  })
  const listeners = yield* Effect.serviceOption(RunListeners)
  if (Option.isSome(listeners)) listeners.value.get(runId)?.controller.abort()
})

/** A run of the store with its status. */
export interface RunSummary extends RunEntry {
  readonly status: RunStatus
}

/** The runs started through {@link run} in this store, newest first, with their status. */
export const list = Effect.fn("DurableAgent.list")(function*() {
  const entries = yield* (yield* RunIndex).list
  return yield* Effect.forEach(
    entries,
    (entry) => Effect.map(status(entry.runId), (s): RunSummary => ({ ...entry, status: s }))
  )
})
