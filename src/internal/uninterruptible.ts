/**
 * The `restore` an `Effect.uninterruptibleMask` hands its body, named once: the batch, the loop and the
 * agent pass it through several functions.
 */
import type * as Effect from "effect/Effect"

/** `Effect.uninterruptibleMask`'s `restore`: makes an Effect as interruptible as the region around the mask. */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
