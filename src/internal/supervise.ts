/**
 * Supervision of a tool batch and its settling after an abort (docs/tool-execution.md, TE 8): the work
 * phase in a fiber that a signal or an interruption stops, running tools stopped (signal first, then
 * interruption) within a grace period and abandoned if they ignore it, and the honest end of every call the
 * abort caught.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
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
import { keepAll, keepFiber } from "./shapes.ts"
import { type Restore, uninterruptibleInFiber } from "./uninterruptible.ts"

/** Aborts the signal of a call whose tool is running (so cleanup that waits on it can finish). */
const abortRunning = (call: Call): void => {
  if (call.state._tag === "Running") call.state.abort()
}

/** Marks every call whose work may still be going on as abandoned (TE 8.2). */
const abandonBusy = (calls: Iterable<Call>): void => {
  for (const call of calls) if (isBusy(call.state)) call.state = Abandoned
}

/**
 * Stops one tool running in a fiber of its own (a timeout, or an abort reaching a call that runs apart):
 * aborts its signal first, then interrupts its fiber, waiting at most the grace period. Returns whether it
 * stopped; one that did not is abandoned (its fiber detached, nothing waits on it).
 */
export const stopTool = (
  fiber: Fiber.Fiber<unknown, unknown>,
  abortSignal: () => void,
  grace: Duration.Duration
): Effect.Effect<boolean> =>
  Effect.sync(abortSignal).pipe(
    Effect.andThen(Effect.interruptible(Fiber.interrupt(fiber))),
    Effect.timeoutOption(grace),
    Effect.map(Option.isSome)
  )

/**
 * The execute phase of parallel mode (TE 6.2, TE 8.1): starts each prepared call, in source order, once a
 * slot is free (at most `concurrency` at once). `isStopping` is checked at the very moment a call would
 * start, so an abort raised by an earlier call (its tool, its hook, a subscriber of its events) stops every
 * later one.
 *
 * A call whose handler and hooks return already-complete Effects needs no fiber; any other runs in one fiber
 * of its own, started and registered in the same uninterruptible step, so that interrupting this phase
 * always reaches every started call. The calls are started in a plain loop inside that step (one step of
 * this fiber per run of the loop, not per call), and this fiber waits only when it must: for a free slot,
 * for the last call, or for a failure; never once per settled call. A call's fiber that ends interrupted
 * while its tool is running gets its signal aborted and is marked stopped. Stopping gives the calls the grace
 * period together; a call whose tool ignores cancellation is then abandoned, alone: its fiber is detached,
 * so nothing of the batch waits on it, and being interrupted it never goes on to finalize.
 */
export const executeAll = <P extends { readonly call: Call }, R>(
  prepared: ReadonlyArray<P>,
  run: (p: P) => Effect.Effect<void, never, R>,
  concurrency: number | "unbounded",
  isStopping: () => boolean,
  grace: Duration.Duration
): Effect.Effect<void, never, R> =>
  uninterruptibleInFiber(startPool<P, R>, { prepared, run, concurrency, isStopping, grace })

/** What {@link executeAll} hands the pool. */
interface PoolInput<P, R> {
  readonly prepared: ReadonlyArray<P>
  readonly run: (p: P) => Effect.Effect<void, never, R>
  readonly concurrency: number | "unbounded"
  readonly isStopping: () => boolean
  readonly grace: Duration.Duration
}

function startPool<P extends { readonly call: Call }, R>(
  input: PoolInput<P, R>,
  restore: Restore,
  parent: Fiber.Fiber<unknown, unknown>
): Effect.Effect<void, never, R> {
  const pool = new Pool(input.prepared, input.run, input.concurrency, input.isStopping, input.grace, parent, restore)
  return Effect.onInterrupt(pool.loop(), pool.stopAll.bind(pool))
}

/**
 * The state of {@link executeAll}. A class whose methods do the work, with bound methods as the callbacks
 * (one per call for its fiber's observer): a closure made per call or per batch loses its optimized code at
 * every major GC once none of it is alive, and the next batch would compile it again.
 */
class Pool<P extends { readonly call: Call }, R> {
  readonly prepared: ReadonlyArray<P>
  readonly run: (p: P) => Effect.Effect<void, never, R>
  readonly limit: number
  readonly isStopping: () => boolean
  readonly grace: Duration.Duration
  readonly restore: Restore
  readonly running = new Map<Fiber.Fiber<void, never>, Call>()
  readonly fork: (effect: Effect.Effect<void, never, R>) => Fiber.Fiber<void, never>
  failure: Cause.Cause<never> | undefined = undefined
  wake: (() => void) | undefined = undefined
  index = 0
  forked = 0
  draining = false
  readonly next: () => Effect.Effect<void, never, R>
  /** Only one waiter at a time: the loop, or the stop once the loop is interrupted. */
  readonly change: Effect.Effect<void>
  constructor(
    prepared: ReadonlyArray<P>,
    run: (p: P) => Effect.Effect<void, never, R>,
    concurrency: number | "unbounded",
    isStopping: () => boolean,
    grace: Duration.Duration,
    parent: Fiber.Fiber<unknown, unknown>,
    restore: Restore
  ) {
    this.prepared = prepared
    this.run = run
    this.limit = concurrency === "unbounded" ? Number.POSITIVE_INFINITY : Math.max(1, concurrency)
    this.isStopping = isStopping
    this.grace = grace
    this.restore = restore
    // The fibers run with the batch's services: `run` is typed with `R`, which the caller provides.
    this.fork = Effect.runForkWith(parent.context as Context.Context<R>)
    this.next = this.loop.bind(this)
    // One parameter: no AbortController.
    this.change = Effect.callback<void>(this.register.bind(this))
  }
  /** Whether the waiting fiber has something to do: start the next call or finish; once stopping, finish. */
  needed(): boolean {
    return this.draining
      ? this.running.size === 0
      : this.failure !== undefined || this.running.size === 0 ||
        (this.index < this.prepared.length && this.running.size < this.limit)
  }
  register(resume: (effect: Effect.Effect<void>) => void): void {
    if (this.needed()) return resume(Effect.void)
    this.wake = () => resume(Effect.void)
  }
  record(call: Call, exit: Exit.Exit<void, never>): void {
    if (Exit.isSuccess(exit)) return
    if (Cause.hasInterrupts(exit.cause)) {
      // Its own cleanup is done: the tool stopped (TE 8.2), it is not abandoned.
      const state = call.state
      if (state._tag === "Running") {
        state.abort()
        call.state = Stopped
      }
    }
    if (!Cause.hasInterruptsOnly(exit.cause)) this.failure ??= exit.cause
  }
  settled(fiber: Fiber.Fiber<void, never>, call: Call, exit: Exit.Exit<void, never>): void {
    this.running.delete(fiber)
    keepFiber("call", fiber)
    this.record(call, exit)
    if (this.wake === undefined || !this.needed()) return
    const resume = this.wake
    this.wake = undefined
    resume()
  }
  stopAll(): Effect.Effect<void> {
    this.draining = true
    for (const [fiber, call] of this.running) {
      abortRunning(call)
      fiber.interruptUnsafe()
    }
    return Effect.map(Effect.timeoutOption(Effect.interruptible(this.change), this.grace), (stopped) => {
      if (Option.isNone(stopped)) abandonBusy(this.running.values())
    })
  }
  loop(): Effect.Effect<void, never, R> {
    const { prepared, running } = this
    while (this.failure === undefined) {
      if (this.index === prepared.length || running.size >= this.limit) {
        return running.size === 0 ? Effect.void : Effect.flatMap(this.restore(this.change), this.next)
      }
      if (this.isStopping()) return Effect.interrupt
      const p = prepared[this.index++]!
      const effect = this.run(p)
      if (Exit.isExit(effect)) {
        if (Exit.isFailure(effect)) return effect
      } else {
        const fiber = this.fork(effect)
        const exit = fiber.pollUnsafe()
        if (exit === undefined) {
          running.set(fiber, p.call)
          fiber.addObserver(this.settled.bind(this, fiber, p.call))
          // Let the first timers and I/O of the started calls through while the later ones start.
          if ((++this.forked & 63) === 0) return Effect.flatMap(Effect.yieldNow, this.next)
          continue
        }
        // Complete already (an `Effect.sync` handler): counted with the instant calls below.
        keepFiber("call", fiber)
        this.record(p.call, exit)
      }
      // TE 9.5: a huge batch of calls that complete at once must not starve the other fibers.
      if ((this.index & 2047) === 0) return Effect.flatMap(Effect.yieldNow, this.next)
    }
    return Effect.andThen(Effect.suspend(() => this.stopAll()), Effect.failCause(this.failure))
  }
}

// One instance kept, so that a major GC between batches does not drop the class's map (see `shapes.ts`).
keepAll([
  new Pool(
    [],
    () => Effect.void,
    1,
    () => false,
    Duration.zero,
    { context: Context.empty() } as Fiber.Fiber<unknown, unknown>,
    (effect) => effect
  )
])

/**
 * Runs the work phase in its own fiber until it finishes, the signal fires, or this fiber is interrupted
 * (TE 8). On abort `stop` is called (no tool may start after it), the running tools' signals are aborted
 * (so cleanup that waits on them can finish), then the work is interrupted and given the grace period to
 * stop. While `toolInWork()` (a tool runs in the work fiber) the interruption is sent a microtask later:
 * an abort raised by the tool's own first steps then reaches it at its first wait rather than between two
 * of its steps, as it would a tool in a fiber of its own (one that ends first must not go on: see the
 * batch's `stoppedInWork`). Work that does not stop in time (a tool that ignores cancellation, a
 * subscriber that never returns) is abandoned: `abandon` drops its later events. Returns how the work ended.
 */
export const supervise = <R>(
  work: Effect.Effect<void, never, R>,
  calls: ReadonlyArray<Call>,
  signal: AbortSignal | undefined,
  grace: Duration.Duration,
  stop: () => void,
  toolInWork: () => boolean,
  abandon: () => void,
  restore: Restore
): Effect.Effect<Exit.Exit<void, never>, never, R> =>
  Effect.withFiber(
    startSupervision.bind(undefined, work, calls, signal, grace, stop, toolInWork, abandon, restore) as (
      parent: Fiber.Fiber<unknown, unknown>
    ) => Effect.Effect<Exit.Exit<void, never>, never, R>
  )

/**
 * One supervision. Its steps are module functions bound to it, not closures: it is made per batch, and a
 * closure's optimized code is dropped by a major collection once none of its instances is alive.
 *
 * The work starts on a microtask, once the batch's fiber waits (no trip through the scheduler, no turn of
 * the event loop), in a detached fiber (a child would be awaited when this one exits, and abandoned work
 * must not hold it). Since the batch's fiber is then waiting, an interruption arriving while the work runs
 * synchronously reaches it at once, and `stop` is called before the work can start another tool (TE 8.1).
 */
class Supervision<R> {
  /** The work fiber, once started. */
  fiber: Fiber.Fiber<void, never> | undefined = undefined
  /** The work must no longer start (or be waited for). */
  cancelled = false
  resume: ((effect: Effect.Effect<Exit.Exit<void, never> | undefined>) => void) | undefined = undefined
  removeObserver: (() => void) | undefined = undefined
  readonly work: Effect.Effect<void, never, R>
  readonly calls: ReadonlyArray<Call>
  readonly signal: AbortSignal | undefined
  readonly grace: Duration.Duration
  readonly stop: () => void
  readonly toolInWork: () => boolean
  readonly abandon: () => void
  readonly parent: Fiber.Fiber<unknown, unknown>
  readonly onAbort: () => void
  readonly startWork: () => void
  readonly recordFiber: (self: Fiber.Fiber<unknown, unknown>) => Effect.Effect<void, never, R>
  readonly onWorkExit: (exit: Exit.Exit<void, never>) => void
  readonly interruptWork: () => void
  readonly afterWait: (first: Exit.Exit<Exit.Exit<void, never> | undefined>) => Effect.Effect<Exit.Exit<void, never>>
  constructor(
    work: Effect.Effect<void, never, R>,
    calls: ReadonlyArray<Call>,
    signal: AbortSignal | undefined,
    grace: Duration.Duration,
    stop: () => void,
    toolInWork: () => boolean,
    abandon: () => void,
    parent: Fiber.Fiber<unknown, unknown>
  ) {
    this.work = work
    this.calls = calls
    this.signal = signal
    this.grace = grace
    this.stop = stop
    this.toolInWork = toolInWork
    this.abandon = abandon
    this.parent = parent
    this.onAbort = supervisedAbort.bind(undefined, this)
    this.startWork = startSupervisedWork.bind(undefined, this)
    this.recordFiber = recordWorkFiber.bind(undefined, this) as (
      self: Fiber.Fiber<unknown, unknown>
    ) => Effect.Effect<void, never, R>
    this.onWorkExit = supervisedWorkExit.bind(undefined, this)
    this.interruptWork = interruptSupervisedWork.bind(undefined, this)
    this.afterWait = afterSupervisedWait.bind(undefined, this)
  }
}

keepAll([
  new Supervision(Effect.void, [], undefined, Duration.zero, () => {}, () => false, () => {}, {
    context: Context.empty()
  } as Fiber.Fiber<unknown, unknown>)
])

function startSupervision<R>(
  work: Effect.Effect<void, never, R>,
  calls: ReadonlyArray<Call>,
  signal: AbortSignal | undefined,
  grace: Duration.Duration,
  stop: () => void,
  toolInWork: () => boolean,
  abandon: () => void,
  restore: Restore,
  parent: Fiber.Fiber<unknown, unknown>
): Effect.Effect<Exit.Exit<void, never>> {
  const supervision = new Supervision(work, calls, signal, grace, stop, toolInWork, abandon, parent)
  const wait = Effect.callback<Exit.Exit<void, never> | undefined>(
    registerSupervision.bind(undefined, supervision) as (
      resume: (effect: Effect.Effect<Exit.Exit<void, never> | undefined>) => void
    ) => Effect.Effect<void> | undefined
  )
  return Effect.flatMap(Effect.exit(restore(wait)), supervision.afterWait)
}

/**
 * Starts the work and waits for its exit, or for the signal (`undefined`), whichever comes first: one
 * listener and one observer, removed by whichever fires or by an interruption (no racing fibers).
 */
function registerSupervision(
  supervision: Supervision<unknown>,
  resume: (effect: Effect.Effect<Exit.Exit<void, never> | undefined>) => void
): Effect.Effect<void> | undefined {
  const signal = supervision.signal
  if (signal?.aborted) {
    resume(Effect.succeed(undefined))
    return undefined
  }
  supervision.resume = resume
  signal?.addEventListener("abort", supervision.onAbort, { once: true })
  queueMicrotask(supervision.startWork)
  return Effect.sync(cancelSupervisedWait.bind(undefined, supervision))
}

function supervisedAbort(supervision: Supervision<unknown>): void {
  supervision.cancelled = true
  supervision.removeObserver?.()
  supervision.resume!(Effect.succeed(undefined))
}

function cancelSupervisedWait(supervision: Supervision<unknown>): void {
  supervision.cancelled = true
  supervision.signal?.removeEventListener("abort", supervision.onAbort)
  supervision.removeObserver?.()
}

function startSupervisedWork<R>(supervision: Supervision<R>): void {
  if (supervision.cancelled) return
  // The work needs `R`, which the batch's fiber context provides. It records its fiber before anything
  // else: what it runs synchronously may interrupt the batch's fiber, which must then find it.
  const fiber = Effect.runForkWith(supervision.parent.context as Context.Context<R>)(
    Effect.withFiber(supervision.recordFiber)
  )
  supervision.removeObserver = fiber.addObserver(supervision.onWorkExit)
}

function recordWorkFiber<R>(supervision: Supervision<R>, self: Fiber.Fiber<unknown, unknown>) {
  supervision.fiber = self as Fiber.Fiber<void, never>
  return Effect.interruptible(supervision.work)
}

function supervisedWorkExit(supervision: Supervision<unknown>, exit: Exit.Exit<void, never>): void {
  keepFiber("work", supervision.fiber!)
  supervision.signal?.removeEventListener("abort", supervision.onAbort)
  supervision.resume!(Effect.succeed(exit))
}

function interruptSupervisedWork(supervision: Supervision<unknown>): void {
  supervision.fiber!.interruptUnsafe()
}

function afterSupervisedWait(
  supervision: Supervision<unknown>,
  first: Exit.Exit<Exit.Exit<void, never> | undefined>
): Effect.Effect<Exit.Exit<void, never>> {
  if (Exit.isSuccess(first) && first.value !== undefined) return Effect.succeed(first.value)
  return stopSupervisedWork(supervision)
}

/** The abort path: stop, interrupt the work, wait at most the grace period, abandon what is left. */
const stopSupervisedWork = Effect.fnUntraced(function*(supervision: Supervision<unknown>) {
  supervision.stop()
  supervision.cancelled = true
  const fiber = supervision.fiber
  // Stopped before the work started: no call was reached.
  if (fiber === undefined) return Exit.interrupt()
  for (const call of supervision.calls) abortRunning(call)
  if (supervision.toolInWork()) queueMicrotask(supervision.interruptWork)
  else fiber.interruptUnsafe()
  const stopped = yield* Effect.timeoutOption(Effect.interruptible(Fiber.await(fiber)), supervision.grace)
  if (Option.isSome(stopped)) return stopped.value
  abandonBusy(supervision.calls)
  supervision.abandon()
  return Exit.interrupt()
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
