/**
 * Issue 16 item 7, in-process: each stop signal interrupts the wrapped main effect, is remembered for the
 * exit code (128 + its number), and the listeners go away with the effect. (The whole shutdown, with a
 * running `bash`, is checked on real subprocesses in sigint.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { interruptedExitCode, interruptOnStopSignals, receivedSignal } from "../../src/cli/internal/signals.ts"

describe("interruptOnStopSignals", () => {
  it.effect("SIGHUP interrupts the program like SIGINT, the exit code is 129, and the listeners are removed", () =>
    Effect.gen(function*() {
      const before = { SIGHUP: process.listenerCount("SIGHUP"), SIGTERM: process.listenerCount("SIGTERM") }
      assert.strictEqual(interruptedExitCode(), 130) // no signal yet: an interrupt counts as Ctrl-C
      const started = yield* Deferred.make<void>()
      const cleaned = yield* Deferred.make<void>()
      const program = interruptOnStopSignals(
        Deferred.succeed(started, undefined).pipe(
          Effect.andThen(Effect.never),
          Effect.onInterrupt(() => Deferred.succeed(cleaned, undefined))
        )
      )
      const fiber = yield* Effect.forkDetach(program)
      yield* Deferred.await(started)
      assert.strictEqual(process.listenerCount("SIGHUP"), before.SIGHUP + 1)
      process.emit("SIGHUP", "SIGHUP")
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.hasInterrupts(exit))
      assert.isTrue(yield* Deferred.isDone(cleaned), "the program's own finalizers ran")
      assert.strictEqual(receivedSignal(), "SIGHUP")
      assert.strictEqual(interruptedExitCode(), 129)
      assert.strictEqual(process.listenerCount("SIGHUP"), before.SIGHUP)
      assert.strictEqual(process.listenerCount("SIGTERM"), before.SIGTERM)
    }))
})
