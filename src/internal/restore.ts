/**
 * The `restore` an `Effect.uninterruptibleMask` hands its body: makes an Effect as interruptible as the region
 * around the mask was. Named once here because the batch, the loop and the agent pass it through several
 * module functions.
 */
import type * as Effect from "effect/Effect"

/** `Effect.uninterruptibleMask`'s `restore`. */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
