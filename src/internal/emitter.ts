/**
 * Delivering events to a sink on behalf of the pipeline: a failing subscriber is logged, never propagated;
 * a synchronous sink (see `syncSink.ts`) gets each event without an Effect; after an abort a subscriber gets at
 * most a grace period per event; an abandoned work phase can be closed off.
 */
import * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { AgentEvent } from "../AgentEvent.ts"
import * as EventSink from "../EventSink.ts"
import { contain } from "./contain.ts"
import { eagerDelivery, synchronousDelivery } from "./syncSink.ts"

/** The batch's view of the sink. */
export interface Emitter {
  /**
   * Delivers an event. For a synchronous sink it is delivered when called (the result is complete); for an
   * eager one delivery starts when called, and what goes pending runs apart (see `syncSink.ts`); for any
   * other sink, run the result in an uninterruptible step.
   */
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
  /** The same, for the settle phase after an abort: a subscriber gets at most the grace period per event. */
  readonly bounded: (grace: Duration.Duration) => (event: AgentEvent) => Effect.Effect<void>
  /** Drops every later event of the work phase (its fiber was abandoned). */
  readonly close: () => void
  /** Delivery happens inside `emit` itself, so it can never be cut half-way. */
  readonly sync: boolean
  /**
   * `emit` may be called and its result run anywhere: no delivery it starts can be cut half-way by an
   * interruption (a synchronous sink, or an eager one whose pending rest runs apart).
   */
  readonly direct: boolean
}

/** The warning `contain` would log for a failed delivery. */
const warnFailed = (event: AgentEvent, cause: Cause.Cause<unknown>) =>
  Effect.logWarning(`effect-agent: an event subscriber on ${event.type} failed`, cause)

const warnThrown = (event: AgentEvent, error: unknown) =>
  Effect.logWarning(`effect-agent: an event subscriber failed on ${event.type}`, error)

/** Delivers through the sink's own Effect, contained (a failing subscriber is logged). */
const deliverContained = (sink: EventSink.EventSinkShape, event: AgentEvent): Effect.Effect<void> =>
  contain(`an event subscriber on ${event.type}`, () => sink.emit(event))

/** The emitters, one class per kind of sink; `emit`, `bounded` and `close` are closures so they can be passed on. */
abstract class BaseEmitter implements Emitter {
  closed = false
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
  readonly bounded: (grace: Duration.Duration) => (event: AgentEvent) => Effect.Effect<void>
  readonly close: () => void
  abstract readonly sync: boolean
  abstract readonly direct: boolean
  constructor() {
    this.emit = (event) => this.emitOpen(event)
    this.bounded = (grace) => this.boundedBy(grace)
    this.close = () => this.closeNow()
  }
  emitOpen(event: AgentEvent): Effect.Effect<void> {
    return this.closed ? Effect.void : this.deliver(event)
  }
  closeNow(): void {
    this.closed = true
  }
  abstract deliver(event: AgentEvent): Effect.Effect<void>
  abstract boundedBy(grace: Duration.Duration): (event: AgentEvent) => Effect.Effect<void>
}

/** `EventSink.discard`: nothing to deliver. */
class DiscardEmitter extends BaseEmitter {
  readonly sync = true
  readonly direct = true
  deliver(): Effect.Effect<void> {
    return Effect.void
  }
  boundedBy(): (event: AgentEvent) => Effect.Effect<void> {
    return this.deliver
  }
}

/** A synchronous sink: each event delivered by a call, with no Effect. */
class SyncEmitter extends BaseEmitter {
  readonly sync = true
  readonly direct = true
  readonly now: (event: AgentEvent) => Effect.Effect<void>
  readonly #deliver: (event: AgentEvent) => void
  constructor(deliver: (event: AgentEvent) => void) {
    super()
    this.#deliver = deliver
    this.now = (event) => this.deliver(event)
  }
  deliver(event: AgentEvent): Effect.Effect<void> {
    try {
      this.#deliver(event)
      return Effect.void
    } catch (error) {
      return warnThrown(event, error)
    }
  }
  boundedBy(): (event: AgentEvent) => Effect.Effect<void> {
    return this.now
  }
}

/** A sink whose delivery is an Effect: contained, and bounded by the grace period after an abort. */
class EffectEmitter extends BaseEmitter {
  readonly sync = false
  readonly direct: boolean = false
  readonly sink: EventSink.EventSinkShape
  constructor(sink: EventSink.EventSinkShape) {
    super()
    this.sink = sink
  }
  deliver(event: AgentEvent): Effect.Effect<void> {
    return deliverContained(this.sink, event)
  }
  boundedBy(grace: Duration.Duration): (event: AgentEvent) => Effect.Effect<void> {
    return (event) =>
      Effect.asVoid(Effect.timeoutOption(Effect.interruptible(deliverContained(this.sink, event)), grace))
  }
}

/** An eager sink: delivery starts when called, contained without an Effect around one that completed at once. */
class EagerEmitter extends EffectEmitter {
  override readonly direct = true
  readonly #deliver: (event: AgentEvent) => Effect.Effect<void>
  constructor(sink: EventSink.EventSinkShape, deliver: (event: AgentEvent) => Effect.Effect<void>) {
    super(sink)
    this.#deliver = deliver
  }
  override deliver(event: AgentEvent): Effect.Effect<void> {
    let effect: Effect.Effect<void>
    try {
      effect = this.#deliver(event)
    } catch (error) {
      return warnFailed(event, Cause.die(error))
    }
    if (!Exit.isExit(effect)) return contain(`an event subscriber on ${event.type}`, () => effect)
    return Exit.isSuccess(effect) || Cause.hasInterruptsOnly(effect.cause)
      ? Effect.void
      : warnFailed(event, effect.cause)
  }
}

/**
 * A sink wrapper: a failing subscriber is logged and never reaches the batch. An effectful delivery cannot
 * be cut by an abort (the phases run it uninterruptibly), so a subscriber never sees half an event.
 */
export const makeEmitter = (sink: EventSink.EventSinkShape): Emitter => {
  if (sink === EventSink.discard) return new DiscardEmitter()
  const emitUnsafe = synchronousDelivery(sink)
  if (emitUnsafe !== undefined) return new SyncEmitter(emitUnsafe)
  const emitEager = eagerDelivery(sink)
  return emitEager !== undefined ? new EagerEmitter(sink, emitEager) : new EffectEmitter(sink)
}
