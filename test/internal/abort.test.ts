/**
 * The one bridge between abort signals and fiber interruption (`src/internal/abort.ts`), which the tool
 * batch (TE 8), the loop (AL 3.4) and the stateful agent (AL 4.5, AL 4.6) cancel through.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { abortOnInterrupt, interruptOnAbort, LazyAbort, whenAborted } from "../../src/internal/abort.ts"

/** A real signal whose listeners are tracked (by identity), to check that none is left behind. */
const counted = () => {
  const controller = new AbortController()
  const signal = controller.signal
  const live = new Set<unknown>()
  let added = 0
  const add = signal.addEventListener.bind(signal)
  const remove = signal.removeEventListener.bind(signal)
  signal.addEventListener = ((...args: Parameters<AbortSignal["addEventListener"]>) => {
    added++
    live.add(args[1])
    add(...args)
  }) as AbortSignal["addEventListener"]
  signal.removeEventListener = ((...args: Parameters<AbortSignal["removeEventListener"]>) => {
    live.delete(args[1])
    remove(...args)
  }) as AbortSignal["removeEventListener"]
  return { controller, signal, listeners: () => live.size, added: () => added }
}

/** Completes after a trip through the scheduler: work that is really asynchronous, without time. */
const later = <A, E>(effect: Effect.Effect<A, E>) => Effect.andThen(Effect.yieldNow, effect)

describe("whenAborted", () => {
  it.effect("completes when the signal fires, and at once for a signal already aborted", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const fiber = yield* Effect.forkChild(whenAborted(controller.signal))
      yield* Effect.yieldNow
      assert.isUndefined(fiber.pollUnsafe())
      controller.abort()
      yield* Fiber.join(fiber)
      yield* whenAborted(AbortSignal.abort())
    }))

  it.effect("interrupted, it removes its listener", () =>
    Effect.gen(function*() {
      const s = counted()
      const fiber = yield* Effect.forkChild(whenAborted(s.signal), { startImmediately: true })
      assert.strictEqual(s.listeners(), 1)
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(s.listeners(), 0)
    }))
})

describe("interruptOnAbort", () => {
  it.effect("the signal firing interrupts the work and runs its finalizers; the caller sees the interruption", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      let finalized = false
      const work = Deferred.succeed(started, undefined).pipe(
        Effect.andThen(Effect.never),
        Effect.ensuring(Effect.sync(() => {
          finalized = true
        }))
      )
      const fiber = yield* Effect.forkChild(Effect.exit(interruptOnAbort(work, controller.signal)))
      yield* Deferred.await(started)
      controller.abort()
      const exit = yield* Fiber.join(fiber)
      assert.isTrue(Exit.hasInterrupts(exit))
      assert.isTrue(finalized)
    }))

  it.effect("a signal aborted before the call: the work is interrupted before it runs", () =>
    Effect.gen(function*() {
      let ran = false
      const exit = yield* Effect.exit(interruptOnAbort(
        Effect.sync(() => {
          ran = true
        }),
        AbortSignal.abort()
      ))
      assert.isTrue(Exit.hasInterrupts(exit))
      assert.isFalse(ran)
    }))

  it.effect("interrupting the caller interrupts the work and removes the listener", () =>
    Effect.gen(function*() {
      const s = counted()
      const started = yield* Deferred.make<void>()
      let finalized = false
      const work = Deferred.succeed(started, undefined).pipe(
        Effect.andThen(Effect.never),
        Effect.ensuring(Effect.sync(() => {
          finalized = true
        }))
      )
      const fiber = yield* Effect.forkChild(interruptOnAbort(work, s.signal))
      yield* Deferred.await(started)
      assert.strictEqual(s.listeners(), 1)
      yield* Fiber.interrupt(fiber)
      assert.isTrue(finalized)
      assert.strictEqual(s.listeners(), 0)
      assert.isFalse(s.signal.aborted)
    }))

  it.effect("success and failure pass through; the listener is removed", () =>
    Effect.gen(function*() {
      const s = counted()
      assert.strictEqual(yield* interruptOnAbort(later(Effect.succeed(1)), s.signal), 1)
      const failed = yield* Effect.exit(interruptOnAbort(later(Effect.fail("no")), s.signal))
      assert.deepStrictEqual(failed, Exit.fail("no"))
      assert.strictEqual(s.added(), 2)
      assert.strictEqual(s.listeners(), 0)
    }))

  it.effect("by default the listener comes first: an abort raised while the work runs synchronously is seen", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      let reached = false
      const work = Effect.sync(() => controller.abort()).pipe(
        Effect.andThen(Effect.yieldNow),
        Effect.andThen(Effect.sync(() => {
          reached = true
        }))
      )
      const exit = yield* Effect.exit(interruptOnAbort(work, controller.signal))
      assert.isTrue(Exit.hasInterrupts(exit))
      assert.isFalse(reached)
    }))

  it.effect("startImmediately: work that completes synchronously needs no listener at all", () =>
    Effect.gen(function*() {
      const s = counted()
      const value = yield* interruptOnAbort(Effect.succeed("done"), s.signal, { startImmediately: true })
      assert.strictEqual(value, "done")
      assert.strictEqual(s.added(), 0)
    }))

  it.effect("startImmediately: work that waits is still interrupted by the signal", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      const work = Effect.andThen(Deferred.succeed(started, undefined), Effect.never)
      const fiber = yield* Effect.forkChild(
        Effect.exit(interruptOnAbort(work, controller.signal, { startImmediately: true }))
      )
      yield* Deferred.await(started)
      controller.abort()
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.join(fiber)))
    }))
})

describe("abortOnInterrupt", () => {
  it.effect("interrupting the caller aborts the controller, and waits for the work to settle on it", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      const settled: Array<string> = []
      // Work that cancels through the signal only: it ends normally once the signal fires.
      const work = Deferred.succeed(started, undefined).pipe(
        Effect.andThen(whenAborted(controller.signal)),
        Effect.andThen(later(Effect.sync(() => settled.push("work settled"))))
      )
      const fiber = yield* Effect.forkChild(abortOnInterrupt(work, controller))
      yield* Deferred.await(started)
      assert.isFalse(controller.signal.aborted)
      const interrupting = yield* Effect.forkChild(Fiber.interrupt(fiber))
      yield* Effect.yieldNow
      assert.isTrue(controller.signal.aborted)
      yield* Fiber.join(interrupting)
      assert.deepStrictEqual(settled, ["work settled"])
    }))

  it.effect("without an interruption the work's value and failure pass through; the signal stays quiet", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      assert.strictEqual(yield* abortOnInterrupt(Effect.succeed(7), controller), 7)
      assert.deepStrictEqual(yield* Effect.exit(abortOnInterrupt(Effect.fail("bad"), controller)), Exit.fail("bad"))
      assert.isFalse(controller.signal.aborted)
    }))

  it.effect("given the caller's restore, the wait is interruptible inside the caller's uninterruptible region", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const started = yield* Deferred.make<void>()
      const work = Effect.andThen(Deferred.succeed(started, undefined), whenAborted(controller.signal))
      const fiber = yield* Effect.forkChild(
        Effect.uninterruptibleMask((restore) => abortOnInterrupt(work, controller, restore))
      )
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      assert.isTrue(controller.signal.aborted)
    }))
})

describe("LazyAbort", () => {
  it("creates no controller until the signal is read; an abort before that is seen on first read", () => {
    let reasons = 0
    const lazy = new LazyAbort(() => {
      reasons++
      return new Error("stopped")
    })
    assert.isFalse(lazy.aborted)
    lazy.abort()
    lazy.abort()
    assert.isTrue(lazy.aborted)
    assert.strictEqual(reasons, 0)
    const signal = lazy.signal
    assert.isTrue(signal.aborted)
    assert.strictEqual((signal.reason as Error).message, "stopped")
    assert.strictEqual(lazy.signal, signal)
  })

  it("aborts a signal already handed out, once", () => {
    const lazy = new LazyAbort(() => new Error("stopped"))
    const signal = lazy.signal
    let fired = 0
    signal.addEventListener("abort", () => fired++)
    assert.isFalse(signal.aborted)
    lazy.abort()
    lazy.abort()
    assert.isTrue(signal.aborted)
    assert.strictEqual(fired, 1)
  })
})
