/**
 * Sinks that are plain synchronous functions underneath (a callback, a queue offer), kept off the public
 * `EventSinkShape`: the pipeline then delivers each event with a call instead of an Effect.
 */
import type { AgentEvent } from "../AgentEvent.ts"

const synchronous = new WeakMap<object, (event: AgentEvent) => void>()

/** Marks `sink` as delivering through `f`, which must behave exactly like its `emit`. Returns `sink`. */
export const deliversThrough = <S extends object>(sink: S, f: (event: AgentEvent) => void): S => {
  synchronous.set(sink, f)
  return sink
}

/** The synchronous function a sink delivers through, if it is one. */
export const synchronousDelivery = (sink: object): ((event: AgentEvent) => void) | undefined => synchronous.get(sink)
