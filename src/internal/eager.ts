/**
 * Composing effects that are often already complete. In Effect 4 `succeed`, `fail` and `void` are Exits;
 * the `*Eager` combinators apply to them at once, without a trip through the runtime. These helpers keep a
 * batch of instant tool calls on that path, entering the runtime only for work that is really pending.
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
 * Runs `f` over `items` in order. Complete results are chained in a plain loop (yielding to the scheduler
 * every 2048 items so a huge batch never starves other fibers, TE 9.5); the first pending one continues in the
 * runtime. Must be called while running (inside a `suspend` or a continuation), never to build an effect.
 */
export const forEachEager = <A, R>(
  items: ReadonlyArray<A>,
  f: (a: A) => Effect.Effect<void, never, R>,
  start = 0
): Effect.Effect<void, never, R> => {
  for (let i = start; i < items.length; i++) {
    const effect = f(items[i])
    // Bound, not a closure (see `shapes.ts`): it is made per pending item.
    if (!Exit.isExit(effect)) return Effect.flatMap(effect, (forEachEager<A, R>).bind(undefined, items, f, i + 1))
    if (Exit.isFailure(effect)) return effect
    if ((i & 2047) === 2047 && i + 1 < items.length) {
      return Effect.flatMap(Effect.yieldNow, (forEachEager<A, R>).bind(undefined, items, f, i + 1))
    }
  }
  return Effect.void
}
