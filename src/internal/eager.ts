/**
 * Calling user code that returns an Effect from inside an eager step (`Effect.fnUntracedEager`,
 * `Effect.flatMapEager`), where no `Effect.suspend` catches what it throws.
 */
import * as Effect from "effect/Effect"

/** Calls code that returns an Effect; a synchronous throw becomes a defect, as under `Effect.suspend`. */
export const callUser = <A, E, R>(f: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  try {
    return f()
  } catch (error) {
    return Effect.die(error)
  }
}
