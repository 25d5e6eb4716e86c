/**
 * How a batch stops (docs/tool-execution.md, TE 8), in ten lines:
 *
 * 1. The batch's work (every call's phases, {@link supervise}) runs in a fiber of its own while the batch's
 *    fiber waits for it, for the run's signal, or for its own interruption, whichever comes first.
 * 2. On abort (signal or interruption) the batch first says it is stopping, so no tool starts after that
 *    (TE 8.1), then aborts the signal of every running tool and interrupts the work.
 * 3. A tool runs in the fiber of its call ({@link runHere}: `Effect.forEach`'s fiber for it in parallel mode,
 *    the work's in sequential mode), so the interruption meets it at its next wait; it is then `Stopped`.
 * 4. What must be given up on alone runs apart ({@link runApart}): a tool with a timeout (TE 3.5), stopped
 *    when its time is up, and the parallel execute step, so that a tool ignoring cancellation holds only
 *    its own call's fiber. Stopped, it is interrupted and, after the grace period, left running.
 * 5. Work that does not stop within the grace period (a tool that ignores cancellation, a hook or subscriber
 *    that never returns) is abandoned: its later events are dropped, every call still busy is `Abandoned`.
 * 6. Then {@link settleRemaining} gives every call the abort caught its missing events (TE 8.3).
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type { ExecutionMode } from "../Tool.ts"
import {
  Abandoned,
  type Call,
  errorResult,
  type Finalized,
  hasEndEvent,
  hasStartEvent,
  isBusy,
  Stopped,
  wasAbandoned,
  wasStarted
} from "./callState.ts"
import type { Restore } from "./uninterruptible.ts"

/** Aborts the signal of a call whose tool is running (so cleanup that waits on it can finish). */
const abortRunning = (call: Call): void => {
  if (call.state._tag === "Running") call.state.abort()
}

/** A tool stopped apart: its call, if still running, is stopped, or abandoned if it did not stop (TE 8.2). */
export const stopCall = (call: Call, stopped: boolean): void => {
  if (call.state._tag === "Running") call.state = stopped ? Stopped : Abandoned
}

/** Work that did not finish within its timeout; `stopped` says whether it then stopped when cancelled. */
export class TimedOut {
  readonly stopped: boolean
  constructor(stopped: boolean) {
    this.stopped = stopped
  }
}

/** How {@link runApart} stops what it runs. */
export interface Stopping {
  /** Called first (a tool's signal, so that cleanup waiting on it can finish). */
  readonly abort: () => void
  readonly grace: Duration.Duration
  /** Called once stopping is over: `false` when the fiber was left running after the grace period. */
  readonly onStopped: (stopped: boolean) => void
}

/**
 * Runs `effect` in a detached fiber of its own, started at once, and waits for it (at most `timeout`). When
 * the wait is interrupted or the time is up, it aborts, interrupts the fiber and waits at most the grace
 * period; a fiber that has not stopped by then is left running, with nothing waiting on it (TE 8.2). An
 * interrupted wait then interrupts the caller.
 */
export const runApart = <A, E>(
  effect: Effect.Effect<A, E>,
  stopping: Stopping,
  timeout?: Duration.Duration
): Effect.Effect<Exit.Exit<A, E> | TimedOut> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDetach(effect, { startImmediately: true }), (fiber) => {
      const done = fiber.pollUnsafe()
      if (done !== undefined) return Effect.succeed(done)
      const stop = () =>
        Effect.sync(stopping.abort).pipe(
          Effect.andThen(Effect.interruptible(Fiber.interrupt(fiber))),
          Effect.timeoutOption(stopping.grace),
          Effect.map((stopped) => {
            stopping.onStopped(Option.isSome(stopped))
            return Option.isSome(stopped)
          })
        )
      if (timeout === undefined) return Effect.onInterrupt(restore(Fiber.await(fiber)), stop)
      return Effect.flatMap(
        Effect.onInterrupt(restore(Effect.timeoutOption(Fiber.await(fiber), timeout)), stop),
        (exit): Effect.Effect<Exit.Exit<A, E> | TimedOut> =>
          Option.isSome(exit) ? Effect.succeed(exit.value) : Effect.map(stop(), (stopped) => new TimedOut(stopped))
      )
    })
  )

/**
 * Runs a tool's Effect in the fiber of its call. Interrupting that fiber interrupts the tool at its next wait;
 * once the tool's own finalizers are done its signal is aborted and its call, if still running, stopped.
 */
export const runHere = <A, E>(
  tool: Effect.Effect<A, E>,
  call: Call,
  abort: () => void
): Effect.Effect<Exit.Exit<A, E>> =>
  Effect.exit(Effect.onInterrupt(tool, () =>
    Effect.sync(() => {
      abort()
      if (call.state._tag === "Running") call.state = Stopped
    })))

/** Marks every call whose work may still be going on as abandoned (TE 8.2). */
export const abandonBusy = (calls: Iterable<Call>): void => {
  for (const call of calls) if (isBusy(call.state)) call.state = Abandoned
}

/** What {@link supervise} needs besides the work. */
export interface SuperviseOptions {
  readonly calls: ReadonlyArray<Call>
  readonly signal: AbortSignal | undefined
  readonly grace: Duration.Duration
  /** Called first on abort: no tool may start from then on (TE 8.1). */
  readonly onStop: () => void
  /** The work did not stop within the grace period: drop its later events. */
  readonly onAbandon: () => void
}

/**
 * Runs the work in a detached fiber until it finishes, the signal fires, or this fiber is interrupted, and
 * returns how the work ended (see the module). The work starts on a microtask, once this fiber waits: an
 * interruption raised by the work's own synchronous steps (a tool, a hook, a subscriber) then reaches this
 * waiting fiber at once, and stops the batch before the work can start another tool. Detached, not a child:
 * abandoned work must not hold this fiber when it exits.
 */
export const supervise = <R>(
  work: Effect.Effect<void, never, R>,
  options: SuperviseOptions,
  restore: Restore
): Effect.Effect<Exit.Exit<void>, never, R> =>
  Effect.withFiber((parent) => {
    const { signal } = options
    let fiber: Fiber.Fiber<void> | undefined = undefined
    let cancelled = false
    const firstOf = Effect.callback<Exit.Exit<void> | undefined>((resume) => {
      if (signal?.aborted) return resume(Effect.succeed(undefined))
      let removeObserver: (() => void) | undefined = undefined
      const onAbort = () => {
        cancelled = true
        removeObserver?.()
        resume(Effect.succeed(undefined))
      }
      signal?.addEventListener("abort", onAbort, { once: true })
      queueMicrotask(() => {
        if (cancelled) return
        // The work records its fiber before anything else: what it runs may interrupt this fiber at once.
        const started = Effect.runForkWith(parent.context as Context.Context<R>)(Effect.withFiber((self) => {
          fiber = self as Fiber.Fiber<void>
          return Effect.interruptible(work)
        }))
        removeObserver = started.addObserver((exit) => {
          signal?.removeEventListener("abort", onAbort)
          resume(Effect.succeed(exit))
        })
      })
      return Effect.sync(() => {
        cancelled = true
        signal?.removeEventListener("abort", onAbort)
        removeObserver?.()
      })
    })
    const stopWork = Effect.suspend((): Effect.Effect<Exit.Exit<void>> => {
      options.onStop()
      cancelled = true
      // Stopped before the work started: no call was reached.
      if (fiber === undefined) return Effect.succeed(Exit.interrupt())
      for (const call of options.calls) abortRunning(call)
      const work = fiber
      // A microtask later: the abort may come from the first steps of a call the work is still starting, and
      // `Effect.forEach` registers a call's fiber (which its interruption reaches) only once those are done.
      queueMicrotask(() => work.interruptUnsafe())
      return Effect.map(Effect.timeoutOption(Effect.interruptible(Fiber.await(work)), options.grace), (stopped) => {
        if (Option.isSome(stopped)) return stopped.value
        abandonBusy(options.calls)
        options.onAbandon()
        return Exit.interrupt()
      })
    })
    return Effect.flatMap(
      Effect.exit(restore(firstOf)),
      (first) => Exit.isSuccess(first) && first.value !== undefined ? Effect.succeed(first.value) : stopWork
    )
  })

/** The honest result of a call the abort caught before it ended (TE 8.3). */
const interruptedResult = (call: Call, reason: string): Finalized => {
  const name = call.toolCall.name
  if (!wasStarted(call.state)) {
    return errorResult(`Tool ${name} was not executed: ${reason} before it started.`, {
      aborted: true,
      started: false
    })
  }
  const abandoned = wasAbandoned(call.state)
  return errorResult(
    `Tool ${name} was interrupted after it started: ${reason}. It may have had side effects.${
      abandoned ? " It did not stop when cancelled and was abandoned." : ""
    }`,
    { aborted: true, started: true, abandoned }
  )
}

/** The events a settled call may still be owed, each a no-op once sent (bounded by the grace period). */
export interface SettleSteps {
  readonly start: (call: Call) => Effect.Effect<void>
  readonly end: (call: Call, finalized: Finalized) => Effect.Effect<void>
  /** `message_start` and `message_end`, or only the latter if the former went out. */
  readonly message: (call: Call) => Effect.Effect<void>
}

/**
 * Gives every call that the abort caught its start (if it had none), end and result message, keeping the
 * order rules of the mode (TE 6, TE 8.3).
 */
export const settleRemaining = (
  calls: ReadonlyArray<Call>,
  mode: ExecutionMode,
  reason: string,
  steps: SettleSteps
): Effect.Effect<void> => {
  const start = (call: Call) => hasStartEvent(call.state) ? Effect.void : steps.start(call)
  const end = (call: Call) => hasEndEvent(call.state) ? Effect.void : steps.end(call, interruptedResult(call, reason))
  const message = (call: Call) => call.state._tag === "Done" ? Effect.void : steps.message(call)
  return mode === "sequential"
    ? Effect.forEach(calls, (call) => start(call).pipe(Effect.andThen(end(call)), Effect.andThen(message(call))), {
      discard: true
    })
    : Effect.forEach(calls, start, { discard: true }).pipe(
      Effect.andThen(Effect.forEach(calls, end, { discard: true })),
      Effect.andThen(Effect.forEach(calls, message, { discard: true }))
    )
}

/** Whether an exit of the work says the batch was aborted rather than broken. */
export const wasInterrupted = (exit: Exit.Exit<void>): boolean =>
  Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause)
