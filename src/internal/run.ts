/**
 * One run of the agent loop as its turns see it: the config, the model and tools, where events go, the
 * signal, and the transcript as it grows (docs/agent-loop.md).
 */
import * as Effect from "effect/Effect"
import type { AgentContext } from "../AgentContext.ts"
import type { AgentEvent } from "../AgentEvent.ts"
import type { AgentLoopConfig } from "../AgentLoopConfig.ts"
import type * as EventSink from "../EventSink.ts"
import { type AgentMessage, isMessage, type ToolResultMessage } from "../Message.ts"
import type { ModelShape, ToolSpec } from "../Model.ts"
import type { LimitReached } from "../RunLimits.ts"
import type { ToolRegistryShape } from "../ToolRegistry.ts"
import { makeEmitter } from "./emitter.ts"
import type { Growing } from "./growing.ts"
import type { Used } from "./limits.ts"
import type * as Telemetry from "./telemetry.ts"

/** A run's state. */
export interface Run<R> {
  readonly config: AgentLoopConfig<R>
  readonly model: ModelShape
  readonly registry: ToolRegistryShape
  /** The registry's tools as the model sees them, built once per run. */
  readonly tools: ReadonlyArray<ToolSpec>
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
  readonly signal: AbortSignal | undefined
  /**
   * The transcript so far. Appending costs the same at any length: snapshots handed out (to hooks, to the
   * model) are immutable arrays, and the transcript copies itself only on the first append after one was
   * actually taken (see `Growing`).
   */
  readonly transcript: Growing<AgentMessage>
  /** How many messages of the transcript the default conversion drops (application messages). */
  dropped: number
  /** The messages this run added, kept the same way. */
  readonly newMessages: Growing<AgentMessage>
  /** The run's spans and metrics; `undefined` when nothing is recorded (docs/telemetry.md OT 1.2). */
  readonly trace: Telemetry.RunTrace | undefined
  /** What the run has used, counted only when it has limits (AL 5.1). */
  readonly used: Used
  /** What is wrong with the run's limits (AL 5.6): its first turn then makes no model call. */
  readonly limitsProblem: string | undefined
  /** The limit that stopped the run (AL 5.2), once it has. */
  limitReached: LimitReached | undefined
}

export const isAborted = (run: Run<any>) => run.signal?.aborted === true

export const append = <R>(run: Run<R>, message: AgentMessage) => {
  run.transcript.append(message)
  if (!isMessage(message)) run.dropped++
  run.newMessages.append(message)
}

/** A batch's results, appended at once (tool results are messages: nothing to drop). */
export const appendAll = <R>(run: Run<R>, messages: ReadonlyArray<ToolResultMessage>) => {
  run.transcript.appendAll(messages)
  run.newMessages.appendAll(messages)
}

/**
 * The context as of now. Its `messages` are taken only when read, so a batch or hook that never looks at the
 * transcript costs nothing; read later, they are still the messages of this moment.
 */
export const contextOf = <R>(run: Run<R>, systemPrompt: string): AgentContext => {
  const messages = run.transcript.later()
  // An own enumerable getter: a spread copy of the context reads it.
  return {
    systemPrompt,
    get messages() {
      return messages()
    }
  }
}

/**
 * Delivery for the loop's own events: contained (a failing subscriber never ends a run), and never cut
 * half-way: a synchronous or eager sink's delivery cannot be (see `internal/syncSink.ts`), any other
 * effectful sink's runs uninterruptibly, so an abort waits for the event in flight.
 */
export const loopEmit = (sink: EventSink.EventSinkShape): (event: AgentEvent) => Effect.Effect<void> => {
  const emitter = makeEmitter(sink)
  return emitter.direct ? emitter.emit : (event) => Effect.uninterruptible(Effect.suspend(() => emitter.emit(event)))
}

export const announce = <R>(run: Run<R>, message: AgentMessage) =>
  Effect.flatMapEager(run.emit({ type: "message_start", message }), () => run.emit({ type: "message_end", message }))
