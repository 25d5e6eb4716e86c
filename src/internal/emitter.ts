/**
 * Delivering events to a sink on behalf of the pipeline: a failing subscriber is logged, never propagated;
 * a synchronous sink (see `syncSink.ts`) gets each event without an Effect; after an abort a subscriber gets at
 * most a grace period per event; an abandoned work phase can be closed off.
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { AgentEvent } from "../AgentEvent.ts"
import * as EventSink from "../EventSink.ts"
import { contain } from "./contain.ts"
import { synchronousDelivery } from "./syncSink.ts"

/** The batch's view of the sink. */
export interface Emitter {
  /** Delivers an event. For a synchronous sink it is delivered when called (the result is complete). */
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
  /** The same, for the settle phase after an abort: a subscriber gets at most the grace period per event. */
  readonly bounded: (grace: Duration.Duration) => (event: AgentEvent) => Effect.Effect<void>
  /** Drops every later event of the work phase (its fiber was abandoned). */
  readonly close: () => void
  /** Delivery happens inside `emit` itself, so it can never be cut half-way. */
  readonly sync: boolean
}

const warnSubscriber = (event: AgentEvent) => (failure: unknown) =>
  Effect.logWarning(`effect-agent: an event subscriber failed on ${event.type}`, failure)

/**
 * A sink wrapper: a failing subscriber is logged and never reaches the batch. An effectful delivery cannot
 * be cut by an abort (the phases run it uninterruptibly), so a subscriber never sees half an event.
 */
export const makeEmitter = (sink: EventSink.EventSinkShape): Emitter => {
  let closed = false
  const close = () => {
    closed = true
  }
  if (sink === EventSink.discard) {
    return {
      emit: () => Effect.void,
      bounded: () => () => Effect.void,
      close,
      sync: true
    }
  }
  const emitUnsafe = synchronousDelivery(sink)
  if (emitUnsafe !== undefined) {
    const now = (event: AgentEvent): Effect.Effect<void> => {
      try {
        emitUnsafe(event)
        return Effect.void
      } catch (error) {
        return warnSubscriber(event)(error)
      }
    }
    return { emit: (event) => closed ? Effect.void : now(event), bounded: () => now, close, sync: true }
  }
  const deliver = (event: AgentEvent) => contain(`an event subscriber on ${event.type}`, () => sink.emit(event))
  return {
    emit: (event) => closed ? Effect.void : deliver(event),
    bounded: (grace) => (event) => Effect.asVoid(Effect.timeoutOption(Effect.interruptible(deliver(event)), grace)),
    close,
    sync: false
  }
}
