/** Tying an `AbortSignal` to fiber interruption. */
import { Effect, Fiber } from "effect"

/**
 * Runs `work` in a child fiber that is interrupted when the signal fires (or has fired), and waits for it
 * to finish interrupting. Interrupting the caller interrupts the work too: the fork and the wait are set up
 * without a gap an interruption could slip through. The child starts only after the listener is in place,
 * so work that would run synchronously to its end (a stream whose events are all buffered) still sees an
 * abort raised during it.
 */
export const interruptOnAbort = <A, E, R>(work: Effect.Effect<A, E, R>, signal: AbortSignal): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkChild(restore(work)), (fiber) => {
      const onAbort = () => fiber.interruptUnsafe()
      if (signal.aborted) onAbort()
      else signal.addEventListener("abort", onAbort, { once: true })
      return restore(Fiber.join(fiber)).pipe(
        Effect.onInterrupt(() => Fiber.interrupt(fiber)),
        Effect.ensuring(Effect.sync(() => signal.removeEventListener("abort", onAbort)))
      )
    })
  )
