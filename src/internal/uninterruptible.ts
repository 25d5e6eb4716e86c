/**
 * Uninterruptible regions for the batch's steps: the `restore` an `Effect.uninterruptibleMask` hands its
 * body (named once, because the batch, the loop and the agent pass it through several module functions), and
 * a region that also needs its fiber, entered without a closure per use.
 */
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"

/** `Effect.uninterruptibleMask`'s `restore`: makes an Effect as interruptible as the region around the mask. */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** What runs in {@link uninterruptibleInFiber}: its input, the mask's `restore`, and the fiber running it. */
export type InFiber<I, A, E, R> = (
  input: I,
  restore: Restore,
  fiber: Fiber.Fiber<unknown, unknown>
) => Effect.Effect<A, E, R>

/**
 * `Effect.uninterruptibleMask((restore) => Effect.withFiber((fiber) => f(input, restore, fiber)))`, with
 * module functions bound per use instead of the two closures: it runs per batch, and a closure's optimized
 * code is dropped by a major collection once none of its instances is alive (see `shapes.ts`).
 */
export const uninterruptibleInFiber = <I, A, E, R>(f: InFiber<I, A, E, R>, input: I): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask(
    (masked<I, A, E, R>).bind(undefined, f, input) as (restore: Restore) => Effect.Effect<A, E, R>
  )

function masked<I, A, E, R>(f: InFiber<I, A, E, R>, input: I, restore: Restore): Effect.Effect<A, E, R> {
  return Effect.withFiber(
    (inFiber<I, A, E, R>).bind(undefined, f, input, restore) as (
      fiber: Fiber.Fiber<unknown, unknown>
    ) => Effect.Effect<A, E, R>
  )
}

function inFiber<I, A, E, R>(
  f: InFiber<I, A, E, R>,
  input: I,
  restore: Restore,
  fiber: Fiber.Fiber<unknown, unknown>
): Effect.Effect<A, E, R> {
  return f(input, restore, fiber)
}
