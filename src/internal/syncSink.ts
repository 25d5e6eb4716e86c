/**
 * Sinks whose delivery is plain code underneath, kept off the public `EventSinkShape`:
 *
 * - synchronous sinks (a callback, a queue offer): the pipeline delivers each event with a call instead of an
 *   Effect;
 * - eager sinks (the stateful agent's): delivery runs when called, as far as it can synchronously, and returns
 *   an already-complete Effect when nothing was left pending. A rest that goes pending runs in a fiber of its
 *   own, which the returned Effect awaits: the pipeline may call it anywhere, and interrupting the caller stops
 *   its wait, never the delivery (a subscriber never sees half an event, and later events still queue behind
 *   it).
 *
 * The plain function rides on an instance of a class of this module (not a side table: a table keyed by
 * sink costs the garbage collector on every run that makes one). A copy of such a sink (`{ ...sink }`, a
 * wrapper) is a plain object again, so it is delivered through its own `emit`.
 */
import type * as Effect from "effect/Effect"
import type { AgentEvent } from "../AgentEvent.ts"

class SynchronousSink {
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
  readonly deliver: (event: AgentEvent) => void
  constructor(emit: (event: AgentEvent) => Effect.Effect<void>, deliver: (event: AgentEvent) => void) {
    this.emit = emit
    this.deliver = deliver
  }
}

class EagerSink {
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
  readonly deliver: (event: AgentEvent) => Effect.Effect<void>
  constructor(emit: (event: AgentEvent) => Effect.Effect<void>, deliver: (event: AgentEvent) => Effect.Effect<void>) {
    this.emit = emit
    this.deliver = deliver
  }
}

/** A sink with this `emit` that delivers through `f`, which must behave exactly like `emit`. */
export const deliveringThrough = (
  emit: (event: AgentEvent) => Effect.Effect<void>,
  f: (event: AgentEvent) => void
): { readonly emit: (event: AgentEvent) => Effect.Effect<void> } => new SynchronousSink(emit, f)

/** The synchronous function a sink delivers through, if it is one. */
export const synchronousDelivery = (sink: object): ((event: AgentEvent) => void) | undefined =>
  sink instanceof SynchronousSink ? sink.deliver : undefined

/**
 * A sink with this `emit` that delivers eagerly through `f`: `f(event)` must do what running `emit(event)` in
 * an uninterruptible step would do, starting at once, and run any rest that goes pending in a fiber of its
 * own that the Effect it returns awaits.
 */
export const deliveringEagerly = (
  emit: (event: AgentEvent) => Effect.Effect<void>,
  f: (event: AgentEvent) => Effect.Effect<void>
): { readonly emit: (event: AgentEvent) => Effect.Effect<void> } => new EagerSink(emit, f)

/** The eager delivery of a sink, if it has one. */
export const eagerDelivery = (sink: object): ((event: AgentEvent) => Effect.Effect<void>) | undefined =>
  sink instanceof EagerSink ? sink.deliver : undefined
