/**
 * Running the tool calls of one assistant message: five phases per call (prepare, execute, finalize, emit
 * end, create the tool-result message), in sequential or parallel mode, with abort, timeouts and faults
 * handled so that every call ends with exactly one end event and one result message.
 *
 * The contract is `docs/tool-execution.md`; each phase below cites its rules. How a batch stops is
 * `internal/supervise.ts`.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Stream from "effect/Stream"
import type { ToolExecutionEvent } from "./AgentEvent.ts"
import type { ImmediateOutcome } from "./ImmediateOutcome.ts"
import {
  atomically,
  type Batch,
  breather,
  chooseMode,
  isStopping,
  makeBatch,
  type Prepared,
  traced
} from "./internal/batch.ts"
import { CallContext } from "./internal/callContext.ts"
import * as State from "./internal/callState.ts"
import { type Call, errorResult, type Finalized, resultOf } from "./internal/callState.ts"
import { callUser, completed } from "./internal/eager.ts"
import type { Emitter } from "./internal/emitter.ts"
import { causeMessage } from "./internal/errorText.ts"
import { eventStream } from "./internal/eventStream.ts"
import * as Outcome from "./internal/outcomes.ts"
import { inTurns, resourcesOf } from "./internal/schedule.ts"
import {
  abandonBusy,
  runApart,
  runHere,
  settleRemaining,
  stopCall,
  supervise,
  TimedOut,
  wasInterrupted
} from "./internal/supervise.ts"
import * as Telemetry from "./internal/telemetry.ts"
import { applyOverride, executedResult } from "./internal/toolResult.ts"
import type { Restore } from "./internal/uninterruptible.ts"
import { validatedArguments } from "./internal/validation.ts"
import type { AssistantMessage, ToolResultMessage } from "./Message.ts"
import { toolCallsOf } from "./Message.ts"
import type { ExecutionMode } from "./Tool.ts"
import type { ToolBatchResult, ToolExecutionOptions } from "./ToolBatch.ts"
import { ToolRegistry } from "./ToolRegistry.ts"

export {
  /** @internal A handler failure reported as exactly this error result (docs/durability.md DR 4.2). */
  ToolErrorResult
} from "./internal/toolResult.ts"

export type {
  AfterToolCallContext,
  AfterToolCallResult,
  BeforeToolCallContext,
  BeforeToolCallResult,
  ToolBatchResult,
  ToolExecutionConfig,
  ToolExecutionOptions
} from "./ToolBatch.ts"

// ---------------------------------------------------------------------------------------------------------
// The five phases
// ---------------------------------------------------------------------------------------------------------

/** TE 2.1: the call's start event, before anything else of it. */
const emitStart = (batch: Batch, call: Call): Effect.Effect<void> =>
  atomically(batch, () => {
    call.state = State.Preparing
    const { toolCall } = call
    Telemetry.toolStart(batch.trace, call, toolCall)
    return batch.emit({
      type: "tool_execution_start",
      toolCallId: toolCall.id,
      toolName: toolCall.name,
      args: toolCall.arguments
    })
  })

/**
 * Phase 1 (TE 2): checks the id (TE 9.1), looks the tool up (TE 2.2), validates the arguments (TE 2.3),
 * asks `beforeToolCall` (TE 2.4), then, in a parallel batch, what the call touches (TE 11.4). Every way the
 * call can end here is a typed error, its immediate outcome.
 */
const prepare = Effect.fnUntracedEager(function*(batch: Batch, call: Call) {
  const { toolCall } = call
  if (batch.duplicates?.has(call) === true) return yield* Outcome.duplicateId(toolCall)
  if (batch.skipReason !== undefined) return yield* Outcome.skipped(toolCall, batch.skipReason)
  if (isStopping(batch)) return yield* Outcome.abortedBeforeStart(toolCall)
  const entry = batch.registry.get(toolCall.name)
  if (entry === undefined) return yield* Outcome.notFound(toolCall)
  let args = yield* validatedArguments(toolCall, entry.tool)
  const before = batch.before
  if (before !== undefined) {
    const { assistantMessage, context } = batch
    const ask = () => before({ assistantMessage, toolCall, args, context })
    const decision = yield* traced(batch, call, "approval", () => Outcome.userStage(toolCall, "beforeToolCall", ask))
    if (decision?.block === true) return yield* Outcome.blocked(toolCall, decision.reason, decision.terminate === true)
    // TE 2.5: the hook may have waited (for a person's approval) while the run was aborted.
    if (isStopping(batch)) return yield* Outcome.abortedBeforeStart(toolCall)
    if (decision?.args !== undefined) args = decision.args
  }
  // TE 11: what the call touches, from the arguments it will run with; only a parallel batch schedules by it.
  const declared = entry.handler.resources
  const resources = declared === undefined || batch.mode === "sequential"
    ? undefined
    : yield* Outcome.userStage(toolCall, "resources", () => resourcesOf(declared(args)))
  call.state = State.Prepared
  return { call, entry, args, resources } satisfies Prepared
})

/** TE 8.1: the batch is stopping; the call's signal is aborted and it goes no further. */
const stopHere = (abort: () => void): Effect.Effect<never> => {
  abort()
  return Effect.interrupt
}

/**
 * Phase 2 (TE 3): calls the handler and runs the Effect it returns in the call's fiber, or apart with a
 * timeout (see `internal/supervise.ts`). Whether the call may start is decided right before the handler is
 * called and again once it has returned: an abort fired by anything before, or by the handler itself,
 * stops it (TE 8.1). A call whose tool ends while the batch is stopping goes no further.
 */
const execute = Effect.fnUntracedEager(function*(batch: Batch, { call, entry, args }: Prepared) {
  if (isStopping(batch)) return yield* Effect.interrupt
  const context = new CallContext(call, batch.emit)
  const abort = () => context.abort()
  call.state = { _tag: "Running", abort }
  const handled = callUser(() => entry.handler(args, context))
  // The handler itself may have raised the abort: its Effect is then not run.
  if (isStopping(batch)) return yield* stopHere(abort)
  const timeout = entry.tool.timeout ?? batch.timeout
  const run = completed(handled) ?? (timeout === undefined
    ? yield* runHere(handled, call, abort)
    : yield* runApart(handled, { abort, grace: batch.grace, onStopped: (ok) => stopCall(call, ok) }, timeout))
  if (isStopping(batch)) return yield* stopHere(abort)
  if (!(run instanceof TimedOut)) return executedResult(entry.tool, run)
  const abandoned = run.stopped ? "" : " and was abandoned: it did not stop when cancelled"
  return errorResult(`Tool ${entry.tool.name} timed out after ${Duration.format(timeout!)}${abandoned}`, {
    timedOut: true,
    abandoned: !run.stopped
  })
})

/** Phase 3 (TE 4): applies `afterToolCall`; its failure or defect makes the call an error result. */
const finalize = (batch: Batch, { args, call }: Prepared, executed: Finalized): Effect.Effect<Finalized> => {
  const after = batch.after
  if (after === undefined) return Effect.succeed(executed)
  call.state = call.state._tag === "Abandoned" ? State.FinalizingAbandoned : State.Finalizing
  const { assistantMessage, context } = batch
  const { result, isError } = executed
  const hook = callUser(() => after({ assistantMessage, toolCall: call.toolCall, args, result, isError, context }))
  return Effect.matchCauseEffectEager(hook, {
    onSuccess: (override) => Effect.succeed(applyOverride(executed, override)),
    onFailure: (cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.interrupt
        : Effect.succeed(errorResult(causeMessage(cause)))
  })
}

/** TE 11: the call waits for earlier calls it conflicts with, named by their ids. */
const emitWaiting = (batch: Batch, call: Call, running: ReadonlyArray<Prepared>): Effect.Effect<void> =>
  atomically(batch, () =>
    batch.emit({
      type: "tool_execution_waiting",
      toolCallId: call.toolCall.id,
      toolName: call.toolCall.name,
      waitingFor: running.map((earlier) => earlier.call.toolCall.id)
    }))

/** Phase 4 (TE 5.1): records the call's final outcome and emits its one end event. */
const emitEnd = (batch: Batch, call: Call, outcome: Finalized): Effect.Effect<void> =>
  atomically(batch, () => {
    call.state = { _tag: "Ended", outcome }
    Telemetry.toolEnd(batch.trace, call, outcome)
    return batch.emit({
      type: "tool_execution_end",
      toolCallId: call.toolCall.id,
      toolName: call.toolCall.name,
      result: outcome.result,
      isError: outcome.isError
    })
  })

/** Phase 5 (TE 5.2): the result message of an ended call, timestamped no earlier than the previous one. */
const createResultMessage = (batch: Batch, call: Call, outcome: Finalized): ToolResultMessage => {
  batch.lastTimestamp = Math.max(batch.lastTimestamp, batch.clock.currentTimeMillisUnsafe())
  return {
    role: "toolResult",
    toolCallId: call.toolCall.id,
    toolName: call.toolCall.name,
    content: outcome.result.content,
    details: outcome.result.details,
    isError: outcome.isError,
    timestamp: batch.lastTimestamp
  }
}

/** Phase 5, announced: `message_start` then `message_end` (after an abort, whichever is still owed). */
const announce = (batch: Batch, call: Call): Effect.Effect<void> =>
  atomically(batch, () => {
    const state = call.state
    if (state._tag === "Announcing") return finishAnnouncing(batch, call, state.outcome, state.message)
    if (state._tag !== "Ended") {
      return Effect.die(new Error(`effect-agent: tool call ${call.toolCall.id} announced in state ${state._tag}`))
    }
    const message = createResultMessage(batch, call, state.outcome)
    call.state = { _tag: "Announcing", outcome: state.outcome, message }
    return Effect.flatMapEager(
      batch.emit({ type: "message_start", message }),
      () => finishAnnouncing(batch, call, state.outcome, message)
    )
  })

const finishAnnouncing = (batch: Batch, call: Call, outcome: Finalized, message: ToolResultMessage) => {
  call.state = { _tag: "Done", outcome, message }
  return batch.emit({ type: "message_end", message })
}

// ---------------------------------------------------------------------------------------------------------
// The two modes (TE 6)
// ---------------------------------------------------------------------------------------------------------

/** Phase 1 with its outcome handled: the prepared call, or `undefined` once its immediate end event is out. */
const prepareOrEnd = (batch: Batch, call: Call): Effect.Effect<Prepared | undefined> =>
  Effect.catchEager(
    prepare(batch, call),
    (outcome: ImmediateOutcome) => Effect.as(emitEnd(batch, call, Outcome.immediateResult(outcome)), undefined)
  )

/** Phases 2 to 4 of a prepared call. */
const executeAndEnd = Effect.fnUntracedEager(function*(batch: Batch, prepared: Prepared) {
  const executed = yield* traced(batch, prepared.call, "execution", () => execute(batch, prepared))
  const outcome = yield* traced(batch, prepared.call, "finalize", () => finalize(batch, prepared, executed))
  yield* emitEnd(batch, prepared.call, outcome)
})

/** TE 6.1: one call at a time, all five phases; an immediate outcome skips execute and finalize. */
const runSequential = Effect.fnUntraced(function*(batch: Batch, calls: ReadonlyArray<Call>) {
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!
    yield* emitStart(batch, call)
    const prepared = yield* prepareOrEnd(batch, call)
    if (prepared !== undefined) yield* executeAndEnd(batch, prepared)
    yield* announce(batch, call)
    if (breather(i)) yield* Effect.yieldNow
  }
})

/** Calls executed together; a larger batch runs in consecutive waves of this many (TE 6.2, TE 9.5). */
const WAVE = 2048

/**
 * TE 6.2.2: the prepared calls executed together with `Effect.forEach`, each ending once it is finalized;
 * when calls declared what they touch, each first waits for the earlier calls it conflicts with (TE 11).
 */
const executeAll = Effect.fnUntraced(function*(
  batch: Batch,
  prepared: ReadonlyArray<Prepared>,
  concurrency: number | "unbounded"
) {
  const run = inTurns(
    prepared,
    (call) => executeAndEnd(batch, call),
    (call, running) => emitWaiting(batch, call.call, running)
  ) ?? ((call: Prepared) => executeAndEnd(batch, call))
  for (let from = 0; from < prepared.length; from += WAVE) {
    if (from > 0) yield* Effect.yieldNow
    const wave = prepared.length <= WAVE ? prepared : prepared.slice(from, from + WAVE)
    yield* Effect.forEach(wave, (call, index) => run(call, from + index), { concurrency, discard: true })
  }
})

/**
 * TE 6.2: preflight (start and prepare, one call at a time, in source order), then every prepared call
 * executed together with `Effect.forEach` (each ends as soon as it is finalized), then the result messages
 * in source order.
 */
const runParallel = Effect.fnUntraced(function*(
  batch: Batch,
  calls: ReadonlyArray<Call>,
  concurrency: number | "unbounded"
) {
  const prepared: Array<Prepared> = []
  for (let i = 0; i < calls.length; i++) {
    yield* emitStart(batch, calls[i]!)
    const ready = yield* prepareOrEnd(batch, calls[i]!)
    if (ready !== undefined) prepared.push(ready)
    if (breather(i)) yield* Effect.yieldNow
  }
  // Apart, so that a tool ignoring cancellation holds only its own call's fiber (TE 8.2, TE 9.3).
  const executed = yield* runApart(executeAll(batch, prepared, concurrency), {
    abort: () => {},
    grace: batch.grace,
    onStopped: (stopped) => {
      if (!stopped) abandonBusy(prepared.map((p) => p.call))
    }
  })
  if (Exit.isExit(executed) && Exit.isFailure(executed)) return yield* executed
  for (let i = 0; i < calls.length; i++) {
    yield* announce(batch, calls[i]!)
    if (breather(i)) yield* Effect.yieldNow
  }
})

// ---------------------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------------------

/**
 * TE 8.3: after an abort or a fault, every call the work did not finish gets its missing events, each
 * subscriber at most the grace period per event (TE 8.5).
 */
const settle = (
  batch: Batch,
  emitter: Emitter,
  calls: ReadonlyArray<Call>,
  mode: ExecutionMode,
  exit: Exit.Exit<void>
): Effect.Effect<ToolBatchResult> => {
  const aborted = isStopping(batch) || wasInterrupted(exit)
  if (Exit.isSuccess(exit)) return Effect.succeed(resultOf(calls, aborted))
  const reason = aborted ? "the run was aborted" : `an internal error occurred (${causeMessage(exit.cause)})`
  const bounded: Batch = { ...batch, emit: emitter.bounded(batch.grace) }
  const settled = settleRemaining(calls, mode, reason, {
    start: (call) => emitStart(bounded, call),
    end: (call, outcome) => emitEnd(bounded, call, outcome),
    message: (call) => announce(bounded, call)
  })
  const logged = aborted
    ? settled
    : Effect.andThen(Effect.logError("effect-agent: tool batch failed", exit.cause), settled)
  return Effect.map(logged, () => resultOf(calls, aborted))
}

/**
 * Runs the tool calls of an assistant message and returns their result messages in source order.
 *
 * Guarantees, whatever happens (tool failures, defects, timeouts, invalid results, failing subscribers,
 * abort by signal or by interrupting this fiber): every call gets exactly one `tool_execution_start`, one
 * `tool_execution_end` and one result message, in the order rules of its mode, and no event follows the
 * last result message. No tool starts executing after the abort. Events go to the `EventSink` in
 * the context.
 */
export const executeToolCalls = <R = never>(
  assistantMessage: AssistantMessage,
  options: ToolExecutionOptions<R> = {}
): Effect.Effect<ToolBatchResult, never, ToolRegistry | R> =>
  Effect.uninterruptibleMask((restore) => runBatch(assistantMessage, options, restore))

/** One batch: its calls, its mode, its work supervised (TE 8), then settled. */
const runBatch = Effect.fnUntraced(function*<R>(
  assistantMessage: AssistantMessage,
  options: ToolExecutionOptions<R>,
  restore: Restore
) {
  const registry = yield* ToolRegistry
  const toolCalls = toolCallsOf(assistantMessage)
  const calls: Array<Call> = toolCalls.map((toolCall) => ({ toolCall, state: State.Waiting }))
  const mode = chooseMode(toolCalls, registry, options.toolExecution)
  const { batch, emitter } = yield* makeBatch(assistantMessage, calls, registry, mode, options)
  const work = mode === "sequential"
    ? runSequential(batch, calls)
    : runParallel(batch, calls, options.concurrency ?? "unbounded")
  const exit = yield* supervise(work, {
    calls,
    signal: options.signal,
    grace: batch.grace,
    onStop: () => {
      batch.stopping = true
    },
    onAbandon: emitter.close
  }, restore)
  return yield* settle(batch, emitter, calls, mode, exit)
})

/**
 * The events of a batch as a Stream that ends after the last result message. Stopping the stream early
 * interrupts the batch (which still settles every call).
 */
export const toolExecutionEvents = <R = never>(
  assistantMessage: AssistantMessage,
  options: ToolExecutionOptions<R> = {}
): Stream.Stream<ToolExecutionEvent, never, ToolRegistry | R> =>
  eventStream(executeToolCalls(assistantMessage, options))
