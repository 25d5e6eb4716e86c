/**
 * Calling user code that returns an Effect from inside an eager step (`Effect.fnUntracedEager`,
 * `Effect.flatMapEager`), where no `Effect.suspend` catches what it throws.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** Calls code that returns an Effect; a synchronous throw becomes a defect, as under `Effect.suspend`. */
export const callUser = <A, E, R>(f: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  try {
    return f()
  } catch (error) {
    return Effect.die(error)
  }
}

/**
 * The Exit an eager step returned, if it returned a complete one, with its types kept (`Exit.isExit` narrows
 * to `Exit<unknown, unknown>`): an eager step returns its outcome itself when it needs no wait.
 */
export const completed = <A, E, R>(effect: Effect.Effect<A, E, R>): Exit.Exit<A, E> | undefined =>
  Exit.isExit(effect) ? effect as Exit.Exit<A, E> : undefined
