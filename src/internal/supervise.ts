/**
 * How a batch stops (docs/tool-execution.md, TE 8), in ten lines:
 *
 * 1. The batch's work (every call's phases, {@link supervise}) runs in a fiber of its own while the batch's
 *    fiber waits for it, for the run's signal, or for its own interruption, whichever comes first.
 * 2. On abort (signal or interruption) the batch first says it is stopping, so no tool starts after that
 *    (TE 8.1), then aborts the signal of every running tool and interrupts the work.
 * 3. Each pending tool runs in a fiber of its own ({@link runTool}). Interrupted, its call aborts the tool's
 *    signal, interrupts its fiber and waits at most the grace period: a tool that stops is `Stopped`, one
 *    that ignores cancellation is `Abandoned` and left running, with nothing of the batch waiting on it.
 * 4. A timeout (TE 3.5) stops a tool the same way, and its call goes on with a timeout result.
 * 5. Work that does not stop within the grace period (a hook or subscriber that never returns) is abandoned
 *    too: its later events are dropped, and every call still busy is marked abandoned.
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

/** Marks every call whose work may still be going on as abandoned (TE 8.2). */
const abandonBusy = (calls: Iterable<Call>): void => {
  for (const call of calls) if (isBusy(call.state)) call.state = Abandoned
}

/**
 * Stops a tool running in a fiber of its own: aborts its signal first, then interrupts its fiber, waiting at
 * most the grace period. Returns whether it stopped.
 */
const stopTool = (fiber: Fiber.Fiber<unknown, unknown>, abort: () => void, grace: Duration.Duration) =>
  Effect.sync(abort).pipe(
    Effect.andThen(Effect.interruptible(Fiber.interrupt(fiber))),
    Effect.timeoutOption(grace),
    Effect.map(Option.isSome)
  )

/** A tool that did not finish within its timeout; `stopped` says whether it then stopped when cancelled. */
export class TimedOut {
  readonly stopped: boolean
  constructor(stopped: boolean) {
    this.stopped = stopped
  }
}

/**
 * Runs a tool's Effect in a fiber of its own, started at once, and waits for it (at most `timeout`). A tool
 * that ends synchronously is done without any waiting. Interrupting the wait stops the tool (see the module)
 * and then interrupts the caller; a call still `Running` by then becomes `Stopped` or `Abandoned`.
 */
export const runTool = <A, E>(
  tool: Effect.Effect<A, E>,
  call: Call,
  abort: () => void,
  grace: Duration.Duration,
  timeout: Duration.Duration | undefined
): Effect.Effect<Exit.Exit<A, E> | TimedOut> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDetach(tool, { startImmediately: true }), (fiber) => {
      const done = fiber.pollUnsafe()
      if (done !== undefined) return Effect.succeed(done)
      const stop = Effect.map(stopTool(fiber, abort, grace), (stopped) => {
        // The supervisor may have abandoned and settled the call meanwhile: its settled state stands.
        if (call.state._tag === "Running") call.state = stopped ? Stopped : Abandoned
        return stopped
      })
      const waited = timeout === undefined
        ? Effect.asSome(Fiber.await(fiber))
        : Effect.timeoutOption(Fiber.await(fiber), timeout)
      return Effect.flatMap(
        Effect.onInterrupt(restore(waited), () => stop),
        (exit): Effect.Effect<Exit.Exit<A, E> | TimedOut> =>
          Option.isSome(exit) ? Effect.succeed(exit.value) : Effect.map(stop, (stopped) => new TimedOut(stopped))
      )
    })
  )

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
