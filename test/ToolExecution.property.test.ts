/**
 * Property tests of `executeToolCalls` (`docs/tool-execution.md`, TE 10) over random batches:
 * random tool behaviours, random hooks, random declarations of what calls touch (TE 11), random mode,
 * concurrency limit, timeouts, subscriber behaviour and abort point (see `support/arbitraryBatch.ts`). Time is
 * virtual: the batch is forked and the TestClock is advanced step by step until it completes (a bounded loop,
 * so a hang is reported, not waited for).
 *
 * Every event is recorded with a global sequence number, as are tool-side facts (when each tool body began
 * and ended, when the hooks and the declarations ran, which fibers ran batch code and whether they were still
 * running when the batch returned), and every invariant is checked on every case.
 *
 * A failing case prints the shrunk counterexample, the violated invariants with the recorded trace, and a
 * `Replay:` token. Environment knobs:
 * - `PROP_REPLAY=<token>` replays one failure (select its property with `-t`);
 * - `PROP_SEED=<seed>` fixes the seed (by default each run draws a new one);
 * - `PROP_RUNS_FACTOR=<n>` multiplies the number of runs (e.g. 10 for a long local search);
 * - `PROP_STATS=1` prints what the generated cases exercised.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Exit, Fiber, References, Schema } from "effect"
import { TestClock } from "effect/testing"
import type { AgentEvent } from "../src/AgentEvent.ts"
import type { EventSinkShape } from "../src/EventSink.ts"
import * as EventSink from "../src/EventSink.ts"
import { type AssistantMessage, emptyUsage, type ToolCall, type ToolResultMessage } from "../src/Message.ts"
import * as ResourceAccess from "../src/ResourceAccess.ts"
import * as Tool from "../src/Tool.ts"
import type { ToolContext, ToolResult } from "../src/Tool.ts"
import {
  type AfterToolCallResult,
  type BeforeToolCallResult,
  executeToolCalls,
  type ToolBatchResult,
  type ToolExecutionOptions
} from "../src/ToolExecution.ts"
import { entry, type RegisteredTool, ToolRegistry, type ToolRegistryShape } from "../src/ToolRegistry.ts"
import {
  abortByInterrupt,
  abortBySignal,
  abortFromInside,
  type AbortPoint,
  type Access,
  type BatchCase,
  type CallSpec,
  declarationDies,
  declares,
  type HookShape,
  HORIZON_MS,
  isDuplicate,
  isImmediate,
  isRefusedEarly,
  isSequential,
  makeBatchCaseArb,
  noAbort,
  timeoutOf
} from "./support/arbitraryBatch.ts"

// ---------------------------------------------------------------------------------------------------------
// Recording
// ---------------------------------------------------------------------------------------------------------

interface Recorded {
  readonly seq: number
  readonly event: AgentEvent
  /** Virtual time of the event. */
  readonly at: number
}

interface BodyBegin {
  readonly seq: number
  readonly i: number
  /** Virtual time at which the handler was called. */
  readonly at: number
  readonly args: unknown
  /** The AbortSignal the tool was handed. */
  readonly signal: AbortSignal
  /** Whether the Effect the handler returned began running (an abort inside the handler call may stop it). */
  ran: boolean
}

interface TrackedFiber {
  readonly fiber: Fiber.Fiber<unknown, unknown>
  /**
   * What it was seen doing: running a tool body (`tool`, whatever else it did), running a hook (`hook`), or
   * only emitting events (`emitter`).
   */
  role: "tool" | "emitter" | "hook"
  /** For a tool fiber, the call whose body it runs. */
  i: number | undefined
  /** What it was seen doing (sequence numbers). */
  readonly seen: Array<number>
}

class Recorder {
  seq = 0
  readonly events: Array<Recorded> = []
  readonly bodyBegins: Array<BodyBegin> = []
  readonly bodyExits: Array<{ readonly seq: number; readonly i: number; readonly exit: string }> = []
  readonly beforeCalls: Array<{ readonly seq: number; readonly i: number }> = []
  /** With the text of the result each was handed: what the execution itself gave (TE 11.5 needs it). */
  readonly afterCalls: Array<{ readonly seq: number; readonly i: number; readonly text: string }> = []
  /** Each time the `par` tool was asked what a call touches (TE 11.4), with the arguments it was asked of. */
  readonly declarations: Array<{ readonly seq: number; readonly i: number; readonly args: unknown }> = []
  /** The event the `stall` subscriber blocked on: the batch sees it delivered 3 s after it was recorded. */
  stalled: AgentEvent | undefined = undefined
  /** Problems seen while running (e.g. a tool handed arguments it should never get). */
  readonly problems: Array<string> = []
  abortSeq: number | undefined = undefined
  /** Virtual time of the abort. */
  abortAt: number | undefined = undefined
  doneSeq: number | undefined = undefined
  /** Virtual time at which the batch returned. */
  doneAt: number | undefined = undefined
  result: ToolBatchResult | undefined = undefined
  /** Every fiber seen running batch code: tool bodies, event emissions, hooks. */
  readonly fibers = new Map<Fiber.Fiber<unknown, unknown>, TrackedFiber>()
  /** The fiber that called `executeToolCalls`. */
  batchFiber: Fiber.Fiber<unknown, unknown> | undefined = undefined
  /** Tracked fibers still running when the batch returned, and 5 s (virtual) later. */
  aliveAtReturn: Array<TrackedFiber> = []
  aliveLater: Array<TrackedFiber> = []
  /** Per body begun: had its AbortSignal fired when the batch returned? */
  signalsAtReturn: Array<boolean> = []
  /** Calls whose body reached the part that ignores cancellation (a never-settling promise, `Effect.never`). */
  readonly hung = new Set<number>()
  /** Raises the case's abort if it is meant to come from call `i` at this point (set by `runCase`). */
  abortFrom: (i: number, at: AbortPoint) => void = () => {}
  /** The virtual time (set by `runCase`). */
  now: () => number = () => 0
  next(): number {
    return ++this.seq
  }
  track(fiber: Fiber.Fiber<unknown, unknown>, role: TrackedFiber["role"], i?: number): void {
    const tracked = this.fibers.get(fiber) ?? { fiber, role, i, seen: [] }
    if (role === "tool" || (role === "hook" && tracked.role === "emitter")) {
      tracked.role = role
      tracked.i = i
    }
    this.fibers.set(fiber, tracked)
    tracked.seen.push(this.seq)
  }
  alive(): Array<TrackedFiber> {
    return [...this.fibers.values()].filter((t) => t.fiber !== this.batchFiber && t.fiber.pollUnsafe() === undefined)
  }
}

// ---------------------------------------------------------------------------------------------------------
// Building a case: tools, hooks, sink, message
// ---------------------------------------------------------------------------------------------------------

const Params = Schema.Struct({ i: Schema.Number })

const idOf = (c: BatchCase, i: number): string => {
  let j = i
  while (isDuplicate(c, j)) j--
  return `call-${j}`
}

const nameOf = (call: CallSpec): string => (call.name === "unknown" ? "nope" : call.name)

const rawArgsOf = (call: CallSpec, i: number): Record<string, unknown> =>
  call.args === "valid" ? { i } : call.args === "coercible" ? { i: String(i) } : { i: "bad" }

const makeMessage = (c: BatchCase): AssistantMessage => ({
  role: "assistant",
  api: "test",
  provider: "test",
  model: "test",
  usage: emptyUsage,
  stopReason: "toolUse",
  timestamp: 0,
  content: [
    { type: "text", text: "calling tools" },
    ...c.calls.map((call, i) => ({
      type: "toolCall" as const,
      id: idOf(c, i),
      name: nameOf(call),
      arguments: rawArgsOf(call, i)
    }))
  ]
})

const textOf = (content: unknown): string =>
  Array.isArray(content) ? content.map((block: any) => (block?.type === "text" ? block.text : "")).join("") : ""

class ToolFailure extends Schema.TaggedError<ToolFailure>()("ToolFailure", { message: Schema.String }) {}

const okResult = (i: number): ToolResult => ({ content: [{ type: "text", text: `ok ${i}` }], details: { i } })

/** The tool body of call `i`, as its spec says. */
const body = (c: BatchCase, rec: Recorder, i: number, ctx: ToolContext): Effect.Effect<ToolResult, unknown> => {
  const spec = c.calls[i]
  const part = Math.floor(spec.delay / (spec.updates + 1))
  const rest = spec.delay - part * spec.updates
  const progress = Effect.gen(function*() {
    for (let u = 0; u < spec.updates; u++) {
      if (part > 0) yield* Effect.sleep(part)
      yield* ctx.update({ content: [{ type: "text", text: `progress ${u} of ${i}` }], details: { u } })
    }
  })
  const late = spec.lateUpdate
    ? Effect.asVoid(
      Effect.forkDetach(
        Effect.sleep(1).pipe(
          Effect.andThen(ctx.update({ content: [{ type: "text", text: `late ${i}` }], details: { late: true } }))
        )
      )
    )
    : Effect.void
  const settle = <A, E>(outcome: Effect.Effect<A, E>) =>
    progress.pipe(
      Effect.andThen(rest > 0 ? Effect.sleep(rest) : Effect.void),
      Effect.andThen(late),
      Effect.andThen(Effect.sync(() => rec.abortFrom(i, "bodyEnd"))),
      Effect.andThen(outcome)
    )
  if (spec.shape === "promise") {
    switch (spec.body) {
      case "succeed":
        return settle(Tool.tryPromise(() => Promise.resolve(okResult(i))))
      case "terminate":
        return settle(Tool.tryPromise(() => Promise.resolve({ ...okResult(i), terminate: true })))
      case "fail":
        return settle(Tool.tryPromise(() => Promise.reject(new ToolFailure({ message: `tool ${i} failed` }))))
      case "die":
        return settle(Tool.tryPromise(() => Promise.reject(new Error(`tool ${i} died`))))
      case "invalid":
        return settle(Tool.tryPromise(() => Promise.resolve({ nope: i } as unknown as ToolResult)))
      case "never":
        return progress.pipe(Effect.andThen(Tool.tryPromise((signal) =>
          new Promise<ToolResult>((_, reject) => {
            if (signal.aborted) reject(new Error("aborted"))
            else signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true })
          })
        )))
      case "stubborn":
        return Effect.uninterruptible(progress).pipe(Effect.andThen(Tool.tryPromise(() => {
          rec.hung.add(i)
          return new Promise<ToolResult>(() => {})
        })))
      case "stubbornSlow":
        break
    }
  }
  switch (spec.body) {
    case "succeed":
      return settle(Effect.succeed(okResult(i)))
    case "terminate":
      return settle(Effect.succeed({ ...okResult(i), terminate: true }))
    case "fail":
      return settle(Effect.fail(new ToolFailure({ message: `tool ${i} failed` })))
    case "die":
      return settle(Effect.die(new Error(`tool ${i} died`)))
    case "invalid":
      return settle(Effect.succeed({ nope: i } as unknown as ToolResult))
    case "never":
      return progress.pipe(Effect.andThen(Effect.never))
    case "stubborn":
      return Effect.uninterruptible(
        progress.pipe(Effect.andThen(Effect.sync(() => rec.hung.add(i))), Effect.andThen(Effect.never))
      )
    case "stubbornSlow":
      return Effect.uninterruptible(settle(Effect.succeed(okResult(i))))
  }
}

const accessOf = (access: Access): ResourceAccess.ResourceAccess =>
  access.kind === "exclusive"
    ? ResourceAccess.exclusive
    : access.kind === "read"
    ? ResourceAccess.read(access.key)
    : ResourceAccess.write(access.key)

type Declared =
  | ReadonlyArray<ResourceAccess.ResourceAccess>
  | Effect.Effect<ReadonlyArray<ResourceAccess.ResourceAccess>>

/**
 * What call `i` (from its arguments) touches, as its spec says (see `Declaration`), written in the call's hook
 * shape: the declaration is user code of prepare, like the hooks. A call that declares nothing gives no list,
 * as `test/ToolExecution.resources.test.ts` does for its plain calls: it touches nothing the batch knows of.
 */
const declaration = (c: BatchCase, rec: Recorder, args: any): Declared => {
  const i = args?.i
  if (typeof i !== "number" || !Number.isInteger(i) || i < 0 || i >= c.calls.length) {
    rec.problems.push(`a declaration was asked of arguments it should never get: ${JSON.stringify(args)}`)
    return []
  }
  rec.declarations.push({ seq: rec.next(), i, args })
  const spec = c.calls[i]
  const shape = spec.hookShape
  if (spec.resources === "die") {
    if (shape === "throw") throw new Error(`resources ${i} died`)
    const died = Effect.die(new Error(`resources ${i} died`))
    return shape === "exit" ? died : shaped(shape, () => died) as Effect.Effect<never>
  }
  const accesses = spec.resources === null
    ? undefined as unknown as ReadonlyArray<ResourceAccess.ResourceAccess>
    : spec.resources.map(accessOf)
  return shape === "exit" || shape === "throw"
    ? accesses
    : shaped(shape, () => Effect.succeed(accesses)) as Effect.Effect<ReadonlyArray<ResourceAccess.ResourceAccess>>
}

const makeRegistry = (c: BatchCase, rec: Recorder): ToolRegistryShape => {
  const handler = (args: any, ctx: ToolContext): Effect.Effect<ToolResult, unknown> => {
    const i = args?.i
    if (typeof i !== "number" || !Number.isInteger(i) || i < 0 || i >= c.calls.length) {
      rec.problems.push(`a tool received arguments it should never get: ${JSON.stringify(args)}`)
      return Effect.succeed(okResult(-1))
    }
    // Calling the handler is where execution begins: a body that begins counts from here.
    const begin: BodyBegin = { seq: rec.next(), i, at: rec.now(), args, signal: ctx.signal, ran: false }
    rec.bodyBegins.push(begin)
    rec.abortFrom(i, "handler")
    const spec = c.calls[i]
    const instant = spec.shape === "instant" && spec.delay === 0 && spec.updates === 0 && !spec.lateUpdate
    if (instant && spec.body !== "never" && spec.body !== "stubborn" && spec.body !== "stubbornSlow") {
      // An already-complete Effect: the whole body happens in this call.
      begin.ran = true
      rec.abortFrom(i, "bodyBegin")
      rec.abortFrom(i, "bodyEnd")
      const outcome = spec.body === "succeed"
        ? Exit.succeed(okResult(i))
        : spec.body === "terminate"
        ? Exit.succeed({ ...okResult(i), terminate: true })
        : spec.body === "fail"
        ? Exit.fail(new ToolFailure({ message: `tool ${i} failed` }))
        : spec.body === "die"
        ? Exit.die(new Error(`tool ${i} died`))
        : Exit.succeed({ nope: i } as unknown as ToolResult)
      rec.bodyExits.push({ seq: rec.next(), i, exit: Exit.isSuccess(outcome) ? "success" : "failure" })
      return outcome
    }
    // The exit is observed around the body's start, not inside it: an abort raised as the body begins may
    // interrupt it before the body's own first step (after a yield the tool runs in a fiber of its own).
    const run = Effect.withFiber((fiber) => {
      begin.ran = true
      rec.track(fiber, "tool", i)
      rec.abortFrom(i, "bodyBegin")
      return body(c, rec, i, ctx)
    }).pipe(
      Effect.onExit((exit) =>
        Effect.sync(() => {
          if (!begin.ran) return
          rec.bodyExits.push({
            seq: rec.next(),
            i,
            exit: Exit.isSuccess(exit) ? "success" : Exit.hasInterrupts(exit) ? "interrupted" : "failure"
          })
        })
      )
    )
    // A handler whose Effect yields to the scheduler before its body begins.
    return spec.shape === "yield" ? Effect.andThen(Effect.yieldNow, run) : run
  }
  const par = Tool.make("par", {
    description: "a tool that may run in parallel",
    parameters: Params,
    ...(c.toolTimeout !== null ? { timeout: c.toolTimeout } : {})
  })
  const seq = Tool.make("seq", { description: "a sequential tool", parameters: Params, executionMode: "sequential" })
  // The `par` tool declares what its calls touch, unless no call of the batch declares anything: then it has no
  // declaration at all, the batch as it ran before TE 11. The `seq` tool never declares.
  const tools: Array<RegisteredTool> = [
    declares(c) ? entry(par, Tool.withResources(handler, (args) => declaration(c, rec, args))) : { tool: par, handler },
    { tool: seq, handler }
  ]
  const byName = new Map(tools.map((entry) => [entry.tool.name, entry]))
  return { tools, get: (name) => byName.get(name) }
}

/** How long the `stall` subscriber blocks on its event. */
const STALL_MS = 3_000

const makeSink = (c: BatchCase, rec: Recorder, clock: Clock.Clock, onEvent: () => void): EventSinkShape => {
  let notUpdates = 0
  if (c.sink === "callback" || c.sink === "throwing") {
    return EventSink.fromCallback((event) => {
      rec.events.push({ seq: rec.next(), event, at: clock.currentTimeMillisUnsafe() })
      onEvent()
      if (c.sink === "throwing" && rec.events.length % 2 === 0) throw new Error("subscriber threw")
    })
  }
  return {
    emit: (event) => {
      const record = Effect.withFiber((fiber) =>
        Effect.clockWith((clock) =>
          Effect.sync(() => {
            rec.events.push({ seq: rec.next(), event, at: clock.currentTimeMillisUnsafe() })
            rec.track(fiber, "emitter")
            onEvent()
          })
        )
      )
      switch (c.sink) {
        case "sync":
        case "callback":
        case "throwing":
          return record
        case "yield":
          return Effect.andThen(Effect.yieldNow, record)
        case "slow":
          return Effect.andThen(Effect.sleep(1), record)
        case "failing":
          return Effect.andThen(
            record,
            Effect.suspend(
              () => (rec.events.length % 2 === 0 ? Effect.die(new Error("subscriber failed")) : Effect.void)
            )
          )
        case "stall":
          return Effect.andThen(
            record,
            Effect.suspend(() => {
              if (event.type === "tool_execution_update" || ++notUpdates !== c.stallOn) return Effect.void
              rec.stalled = event
              return Effect.sleep(STALL_MS)
            })
          )
      }
    }
  }
}

/**
 * A hook written in the given shape (see `HookShape`): `decide` does the hook's work and returns its
 * decision; it is handed the fiber running it when it runs inside an Effect, none when it runs in the
 * hook's call itself (`exit`, `throw`: the decision is then returned as it is, mostly an Exit, or thrown).
 */
const shaped = <A>(
  shape: HookShape,
  decide: (fiber: Fiber.Fiber<unknown, unknown> | undefined) => Effect.Effect<A, unknown>
): Effect.Effect<A, unknown> => {
  switch (shape) {
    case "exit":
    case "throw":
      return decide(undefined)
    case "effect":
      return Effect.withFiber(decide)
    case "promise":
      return Effect.flatMap(Effect.promise(async () => await Promise.resolve()), () => Effect.withFiber(decide))
    case "yield":
      return Effect.andThen(Effect.yieldNow, Effect.withFiber(decide))
  }
}

const makeHooks = (c: BatchCase, rec: Recorder, message: AssistantMessage, replaced: ReadonlyArray<unknown>) => {
  const indexOf = new Map<ToolCall, number>()
  let k = 0
  for (const block of message.content) if (block.type === "toolCall") indexOf.set(block, k++)
  const which = (toolCall: ToolCall): number => {
    const i = indexOf.get(toolCall)
    if (i === undefined) throw new Error("a hook received a tool call that is not in the assistant message")
    return i
  }
  const abortIn = (at: AbortPoint) =>
    (c.abort._tag === "SignalFromCall" || c.abort._tag === "InterruptFromCall") && c.abort.at === at
  const beforeToolCall = c.calls.some((call) => call.before !== "pass") || abortIn("before")
    ? (ctx: { readonly toolCall: ToolCall }): Effect.Effect<BeforeToolCallResult | undefined, unknown> =>
      shaped(
        c.calls[which(ctx.toolCall)].hookShape,
        (fiber): Effect.Effect<BeforeToolCallResult | undefined, unknown> => {
          const i = which(ctx.toolCall)
          rec.beforeCalls.push({ seq: rec.next(), i })
          if (fiber !== undefined) rec.track(fiber, "hook")
          rec.abortFrom(i, "before")
          switch (c.calls[i].before) {
            case "pass":
              return Effect.succeed(undefined)
            case "slowPass":
              return Effect.as(Effect.sleep(300), undefined)
            case "block":
              return Effect.succeed({ block: true })
            case "blockReason":
              return Effect.succeed({ block: true, reason: `blocked ${i}` })
            case "blockTerminate":
              return Effect.succeed({ block: true, reason: `blocked ${i} for good`, terminate: true })
            case "fail":
              return Effect.fail(new Error(`before ${i} failed`))
            case "die":
              if (c.calls[i].hookShape === "throw") throw new Error(`before ${i} died`)
              return Effect.die(new Error(`before ${i} died`))
            case "replaceArgs":
              return Effect.succeed({ args: replaced[i] })
          }
        }
      )
    : undefined
  const afterToolCall = c.calls.some((call) => call.after !== "pass") || abortIn("after")
    ? (
      ctx: { readonly toolCall: ToolCall; readonly result: ToolResult }
    ): Effect.Effect<AfterToolCallResult | undefined, unknown> =>
      shaped(
        c.calls[which(ctx.toolCall)].hookShape,
        (fiber): Effect.Effect<AfterToolCallResult | undefined, unknown> => {
          const i = which(ctx.toolCall)
          rec.afterCalls.push({ seq: rec.next(), i, text: textOf(ctx.result.content) })
          if (fiber !== undefined) rec.track(fiber, "hook")
          rec.abortFrom(i, "after")
          const spec = c.calls[i]
          switch (spec.after) {
            case "pass":
              return Effect.succeed(undefined)
            case "slowPass":
              return Effect.as(Effect.sleep(300), undefined)
            case "override": {
              const o = spec.override
              return Effect.succeed({
                ...(o.content ? { content: [{ type: "text" as const, text: `after ${i}` }] } : {}),
                ...(o.details ? { details: { after: i } } : {}),
                ...(o.isError !== null ? { isError: o.isError } : {}),
                ...(o.terminate !== null ? { terminate: o.terminate } : {})
              })
            }
            case "fail":
              return Effect.fail(new Error(`after ${i} failed`))
            case "die":
              if (c.calls[i].hookShape === "throw") throw new Error(`after ${i} died`)
              return Effect.die(new Error(`after ${i} died`))
          }
        }
      )
    : undefined
  return { beforeToolCall, afterToolCall }
}

// ---------------------------------------------------------------------------------------------------------
// Running a case on the TestClock
// ---------------------------------------------------------------------------------------------------------

interface Run {
  readonly c: BatchCase
  readonly rec: Recorder
  readonly message: AssistantMessage
  readonly snapshot: unknown
  readonly replaced: ReadonlyArray<unknown>
  readonly exit: Exit.Exit<ToolBatchResult> | undefined
}

/**
 * Lets every runnable fiber run before virtual time moves on (a subscriber that yields puts the batch a few
 * scheduler turns behind; the clock must not jump past it).
 */
const settle = Effect.gen(function*() {
  for (let k = 0; k < 32; k++) yield* Effect.yieldNow
})

/**
 * The test clock, with the wake-up time of every pending sleep recorded, so that the driver can move time
 * from one timer to the next and let every runnable fiber run in between. `TestClock.adjust` alone may
 * pass several timers in one go: it waits only for the fibers it woke through the scheduler, and a fiber
 * resumed by a promise (a `Tool.tryPromise` tool) is not one of them, so a timer registered by that fiber
 * (a grace period) could expire while the work it bounds was still runnable, which real time never does.
 */
const trackTimers = (clock: Clock.Clock) => {
  const pending: Array<number> = []
  const tracked: Clock.Clock = {
    currentTimeMillisUnsafe: () => clock.currentTimeMillisUnsafe(),
    currentTimeMillis: clock.currentTimeMillis,
    currentTimeNanosUnsafe: () => clock.currentTimeNanosUnsafe(),
    currentTimeNanos: clock.currentTimeNanos,
    monotonicTimeNanosUnsafe: () => clock.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: clock.monotonicTimeNanos,
    sleep: (duration) =>
      Effect.suspend(() => {
        const at = clock.currentTimeMillisUnsafe() + Duration.toMillis(duration)
        pending.push(at)
        return Effect.ensuring(
          clock.sleep(duration),
          Effect.sync(() => {
            const index = pending.indexOf(at)
            if (index !== -1) pending.splice(index, 1)
          })
        )
      })
  }
  /** The earliest pending timer in (now, end], if any. */
  const next = (end: number): number | undefined => {
    const now = clock.currentTimeMillisUnsafe()
    let earliest: number | undefined
    for (const at of pending) if (at > now && at <= end && (earliest === undefined || at < earliest)) earliest = at
    return earliest
  }
  return { tracked, next }
}

const runCase = (c: BatchCase): Effect.Effect<Run> =>
  Effect.gen(function*() {
    const rec = new Recorder()
    const clock = yield* Clock.Clock
    rec.now = () => clock.currentTimeMillisUnsafe()
    const timers = trackTimers(clock)
    const message = makeMessage(c)
    const snapshot = structuredClone(message)
    const replaced = c.calls.map((_, i) => ({ i, replaced: true }))
    const controller = new AbortController()
    const byInterrupt = c.abort._tag === "InterruptAfterEvents" || c.abort._tag === "InterruptAtStep" ||
      c.abort._tag === "InterruptFromCall"
    const fire = () => {
      if (rec.abortSeq !== undefined) return
      rec.abortSeq = rec.next()
      rec.abortAt = clock.currentTimeMillisUnsafe()
      if (byInterrupt) rec.batchFiber!.interruptUnsafe()
      else controller.abort(new Error("test abort"))
    }
    const from = c.abort._tag === "SignalFromCall" || c.abort._tag === "InterruptFromCall" ? c.abort : undefined
    if (from !== undefined) {
      rec.abortFrom = (i, at) => {
        if (i === from.call && at === from.at) fire()
      }
    }
    const eventsToAbort = c.abort._tag === "SignalAfterEvents" || c.abort._tag === "InterruptAfterEvents"
      ? c.abort.events
      : undefined
    const sink = makeSink(c, rec, clock, () => {
      if (rec.events.length === eventsToAbort) fire()
    })
    const { afterToolCall, beforeToolCall } = makeHooks(c, rec, message, replaced)
    const options: ToolExecutionOptions = {
      ...(c.configSequential ? { toolExecution: "sequential" as const } : {}),
      concurrency: c.concurrency,
      ...(c.configTimeout !== null ? { timeout: c.configTimeout } : {}),
      ...(c.grace !== null ? { abandonAfter: c.grace } : {}),
      ...(beforeToolCall ? { beforeToolCall } : {}),
      ...(afterToolCall ? { afterToolCall } : {}),
      ...(byInterrupt ? {} : { signal: controller.signal })
    }
    if (c.abort._tag === "BeforeBatch") fire()
    const batch = Effect.withFiber((fiber) => {
      rec.batchFiber = fiber
      return executeToolCalls(message, options)
    }).pipe(
      Effect.tap((result) => Effect.sync(() => (rec.result = result))),
      Effect.onExit(() =>
        Effect.sync(() => {
          rec.doneSeq = rec.next()
          rec.doneAt = clock.currentTimeMillisUnsafe()
          rec.signalsAtReturn = rec.bodyBegins.map((b) => b.signal.aborted)
        }).pipe(
          // A few scheduler turns, no virtual time: a fiber still on the call stack when the batch returned
          // (an interrupt issued from inside a subscriber makes the batch return re-entrantly) may finish.
          Effect.andThen(settle),
          Effect.andThen(Effect.sync(() => (rec.aliveAtReturn = rec.alive())))
        )
      ),
      Effect.provideService(ToolRegistry, makeRegistry(c, rec)),
      Effect.provideService(EventSink.EventSink, sink),
      Effect.provideService(Clock.Clock, timers.tracked)
    )
    const fiber = yield* Effect.forkChild(batch, { startImmediately: true })
    const abortStep = c.abort._tag === "SignalAtStep" || c.abort._tag === "InterruptAtStep" ? c.abort.step : undefined
    const maxSteps = Math.ceil(HORIZON_MS / c.stepMs)
    for (let step = 0; fiber.pollUnsafe() === undefined && step < maxSteps; step++) {
      yield* settle
      if (step === abortStep || step === c.fallbackAbortStep) {
        fire()
        yield* settle
      }
      if (fiber.pollUnsafe() !== undefined) break
      // One timer at a time, every runnable fiber running in between (see `trackTimers`).
      const end = clock.currentTimeMillisUnsafe() + c.stepMs
      for (let at = timers.next(end); at !== undefined; at = timers.next(end)) {
        yield* TestClock.adjust(at - clock.currentTimeMillisUnsafe())
        yield* settle
      }
      yield* TestClock.adjust(end - clock.currentTimeMillisUnsafe())
    }
    const exit = fiber.pollUnsafe()
    // Keep time going for a while: anything a tool does late must not show up as an event.
    yield* TestClock.adjust(5_000)
    yield* settle
    rec.aliveLater = rec.alive()
    if (exit === undefined) yield* Effect.forkDetach(Fiber.interrupt(fiber))
    return { c, rec, message, snapshot, replaced, exit }
  })

// ---------------------------------------------------------------------------------------------------------
// The invariants
// ---------------------------------------------------------------------------------------------------------

const TOOL_EVENTS = new Set([
  "tool_execution_start",
  "tool_execution_update",
  "tool_execution_waiting",
  "tool_execution_end",
  "message_start",
  "message_end"
])

interface Expected {
  readonly isError: boolean
  readonly terminate: boolean
  readonly text?: (text: string) => boolean
}

/** What a call must end with when nothing aborts the batch. */
const expectedOutcome = (c: BatchCase, i: number): Expected => {
  const call = c.calls[i]
  const name = nameOf(call)
  if (isDuplicate(c, i)) {
    return { isError: true, terminate: false, text: (t) => t.includes(`"${idOf(c, i)}" is a duplicate`) }
  }
  if (call.name === "unknown") return { isError: true, terminate: false, text: (t) => t === `Tool nope not found` }
  if (call.args === "invalid") {
    return {
      isError: true,
      terminate: false,
      text: (t) => t.startsWith(`Validation failed for tool "${name}":\n  - i: `)
    }
  }
  switch (call.before) {
    case "block":
      return { isError: true, terminate: false, text: (t) => t === "Tool execution was blocked" }
    case "blockReason":
      return { isError: true, terminate: false, text: (t) => t === `blocked ${i}` }
    case "blockTerminate":
      return { isError: true, terminate: true, text: (t) => t === `blocked ${i} for good` }
    case "fail":
      return { isError: true, terminate: false, text: (t) => t === `before ${i} failed` }
    case "die":
      return { isError: true, terminate: false, text: (t) => t === `before ${i} died` }
  }
  if (declarationDies(c, i)) return { isError: true, terminate: false, text: (t) => t === `resources ${i} died` }
  const timeout = timeoutOf(c, call)
  const hangs = call.body === "never" || call.body === "stubborn"
  const elapsed = call.delay + (c.sink === "slow" ? call.updates : 0)
  const timedOut = timeout !== null && (hangs || elapsed > timeout)
  let base: { isError: boolean; terminate: boolean | undefined; text?: (t: string) => boolean }
  if (timedOut) base = { isError: true, terminate: undefined, text: (t) => t.includes("timed out after") }
  else {
    switch (call.body) {
      case "succeed":
      case "stubbornSlow":
        base = { isError: false, terminate: undefined, text: (t) => t === `ok ${i}` }
        break
      case "terminate":
        base = { isError: false, terminate: true, text: (t) => t === `ok ${i}` }
        break
      case "fail":
        base = { isError: true, terminate: undefined, text: (t) => t === `tool ${i} failed` }
        break
      case "die":
        base = { isError: true, terminate: undefined, text: (t) => t === `tool ${i} died` }
        break
      case "invalid":
        base = { isError: true, terminate: undefined, text: (t) => t.includes(name) && t.includes("invalid result") }
        break
      case "never":
      case "stubborn":
        throw new Error("a hanging tool without a timeout cannot settle without an abort")
    }
  }
  switch (call.after) {
    case "pass":
    case "slowPass":
      return { ...base, terminate: base.terminate === true }
    case "override": {
      const o = call.override
      const overriddenText = o.content ? (t: string) => t === `after ${i}` : base.text
      return {
        isError: o.isError ?? base.isError,
        terminate: (o.terminate ?? base.terminate) === true,
        ...(overriddenText ? { text: overriddenText } : {})
      }
    }
    case "fail":
      return { isError: true, terminate: false, text: (t) => t === `after ${i} failed` }
    case "die":
      return { isError: true, terminate: false, text: (t) => t === `after ${i} died` }
  }
}

const describeEvent = (r: Recorded): string => {
  const e = r.event as any
  const id = e.toolCallId ?? e.message?.toolCallId ?? ""
  const extra = e.type === "tool_execution_end"
    ? ` ${e.isError ? "error" : "ok"}${e.result?.terminate === true ? " terminate" : ""} ${
      JSON.stringify(textOf(e.result?.content))
    }`
    : e.type === "tool_execution_waiting"
    ? ` for [${e.waitingFor}]`
    : ""
  return `#${r.seq} t=${r.at} ${e.type} ${id}${extra}`
}

const trace = (run: Run): string => {
  const { rec } = run
  const lines: Array<[number, string]> = rec.events.map((r) => [r.seq, describeEvent(r)])
  for (const b of rec.bodyBegins) lines.push([b.seq, `#${b.seq} body ${b.i} begins`])
  for (const b of rec.bodyExits) lines.push([b.seq, `#${b.seq} body ${b.i} exits (${b.exit})`])
  for (const b of rec.beforeCalls) lines.push([b.seq, `#${b.seq} beforeToolCall ${b.i}`])
  for (const b of rec.afterCalls) lines.push([b.seq, `#${b.seq} afterToolCall ${b.i}`])
  for (const d of rec.declarations) {
    lines.push([d.seq, `#${d.seq} declaration ${d.i} asked: ${JSON.stringify(run.c.calls[d.i].resources)}`])
  }
  if (rec.abortSeq !== undefined) lines.push([rec.abortSeq, `#${rec.abortSeq} ABORT (${run.c.abort._tag})`])
  if (rec.doneSeq !== undefined) lines.push([rec.doneSeq, `#${rec.doneSeq} batch returned`])
  return lines.sort((a, b) => a[0] - b[0]).map(([, line]) => line).join("\n")
}

/**
 * What call `i` touches for the rule (TE 11.1), from its spec: a call that declares nothing writes a key of its
 * own, which only the empty key (and an exclusive access) covers.
 */
const touchedBy = (c: BatchCase, i: number): ReadonlyArray<ResourceAccess.ResourceAccess> => {
  const declared = c.calls[i].resources
  return declared === null || declared === "die" ? [ResourceAccess.write(`\u0000${i}`)] : declared.map(accessOf)
}

/**
 * Whether calls `i` and `j` conflict (TE 11.1): any access of one against any of the other. A call with an
 * immediate outcome never executes, so it conflicts with nothing: it neither waits nor is waited for.
 */
const conflicting = (c: BatchCase, i: number, j: number): boolean =>
  i !== j && !isImmediate(c, i) && !isImmediate(c, j) &&
  touchedBy(c, i).some((x) => touchedBy(c, j).some((y) => ResourceAccess.conflicts(x, y)))

/** The earlier calls call `i` conflicts with, in source order. */
const conflictsBefore = (c: BatchCase, i: number): Array<number> =>
  c.calls.flatMap((_, j) => (j < i && conflicting(c, i, j) ? [j] : []))

/** Every invariant of TE 10 (and a few more of TE 2 to TE 9, and TE 11); returns the violations. */
const violations = (run: Run): Array<string> => {
  const { c, rec, message, exit } = run
  const v: Array<string> = [...rec.problems]
  const n = c.calls.length
  const ids = c.calls.map((_, i) => idOf(c, i))
  const rawArgs = c.calls.map((_, i) => (message.content[i + 1] as ToolCall).arguments)
  const sequential = isSequential(c)
  const aborted = rec.abortSeq !== undefined

  // The batch completes, without a defect.
  if (exit === undefined) {
    v.push(`the batch did not complete within ${HORIZON_MS} ms of virtual time`)
    return v
  }
  if (Exit.isFailure(exit) && !Exit.hasInterrupts(exit)) v.push(`the batch failed: ${String(exit.cause)}`)
  const result = rec.result
  if (result === undefined && !(Exit.isFailure(exit) && c.abort._tag.startsWith("Interrupt"))) {
    v.push("the batch returned no result")
  }

  const events = rec.events
  for (const r of events) if (!TOOL_EVENTS.has(r.event.type)) v.push(`unexpected event type ${r.event.type}`)
  const ofType = (type: string) => events.filter((r) => r.event.type === type)
  const starts = ofType("tool_execution_start")
  const updates = ofType("tool_execution_update")
  const ends = ofType("tool_execution_end")
  const msgStarts = ofType("message_start")
  const msgEnds = ofType("message_end")
  const waitings = ofType("tool_execution_waiting")

  // No event after the last message event, nor after the batch returned.
  const messageSeqs = [...msgStarts, ...msgEnds].map((r) => r.seq)
  const lastMessage = messageSeqs.length === 0 ? 0 : Math.max(...messageSeqs)
  for (const r of events) {
    if (r.seq > lastMessage) v.push(`event after the last message event: ${describeEvent(r)}`)
    if (rec.doneSeq !== undefined && r.seq > rec.doneSeq) v.push(`event after the batch returned: ${describeEvent(r)}`)
  }

  // (1) Exactly one start, end and result message per call; totals match.
  for (
    const [label, list] of [["start", starts], ["end", ends], ["message_start", msgStarts], [
      "message_end",
      msgEnds
    ]] as const
  ) {
    if (list.length !== n) v.push(`(1) ${list.length} ${label} events for ${n} calls`)
  }
  const byId = (list: ReadonlyArray<Recorded>, id: string) =>
    list.filter((r) => ((r.event as any).toolCallId ?? (r.event as any).message?.toolCallId) === id)
  const startOf: Array<Recorded | undefined> = []
  const msgStartOf: Array<Recorded | undefined> = []
  const msgEndOf: Array<Recorded | undefined> = []
  const endOf: Array<Recorded | undefined> = []
  const usedEnds = new Set<Recorded>()
  for (let i = 0; i < n; i++) {
    const id = ids[i]
    const rank = ids.slice(0, i).filter((x) => x === id).length
    const group = ids.filter((x) => x === id).length
    for (
      const [list, into, label] of [[starts, startOf, "start"], [msgStarts, msgStartOf, "message_start"], [
        msgEnds,
        msgEndOf,
        "message_end"
      ]] as const
    ) {
      const mine = byId(list, id)
      if (mine.length !== group) {
        v.push(`(1) call ${i} (${id}): ${mine.length} ${label} events for ${group} call(s) with that id`)
      }
      into[i] = mine[rank]
    }
    const endsOfId = byId(ends, id)
    if (endsOfId.length !== group) {
      v.push(`(1) call ${i} (${id}): ${endsOfId.length} end events for ${group} call(s) with that id`)
    }
    const content = (msgStartOf[i]?.event as any)?.message?.content
    const end = endsOfId.find((r) => !usedEnds.has(r) && (r.event as any).result?.content === content) ??
      endsOfId.find((r) => !usedEnds.has(r))
    if (end) usedEnds.add(end)
    endOf[i] = end
    const s = starts.find((r) => r === startOf[i])
    if (s && (s.event as any).args !== rawArgs[i]) v.push(`call ${i}: the start event does not carry the raw arguments`)
    if (s && (s.event as any).toolName !== nameOf(c.calls[i])) {
      v.push(`call ${i}: the start event has the wrong tool name`)
    }
  }

  // (2) start < every update < end < result message (message_start < message_end).
  for (let i = 0; i < n; i++) {
    const s = startOf[i]?.seq ?? Infinity
    const e = endOf[i]?.seq ?? -Infinity
    const ms = msgStartOf[i]?.seq ?? -Infinity
    const me = msgEndOf[i]?.seq ?? -Infinity
    for (const u of updates.filter((r) => (r.event as any).args === rawArgs[i])) {
      if (!(s < u.seq && u.seq < e)) v.push(`(2) call ${i}: update #${u.seq} outside its start #${s} .. end #${e}`)
      if ((u.event as any).toolCallId !== ids[i]) v.push(`(2) call ${i}: update with the wrong toolCallId`)
    }
    if (!(s < e)) v.push(`(2) call ${i}: start #${s} is not before end #${e}`)
    if (!(e < ms)) v.push(`(2) call ${i}: end #${e} is not before its result message #${ms}`)
    if (!(ms < me)) v.push(`(2) call ${i}: message_start #${ms} is not before message_end #${me}`)
    const m1 = (msgStartOf[i]?.event as any)?.message
    const m2 = (msgEndOf[i]?.event as any)?.message
    if (m1 !== undefined && m2 !== undefined && m1 !== m2) {
      try {
        assert.deepStrictEqual(m1, m2)
      } catch {
        v.push(`call ${i}: message_start and message_end carry different messages`)
      }
    }
    const end = endOf[i]?.event as any
    if (m2 !== undefined && end !== undefined) {
      if (m2.isError !== end.isError) v.push(`call ${i}: message isError differs from the end event's`)
      if (textOf(m2.content) !== textOf(end.result?.content)) {
        v.push(`call ${i}: message content differs from the end event's`)
      }
      if (m2.role !== "toolResult" || m2.toolName !== nameOf(c.calls[i])) {
        v.push(`call ${i}: malformed tool-result message`)
      }
      if ("terminate" in m2) v.push(`call ${i}: the tool-result message stores terminate`)
    }
  }
  const knownArgs = new Set<unknown>(rawArgs)
  for (const u of updates) {
    if (!knownArgs.has((u.event as any).args)) v.push(`(2) update #${u.seq} carries no call's raw arguments`)
  }

  // (3) Result messages in source order, non-decreasing timestamps; the returned list equals them.
  const announced = msgEnds.map((r) => (r.event as any).message as ToolResultMessage)
  const order = announced.map((m) => m.toolCallId)
  if (order.join(",") !== ids.join(",")) v.push(`(3) messages in order [${order}] instead of [${ids}]`)
  for (let k = 1; k < announced.length; k++) {
    if (announced[k].timestamp < announced[k - 1].timestamp) v.push(`(3) message ${k} has a decreasing timestamp`)
  }
  if (result !== undefined) {
    if (result.messages.length !== announced.length) {
      v.push(`(3) returned ${result.messages.length} messages, announced ${announced.length}`)
    } else {
      for (let k = 0; k < announced.length; k++) {
        if (result.messages[k] !== announced[k]) {
          try {
            assert.deepStrictEqual(result.messages[k], announced[k])
          } catch {
            v.push(`(3) returned message ${k} differs from the announced one`)
          }
        }
      }
    }
  }

  // (4) Sequential: call k+1 starts after call k's result message.
  const firstBody = rec.bodyBegins.length === 0 ? Infinity : Math.min(...rec.bodyBegins.map((b) => b.seq))
  if (sequential) {
    for (let i = 0; i + 1 < n; i++) {
      const next = startOf[i + 1]?.seq ?? Infinity
      const prev = msgEndOf[i]?.seq ?? Infinity
      if (!(prev < next)) {
        v.push(`(4) sequential: call ${i + 1} starts (#${next}) before call ${i}'s message (#${prev})`)
      }
    }
    // One body at a time: a body begins only after the previous call ended.
    for (const b of rec.bodyBegins) {
      for (let j = 0; j < b.i; j++) {
        const e = endOf[j]?.seq ?? Infinity
        if (!(e < b.seq)) v.push(`(4) sequential: body ${b.i} begins before call ${j} ended`)
      }
    }
  } else {
    // (5) Parallel: every start precedes the first execution; no result message before the last end.
    for (const s of starts) {
      if (!(s.seq < firstBody)) v.push(`(5) parallel: start #${s.seq} after the first execution #${firstBody}`)
    }
    const lastEnd = ends.length === 0 ? -Infinity : Math.max(...ends.map((r) => r.seq))
    for (const m of msgStarts) {
      if (!(m.seq > lastEnd)) v.push(`(5) parallel: message #${m.seq} before the last end #${lastEnd}`)
    }
    // Concurrency limit: at a body's beginning, fewer than `limit` other executed calls are still unsettled.
    if (c.concurrency !== "unbounded") {
      for (const b of rec.bodyBegins) {
        const running = rec.bodyBegins.filter((o) => o !== b && o.seq < b.seq && (endOf[o.i]?.seq ?? Infinity) > b.seq)
        if (running.length >= c.concurrency) {
          v.push(`(5) body ${b.i} begins while ${running.length} calls execute (limit ${c.concurrency})`)
        }
        // TE 11.6: a call waiting for earlier ones holds its place in the limit too.
        const waiting = waitings.filter((w) => {
          const o = ids.indexOf((w.event as any).toolCallId)
          return o !== b.i && w.seq < b.seq && !rec.bodyBegins.some((x) => x.i === o && x.seq < b.seq) &&
            (endOf[o]?.seq ?? Infinity) > b.seq
        })
        if (running.length < c.concurrency && running.length + waiting.length >= c.concurrency) {
          v.push(
            `(11) body ${b.i} begins while ${running.length} calls execute and ${waiting.length} wait (limit ${c.concurrency})`
          )
        }
      }
    }
  }

  // (6) Immediate outcomes never run the tool and never call afterToolCall; bodies run at most once, after
  // their start; afterToolCall only for an executed call, between its execution and its end.
  for (let i = 0; i < n; i++) {
    const bodies = rec.bodyBegins.filter((b) => b.i === i)
    const afters = rec.afterCalls.filter((a) => a.i === i)
    const endText = textOf((endOf[i]?.event as any)?.result?.content)
    if (bodies.length > 1) v.push(`(6) call ${i}: the tool ran ${bodies.length} times`)
    if (afters.length > 1) v.push(`(6) call ${i}: afterToolCall ran ${afters.length} times`)
    if (isImmediate(c, i) && bodies.length > 0) v.push(`(6) call ${i}: an immediate outcome ran the tool`)
    if (isImmediate(c, i) && afters.length > 0) v.push(`(6) call ${i}: an immediate outcome called afterToolCall`)
    if (endText.includes("was not executed") && bodies.length > 0) {
      v.push(`(6) call ${i}: says it was not executed, but its tool ran`)
    }
    if (endText.includes("was not executed") && afters.length > 0) {
      v.push(`(6) call ${i}: says it was not executed, but afterToolCall ran`)
    }
    if (endText.includes("interrupted after it started") && bodies.length === 0) {
      v.push(`(8) call ${i}: says it started, but its tool never ran`)
    }
    if (afters.length > 0 && bodies.length === 0) v.push(`(6) call ${i}: afterToolCall without an execution`)
    for (const b of bodies) {
      if (!((startOf[i]?.seq ?? Infinity) < b.seq)) v.push(`(6) call ${i}: the tool ran before its start event`)
      if (!(b.seq < (endOf[i]?.seq ?? -Infinity))) v.push(`(6) call ${i}: the tool ran after its end event`)
      const expectedArgs = c.calls[i].before === "replaceArgs" ? run.replaced[i] : undefined
      if (expectedArgs !== undefined && b.args !== expectedArgs) {
        v.push(`call ${i}: the tool did not get the replacement arguments`)
      }
      if (expectedArgs === undefined && b.args === rawArgs[i]) {
        v.push(`call ${i}: the tool got the raw arguments object, not a validated copy`)
      }
    }
    for (const a of afters) {
      if (!(a.seq > (bodies[0]?.seq ?? Infinity))) v.push(`(6) call ${i}: afterToolCall before the tool ran`)
      if (!(a.seq < (endOf[i]?.seq ?? -Infinity))) v.push(`(6) call ${i}: afterToolCall after the end event`)
    }
    for (const b of rec.beforeCalls.filter((x) => x.i === i)) {
      if (!((startOf[i]?.seq ?? Infinity) < b.seq)) v.push(`call ${i}: beforeToolCall before the start event`)
    }
  }

  // (7) terminate iff the batch has calls and every result terminates; only blocks among immediate outcomes,
  // never a synthetic result of an abort.
  const endTerminates = endOf.map((r) => (r?.event as any)?.result?.terminate === true)
  if (result !== undefined && result.terminate !== (n > 0 && endTerminates.every((t) => t))) {
    v.push(`(7) terminate is ${result.terminate}, the end events say [${endTerminates}]`)
  }
  for (let i = 0; i < n; i++) {
    const endText = textOf((endOf[i]?.event as any)?.result?.content)
    const synthetic = endText.includes("was not executed") || endText.includes("interrupted after it started")
    if (synthetic && endTerminates[i]) v.push(`(7) call ${i}: a synthetic abort result terminates`)
    if (isImmediate(c, i) && c.calls[i].before !== "blockTerminate" && endTerminates[i]) {
      v.push(`(7) call ${i}: an immediate outcome terminates`)
    }
    if (endText.includes("internal error")) v.push(`call ${i}: internal error: ${endText}`)
  }

  // (8) After an abort: no tool body begins after the abort; the batch says it was aborted.
  if (aborted) {
    for (const b of rec.bodyBegins) {
      if (b.seq > rec.abortSeq!) v.push(`(8) body ${b.i} began (#${b.seq}) after the abort (#${rec.abortSeq})`)
    }
    if (result !== undefined && rec.doneSeq !== undefined && rec.abortSeq! < rec.doneSeq && !result.aborted) {
      v.push("(8) the batch was aborted but reports aborted: false")
    }
  } else if (result !== undefined && result.aborted) v.push("(8) the batch reports aborted: true without an abort")

  // (8) A tool that was stopped while it ignored cancellation is reported as abandoned, whether it is an Effect
  // or a promise.
  for (const i of rec.hung) {
    const endText = textOf((endOf[i]?.event as any)?.result?.content)
    const stopped = endText.includes("interrupted after it started") || endText.includes("timed out after")
    if (stopped && !endText.includes("abandoned")) {
      v.push(`(8) call ${i}: ignored cancellation but its result does not say it was abandoned`)
    }
  }

  // (8) An aborted batch returns within the grace period (plus the subscriber's own time).
  if (aborted && rec.doneAt !== undefined && rec.abortSeq! < rec.doneSeq!) {
    const grace = c.grace ?? 2_000
    // A subscriber that blocks can hold the work phase (then abandoned after the grace period) and, bounded by
    // the grace period again, one event of the settle phase.
    const subscriber = c.sink === "slow" ? 4 * n + 2 : c.sink === "stall" ? grace : 0
    if (rec.doneAt > rec.abortAt! + grace + subscriber) {
      v.push(`(8) aborted at t=${rec.abortAt} but returned at t=${rec.doneAt} (grace ${grace} ms)`)
    }
  }

  // Nothing leaks (TE 9.3). When the batch returns, every tool body that honours interruption has ended
  // (its finalizers ran), and every fiber that ran batch code is done, unless a tool that ignores
  // cancellation or a blocked subscriber made the batch abandon work. A little later, only work held by a
  // tool that never stops may still run.
  const cooperative = (i: number) => c.calls[i].body !== "stubborn" && c.calls[i].body !== "stubbornSlow"
  for (const b of rec.bodyBegins) {
    const exit = rec.bodyExits.find((x) => x.i === b.i)
    if (b.ran && cooperative(b.i) && rec.doneSeq !== undefined && !(exit !== undefined && exit.seq < rec.doneSeq)) {
      v.push(`call ${b.i}: its tool (${c.calls[b.i].body}) was still running when the batch returned`)
    }
  }
  // A tool the batch stopped (interrupted, or left running when it returned) has seen its signal fire by then.
  rec.bodyBegins.forEach((b, k) => {
    const exit = rec.bodyExits.find((x) => x.i === b.i)
    const stopped = exit === undefined || exit.seq > rec.doneSeq! || exit.exit === "interrupted"
    if (stopped && rec.signalsAtReturn[k] !== true) {
      v.push(`call ${b.i}: its tool was stopped but its AbortSignal did not fire`)
    }
  })
  const abandonable = c.sink === "stall" || rec.bodyBegins.some((b) => !cooperative(b.i))
  if (!abandonable) {
    for (const t of rec.aliveAtReturn) {
      v.push(
        `a fiber of the batch (#${t.fiber.id}, ${t.role} at #${t.seen.join(", #")}) was still running when it returned`
      )
    }
  }
  const stuck = rec.bodyBegins.some((b) => c.calls[b.i].body === "stubborn")
  if (!stuck) {
    for (const t of rec.aliveLater) {
      v.push(
        `a fiber (#${t.fiber.id}, ${t.role} at #${t.seen.join(", #")}) was still running 5 s after the batch returned`
      )
    }
  }

  // (11) TE 11: what calls touch. Which calls conflict comes from the rule itself, pairwise (`conflicting`).
  if (sequential) {
    for (const w of waitings) v.push(`(11) sequential: a waiting event ${describeEvent(w)}`)
    if (rec.declarations.length > 0) {
      v.push(
        `(11) sequential: what calls touch was asked ${rec.declarations.length} time(s), never in a sequential batch`
      )
    }
  } else {
    // TE 11.4: asked once per call that passed beforeToolCall, of the very arguments its tool then runs with.
    for (let i = 0; i < n; i++) {
      const asked = rec.declarations.filter((d) => d.i === i)
      const askable = declares(c) && c.calls[i].name === "par" && !isRefusedEarly(c, i)
      if (!askable && asked.length > 0) v.push(`(11) call ${i}: what it touches was asked, but prepare had refused it`)
      if (asked.length > 1) v.push(`(11) call ${i}: what it touches was asked ${asked.length} times`)
      if (askable && !aborted && asked.length === 0) v.push(`(11) call ${i}: what it touches was never asked`)
      const body = rec.bodyBegins.find((b) => b.i === i)
      for (const d of asked) {
        if (!((startOf[i]?.seq ?? Infinity) < d.seq)) v.push(`(11) call ${i}: asked what it touches before its start`)
        if (rec.beforeCalls.some((b) => b.i === i && b.seq > d.seq)) {
          v.push(`(11) call ${i}: asked what it touches before beforeToolCall`)
        }
        if (body !== undefined && !(d.seq < body.seq)) {
          v.push(`(11) call ${i}: asked what it touches after its tool began`)
        }
        if (body !== undefined && body.args !== d.args) {
          v.push(`(11) call ${i}: what it touches was asked of other arguments than its tool got`)
        }
        if (c.calls[i].before === "replaceArgs" && d.args !== run.replaced[i]) {
          v.push(`(11) call ${i}: what it touches was not asked of beforeToolCall's replacement arguments`)
        }
      }
    }

    // TE 11.3: a waiting event comes at most once per call, between its start and its end and before its tool
    // begins, and names earlier calls it conflicts with that had not ended. The batch decides and emits it at
    // once, but the subscriber records it: `yield` a scheduler turn later (at the same virtual time), `slow`
    // 1 ms later; and the batch sees the event `stall` blocks on delivered 3 s after it was recorded.
    const endedBefore = (j: number, w: Recorded): boolean => {
      const end = endOf[j]
      if (end === undefined) return false
      switch (c.sink) {
        case "yield":
          return end.at < w.at
        case "slow":
          return end.at < w.at - 1
        case "stall":
          return end.seq < w.seq && end.event !== rec.stalled
        default:
          return end.seq < w.seq
      }
    }
    const waitingOf = new Map<number, Recorded>()
    for (const w of waitings) {
      const e = w.event as any
      const i = ids.indexOf(e.toolCallId)
      if (i === -1) {
        v.push(`(11) ${describeEvent(w)}: no call has that id`)
        continue
      }
      const first = waitingOf.get(i)
      if (first !== undefined) v.push(`(11) call ${i}: a second waiting event #${w.seq} (the first: #${first.seq})`)
      else waitingOf.set(i, w)
      if (e.toolName !== nameOf(c.calls[i])) v.push(`(11) call ${i}: its waiting event has the wrong tool name`)
      if (isImmediate(c, i)) v.push(`(11) call ${i}: an immediate outcome waits (#${w.seq})`)
      const s = startOf[i]?.seq ?? Infinity
      const end = endOf[i]?.seq ?? -Infinity
      if (!(s < w.seq && w.seq < end)) {
        v.push(`(11) call ${i}: waiting #${w.seq} outside its start #${s} .. end #${end}`)
      }
      const body = rec.bodyBegins.find((b) => b.i === i)
      if (body !== undefined && !(w.seq < body.seq)) {
        v.push(`(11) call ${i}: waits (#${w.seq}) after its tool began (#${body.seq})`)
      }
      const named: ReadonlyArray<string> = e.waitingFor
      if (named.length === 0) v.push(`(11) call ${i}: waits (#${w.seq}) for no call`)
      if (new Set(named).size !== named.length) v.push(`(11) call ${i}: waits for a call twice: [${named}]`)
      for (const id of named) {
        const j = ids.indexOf(id)
        if (j === -1 || j >= i) v.push(`(11) call ${i} waits (#${w.seq}) for ${id}, not an earlier call`)
        else if (!conflicting(c, i, j)) {
          v.push(`(11) call ${i} waits (#${w.seq}) for call ${j}, which it does not conflict with`)
        } else if (endedBefore(j, w)) {
          v.push(`(11) call ${i} waits (#${w.seq}) for call ${j}, which had already ended (#${endOf[j]!.seq})`)
        }
      }
    }

    // TE 11.2: a tool begins only once every earlier call it conflicts with has ended (its end event is out), and
    // never while the body of one is still running, unless that one timed out and was abandoned (TE 11.5): the
    // batch gave up on it and on what it touches. The result its execution gave says so: the one
    // afterToolCall was handed, or else the end event's.
    const abandonedAfterTimeout = (j: number): boolean => {
      const text = rec.afterCalls.find((a) => a.i === j)?.text ?? textOf((endOf[j]?.event as any)?.result?.content)
      return text.includes("timed out after") && text.includes("was abandoned")
    }
    for (const b of rec.bodyBegins) {
      for (const j of conflictsBefore(c, b.i)) {
        const end = endOf[j]
        if (end === undefined || !(end.seq < b.seq)) {
          v.push(`(11) body ${b.i} begins (#${b.seq}) before call ${j}, which it conflicts with, ended (#${end?.seq})`)
        }
        const other = rec.bodyBegins.find((x) => x.i === j)
        const exit = rec.bodyExits.find((x) => x.i === j)
        if (
          other?.ran === true && other.seq < b.seq && !(exit !== undefined && exit.seq < b.seq) &&
          !abandonedAfterTimeout(j)
        ) {
          v.push(
            `(11) body ${b.i} begins (#${b.seq}) while the body of call ${j}, which it conflicts with, still runs ` +
              `(began #${other.seq}, ${
                exit === undefined ? "never exits" : `exits #${exit.seq}`
              }) and was not abandoned`
          )
        }
      }
    }

    // TE 11.2, TE 11.6: no call is left waiting for ever. Without an abort, every call without an immediate
    // outcome runs. Aborted: a call that had not begun, although the calls were executing (a body had begun),
    // every earlier call it conflicts with had ended and a place in the concurrency limit was free (fewer earlier
    // calls than the limit had not ended) some time before the abort, was left waiting. "Some time": a virtual
    // instant earlier (within one, the abort may come first), plus what the subscriber takes, as above: 1 ms for
    // `slow`, 3 s for `stall`.
    const begun = (i: number) => rec.bodyBegins.some((b) => b.i === i)
    if (!aborted) {
      for (let i = 0; i < n; i++) {
        if (!isImmediate(c, i) && !begun(i)) {
          v.push(
            `(11) call ${i} never began though the batch was not aborted (earlier conflicts: [${
              conflictsBefore(c, i)
            }]): ${JSON.stringify(textOf((endOf[i]?.event as any)?.result?.content))}`
          )
        }
      }
    } else {
      const by = rec.abortAt! - (c.sink === "slow" ? 2 : c.sink === "stall" ? STALL_MS + 2 : 0)
      const endedBy = (j: number) => endOf[j] !== undefined && endOf[j].at < by
      const executing = rec.bodyBegins.some((b) => b.at < by)
      for (let i = 0; i < n; i++) {
        if (!executing || isImmediate(c, i) || begun(i)) continue
        const held = c.calls.filter((_, k) => k < i && !isImmediate(c, k) && !endedBy(k)).length
        const blockers = conflictsBefore(c, i)
        if ((c.concurrency === "unbounded" || held < c.concurrency) && blockers.every(endedBy)) {
          v.push(
            `(11) call ${i} was left waiting: every earlier call it conflicts with ([${blockers}]) had ended by ` +
              `t=${by} and ${held} earlier call(s) held a place (limit ${c.concurrency}), yet it had not begun ` +
              `when the batch was aborted at t=${rec.abortAt}`
          )
        }
      }
    }
  }

  // The assistant message is never mutated.
  try {
    assert.deepStrictEqual(message, run.snapshot)
  } catch {
    v.push("the assistant message was mutated")
  }

  // Without an abort: each call ends exactly as the spec says.
  if (!aborted && result !== undefined) {
    const expected = c.calls.map((_, i) => expectedOutcome(c, i))
    for (let i = 0; i < n; i++) {
      const e = expected[i]
      const end = endOf[i]?.event as any
      if (end === undefined) continue
      const bodies = rec.bodyBegins.filter((b) => b.i === i).length
      if (!isImmediate(c, i) && bodies !== 1) v.push(`call ${i}: the tool ran ${bodies} times instead of once`)
      const afters = rec.afterCalls.filter((a) => a.i === i).length
      const afterInstalled = c.calls.some((call) => call.after !== "pass")
      if (!isImmediate(c, i) && afterInstalled && afters !== 1) v.push(`call ${i}: afterToolCall ran ${afters} times`)
      if (end.isError !== e.isError) v.push(`call ${i}: isError ${end.isError}, expected ${e.isError}`)
      if ((end.result?.terminate === true) !== e.terminate) {
        v.push(`call ${i}: terminate ${end.result?.terminate}, expected ${e.terminate}`)
      }
      const t = textOf(end.result?.content)
      if (e.text && !e.text(t)) v.push(`call ${i}: unexpected result text ${JSON.stringify(t)}`)
    }
    const terminate = n > 0 && expected.every((e) => e.terminate)
    if (result.terminate !== terminate) v.push(`(7) batch terminate ${result.terminate}, expected ${terminate}`)
  }
  return v
}

/** With `PROP_STATS=1`, what the generated cases exercised is printed after the tests (to tune generators). */
const stats: Record<string, number> | undefined = process.env.PROP_STATS ? {} : undefined

afterAll(() => {
  if (stats === undefined) return
  const rows = Object.entries(stats).sort(([a], [b]) => a.localeCompare(b))
  console.log(`what the cases exercised:\n${rows.map(([key, count]) => `  ${key}: ${count}`).join("\n")}`)
})

const collectStats = (into: Record<string, number>, run: Run) => {
  const { c, rec } = run
  const inc = (key: string) => (into[key] = (into[key] ?? 0) + 1)
  inc("cases")
  inc(`calls=${c.calls.length}`)
  inc(`bodies=${rec.bodyBegins.length}`)
  inc(`abort=${c.abort._tag}`)
  inc(isSequential(c) ? "sequential" : "parallel")
  if (rec.abortSeq !== undefined) inc("abort fired")
  const abortSeq = rec.abortSeq
  if (
    abortSeq !== undefined &&
    rec.bodyBegins.some((b) => b.seq < abortSeq && !rec.bodyExits.some((x) => x.i === b.i && x.seq < abortSeq))
  ) inc("abort while a tool runs")
  for (const r of rec.events) {
    const text = textOf((r.event as any).result?.content)
    if (text.includes("timed out")) inc("timed out")
    if (text.includes("abandoned")) inc("abandoned")
    if (text.includes("interrupted after it started")) inc("interrupted after start")
    if (text.includes("was not executed")) inc("not executed")
    if (text.includes("blocked")) inc("blocked")
    if (r.event.type === "tool_execution_update") inc("updates")
  }
  if (rec.result?.terminate) inc("terminate")
  // TE 11: how often calls declare, conflict, wait, and run beside a conflicting call that was abandoned.
  if (!isSequential(c)) {
    if (declares(c)) inc("parallel, declares")
    if (c.calls.filter((_, i) => !isImmediate(c, i)).length > 1) inc("parallel, 2+ calls that may run")
    if (c.calls.some((_, i) => conflictsBefore(c, i).length > 0)) inc("parallel, conflicting calls")
    if (c.calls.some((_, i) => declarationDies(c, i))) inc("a declaration dies")
    const waiting = rec.events.filter((r) => r.event.type === "tool_execution_waiting")
    if (waiting.length > 0) inc("waiting events")
    for (const w of waiting) {
      const i = Number((w.event as any).toolCallId.slice("call-".length))
      inc(rec.bodyBegins.some((b) => b.i === i) ? "waited, then began" : "waited, never began")
    }
    if (
      rec.bodyBegins.some((b) =>
        conflictsBefore(c, b.i).some((j) => !rec.bodyExits.some((x) => x.i === j && x.seq < b.seq) && rec.hung.has(j))
      )
    ) inc("began beside a conflicting call's hung tool")
  }
  if (rec.result === undefined) inc("no result (fiber interrupted)")
}

const checkCase = (c: BatchCase) =>
  Effect.gen(function*() {
    const run = yield* runCase(c)
    if (stats !== undefined) collectStats(stats, run)
    const found = violations(run)
    if (found.length > 0) {
      assert.fail(`${found.length} violation(s):\n  - ${found.join("\n  - ")}\ntrace:\n${trace(run)}`)
    }
    return true
  }).pipe(Effect.provideService(References.MinimumLogLevel, "None"))

// ---------------------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------------------

const replay = process.env.PROP_REPLAY
/** Runs per property, scaled by `PROP_RUNS_FACTOR`. */
const runs = (n: number) => Math.max(1, Math.round(n * Number(process.env.PROP_RUNS_FACTOR ?? 1)))
const propertyOptions = (n: number) => ({
  timeout: 60_000,
  arbitrary: {
    runs: runs(n),
    size: 20,
    ...(replay !== undefined ? { replay } : {}),
    ...(process.env.PROP_SEED !== undefined ? { seed: process.env.PROP_SEED } : {})
  }
})

/** A call that succeeds at once; override what matters. */
const call = (spec: Partial<CallSpec> = {}): CallSpec => ({
  shape: "effect",
  hookShape: "effect",
  name: "par",
  args: "valid",
  duplicate: false,
  body: "succeed",
  delay: 0,
  updates: 0,
  lateUpdate: false,
  before: "pass",
  after: "pass",
  override: { content: false, details: false, isError: null, terminate: null },
  resources: null,
  ...spec
})

/** A parallel batch without timeouts or abort; override what matters. */
const batchCase = (spec: Partial<BatchCase>): BatchCase => ({
  calls: [],
  configSequential: false,
  concurrency: "unbounded",
  configTimeout: null,
  toolTimeout: null,
  grace: null,
  sink: "sync",
  stallOn: 1,
  stepMs: 250,
  abort: { _tag: "None" },
  fallbackAbortStep: null,
  ...spec
})

describe("TE 10 executeToolCalls: properties", () => {
  it.effect.prop(
    "every invariant holds on random batches that are not aborted",
    { c: makeBatchCaseArb(noAbort) },
    ({ c }) => checkCase(c),
    propertyOptions(250)
  )

  it.effect.prop(
    "every invariant holds on random batches aborted through the AbortSignal",
    { c: makeBatchCaseArb(abortBySignal) },
    ({ c }) => checkCase(c),
    propertyOptions(250)
  )

  it.effect.prop(
    "every invariant holds on random batches whose fiber is interrupted",
    { c: makeBatchCaseArb(abortByInterrupt) },
    ({ c }) => checkCase(c),
    propertyOptions(200)
  )

  // Issue 16 item 1 (TE 8): an abort raised synchronously from inside the batch (a tool as it is called,
  // begins or settles; a hook; the subscriber on any event, updates included), in both modes and with a
  // concurrency limit: no call starts executing after it, and those calls say they were not executed.
  it.effect.prop(
    "every invariant holds on random batches aborted from inside a tool, a hook or the subscriber",
    { c: makeBatchCaseArb(abortFromInside, [[2, "unbounded"], [1, 1], [2, 2], [2, 3]]) },
    ({ c }) => checkCase(c),
    propertyOptions(400)
  )
})

// ---------------------------------------------------------------------------------------------------------
// Abandoning a tool that ignores cancellation
// ---------------------------------------------------------------------------------------------------------

describe("executeToolCalls: abort with a tool that never settles and ignores cancellation", () => {
  const Params0 = Schema.Struct({})
  const make = (name: string) => Tool.make(name, { description: name, parameters: Params0 })
  const Stubborn = make("stubborn")
  const Cooperative = make("cooperative")
  const Slow = make("slow")

  it.effect.each(["signal", "interrupt"] as const)(
    "aborted by %s: finishes within the grace period, only the stubborn tool is left running",
    (how) =>
      Effect.gen(function*() {
        const grace = 1_000
        const abortAt = 500
        const toolFibers = new Map<string, Fiber.Fiber<unknown, unknown>>()
        const toolSignals = new Map<string, AbortSignal>()
        const finalizersRan = new Set<string>()
        // Every other fiber seen running batch code, with what it was seen doing.
        const otherFibers = new Map<Fiber.Fiber<unknown, unknown>, Array<string>>()
        const see = (fiber: Fiber.Fiber<unknown, unknown>, what: string) => {
          if (![...toolFibers.values()].includes(fiber)) {
            otherFibers.set(fiber, [...(otherFibers.get(fiber) ?? []), what])
          }
        }
        const events: Array<AgentEvent> = []
        const body = (name: string, effect: Effect.Effect<ToolResult>) => (_: unknown, ctx: ToolContext) =>
          Effect.withFiber((fiber) => {
            toolFibers.set(name, fiber)
            toolSignals.set(name, ctx.signal)
            return effect.pipe(Effect.onExit(() => Effect.sync(() => finalizersRan.add(name))))
          })
        const tools: Array<RegisteredTool> = [
          { tool: Stubborn, handler: body("stubborn", Effect.uninterruptible(Effect.never)) },
          { tool: Cooperative, handler: body("cooperative", Effect.never) },
          { tool: Slow, handler: body("slow", Effect.as(Effect.sleep("10 seconds"), Tool.textResult("slow done"))) }
        ]
        const registry: ToolRegistryShape = { tools, get: (name) => tools.find((t) => t.tool.name === name) }
        const message: AssistantMessage = {
          role: "assistant",
          api: "test",
          provider: "test",
          model: "test",
          usage: emptyUsage,
          stopReason: "toolUse",
          timestamp: 0,
          content: ["stubborn", "cooperative", "slow"].map((name) => ({
            type: "toolCall" as const,
            id: `id-${name}`,
            name,
            arguments: {}
          }))
        }
        const sink: EventSinkShape = {
          emit: (event) =>
            Effect.withFiber((fiber) =>
              Effect.sync(() => {
                see(fiber, `${event.type} ${(event as any).toolCallId ?? (event as any).message?.toolCallId}`)
                events.push(event)
              })
            )
        }
        const controller = new AbortController()
        let batchFiber: Fiber.Fiber<unknown, unknown> | undefined
        const fiber = yield* Effect.withFiber((f) => {
          batchFiber = f
          return executeToolCalls(message, {
            abandonAfter: grace,
            afterToolCall: ({ toolCall }) =>
              Effect.withFiber((f) => Effect.sync(() => see(f, `afterToolCall ${toolCall.id}`))),
            ...(how === "signal" ? { signal: controller.signal } : {})
          })
        }).pipe(
          Effect.provideService(ToolRegistry, registry),
          Effect.provideService(EventSink.EventSink, sink),
          Effect.forkChild({ startImmediately: true })
        )
        yield* TestClock.adjust(abortAt)
        assert.deepStrictEqual([...toolFibers.keys()].sort(), ["cooperative", "slow", "stubborn"])
        if (how === "signal") controller.abort()
        else fiber.interruptUnsafe()
        let elapsed = 0
        while (fiber.pollUnsafe() === undefined && elapsed < 10 * grace) {
          yield* TestClock.adjust(100)
          elapsed += 100
        }
        const exit = fiber.pollUnsafe()
        assert.isDefined(exit, "the batch did not finish")
        assert.isAtMost(elapsed, grace, `the batch took ${elapsed} ms after the abort (grace ${grace} ms)`)

        // Every call ended, in source order, each with a result that says what happened.
        const ends = events.filter((e) => e.type === "tool_execution_end") as Array<any>
        const messages = events.filter((e) => e.type === "message_end").map((e: any) => e.message as ToolResultMessage)
        assert.deepStrictEqual(messages.map((m) => m.toolCallId), ["id-stubborn", "id-cooperative", "id-slow"])
        assert.strictEqual(ends.length, 3)
        assert.include(textOf(messages[0].content), "abandoned")
        for (const m of messages) {
          assert.isTrue(m.isError)
          assert.include(textOf(m.content), "interrupted after it started")
        }
        if (how === "signal") {
          assert.isTrue(Exit.isSuccess(exit!))
          if (Exit.isSuccess(exit!)) {
            const result = exit.value as ToolBatchResult
            assert.isTrue(result.aborted)
            assert.isFalse(result.terminate)
            assert.deepStrictEqual(result.messages, messages)
          }
        }

        // Only the stubborn tool is still running; the others were interrupted, ran their finalizers and saw
        // their AbortSignal fire; no fiber of the batch itself is left.
        assert.isUndefined(toolFibers.get("stubborn")!.pollUnsafe(), "the stubborn tool cannot have stopped")
        for (const name of ["cooperative", "slow"]) {
          assert.isDefined(toolFibers.get(name)!.pollUnsafe(), `the ${name} tool's fiber is still running`)
          assert.isTrue(finalizersRan.has(name), `the ${name} tool's finalizers did not run`)
          assert.isTrue(toolSignals.get(name)!.aborted, `the ${name} tool's AbortSignal was not aborted`)
        }
        assert.isFalse(finalizersRan.has("stubborn"))
        assert.isTrue(toolSignals.get("stubborn")!.aborted, "the stubborn tool's AbortSignal was not aborted")
        const stillRunning = [...otherFibers].filter(([f]) => f !== batchFiber && f.pollUnsafe() === undefined)
        assert.deepStrictEqual(
          stillRunning.map(([f, seen]) => `fiber #${f.id}, seen: ${seen.join("; ")}`),
          [],
          "fibers of the batch besides the stubborn tool's are still running"
        )
        // Nothing more happens later.
        const count = events.length
        yield* TestClock.adjust("1 minute")
        assert.strictEqual(events.length, count, "an event after the batch returned")
      })
  )
})

// ---------------------------------------------------------------------------------------------------------
// Regressions: minimal counterexamples found by the properties above
// ---------------------------------------------------------------------------------------------------------

describe("executeToolCalls: regressions found by the properties", () => {
  // Fixed since it was found: an abort that lands while `message_start` is being delivered. `announce` marked
  // the call as announced before emitting and the pair message_start/message_end was not atomic, so the
  // interrupted batch never emitted that call's message_end (settleRemaining skips announced calls).
  it.effect.each(
    [
      ["parallel", "SignalAfterEvents"],
      ["sequential", "SignalAfterEvents"],
      ["parallel", "InterruptAfterEvents"]
    ] as const
  )(
    "an abort during message_start still lets the call's message_end out (%s, %s)",
    ([mode, tag]) =>
      checkCase(batchCase({
        calls: [call({ delay: 100 })],
        configSequential: mode === "sequential",
        // start, end, message_start: the abort fires from the subscriber as it receives message_start
        abort: { _tag: tag, events: 3 }
      }))
  )

  // Fixed since it was found: an abort that fires while a tool body is starting (here the subscriber aborts on
  // the tool's first, synchronous update). `execute` forked the tool (`forkDetach`, startImmediately) and only
  // afterwards installed the `onInterrupt` that stops it; the interrupt of the work fiber, deferred while the
  // tool ran inside it, was delivered in between, so the tool's fiber was never interrupted nor signalled.
  it.effect("an abort while a tool body starts does not leave the tool running (sequential)", () =>
    checkCase(batchCase({
      calls: [call({ before: "slowPass", body: "never", updates: 1 })],
      configSequential: true,
      // start, then the tool's first update
      abort: { _tag: "SignalAfterEvents", events: 2 }
    })))

  // Interrupting the batch's fiber from inside a subscriber while the batch runs synchronously: `supervise`
  // forks the work with startImmediately and returns its exit at once when it finished synchronously, so the
  // interrupt is only seen once every tool has run.
  it.effect("interrupting the batch during its first synchronous stretch starts no further tool", () =>
    checkCase(batchCase({
      calls: [call(), call()],
      // the first start event
      abort: { _tag: "InterruptAfterEvents", events: 1 }
    })))

  // Interrupting the batch's fiber while the work fiber is running (here from the subscriber, on the first
  // call's end event): `execute` checks only the AbortSignal, which an interrupt does not fire, and the work
  // fiber's interruption is deferred while it runs, so the parallel phase still starts the next tool.
  it.effect("TE 8.1 interrupting the batch during the execution phase starts no further tool", () =>
    checkCase(batchCase({
      calls: [call(), call({ body: "never" })],
      // start, start, end of the first call
      abort: { _tag: "InterruptAfterEvents", events: 3 }
    })))

  // Issue 16 item 1, found by the property over aborts from inside the batch. With a concurrency limit,
  // `Effect.forEach` started the next call from the observer of the call that had just ended, outside any fiber
  // of the batch: an abort raised as that call's handler was called, or as its body began, did not stop it
  // (its item fiber was forked while the batch was being interrupted and never reached), so the tool ran on
  // after the batch returned and then sent a second end event.
  it.effect.each(
    [
      ["SignalFromCall", "handler"],
      ["InterruptFromCall", "bodyBegin"],
      ["SignalFromCall", "bodyBegin"]
    ] as const
  )("an abort from a call started as a slot frees stops it (%s, %s)", ([tag, at]) =>
    checkCase(batchCase({
      calls: [call({ delay: 100 }), call({ delay: 2000 }), call({ delay: 100 })],
      concurrency: 2,
      abort: { _tag: tag, call: 2, at }
    })))

  // A subscriber that blocks on message_start while the batch is aborted: the pair message_start/message_end
  // is one uninterruptible step, so the work phase waits in the subscriber and is abandoned after the grace
  // period; its late message_end is then dropped (the emitter is closed), and settleRemaining skips the call
  // because it is already marked announced. The call never gets its message_end.
  it.effect("a subscriber blocking on message_start during an abort still gets the call's message_end", () =>
    checkCase(batchCase({
      calls: [call()],
      sink: "stall",
      // start, end, message_start: the subscriber blocks there for 3 s; the abort comes at 250 ms
      stallOn: 3,
      abort: { _tag: "SignalAtStep", step: 1 }
    })))

  // A harness fault, not a fault of the batch (TE 5.1, TE 8.3 hold). A promise-shaped tool (`Tool.tryPromise`)
  // finished at 1100 ms, its afterToolCall aborted the signal, and settleRemaining sent the end event through a
  // subscriber that yields once, bounded by the 25 ms grace period. `TestClock.adjust(250)` had woken the tool's
  // timer, but the fiber a promise resumes is not one it waits for, so it went on to the grace timer at 1125 ms
  // while the subscriber was still runnable: the delivery was cut before the subscriber recorded it, and the
  // case reported "0 end events". In real time a yield never outlasts 25 ms. The driver now moves time one
  // recorded timer at a time and lets every runnable fiber run in between (`trackTimers`).
  it.effect("TE 5.1, TE 8.3 a promise tool whose afterToolCall aborts still has its end event under a yielding subscriber", () =>
    checkCase(batchCase({
      calls: [call({ shape: "promise", delay: 1100 })],
      grace: 25,
      sink: "yield",
      abort: { _tag: "SignalFromCall", call: 0, at: "after" }
    })))
})
