/**
 * The one bridge between `AbortSignal`s and fiber interruption, in both directions. Every part of the core
 * (the tool batch, the loop, the stateful agent, the durable agent) cancels through these, so an abort and
 * an interruption always mean the same thing:
 *
 * - signal → interruption: {@link interruptOnAbort} (work stops when a signal fires), {@link whenAborted}
 *   (an Effect that completes when it fires);
 * - interruption → signal: {@link abortOnInterrupt} (interrupting the caller aborts a controller and waits
 *   for the work to settle on it), {@link LazyAbort} (a signal handed to user code, created only if read).
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type { Restore } from "./uninterruptible.ts"

/** Completes when the signal fires (at once if it has). Removes its listener when interrupted. */
export const whenAborted = (signal: AbortSignal): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    if (signal.aborted) return resume(Effect.void)
    const onAbort = () => resume(Effect.void)
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

/** How {@link interruptOnAbort} starts the work. */
export interface InterruptOnAbortOptions {
  /**
   * Start the work at once, before the listener is in place (no trip through the scheduler; work that ends
   * synchronously needs no listener at all). Such work must itself check the signal while it runs
   * synchronously, since an abort raised then is only seen once it waits. Default `false`: the listener is
   * in place first, so even work that runs synchronously to its end sees an abort raised during it.
   */
  readonly startImmediately?: boolean | undefined
}

/**
 * Runs `work` in a fiber of its own (a child fiber, or, started at once, a fiber with this fiber's services)
 * that is interrupted when the signal fires (or has fired), and waits for it to finish interrupting.
 * Interrupting the caller interrupts the work too: the fork and the wait are set up without a gap an
 * interruption could slip through. The listener is removed when the work ends.
 */
export const interruptOnAbort = <A, E, R>(
  work: Effect.Effect<A, E, R>,
  signal: AbortSignal,
  options?: InterruptOnAbortOptions
): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      Effect.forkChild(restore(work), { startImmediately: options?.startImmediately === true }),
      (fiber) => {
        // Work started at once may be over already: it needs no listener.
        const done = fiber.pollUnsafe()
        if (done !== undefined) return done
        const onAbort = () => fiber.interruptUnsafe()
        if (signal.aborted) onAbort()
        else signal.addEventListener("abort", onAbort, { once: true })
        return restore(Fiber.join(fiber)).pipe(
          Effect.onInterrupt(() => Fiber.interrupt(fiber)),
          Effect.ensuring(Effect.sync(() => signal.removeEventListener("abort", onAbort)))
        )
      }
    )
  )

/**
 * Runs `work` in a child fiber (started at once) and waits for it. Interrupting the caller does not
 * interrupt the work: it aborts `controller` and waits for the work to settle, since the work cancels
 * through that signal (and code it hands the signal to, such as a subscriber, may be waiting on it).
 *
 * Called inside an `uninterruptibleMask`, pass its `restore`: the wait is then interruptible exactly as
 * the caller's region would be, while the fork cannot be cut from it.
 */
export const abortOnInterrupt = <A, E, R>(
  work: Effect.Effect<A, E, R>,
  controller: AbortController,
  restore?: Restore
): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((own) =>
    Effect.flatMap(
      Effect.forkChild(Effect.interruptible(work), { startImmediately: true }),
      (fiber) =>
        (restore ?? own)(Fiber.join(fiber)).pipe(
          Effect.onInterrupt(() =>
            Effect.suspend(() => {
              controller.abort()
              return Fiber.await(fiber)
            })
          )
        )
    )
  )

/**
 * An abort signal for user code (a running tool) that costs nothing unless read: the controller is created
 * on first access, already aborted if {@link LazyAbort.abort} came first (a tool's cleanup may ask for it
 * only after the abort, and must then see it aborted).
 */
export class LazyAbort {
  #controller: AbortController | undefined = undefined
  #reason: (() => unknown) | undefined = undefined
  readonly #makeReason: () => unknown
  /** `reason` builds the abort reason, only when one is needed. */
  constructor(reason: () => unknown) {
    this.#makeReason = reason
  }
  /** The signal; created on first access. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#reason !== undefined) this.#controller.abort(this.#reason())
    }
    return this.#controller.signal
  }
  /** Whether {@link abort} was called. */
  get aborted(): boolean {
    return this.#reason !== undefined
  }
  /** Aborts the signal (now if it exists, on creation otherwise). Idempotent. */
  abort(): void {
    if (this.#reason !== undefined) return
    this.#reason = this.#makeReason
    this.#controller?.abort(this.#makeReason())
  }
}
