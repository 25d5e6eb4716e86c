/**
 * Keeps one object of each kind a tool batch runs on alive between batches, so that the code of the batch
 * stays optimized across a major garbage collection.
 *
 * Why: V8 keeps the hidden classes (maps) of a class's instances only while some instance, or some code
 * other than optimized code, holds them. A major collection that finds no instance alive drops them, and
 * deoptimizes every function optimized against them ("weak objects"): for a batch that is the Effect
 * runtime's fibers and primitives and this package's call objects, that is, the whole path of a call. A
 * process that waits between batches (for the model, for a person) is exactly where V8 collects, so the
 * next batch would run unoptimized code until it warms up again. One instance of each is enough to keep
 * the maps, and costs a few objects: the fibers kept are finished ones (their context and stack are
 * emptied when they exit) whose exit holds nothing (`void`), the rest are made once.
 *
 * The same holds for code: V8 keeps a function's optimized code only while a closure that runs it is alive.
 * A closure made per call (or per batch) is gone between batches, so a major collection discards its code
 * and the next batch compiles it again (background compilation counts as the process's CPU time). The call
 * path is therefore written as module functions and class methods (alive for good), with bound functions
 * where Effect needs a continuation.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/**
 * Instances of `AsyncResource` where there is one (Node's `node:async_hooks`), in the states the runtime
 * leaves them: the one Effect's runtime captures for a waiting fiber, after it resumed the fiber and destroyed
 * it, and the one Node's `queueMicrotask` makes (with its `callback`).
 */
function asyncResources(): ReadonlyArray<unknown> {
  try {
    const Resource = (globalThis as any).process?.getBuiltinModule?.("node:async_hooks")?.AsyncResource
    if (Resource === undefined) return []
    const fiber = new Resource("effect/Fiber")
    fiber.runInAsyncScope(() => undefined)
    fiber.emitDestroy()
    const microtask = new Resource("Microtask", { requireManualDestroy: true })
    microtask.callback = () => undefined
    return [fiber, microtask]
  } catch {
    return []
  }
}

/** Effect primitives a batch builds for every call, one of each kind, and an abort signal. */
const primitives: ReadonlyArray<unknown> = [
  Effect.sync(() => undefined),
  Effect.suspend(() => Effect.void),
  Effect.flatMap(Effect.void, () => Effect.void),
  Effect.map(Effect.void, () => undefined),
  Effect.matchCauseEffect(Effect.void, { onSuccess: () => Effect.void, onFailure: () => Effect.void }),
  Effect.onInterrupt(Effect.void, () => Effect.void),
  Effect.onExit(Effect.void, () => Effect.void),
  Effect.uninterruptibleMask((restore) => restore(Effect.void)),
  Effect.withFiber(() => Effect.void),
  Effect.callback<void>(() => {}),
  Effect.promise(() => Promise.resolve()),
  Effect.gen(function*() {}),
  Effect.exit(Effect.void),
  Effect.catch(Effect.void, () => Effect.void),
  Effect.interruptible(Effect.void),
  Effect.uninterruptible(Effect.void),
  Effect.yieldNow,
  Exit.succeed(undefined),
  Exit.failCause(Cause.fail(undefined)),
  Exit.failCause(Cause.interrupt()),
  // The run's signal is checked before every call starts (TE 8.1).
  new AbortController().signal,
  // A fiber that waits captures one (Effect's runtime, on Node), resumed and destroyed on its next step.
  asyncResources()
]

/**
 * The slots: a finished fiber of each role, replaced by the latest. (Not a tool's own fiber: its exit holds
 * the tool's result, which may be large.)
 */
type Slot = "work" | "call"

const fibers: Partial<Record<Slot, unknown>> = {}

/** Keeps `value` (a finished fiber whose exit holds nothing) as the instance of its role. */
export const keepFiber = (slot: Slot, value: object): void => {
  fibers[slot] = value
}

/** Keeps objects made once (instances of this package's classes). */
export const keepAll = (values: ReadonlyArray<object>): void => {
  kept.push(...values)
}

const kept: Array<unknown> = [primitives]
