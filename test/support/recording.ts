/**
 * What the recording test supports share (support/batch.ts for tool batches, support/loop.ts for the loop and
 * the agent): named one-shot signals, an event sink that records events and markers in one ordered trace, the
 * real-time safety net for waits, and a way to let runnable fibers progress. Each support keeps only its own
 * event labels.
 */
import { Deferred, Effect } from "effect"
import { TestClock } from "effect/testing"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import type * as EventSink from "../../src/EventSink.ts"

/** Deferreds by name, made on first use: a test can wait for a signal before anything fires it. */
export interface Signals {
  readonly get: (name: string) => Deferred.Deferred<void>
  /** Settles the signal (again: no effect). */
  readonly fire: (name: string) => void
  readonly await: (name: string) => Effect.Effect<void>
  readonly isDone: (name: string) => boolean
}

export const makeSignals = (): Signals => {
  const signals = new Map<string, Deferred.Deferred<void>>()
  const get = (name: string) => {
    let d = signals.get(name)
    if (d === undefined) {
      d = Deferred.makeUnsafe<void>()
      signals.set(name, d)
    }
    return d
  }
  return {
    get,
    fire: (name) => void Deferred.doneUnsafe(get(name), Effect.void),
    await: (name) => Deferred.await(get(name)),
    isDone: (name) => Deferred.isDoneUnsafe(get(name))
  }
}

/** Records events and markers in one ordered trace. */
export interface Recorder {
  /** Every event the sink received, in order. */
  readonly events: Array<AgentEvent>
  /** Event labels interleaved with markers, in order. */
  readonly trace: Array<string>
  /** The sink to provide as `EventSink.EventSink`. */
  readonly sink: EventSink.EventSinkShape
  /** Appends a marker to the trace (from a tool or a hook). */
  readonly mark: (label: string) => Effect.Effect<void>
  /** Appends a marker synchronously (from callbacks such as an abort listener). */
  readonly markUnsafe: (label: string) => void
  /** Settles once the trace holds that label (an event label or a marker). */
  readonly reached: (label: string) => Effect.Effect<void>
  /** The events of one type. */
  readonly ofType: <T extends AgentEvent["type"]>(type: T) => Array<Extract<AgentEvent, { type: T }>>
}

/**
 * A recorder labelling events with `labelOf`; `onEvent` runs synchronously after each event is recorded (e.g.
 * to abort or queue a message at a point).
 */
export const makeRecorder = (
  labelOf: (event: AgentEvent) => string,
  onEvent?: (event: AgentEvent, index: number) => void
): Recorder => {
  const events: Array<AgentEvent> = []
  const trace: Array<string> = []
  const signals = makeSignals()
  const push = (label: string) => {
    trace.push(label)
    signals.fire(label)
  }
  return {
    events,
    trace,
    sink: {
      emit: (event) =>
        Effect.sync(() => {
          events.push(event)
          push(labelOf(event))
          onEvent?.(event, events.length - 1)
        })
    },
    mark: (label) => Effect.sync(() => push(label)),
    markUnsafe: push,
    reached: signals.await,
    ofType: (type) => events.filter((e) => e.type === type) as any
  }
}

/**
 * Fails (instead of hanging until the vitest timeout) when `effect` does not finish within `millis` of real
 * time. A safety net for a broken implementation only: a passing test never waits for it.
 */
export const within = <A, E, R>(effect: Effect.Effect<A, E, R>, label: string, millis = 3_000) =>
  Effect.raceFirst(
    effect,
    TestClock.withLive(Effect.sleep(millis)).pipe(
      Effect.andThen(Effect.die(new Error(`timed out (real time) waiting for: ${label}`)))
    )
  )

/** Lets every runnable fiber make progress (a few scheduler turns). */
export const settle = Effect.gen(function*() {
  for (let i = 0; i < 50; i++) yield* Effect.yieldNow
})
