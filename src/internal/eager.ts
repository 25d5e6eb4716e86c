/**
 * Composing effects that are often already complete. In Effect 4 `succeed`, `fail` and `void` are Exits;
 * the `*Eager` combinators (and `Effect.fnUntracedEager` generators) apply to them at once, without a trip
 * through the runtime, entering it only for work that is really pending.
 */
import { Effect } from "effect"

/** Calls code that returns an Effect; a synchronous throw becomes a defect, as under `Effect.suspend`. */
export const callUser = <A, E, R>(f: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  try {
    return f()
  } catch (error) {
    return Effect.die(error)
  }
}
