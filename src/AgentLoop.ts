/**
 * The agent loop: turns of "stream a model response, run its tool batch", with steering messages read after
 * each whole batch and follow-up messages read when the agent would otherwise stop. The contract is
 * `docs/agent-loop.md`.
 *
 * Every run ends its event stream with exactly one `agent_end`; model, hook and subscriber failures end the
 * turn with an `error` assistant message instead of escaping; an abort ends it with an `aborted` one; and
 * every tool call in the returned messages has exactly one tool result after it.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type { AgentContext } from "./AgentContext.ts"
import type { AgentEvent } from "./AgentEvent.ts"
import type { AgentLoopConfig, ShouldStopAfterTurnContext } from "./AgentLoopConfig.ts"
import * as EventSink from "./EventSink.ts"
import { abortOnInterrupt } from "./internal/abort.ts"
import { EventIterator } from "./internal/eventIterator.ts"
import { eventStream } from "./internal/eventStream.ts"
import { Growing } from "./internal/growing.ts"
import {
  countFailures,
  countResponse,
  invalidLimitsMessage,
  LimitClock,
  limitNote,
  limitReached,
  limitsProblem,
  nothingUsed
} from "./internal/limits.ts"
import { streamAssistantResponse } from "./internal/modelCall.ts"
import { announce, append, appendAll, contextOf, isAborted, loopEmit, type Run } from "./internal/run.ts"
import { skipping } from "./internal/skip.ts"
import * as Telemetry from "./internal/telemetry.ts"
import type { Restore } from "./internal/uninterruptible.ts"
import {
  type AgentMessage,
  type AssistantMessage,
  isMessage,
  type Message,
  toolCallsOf,
  type ToolResultMessage
} from "./Message.ts"
import { Model, type ModelShape, type ToolSpec } from "./Model.ts"
import { executeToolCalls, type ToolBatchResult, type ToolExecutionOptions } from "./ToolExecution.ts"
import { ToolRegistry, type ToolRegistryShape } from "./ToolRegistry.ts"

export type { AgentLoopConfig, ShouldStopAfterTurnContext } from "./AgentLoopConfig.ts"

/** `continue` was asked of a transcript it cannot continue. */
export class CannotContinue extends Schema.TaggedError<CannotContinue>()("CannotContinue", {
  message: Schema.String
}) {}

/** The messages a model reads by default: user, assistant and tool results; application messages dropped (AL 1.2). */
export const defaultConvertToLlm = (messages: ReadonlyArray<AgentMessage>): ReadonlyArray<Message> =>
  messages.filter(isMessage)

/** The tools of a registry as the model sees them. */
const toolSpecs = (registry: ToolRegistryShape): ReadonlyArray<ToolSpec> =>
  registry.tools.map(({ tool }) => ({ name: tool.name, description: tool.description, parameters: tool.jsonSchema }))

const NOT_RUN_AFTER_LENGTH =
  "Tool call was not executed: the response hit the output token limit, so its arguments may be truncated."

// ---------------------------------------------------------------------------------------------------------
// One run
// ---------------------------------------------------------------------------------------------------------

/**
 * AL 2.5: the tool batch of a response (TE), or the settled-but-not-run results of a response that cannot
 * be trusted (AL 2.10, AL 3.3).
 */
const runToolBatch = <R>(
  run: Run<R>,
  message: AssistantMessage,
  systemPrompt: string
): Effect.Effect<ToolBatchResult, never, ToolRegistry | R> => {
  const skipReason = message.stopReason === "length"
    ? NOT_RUN_AFTER_LENGTH
    : message.stopReason === "error"
    ? "Tool call was not executed: the model response failed."
    : undefined
  // An aborted response's calls go through an aborted signal, so they settle as "not started".
  const signal = message.stopReason === "aborted" && !isAborted(run) ? AbortSignal.abort() : run.signal
  const { abandonAfter, afterToolCall, beforeToolCall, concurrency, timeout, toolExecution } = run.config
  const options: ToolExecutionOptions<R> = {
    toolExecution,
    concurrency,
    beforeToolCall,
    afterToolCall,
    timeout,
    abandonAfter,
    signal,
    context: contextOf(run, systemPrompt)
  }
  return Telemetry.inTurn(
    run.trace,
    executeToolCalls(message, skipReason === undefined ? options : skipping(options, skipReason))
  )
}

/** AL 2.6: `shouldStopAfterTurn`, with its failure treated as "stop". */
const stopAfterTurn = <R>(
  run: Run<R>,
  message: AssistantMessage,
  toolResults: ReadonlyArray<ToolResultMessage>,
  systemPrompt: string
): Effect.Effect<boolean, never, R> => {
  const hook = run.config.shouldStopAfterTurn
  if (hook === undefined) return Effect.succeed(false)
  const newMessages = run.newMessages.later()
  const context: ShouldStopAfterTurnContext = {
    message,
    toolResults,
    context: contextOf(run, systemPrompt),
    get newMessages() {
      return newMessages()
    }
  }
  return Effect.suspend(() => hook(context)).pipe(
    Effect.catchCause((cause) =>
      Effect.as(Effect.logWarning("effect-agent: shouldStopAfterTurn failed; stopping the run", cause), true)
    )
  )
}

/**
 * AL 2.3, AL 5: the turn's assistant message: the model's response, counted against the run's limits; or,
 * once the run has used what it may, no model call and a note that says why the run stops (AL 5.3).
 */
const respond = Effect.fnUntraced(function*<R>(run: Run<R>, systemPrompt: string) {
  const limits = run.config.limits
  if (limits === undefined) return yield* streamAssistantResponse(run, systemPrompt)
  if (run.limitsProblem !== undefined) {
    const refused = invalidLimitsMessage(run.model.info, run.limitsProblem, yield* Clock.currentTimeMillis)
    yield* announce(run, refused)
    return refused
  }
  const now = limits.maxDuration === undefined ? 0 : yield* yield* LimitClock
  const reached = limitReached(limits, run.used, now)
  if (reached === undefined) {
    const message = yield* streamAssistantResponse(run, systemPrompt)
    const failed = countResponse(run.used, limits, message)
    if (failed !== undefined) {
      yield* Effect.logWarning("effect-agent: costOf failed; the response counts as costing nothing", failed)
    }
    return message
  }
  run.limitReached = reached
  const note = limitNote(run.model.info, reached, yield* Clock.currentTimeMillis)
  yield* announce(run, note)
  return note
})

/** Reads a queue; a defect in it is logged and reads as empty, so the run still ends normally (AL 3.1). */
const poll = <R>(queue: Effect.Effect<ReadonlyArray<AgentMessage>, never, R> | undefined, name: string) =>
  queue === undefined
    ? Effect.succeed<ReadonlyArray<AgentMessage>>([])
    : queue.pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause)
          : Effect.as(Effect.logError(`effect-agent: ${name} failed; treating it as empty`, cause), [])
      )
    )

/** AL 2: the two nested loops (steering AL 2.6, follow-ups AL 2.7, termination AL 2.8). */
// The run's registry and sink are the ones in the context it runs in: the batch finds them there.
const runLoop = Effect.fnUntraced(function*<R>(run: Run<R>, systemPrompt: string) {
  let firstTurn = true
  // Built once per run, read once or twice per turn.
  const steering = poll(run.config.getSteeringMessages, "getSteeringMessages")
  const followUps = poll(run.config.getFollowUpMessages, "getFollowUpMessages")
  let pending = yield* steering
  while (true) {
    let moreToolCalls = true
    while (moreToolCalls || pending.length > 0) {
      if (firstTurn) firstTurn = false
      else yield* run.emit({ type: "turn_start" })
      Telemetry.turnStart(run.trace)
      for (const message of pending) {
        yield* announce(run, message)
        append(run, message)
      }
      pending = []

      const message = yield* respond(run, systemPrompt)
      append(run, message)
      const calls = toolCallsOf(message)
      const batch = calls.length > 0 ? yield* runToolBatch(run, message, systemPrompt) : undefined
      const toolResults = batch?.messages ?? []
      appendAll(run, toolResults)
      if (batch !== undefined && run.config.limits !== undefined) countFailures(run.used, message, toolResults)
      yield* run.emit({ type: "turn_end", message, toolResults })
      Telemetry.turnEnd(run.trace, message, toolResults)

      if (
        run.limitReached !== undefined || message.stopReason === "error" || message.stopReason === "aborted" ||
        batch?.aborted || isAborted(run)
      ) {
        return
      }
      // A terminating batch ends the inner loop; a length stop goes on so the model can retry.
      moreToolCalls = batch !== undefined && !batch.terminate
      if (
        run.config.shouldStopAfterTurn !== undefined && (yield* stopAfterTurn(run, message, toolResults, systemPrompt))
      ) {
        return
      }
      pending = yield* steering
    }
    pending = yield* followUps
    if (pending.length === 0) return
  }
})

/**
 * AL 2.1, AL 3.1: runs the loop to its `agent_end`. Interrupting this fiber is turned into an abort of the
 * run's signal (AL 3.4), so an interrupted run settles exactly like an aborted one (balanced events, results
 * for every tool call, AL 3.5).
 */
const startRun = <R>(
  context: AgentContext,
  config: AgentLoopConfig<R>,
  prompts: ReadonlyArray<AgentMessage>
): Effect.Effect<ReadonlyArray<AgentMessage>, never, Model | ToolRegistry | R> =>
  Effect.uninterruptibleMask((restore) => runMasked(context, config, prompts, restore))

const runMasked = Effect.fnUntraced(function*<R>(
  context: AgentContext,
  config: AgentLoopConfig<R>,
  prompts: ReadonlyArray<AgentMessage>,
  restore: Restore
) {
  // The run's signal fires on an interruption or when the caller's signal does (forwarded by a listener
  // removed when the run ends: `AbortSignal.any` costs several microseconds and weak references per run).
  const interrupted = new AbortController()
  const outer = config.signal
  const forward = outer === undefined ? undefined : () => interrupted.abort(outer.reason)
  if (outer !== undefined) {
    if (outer.aborted) interrupted.abort(outer.reason)
    else outer.addEventListener("abort", forward!, { once: true })
  }
  const signal = interrupted.signal
  const sink = yield* EventSink.EventSink
  const registry = yield* ToolRegistry
  const trace = yield* Telemetry.runTrace
  // AL 5.6: limits that are wrong are found here, once; the run's first turn then says so.
  const problem = config.limits === undefined ? undefined : limitsProblem(config.limits)
  // AL 5: wall time counts from here; the clock is read only for a run that has a wall-time limit.
  const startedAt = config.limits?.maxDuration === undefined || problem !== undefined
    ? 0
    : yield* yield* LimitClock
  const run = makeRun(
    config,
    Telemetry.observeModel(trace, yield* Model),
    registry,
    loopEmit(sink),
    signal,
    new Growing(context.messages),
    trace,
    startedAt,
    problem
  )
  for (const message of context.messages) if (!isMessage(message)) run.dropped++
  for (const prompt of prompts) append(run, prompt)
  const body = runBody(run, prompts, context.systemPrompt)
  const work = abortOnInterrupt(Telemetry.invokeAgent(trace, run.model.info, body), interrupted, restore)
  yield* forward === undefined
    ? work
    : Effect.ensuring(work, Effect.sync(() => outer!.removeEventListener("abort", forward)))
  return run.newMessages.snapshot()
})

/** A run's state. */
function makeRun<R>(
  config: AgentLoopConfig<R>,
  model: ModelShape,
  registry: ToolRegistryShape,
  emit: (event: AgentEvent) => Effect.Effect<void>,
  signal: AbortSignal,
  transcript: Growing<AgentMessage>,
  trace: Telemetry.RunTrace | undefined,
  startedAt: number,
  limitsProblem: string | undefined
): Run<R> {
  return {
    config,
    model,
    registry,
    tools: toolSpecs(registry),
    emit,
    signal,
    transcript,
    dropped: 0,
    newMessages: new Growing(),
    trace,
    used: nothingUsed(startedAt),
    limitsProblem,
    limitReached: undefined
  }
}

const runBody = Effect.fnUntraced(function*<R>(
  run: Run<R>,
  prompts: ReadonlyArray<AgentMessage>,
  systemPrompt: string
) {
  yield* run.emit({ type: "agent_start" })
  yield* run.emit({ type: "turn_start" })
  for (const prompt of prompts) yield* announce(run, prompt)
  // Nothing inside the loop fails by design; a defect anyway (a bug, a throwing hook) still ends the run.
  const loop = yield* Effect.exit(runLoop(run, systemPrompt))
  if (Exit.isFailure(loop) && !Cause.hasInterruptsOnly(loop.cause)) {
    yield* Effect.logError("effect-agent: the agent loop died", loop.cause)
  }
  const messages = run.newMessages.snapshot()
  const { limitReached } = run
  yield* run.emit(
    limitReached === undefined ? { type: "agent_end", messages } : { type: "agent_end", messages, limitReached }
  )
})

// ---------------------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------------------

/**
 * Runs the loop from new prompt messages, emitting events to the {@link EventSink.EventSink} in the
 * context, and returns the messages the run added (the prompts included). Never fails: every failure is
 * inside the transcript. The caller's context is not mutated.
 */
export const runAgentLoop = <R = never>(
  prompts: ReadonlyArray<AgentMessage>,
  context: AgentContext,
  config: AgentLoopConfig<R> = {}
): Effect.Effect<ReadonlyArray<AgentMessage>, never, Model | ToolRegistry | R> => startRun(context, config, prompts)

/**
 * AL 2.11: continues the loop from the current transcript without a new message (a retry, or after tool
 * results). Fails with {@link CannotContinue} when there is nothing to continue or the last message is the assistant's.
 */
export const runAgentLoopContinue = <R = never>(
  context: AgentContext,
  config: AgentLoopConfig<R> = {}
): Effect.Effect<ReadonlyArray<AgentMessage>, CannotContinue, Model | ToolRegistry | R> => {
  const last = context.messages.at(-1)
  if (last === undefined) return Effect.fail(new CannotContinue({ message: "Cannot continue: no messages in context" }))
  if (last.role === "assistant") {
    return Effect.fail(new CannotContinue({ message: "Cannot continue from message role: assistant" }))
  }
  return startRun(context, config, [])
}

/**
 * The events of a run from new prompts, as a Stream that ends after `agent_end` (whose `messages` are the
 * run's new messages). Stopping the stream early interrupts the run.
 */
export const agentLoop = <R = never>(
  prompts: ReadonlyArray<AgentMessage>,
  context: AgentContext,
  config: AgentLoopConfig<R> = {}
): Stream.Stream<AgentEvent, never, Model | ToolRegistry | R> => eventStream(runAgentLoop(prompts, context, config))

/** The events of a continued run, as a Stream; see {@link runAgentLoopContinue}. */
export const agentLoopContinue = <R = never>(
  context: AgentContext,
  config: AgentLoopConfig<R> = {}
): Stream.Stream<AgentEvent, CannotContinue, Model | ToolRegistry | R> =>
  eventStream(runAgentLoopContinue(context, config))

/** The messages a finished run added, read from its `agent_end` event. @internal */
export const newMessagesOf = (events: ReadonlyArray<AgentEvent>): Option.Option<ReadonlyArray<AgentMessage>> => {
  const end = events.findLast((event) => event.type === "agent_end")
  return end === undefined ? Option.none() : Option.some(end.messages as ReadonlyArray<AgentMessage>)
}

// ---------------------------------------------------------------------------------------------------------
// For callers outside Effect
// ---------------------------------------------------------------------------------------------------------

/** The services a run needs, as a layer built per run by the adapters below. */
type RunLayer = Layer.Layer<Model | ToolRegistry, unknown>

/**
 * The events of a run as an `AsyncIterable`, for code without Effect (AL 3.7). The layer (model and tools) is built
 * for the run; breaking out of the loop (or a throw in its body) aborts the run, which still settles.
 */
export const agentLoopAsyncIterable = (
  prompts: ReadonlyArray<AgentMessage>,
  context: AgentContext,
  config: AgentLoopConfig,
  layer: RunLayer
): AsyncIterable<AgentEvent> => ({
  [Symbol.asyncIterator]: () =>
    new EventIterator((sink) =>
      runAgentLoop(prompts, context, config).pipe(
        Effect.provideService(EventSink.EventSink, sink),
        Effect.provide(layer)
      )
    )
})

/**
 * A run as a Promise of the messages it added, for code without Effect; events go to `onEvent` (awaited
 * in order; AL 3.7). Aborting `config.signal` aborts the run, which still resolves with a well-formed transcript.
 * Rejects only if the layer cannot be built.
 */
export const runAgentLoopPromise = (
  prompts: ReadonlyArray<AgentMessage>,
  context: AgentContext,
  config: AgentLoopConfig,
  layer: RunLayer,
  onEvent?: (event: AgentEvent) => void | Promise<void>
): Promise<ReadonlyArray<AgentMessage>> =>
  Effect.runPromise(
    runAgentLoop(prompts, context, config).pipe(
      Effect.provideService(EventSink.EventSink, {
        emit: (event) => onEvent === undefined ? Effect.void : Effect.promise(async () => await onEvent(event))
      }),
      Effect.provide(layer)
    )
  )
