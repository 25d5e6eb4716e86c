/**
 * Random tool batches for the property tests of `executeToolCalls`: what each call's tool does, what the hooks
 * do, what each call declares it touches (TE 11), the mode, the concurrency limit, the timeouts and where the
 * batch is aborted.
 *
 * Everything here is plain data so that a falsified property prints a readable, replayable counterexample.
 * Times are virtual (TestClock) milliseconds. Tool delays are multiples of 100, timeouts are 50 past a
 * multiple of 100 and grace periods 25 past one, so a tool never settles at the exact instant its timeout or
 * its grace period expires (the expected outcome is then unambiguous).
 */
import { Arbitrary, Schema } from "effect"

/** What the tool body does once it runs (after its updates and its delay). */
export type Body =
  | "succeed" // a valid result
  | "terminate" // a valid result with terminate: true
  | "fail" // a typed failure
  | "die" // a defect
  | "invalid" // a result that is not { content, details } (cast)
  | "never" // Effect.never, cooperative: interruptible
  | "stubborn" // Effect.uninterruptible(Effect.never): ignores cancellation
  | "stubbornSlow" // uninterruptible, but settles after its delay

/** Which tool a call names: the parallel-capable tool, the sequential tool, or a name nobody registered. */
export type ToolName = "par" | "seq" | "unknown"

/** The arguments: valid, valid after coercion ("3" for 3), or invalid. */
export type Args = "valid" | "coercible" | "invalid"

export type Before = "pass" | "slowPass" | "block" | "blockReason" | "blockTerminate" | "fail" | "die" | "replaceArgs"
export type After = "pass" | "slowPass" | "override" | "fail" | "die"

/** The fields `afterToolCall` overrides when it returns an override (absent = not overridden). */
export interface Override {
  readonly content: boolean
  readonly details: boolean
  readonly isError: boolean | null
  readonly terminate: boolean | null
}

/**
 * How the handler is written: an Effect that runs in the runtime; an already-complete Effect
 * (`Effect.succeed`, used only when the body is instant, else it falls back to `effect`); or promise code
 * through `Tool.tryPromise` (a hanging body then is a promise: one that settles when its signal fires, or,
 * for `stubborn`, one that never settles).
 */
export type Shape = "effect" | "instant" | "promise" | "yield"

/**
 * How the hooks are written for a call (each hook of the call, `beforeToolCall` and `afterToolCall`):
 * an Effect that runs in the runtime (`Effect.withFiber`); an already-complete Effect (`Effect.succeed`,
 * `Effect.fail`, `Effect.die`: an Exit, the batch's fast path), the hook's work done when it is called;
 * the same, but a dying hook throws instead of returning; promise code with a real await before the
 * decision (`Effect.promise`); or an Effect that yields to the scheduler first (`Effect.yieldNow`).
 */
export type HookShape = "effect" | "exit" | "throw" | "promise" | "yield"

/**
 * A resource key (TE 11): `a/x` is below `a`, `b` is apart from both, and the empty key covers everything. So
 * few keys that calls of one batch often touch the same ones.
 */
export type Key = "" | "a" | "a/x" | "b"

/** One access a call declares (`ResourceAccess.read`, `write`, `exclusive`). */
export type Access =
  | { readonly kind: "read"; readonly key: Key }
  | { readonly kind: "write"; readonly key: Key }
  | { readonly kind: "exclusive" }

/**
 * What a call of the `par` tool declares it touches (`Tool.withResources`): nothing (`null`: the declaration
 * gives no list, or, when no call of the batch declares anything, the tool has no declaration at all), a list of
 * accesses (possibly empty: it touches nothing), or `die`: the declaration dies, so the call ends as
 * `PrepareFailed` and never runs (TE 11.4). Written in the call's `hookShape`: a plain list (or a throw) for
 * `exit` and `throw`, an Effect otherwise. Calls of other tools declare nothing.
 */
export type Declaration = null | "die" | ReadonlyArray<Access>

export interface CallSpec {
  readonly shape: Shape
  readonly hookShape: HookShape
  readonly name: ToolName
  readonly args: Args
  /** Reuses the id of the previous call (ignored for the first call). */
  readonly duplicate: boolean
  readonly body: Body
  /** Virtual ms the body takes (split around its updates). */
  readonly delay: number
  /** Updates sent by the body, spread over its delay (0–3). */
  readonly updates: number
  /** After settling, a forked fiber of the tool sends one more update (must be ignored). */
  readonly lateUpdate: boolean
  readonly before: Before
  readonly after: After
  readonly override: Override
  readonly resources: Declaration
}

export type Abort =
  | { readonly _tag: "None" }
  | { readonly _tag: "BeforeBatch" }
  | { readonly _tag: "SignalAfterEvents"; readonly events: number }
  | { readonly _tag: "SignalAtStep"; readonly step: number }
  | { readonly _tag: "InterruptAfterEvents"; readonly events: number }
  | { readonly _tag: "InterruptAtStep"; readonly step: number }
  | { readonly _tag: "SignalFromCall"; readonly call: number; readonly at: AbortPoint }
  | { readonly _tag: "InterruptFromCall"; readonly call: number; readonly at: AbortPoint }

/**
 * Where, inside the batch's own callbacks, an abort is raised for the call it names: in the handler function
 * before it returns its Effect, when the tool body begins, just before the body settles, or inside
 * `beforeToolCall` / `afterToolCall`. (Aborts from a subscriber are `*AfterEvents`.)
 */
export type AbortPoint = "handler" | "bodyBegin" | "bodyEnd" | "before" | "after"

/**
 * How the recording event subscriber behaves: records each event at once; yields once before recording it;
 * takes 1 ms (virtual) before recording it (a subscriber with backpressure); records it and then fails on
 * every other event; or records it and then blocks for 3 s (virtual) on one event (see `stallOn`). `callback`
 * records at once too, but through `EventSink.fromCallback`, a plain synchronous function: the path a
 * callback sink takes. `throwing` is that callback, throwing after it recorded every other event.
 */
export type Sink = "sync" | "callback" | "throwing" | "yield" | "slow" | "failing" | "stall"

export interface BatchCase {
  readonly calls: ReadonlyArray<CallSpec>
  /** Config `toolExecution: "sequential"`. */
  readonly configSequential: boolean
  readonly concurrency: number | "unbounded"
  /** Config `timeout` (ms), for every tool without its own. */
  readonly configTimeout: number | null
  /** The `par` tool's own timeout (ms). The `seq` tool has none. */
  readonly toolTimeout: number | null
  /** Config `abandonAfter` (ms); null = the default (2 s). */
  readonly grace: number | null
  readonly sink: Sink
  /**
   * With the `stall` subscriber: the event it blocks on, counted among the events that are not updates
   * (updates are left alone so that tool timings stay exact).
   */
  readonly stallOn: number
  /** Virtual ms per driver step. */
  readonly stepMs: number
  readonly abort: Abort
  /**
   * Set when a call could otherwise hang forever (a `never`/`stubborn` body without a timeout) and the chosen
   * abort might not fire: the driver then aborts (signal, or interrupt for interrupt cases) at this step.
   */
  readonly fallbackAbortStep: number | null
}

// ---------------------------------------------------------------------------------------------------------
// Small combinators
// ---------------------------------------------------------------------------------------------------------

const int = (minimum: number, maximum: number): Arbitrary.Arbitrary<number> =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))

const bool: Arbitrary.Arbitrary<boolean> = Arbitrary.schema(Schema.Boolean)

/** Picks from weighted options; shrinking moves towards the first option. */
const weighted = <A>(options: ReadonlyArray<readonly [number, A]>): Arbitrary.Arbitrary<A> => {
  const table: Array<A> = []
  for (const [weight, value] of options) for (let i = 0; i < weight; i++) table.push(value)
  return Arbitrary.map(int(0, table.length - 1), (i) => table[i])
}

const nullable = <A>(arb: Arbitrary.Arbitrary<A>, weightNull = 1, weightValue = 1): Arbitrary.Arbitrary<A | null> =>
  Arbitrary.flatMap(
    weighted<boolean>([[weightNull, false], [weightValue, true]]),
    (present) => present ? arb : Arbitrary.Constant(null)
  )

// ---------------------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------------------

const bodyArb = weighted<Body>([
  [5, "succeed"],
  [2, "terminate"],
  [2, "fail"],
  [2, "die"],
  [1, "invalid"],
  [1, "never"],
  [1, "stubborn"],
  [1, "stubbornSlow"]
])

const beforeArb = weighted<Before>([
  [8, "pass"],
  [1, "slowPass"],
  [1, "block"],
  [1, "blockReason"],
  [1, "blockTerminate"],
  [1, "fail"],
  [1, "die"],
  [2, "replaceArgs"]
])

const afterArb = weighted<After>([
  [6, "pass"],
  [1, "slowPass"],
  [3, "override"],
  [1, "fail"],
  [1, "die"]
])

const overrideArb: Arbitrary.Arbitrary<Override> = Arbitrary.all({
  content: bool,
  details: bool,
  isError: nullable(bool),
  terminate: nullable(bool)
})

const keyArb = weighted<Key>([[3, "a"], [3, "a/x"], [3, "b"], [1, ""]])

const accessArb: Arbitrary.Arbitrary<Access> = Arbitrary.flatMap(
  weighted<Access["kind"]>([[4, "read"], [4, "write"], [1, "exclusive"]]),
  (kind): Arbitrary.Arbitrary<Access> =>
    kind === "exclusive" ? Arbitrary.Constant({ kind }) : Arbitrary.map(keyArb, (key) => ({ kind, key }))
)

/**
 * Mostly one or two accesses to few keys, so that most batches of several calls hold conflicting ones; now and
 * then nothing declared, an empty list, or a declaration that dies. Shrinks towards declaring nothing.
 */
const declarationArb: Arbitrary.Arbitrary<Declaration> = Arbitrary.flatMap(
  weighted<"nothing" | "die" | number>([[3, "nothing"], [1, "die"], [1, 0], [10, 1], [5, 2]]),
  (size): Arbitrary.Arbitrary<Declaration> =>
    size === "nothing"
      ? Arbitrary.Constant(null)
      : size === "die"
      ? Arbitrary.Constant("die")
      : Arbitrary.array(accessArb, { minLength: size, maxLength: size })
)

export const callSpecArb: Arbitrary.Arbitrary<CallSpec> = Arbitrary.all({
  shape: weighted<Shape>([[4, "effect"], [2, "instant"], [2, "promise"], [1, "yield"]]),
  hookShape: weighted<HookShape>([[3, "effect"], [2, "exit"], [1, "throw"], [2, "promise"], [1, "yield"]]),
  name: weighted<ToolName>([[8, "par"], [2, "seq"], [1, "unknown"]]),
  args: weighted<Args>([[6, "valid"], [2, "coercible"], [1, "invalid"]]),
  duplicate: weighted<boolean>([[9, false], [1, true]]),
  body: bodyArb,
  delay: Arbitrary.map(int(0, 20), (n) => n * 100),
  updates: int(0, 3),
  lateUpdate: weighted<boolean>([[4, false], [1, true]]),
  before: beforeArb,
  after: afterArb,
  override: overrideArb,
  resources: declarationArb
})

const abortOf = (tag: Abort["_tag"]): Arbitrary.Arbitrary<Abort> => {
  switch (tag) {
    case "None":
      return Arbitrary.Constant({ _tag: "None" } as const)
    case "BeforeBatch":
      return Arbitrary.Constant({ _tag: "BeforeBatch" } as const)
    case "SignalAfterEvents":
    case "InterruptAfterEvents":
      return Arbitrary.map(int(1, 30), (events) => ({ _tag: tag, events }))
    case "SignalAtStep":
    case "InterruptAtStep":
      return Arbitrary.map(int(0, 30), (step) => ({ _tag: tag, step }))
    case "SignalFromCall":
    case "InterruptFromCall":
      return Arbitrary.map(
        Arbitrary.all({
          call: int(0, 5),
          at: weighted<AbortPoint>([[2, "handler"], [3, "bodyBegin"], [2, "bodyEnd"], [1, "before"], [1, "after"]])
        }),
        ({ at, call }) => ({ _tag: tag, call, at })
      )
  }
}

/** No abort (a case that could hang still gets the fallback abort, see {@link BatchCase.fallbackAbortStep}). */
export const noAbort: Arbitrary.Arbitrary<Abort> = abortOf("None")

/** Aborts through the `AbortSignal`: before the batch, after k events (from the subscriber), or at a clock step. */
export const abortBySignal: Arbitrary.Arbitrary<Abort> = Arbitrary.flatMap(
  weighted<Abort["_tag"]>([[1, "BeforeBatch"], [3, "SignalAfterEvents"], [2, "SignalAtStep"]]),
  abortOf
)

/** Aborts by interrupting the batch's fiber: after k events (from the subscriber), or at a clock step. */
export const abortByInterrupt: Arbitrary.Arbitrary<Abort> = Arbitrary.flatMap(
  weighted<Abort["_tag"]>([[1, "InterruptAfterEvents"], [1, "InterruptAtStep"]]),
  abortOf
)

/**
 * Aborts raised synchronously from inside the batch: by a tool (handler, body begin, body end), a hook, or the
 * subscriber on its k-th event (updates included), through the signal or by interrupting the batch's fiber.
 */
export const abortFromInside: Arbitrary.Arbitrary<Abort> = Arbitrary.flatMap(
  weighted<Abort["_tag"]>([[3, "SignalFromCall"], [2, "InterruptFromCall"], [2, "SignalAfterEvents"], [
    1,
    "InterruptAfterEvents"
  ]]),
  abortOf
)

/** Any of the above. */
export const anyAbort: Arbitrary.Arbitrary<Abort> = Arbitrary.flatMap(
  weighted<Abort["_tag"]>([
    [4, "None"],
    [1, "BeforeBatch"],
    [3, "SignalAfterEvents"],
    [2, "SignalAtStep"],
    [2, "InterruptAfterEvents"],
    [2, "InterruptAtStep"]
  ]),
  abortOf
)

export type ModeChoice = "parallel" | "configSequential" | "sequentialTool"

/** Virtual time after which the driver gives up and reports a hang. */
export const HORIZON_MS = 80_000
/** Virtual time at which a possibly-hanging case is aborted if nothing else aborted it. */
export const FALLBACK_ABORT_MS = 50_000

const effectiveTimeout = (c: Omit<BatchCase, "fallbackAbortStep">, call: CallSpec): number | null =>
  call.name === "par" ? c.toolTimeout ?? c.configTimeout : c.configTimeout

/** Normalizes a raw draw into a consistent case (the mode choice decides which tool names appear). */
const normalize = (raw: {
  readonly calls: ReadonlyArray<CallSpec>
  readonly homogeneous: boolean
  readonly mode: ModeChoice
  readonly concurrency: number | "unbounded"
  readonly configTimeout: number | null
  readonly toolTimeout: number | null
  readonly grace: number | null
  readonly sink: Sink
  readonly stallOn: number
  readonly stepMs: number
  readonly abort: Abort
}): BatchCase => {
  const first = raw.calls[0]
  let calls = raw.calls.map((call, i) => ({
    ...call,
    ...(raw.homogeneous && i > 0
      ? { body: first.body, before: first.before, after: first.after, override: first.override }
      : {}),
    duplicate: i > 0 && call.duplicate
  }))
  if (raw.mode === "sequentialTool") {
    if (calls.length > 0 && !calls.some((call) => call.name === "seq")) {
      calls = calls.map((call, i) => (i === calls.length - 1 ? { ...call, name: "seq" as const } : call))
    }
  } else {
    calls = calls.map((call) => (call.name === "seq" ? { ...call, name: "par" as const } : call))
  }
  // Only the `par` tool declares what its calls touch.
  calls = calls.map((call) => (call.name === "par" || call.resources === null ? call : { ...call, resources: null }))
  const abort: Abort = raw.abort._tag === "SignalFromCall" || raw.abort._tag === "InterruptFromCall"
    ? { ...raw.abort, call: calls.length === 0 ? 0 : raw.abort.call % calls.length }
    : raw.abort
  const base = {
    calls,
    configSequential: raw.mode === "configSequential",
    concurrency: raw.concurrency,
    configTimeout: raw.configTimeout,
    toolTimeout: raw.toolTimeout,
    grace: raw.grace,
    sink: raw.sink,
    stallOn: raw.sink === "stall" ? raw.stallOn : 1,
    stepMs: raw.stepMs,
    abort
  }
  const mayHang = calls.some((call) =>
    call.name !== "unknown" && (call.body === "never" || call.body === "stubborn") &&
    effectiveTimeout(base, call) === null
  )
  const abortIsTimed = raw.abort._tag === "BeforeBatch" || raw.abort._tag === "SignalAtStep" ||
    raw.abort._tag === "InterruptAtStep"
  return {
    ...base,
    fallbackAbortStep: mayHang && !abortIsTimed ? Math.ceil(FALLBACK_ABORT_MS / raw.stepMs) : null
  }
}

/** How often each concurrency limit is drawn (most batches run unbounded). */
const defaultConcurrency: ReadonlyArray<readonly [number, number | "unbounded"]> = [[3, "unbounded"], [1, 1], [1, 2], [
  1,
  3
], [1, 4]]

/**
 * Random batches whose abort point is drawn from `abort`. `concurrency` reweights the concurrency limits, e.g.
 * towards small limits, where calls start as earlier ones end.
 */
export const makeBatchCaseArb = (
  abort: Arbitrary.Arbitrary<Abort>,
  concurrency: ReadonlyArray<readonly [number, number | "unbounded"]> = defaultConcurrency
): Arbitrary.Arbitrary<BatchCase> =>
  Arbitrary.map(
    Arbitrary.all({
      // Mostly non-empty batches; an empty one now and then.
      calls: Arbitrary.flatMap(
        weighted<boolean>([[12, true], [1, false]]),
        (nonEmpty) =>
          nonEmpty
            ? Arbitrary.array(callSpecArb, { minLength: 1, maxLength: 6 })
            : Arbitrary.Constant<Array<CallSpec>>([])
      ),
      // Every call behaves like the first (bodies, hooks): makes "every result terminates" and similar likely.
      homogeneous: weighted<boolean>([[5, false], [1, true]]),
      mode: weighted<ModeChoice>([[3, "parallel"], [1, "configSequential"], [1, "sequentialTool"]]),
      concurrency: weighted<number | "unbounded">(concurrency),
      configTimeout: nullable(Arbitrary.map(int(1, 30), (n) => n * 100 + 50), 2, 1),
      toolTimeout: nullable(Arbitrary.map(int(1, 30), (n) => n * 100 + 50), 3, 1),
      grace: nullable(Arbitrary.map(int(0, 20), (n) => n * 100 + 25)),
      sink: weighted<Sink>([[3, "sync"], [3, "callback"], [1, "throwing"], [1, "yield"], [1, "slow"], [1, "failing"], [
        1,
        "stall"
      ]]),
      stallOn: int(1, 12),
      stepMs: weighted<number>([[2, 250], [1, 100], [1, 1000]]),
      abort
    }),
    normalize
  )

export const batchCaseArb: Arbitrary.Arbitrary<BatchCase> = makeBatchCaseArb(anyAbort)

/** The mode the batch must run in. */
export const isSequential = (c: BatchCase): boolean => c.configSequential || c.calls.some((call) => call.name === "seq")

/** The timeout that applies to a call's execution, if any. */
export const timeoutOf = (c: BatchCase, call: CallSpec): number | null => effectiveTimeout(c, call)

/** Whether call `i` reuses the id of the call before it (and so must end as a duplicate). */
export const isDuplicate = (c: BatchCase, i: number): boolean => i > 0 && c.calls[i].duplicate

/** Whether the `par` tool declares what its calls touch: only when some call of the batch declares something. */
export const declares = (c: BatchCase): boolean => c.calls.some((call) => call.resources !== null)

/** Whether call `i`'s declaration dies, which only a parallel batch asks for (TE 11.4). */
export const declarationDies = (c: BatchCase, i: number): boolean => c.calls[i].resources === "die" && !isSequential(c)

/**
 * Calls that prepare refuses before it asks what they touch: duplicate id, unknown tool, invalid arguments, or a
 * `beforeToolCall` that blocks, fails or dies.
 */
export const isRefusedEarly = (c: BatchCase, i: number): boolean => {
  const call = c.calls[i]
  return isDuplicate(c, i) || call.name === "unknown" || call.args === "invalid" ||
    call.before === "block" || call.before === "blockReason" || call.before === "blockTerminate" ||
    call.before === "fail" || call.before === "die"
}

/**
 * Calls that must end as an immediate outcome whatever happens (prepare refuses them): refused early (see
 * {@link isRefusedEarly}), or their declaration dies.
 */
export const isImmediate = (c: BatchCase, i: number): boolean => isRefusedEarly(c, i) || declarationDies(c, i)
