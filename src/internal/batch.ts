/**
 * What the phases of one tool batch share (docs/tool-execution.md): the batch's inputs, its sink, whether it
 * is stopping, and the few steps every phase uses.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Context from "../AgentContext.ts"
import type { AgentContext } from "../AgentContext.ts"
import type { AgentEvent } from "../AgentEvent.ts"
import * as EventSink from "../EventSink.ts"
import type { AssistantMessage, ToolCall } from "../Message.ts"
import type { ResourceAccess } from "../ResourceAccess.ts"
import type { ExecutionMode } from "../Tool.ts"
import type { ToolExecutionConfig, ToolExecutionOptions } from "../ToolBatch.ts"
import type { RegisteredTool, ToolRegistryShape } from "../ToolRegistry.ts"
import type { Call } from "./callState.ts"
import { laterDuplicates } from "./duplicates.ts"
import { type Emitter, makeEmitter } from "./emitter.ts"
import { skipReasonOf } from "./skip.ts"
import * as Telemetry from "./telemetry.ts"

/** The mode a batch will run in: sequential if configured so or if any called tool requires it. */
export const chooseMode = (
  calls: ReadonlyArray<ToolCall>,
  registry: ToolRegistryShape,
  configured: ExecutionMode | undefined
): ExecutionMode => {
  if (configured === "sequential") return "sequential"
  for (const call of calls) {
    if (registry.get(call.name)?.tool.executionMode === "sequential") return "sequential"
  }
  return "parallel"
}

/** Everything the phases of one batch share. */
export interface Batch {
  readonly assistantMessage: AssistantMessage
  readonly context: AgentContext
  readonly registry: ToolRegistryShape
  readonly mode: ExecutionMode
  /** Delivers an event to the sink (see `internal/emitter.ts`). */
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
  /** A delivery `emit` starts can never be cut half-way, so it needs no uninterruptible region. */
  readonly direct: boolean
  readonly signal: AbortSignal | undefined
  /** The hooks; their services (`R`) are the batch's fiber's, where the work runs. */
  readonly before: ToolExecutionConfig["beforeToolCall"]
  readonly after: ToolExecutionConfig["afterToolCall"]
  readonly timeout: Duration.Duration | undefined
  /** How long a stopped tool or a subscriber gets before it is abandoned (TE 8.2, TE 8.5). */
  readonly grace: Duration.Duration
  /** The calls whose id an earlier call of the batch already has (TE 9.1). */
  readonly duplicates: ReadonlySet<Call> | undefined
  /** Set by the loop for a response that cannot be trusted: every call ends with this text (AL 2.10). */
  readonly skipReason: string | undefined
  readonly clock: Clock.Clock
  /** The batch's spans and metrics; `undefined` when nothing is recorded (docs/telemetry.md OT 1.2). */
  readonly trace: Telemetry.BatchTrace | undefined
  /** Set when the batch is being stopped (signal or interruption): no tool may start after it (TE 8.1). */
  stopping: boolean
  /** The timestamp of the latest result message: they never go back in time (TE 5.2). */
  lastTimestamp: number
}

/** How long a stopped tool or a subscriber gets when the options say nothing (TE 8.2). */
const DEFAULT_GRACE = Duration.seconds(2)

/** The batch of `calls` from the options, with the emitter its events go through (to the current sink). */
export const makeBatch = Effect.fnUntraced(function*<R>(
  assistantMessage: AssistantMessage,
  calls: ReadonlyArray<Call>,
  registry: ToolRegistryShape,
  mode: ExecutionMode,
  options: ToolExecutionOptions<R>
) {
  const emitter: Emitter = makeEmitter(yield* EventSink.EventSink)
  const batch: Batch = {
    assistantMessage,
    context: options.context ?? Context.empty,
    registry,
    mode,
    emit: emitter.emit,
    direct: emitter.direct,
    signal: options.signal,
    before: options.beforeToolCall as ToolExecutionConfig["beforeToolCall"],
    after: options.afterToolCall as ToolExecutionConfig["afterToolCall"],
    timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
    grace: options.abandonAfter === undefined ? DEFAULT_GRACE : Duration.fromInputUnsafe(options.abandonAfter),
    duplicates: laterDuplicates(calls, (call) => call.toolCall.id),
    skipReason: skipReasonOf(options),
    clock: yield* Clock.Clock,
    trace: yield* Telemetry.batchTrace,
    stopping: false,
    lastTimestamp: 0
  }
  return { batch, emitter }
})

/** A call that passed prepare: its tool, the arguments it will get and what it touches (TE 11). */
export interface Prepared {
  readonly call: Call
  readonly entry: RegisteredTool
  readonly args: unknown
  /** `undefined` when the tool declares nothing, or the batch is sequential. */
  readonly resources: ReadonlyArray<ResourceAccess> | undefined
}

export const isStopping = (batch: Batch): boolean => batch.stopping || batch.signal?.aborted === true

/**
 * Moves a call's state and emits its event as one step an abort cannot split, so a call is never in a state
 * without its event (or the reverse). A sink whose delivery cannot be cut needs no uninterruptible region.
 */
export const atomically = (batch: Batch, step: () => Effect.Effect<void>): Effect.Effect<void> =>
  batch.direct ? step() : Effect.uninterruptible(Effect.suspend(step))

/**
 * TE 9.5: whether the loop at `index` must let other fibers run: a batch does at least every 2048 calls,
 * however many complete at once (a generator passes complete Effects on without the runtime's own yield).
 */
export const breather = (index: number): boolean => (index & 2047) === 2047

/** Runs `phase` as a span of the call when the batch is traced (docs/telemetry.md OT 2.4), as is otherwise. */
export const traced = <A, E, R>(
  batch: Batch,
  call: Call,
  name: Telemetry.ToolPhase,
  phase: () => Effect.Effect<A, E, R>
) => Telemetry.toolPhase(batch.trace, call, name, phase)
