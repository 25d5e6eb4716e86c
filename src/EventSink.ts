/**
 * Where a run's events go. Emitting is an Effect, so a sink may be asynchronous (a UI that waits for a
 * person, a subscriber that writes to disk). The pipeline never lets a failing sink break a batch.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { AgentEvent } from "./AgentEvent.ts"
import { deliversThrough } from "./internal/syncSink.ts"

/** The shape of an event sink. */
export interface EventSinkShape {
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
}

/** The sink that drops every event. */
export const discard: EventSinkShape = { emit: () => Effect.void }

/** The current event sink; by default events are dropped. Provide another with `Effect.provideService`. */
export const EventSink = Context.Reference<EventSinkShape>("effect-agent/EventSink", { defaultValue: () => discard })

/**
 * A sink that hands each event to a callback, in order, synchronously. The pipeline calls it directly,
 * without an Effect per event.
 */
export const fromCallback = (f: (event: AgentEvent) => void): EventSinkShape =>
  deliversThrough({ emit: (event: AgentEvent) => Effect.sync(() => f(event)) }, f)
