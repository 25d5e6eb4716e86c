/** Running code the library does not own (subscribers, listeners) so that its failures stay contained. */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"

/**
 * Runs `effect` (which may even throw when called): a failure or defect is logged as a warning naming
 * `what`, never propagated. An interruption passes through silently.
 */
export const contain = (what: string, effect: () => Effect.Effect<unknown, unknown>): Effect.Effect<void> =>
  Effect.suspend(effect).pipe(
    Effect.asVoid,
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logWarning(`effect-agent: ${what} failed`, cause)
    )
  )
