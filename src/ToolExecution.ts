/**
 * Running the tool calls of one assistant message: five phases per call (prepare, execute, finalize, emit
 * end, create the tool-result message), in sequential or parallel mode, with abort, timeouts and faults
 * handled so that every call ends with exactly one end event and one result message.
 *
 * The contract is `docs/tool-execution.md`.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context_ from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Stream from "effect/Stream"
import type { AgentContext } from "./AgentContext.ts"
import * as Context from "./AgentContext.ts"
import type { AgentEvent, ToolExecutionEvent } from "./AgentEvent.ts"
import * as EventSink from "./EventSink.ts"
import {
  AbortedBeforeStart,
  DuplicateToolCallId,
  type ImmediateOutcome,
  InvalidToolArguments,
  PrepareFailed,
  ToolCallBlocked,
  ToolCallSkipped,
  ToolNotFound
} from "./ImmediateOutcome.ts"
import { LazyAbort } from "./internal/abort.ts"
import { echo, NotJson, readArguments } from "./internal/arguments.ts"
import * as State from "./internal/callState.ts"
import { type Call, type CallState, errorResult, type Finalized } from "./internal/callState.ts"
import { clip } from "./internal/clip.ts"
import { type Decode, decodeUnknownExit } from "./internal/decoding.ts"
import { laterDuplicates } from "./internal/duplicates.ts"
import { callUser, forEachEager } from "./internal/eager.ts"
import { makeEmitter } from "./internal/emitter.ts"
import { causeMessage } from "./internal/errorText.ts"
import { keepAll } from "./internal/shapes.ts"
import { skipReasonOf } from "./internal/skip.ts"
import { executeAll, settleRemaining, stopTool, supervise } from "./internal/supervise.ts"
import * as Telemetry from "./internal/telemetry.ts"
import { type Restore, uninterruptibleInFiber } from "./internal/uninterruptible.ts"
import type { AssistantMessage, ToolCall, ToolResultContent, ToolResultMessage } from "./Message.ts"
import { toolCallsOf } from "./Message.ts"
import type { ExecutionMode, Tool, ToolContext, ToolResult } from "./Tool.ts"
import { ToolResultSchema } from "./Tool.ts"
import { type RegisteredTool, ToolRegistry, type ToolRegistryShape } from "./ToolRegistry.ts"

// ---------------------------------------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------------------------------------

/** What `beforeToolCall` sees: the validated arguments of a call about to execute. */
export interface BeforeToolCallContext {
  readonly assistantMessage: AssistantMessage
  readonly toolCall: ToolCall
  readonly args: unknown
  readonly context: AgentContext
}

/**
 * What `beforeToolCall` may decide. `block` refuses the call (`reason` becomes the result text, `terminate`
 * counts for the batch); `args` replaces the validated arguments and is passed to the tool as given.
 */
export interface BeforeToolCallResult {
  readonly block?: boolean
  readonly reason?: string
  readonly terminate?: boolean
  readonly args?: unknown
}

/** What `afterToolCall` sees: an executed call and its result before any override. */
export interface AfterToolCallContext {
  readonly assistantMessage: AssistantMessage
  readonly toolCall: ToolCall
  readonly args: unknown
  readonly result: ToolResult
  readonly isError: boolean
  readonly context: AgentContext
}

/** Field-by-field overrides from `afterToolCall`; an omitted field keeps the executed value (no deep merge). */
export interface AfterToolCallResult {
  readonly content?: ReadonlyArray<ToolResultContent>
  readonly details?: unknown
  readonly isError?: boolean
  readonly terminate?: boolean
}

/**
 * How a batch runs. Hooks are Effects: they may fail, use services (`R`) and wait (e.g. for a person's
 * approval); their failures and defects become error results.
 */
export interface ToolExecutionConfig<R = never> {
  /** `"sequential"` runs one call at a time; the default `"parallel"` executes prepared calls together. */
  readonly toolExecution?: ExecutionMode | undefined
  /** How many calls execute at once in parallel mode. Default `"unbounded"`. */
  readonly concurrency?: number | "unbounded" | undefined
  readonly beforeToolCall?:
    | ((context: BeforeToolCallContext) => Effect.Effect<BeforeToolCallResult | undefined | void, unknown, R>)
    | undefined
  readonly afterToolCall?:
    | ((context: AfterToolCallContext) => Effect.Effect<AfterToolCallResult | undefined | void, unknown, R>)
    | undefined
  /** Execution time allowed per call, for tools that set none. Default: no limit. */
  readonly timeout?: Duration.Input | undefined
  /**
   * After an abort or timeout, how long to wait for a tool to stop before abandoning it. Default 2 seconds.
   */
  readonly abandonAfter?: Duration.Input | undefined
}

/** A batch's inputs beside the assistant message. */
export interface ToolExecutionOptions<R = never> extends ToolExecutionConfig<R> {
  /** Aborting it stops the batch as interrupting its fiber would, but the batch still returns its results. */
  readonly signal?: AbortSignal | undefined
  /** The run's context, handed to the hooks. */
  readonly context?: AgentContext | undefined
}

/** The outcome of a batch. */
export interface ToolBatchResult {
  /** One result per tool call, in source order. */
  readonly messages: ReadonlyArray<ToolResultMessage>
  /** True when the batch has calls and every result asked to terminate. */
  readonly terminate: boolean
  /** True when the batch was aborted (signal or interruption); the loop must not call the model again. */
  readonly aborted: boolean
}

/** The mode a batch will run in: sequential if configured so or if any called tool requires it. @internal */
export const chooseMode = (
  calls: ReadonlyArray<ToolCall>,
  registry: ToolRegistryShape,
  configured: ExecutionMode | undefined
): ExecutionMode => {
  if (configured === "sequential") return "sequential"
  for (const call of calls) {
    if (registry.get(call.name)?.tool.executionMode === "sequential") return "sequential"
  }
  return "parallel"
}

// ---------------------------------------------------------------------------------------------------------
// One batch
// ---------------------------------------------------------------------------------------------------------

interface Batch<R> {
  readonly assistantMessage: AssistantMessage
  readonly context: AgentContext
  readonly registry: ToolRegistryShape
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
  readonly signal: AbortSignal | undefined
  readonly before: ToolExecutionConfig<R>["beforeToolCall"]
  readonly after: ToolExecutionConfig<R>["afterToolCall"]
  readonly timeout: Duration.Duration | undefined
  readonly grace: Duration.Duration
  /** The calls whose id an earlier call of the batch already has (TE 9.1); usually none. */
  readonly duplicates: ReadonlySet<Call> | undefined
  /** Set by the loop for a response that cannot be trusted: every call ends with this text (TE 2, AL 2.10). */
  readonly skipReason: string | undefined
  /** Set when the batch is being stopped (signal or interruption): no tool may start after it (TE 8.1). */
  stopping: boolean
  /** The sink delivers synchronously (see {@link makeEmitter}). */
  readonly syncSink: boolean
  /** A delivery the sink starts can never be cut half-way, so it needs no uninterruptible step around it. */
  readonly directSink: boolean
  readonly clock: Clock.Clock
  lastTimestamp: number
  /** The batch's spans and metrics; `undefined` when nothing is recorded (docs/telemetry.md OT 1.2). */
  readonly trace: Telemetry.BatchTrace | undefined
  /**
   * A tool is running in the work fiber (sequential mode). Stopping then interrupts the work only once it
   * waits: the tool, not cut between two of its steps, meets its interruption at its first wait, as it would
   * in a fiber of its own (see {@link supervise}).
   */
  toolInWork: boolean
}

/**
 * Where a tool without a timeout runs: in the fiber of its call (parallel mode) or in the batch's work fiber
 * (sequential mode, where one call runs at a time). A tool with a timeout always runs apart.
 */
type Where = "callFiber" | "workFiber"

/** A call that passed prepare: its tool and the arguments it will get. */
class Prepared {
  readonly call: Call
  readonly entry: RegisteredTool
  readonly args: unknown
  constructor(call: Call, entry: RegisteredTool, args: unknown) {
    this.call = call
    this.entry = entry
    this.args = args
  }
}

const DEFAULT_GRACE = Duration.seconds(2)

const isAborted = (batch: Batch<any>): boolean => batch.stopping || batch.signal?.aborted === true

/**
 * Runs a step that moves a call's state and emits: directly when the sink's delivery cannot be cut (a
 * synchronous sink: nothing can come between them; an eager one: the state moves and the delivery starts in
 * the same synchronous stretch, and a pending rest runs apart), otherwise as one uninterruptible step, so an
 * abort can never leave a call in a state without its event (or the reverse).
 */
const atomically = <R>(
  batch: Batch<R>,
  call: Call,
  step: (batch: Batch<R>, call: Call) => Effect.Effect<void>
): Effect.Effect<void> =>
  // Bound, not a closure made per event (see `startNow`).
  batch.directSink ? step(batch, call) : Effect.uninterruptible(Effect.suspend(step.bind(undefined, batch, call)))

// ---------------------------------------------------------------------------------------------------------
// Phase 1: prepare (TE 2)
// ---------------------------------------------------------------------------------------------------------

const decoders = new WeakMap<Tool.Any, Decode>()

const decoderOf = (tool: Tool.Any) => {
  let decode = decoders.get(tool)
  if (decode === undefined) {
    // Not Schema.decodeUnknownExit directly: the Schema may come from another copy of effect (see the module).
    decode = decodeUnknownExit(tool.parameters)
    decoders.set(tool, decode)
  }
  return decode
}

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const pathText = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined): string =>
  path === undefined || path.length === 0
    ? "root"
    : path.map((segment) => String(typeof segment === "object" ? segment.key : segment)).join(".")

/** Validation issues listed in an outcome text; the rest are counted. */
const MAX_ISSUES_SHOWN = 20

const safeJson = (value: unknown): string => {
  try {
    return JSON.stringify(value, null, 2) ?? String(value)
  } catch {
    return String(value)
  }
}

/** Validates (after coercion) into a fresh value, or fails with the exact validation text. */
const validateArguments = (
  toolCall: ToolCall,
  tool: Tool.Any,
  raw: unknown
): Effect.Effect<unknown, InvalidToolArguments> => {
  const exit = decoderOf(tool)(tool.coerce(raw))
  if (Exit.isSuccess(exit)) return Effect.succeed(exit.value)
  const error = Cause.findErrorOption(exit.cause)
  const issues = Option.isSome(error)
    ? formatIssues(error.value.issue).issues.map((issue) => ({ path: pathText(issue.path), message: issue.message }))
    : [{ path: "root", message: causeMessage(exit.cause) }]
  // Schema's messages may quote the offending value, and the arguments may be huge: both are bounded (TE 9.4).
  const shown = issues.length > MAX_ISSUES_SHOWN ? issues.slice(0, MAX_ISSUES_SHOWN) : issues
  const more = issues.length - shown.length
  const message = `Validation failed for tool "${tool.name}":\n${
    shown.map((i) => `  - ${clip(i.path)}: ${clip(i.message)}`).join("\n")
  }${more > 0 ? `\n  … and ${more} more` : ""}\n\nReceived arguments:\n${echo(safeJson(raw))}`
  return Effect.fail(new InvalidToolArguments({ toolCallId: toolCall.id, toolName: toolCall.name, message, issues }))
}

/** Runs a user stage of prepare; its failures and defects become `PrepareFailed`, interruption passes. */
const guardStage = <A, R>(
  toolCall: ToolCall,
  stage: "prepareArguments" | "beforeToolCall",
  effect: () => Effect.Effect<A, unknown, R>
): Effect.Effect<A, PrepareFailed, R> =>
  Effect.matchCauseEffectEager(callUser(effect), {
    onSuccess: (value) => Effect.succeed(value),
    onFailure: (cause) => stageFailed(toolCall, stage, cause)
  })

/** A user stage's failure or defect as `PrepareFailed`; an interruption passes. */
const stageFailed = (
  toolCall: ToolCall,
  stage: "prepareArguments" | "beforeToolCall",
  cause: Cause.Cause<unknown>
): Effect.Effect<never, PrepareFailed> =>
  Cause.hasInterruptsOnly(cause)
    ? Effect.failCause(cause as Cause.Cause<never>)
    : Effect.fail(
      new PrepareFailed({ toolCallId: toolCall.id, toolName: toolCall.name, message: causeMessage(cause), stage })
    )

const abortedBeforeStart = (toolCall: ToolCall) =>
  new AbortedBeforeStart({
    toolCallId: toolCall.id,
    toolName: toolCall.name,
    message: `Tool ${clip(toolCall.name)} was not executed: the run was aborted before it started.`
  })

/**
 * Phase 1. Looks the tool up, applies the compatibility shim, validates, and asks `beforeToolCall`. Every
 * way the call can end here is a typed error: the immediate outcome.

/** TE 2.4, TE 2.5: the outcome `beforeToolCall`'s decision gives the call, if it may not go on. */
const refusal = <R>(
  batch: Batch<R>,
  toolCall: ToolCall,
  decision: BeforeToolCallResult | undefined | void
): ImmediateOutcome | undefined => {
  if (decision && decision.block === true) {
    return new ToolCallBlocked({
      toolCallId: toolCall.id,
      toolName: toolCall.name,
      message: decision.reason || "Tool execution was blocked",
      terminate: decision.terminate === true
    })
  }
  // TE 2.5: the hook may have waited (for a person's approval) while the run was aborted.
  if (isAborted(batch)) return abortedBeforeStart(toolCall)
  return undefined
}

/**
 * TE 2.4: asks `beforeToolCall`, and on a go ends prepare with `prepared(args)`. Untraced, the hook's
 * outcome is read in one step (this runs once per call); traced, the approval wait is a span of its own
 * (docs/telemetry.md OT 2.4).
 */
const beforeToolCall = <R>(
  batch: Batch<R>,
  call: Call,
  args: unknown,
  before: NonNullable<ToolExecutionConfig<R>["beforeToolCall"]>,
  entry: RegisteredTool
): Effect.Effect<Prepared, ImmediateOutcome, R> => {
  const toolCall = call.toolCall
  if (batch.trace === undefined) {
    // The hook called here rather than through a closure (see `startNow`).
    let asked: Effect.Effect<BeforeToolCallResult | undefined | void, unknown, R>
    try {
      asked = before({ assistantMessage: batch.assistantMessage, toolCall, args, context: batch.context })
    } catch (error) {
      asked = Effect.die(error)
    }
    if (Exit.isExit(asked)) {
      const done = asked as Exit.Exit<BeforeToolCallResult | undefined | void, unknown>
      return Exit.isSuccess(done)
        ? conclude(batch, call, entry, args, done.value)
        : stageFailed(toolCall, "beforeToolCall", done.cause)
    }
    // Pending (a person's approval, a promise): continued by bound module functions (see `startNow`).
    return Effect.matchCauseEffect(asked, {
      onSuccess: conclude.bind(undefined, batch, call, entry, args),
      onFailure: stageFailed.bind(undefined, toolCall, "beforeToolCall")
    })
  }
  const ask = () => before({ assistantMessage: batch.assistantMessage, toolCall, args, context: batch.context })
  return Effect.flatMapEager(
    Telemetry.toolPhase(batch.trace, call, "approval", () => guardStage(toolCall, "beforeToolCall", ask)),
    (decision) => conclude(batch, call, entry, args, decision)
  )
}

/** TE 2.4: prepare ends with `beforeToolCall`'s decision: refused, or prepared with its arguments. */
function conclude<R>(
  batch: Batch<R>,
  call: Call,
  entry: RegisteredTool,
  args: unknown,
  decision: BeforeToolCallResult | undefined | void
): Effect.Effect<Prepared, ImmediateOutcome> {
  const refused = refusal(batch, call.toolCall, decision)
  if (refused !== undefined) return Effect.fail(refused)
  return Effect.succeed(makePrepared(call, entry, decision && decision.args !== undefined ? decision.args : args))
}

/** The end of prepare: the call is ready to execute with `args`. */
const makePrepared = (call: Call, entry: RegisteredTool, args: unknown): Prepared => {
  call.state = State.Prepared
  return new Prepared(call, entry, args)
}

/**
 * Phase 1 (TE 2). Checks the id (TE 9.1), looks the tool up (TE 2.2), applies the shim and validates
 * (TE 2.3), and asks `beforeToolCall` (TE 2.4). Every way the call can end here is a typed error: the
 * immediate outcome. (A plain function rather than a generator: it runs once per call, and most of its
 * exits are immediate.)
 */
const prepare = <R>(batch: Batch<R>, call: Call): Effect.Effect<Prepared, ImmediateOutcome, R> => {
  const { toolCall } = call
  if (batch.duplicates?.has(call) === true) {
    return Effect.fail(
      new DuplicateToolCallId({
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        message: `Tool call id "${
          clip(toolCall.id)
        }" is a duplicate: an earlier call in this message has the same id, so this one was not executed.`
      })
    )
  }
  if (batch.skipReason !== undefined) {
    return Effect.fail(
      new ToolCallSkipped({ toolCallId: toolCall.id, toolName: toolCall.name, message: batch.skipReason })
    )
  }
  if (isAborted(batch)) return Effect.fail(abortedBeforeStart(toolCall))
  const entry = batch.registry.get(toolCall.name)
  if (entry === undefined) {
    return Effect.fail(
      new ToolNotFound({
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        message: `Tool ${clip(toolCall.name)} not found`
      })
    )
  }
  const given = readArguments(toolCall)
  if (given instanceof NotJson) {
    return Effect.fail(
      new InvalidToolArguments({
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        message:
          `Invalid arguments for tool "${clip(toolCall.name)}": the arguments are not valid JSON: ${
            clip(given.reason)
          }` +
          `\n\nReceived arguments:\n${echo(given.text)}`,
        issues: [{ path: "root", message: `not valid JSON: ${given.reason}` }]
      })
    )
  }
  const shim = entry.tool.prepareArguments
  const validated = shim === undefined
    ? validateArguments(toolCall, entry.tool, given)
    : Effect.flatMapEager(
      guardStage(toolCall, "prepareArguments", () => shim(given)),
      (raw) => validateArguments(toolCall, entry.tool, raw)
    )
  const before = batch.before
  if (Exit.isExit(validated)) {
    const done = validated as Exit.Exit<unknown, InvalidToolArguments | PrepareFailed>
    if (Exit.isFailure(done)) return done as Exit.Exit<never, InvalidToolArguments | PrepareFailed>
    return before === undefined
      ? Effect.succeed(makePrepared(call, entry, done.value))
      : beforeToolCall(batch, call, done.value, before, entry)
  }
  // A shim that is still pending.
  return before === undefined
    ? Effect.map(validated, (args) => makePrepared(call, entry, args))
    : Effect.flatMap(validated, (args) => beforeToolCall(batch, call, args, before, entry))
}

/** An immediate outcome as a finalized result. Only a block may terminate. */
const immediateResult = (outcome: ImmediateOutcome): Finalized => {
  const finalized = { ...errorResult(outcome.message), errorType: outcome._tag }
  return outcome._tag === "ToolCallBlocked" && outcome.terminate
    ? { ...finalized, result: { ...finalized.result, terminate: true } }
    : finalized
}

// ---------------------------------------------------------------------------------------------------------
// Phase 2: execute (TE 3)
// ---------------------------------------------------------------------------------------------------------

const isValidResult = Schema.is(ToolResultSchema)
const decodeResult = Schema.decodeUnknownExit(ToolResultSchema)

/**
 * The common shape of a result, checked by hand because it runs for every call; anything less plain
 * (optional fields) is left to the Schema, which also explains a failure.
 */
const isPlainResult = (value: unknown): value is ToolResult => {
  if (typeof value !== "object" || value === null) return false
  const { content, terminate } = value as { readonly content?: unknown; readonly terminate?: unknown }
  if (!Array.isArray(content) || (terminate !== undefined && typeof terminate !== "boolean")) return false
  for (const block of content) {
    if (typeof block !== "object" || block === null) return false
    const b = block as {
      readonly type?: unknown
      readonly text?: unknown
      readonly data?: unknown
      readonly mimeType?: unknown
    }
    if (b.type === "text") {
      if (typeof b.text !== "string" || "textSignature" in b) return false
    } else if (b.type !== "image" || typeof b.data !== "string" || typeof b.mimeType !== "string") {
      return false
    }
  }
  return true
}

/** A handler's exit as an executed result: failures and invalid results become error results. */
const executedResult = (tool: Tool.Any, exit: Exit.Exit<ToolResult, unknown>): Finalized => {
  if (Exit.isSuccess(exit)) {
    const value = exit.value
    if (isPlainResult(value) || isValidResult(value)) return { result: value, isError: false }
    const decoded = decodeResult(value)
    const reason = Exit.isFailure(decoded) ? causeMessage(decoded.cause) : "unexpected shape"
    return errorResult(`Tool ${tool.name} returned an invalid result: ${reason}`)
  }
  if (Cause.hasInterruptsOnly(exit.cause)) return errorResult(`Tool ${tool.name} was interrupted`)
  const settled = exit.cause.reasons.find((r) => r._tag === "Fail" && r.error instanceof ToolErrorResult)
  if (settled?._tag === "Fail") return { result: (settled.error as ToolErrorResult).result, isError: true }
  return errorResult(causeMessage(exit.cause))
}

/**
 * A handler failure that is reported as exactly this error result (content and details) rather than by its
 * message: durable runs replay a stored timeout with it (docs/durability.md DR 4.2).
 *
 * @internal
 */
export class ToolErrorResult extends Error {
  readonly result: ToolResult
  constructor(result: ToolResult) {
    super(result.content.map((c) => (c.type === "text" ? c.text : "")).join(""))
    this.result = result
  }
}

/**
 * Stops a running tool: aborts its signal first (so cleanup that waits on the signal can finish), then

/** What a running tool gets besides its arguments; `signal` is created on first access. */
class CallContext extends LazyAbort implements ToolContext {
  readonly toolCallId: string
  readonly #call: Call
  readonly #emit: (event: AgentEvent) => Effect.Effect<void>
  constructor(call: Call, emit: (event: AgentEvent) => Effect.Effect<void>) {
    const id = call.toolCall.id
    super(() => new Error(`Tool call ${id} was interrupted`))
    this.toolCallId = id
    this.#call = call
    this.#emit = emit
  }
  /** An own function, so that a tool may destructure it from its context. TE 3.2: only while it runs. */
  readonly update = (partialResult: ToolResult): Effect.Effect<void> =>
    Effect.suspend(() => {
      const call = this.#call
      if (call.state._tag !== "Running") return Effect.void
      const { toolCall } = call
      return Effect.uninterruptible(this.#emit({
        type: "tool_execution_update",
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        args: toolCall.arguments,
        partialResult
      }))
    })
}

/** A call whose tool runs: `abort` aborts the signal the tool holds (a method, not a closure per call). */
class Running {
  readonly _tag = "Running"
  readonly #context: CallContext
  constructor(context: CallContext) {
    this.#context = context
  }
  abort(): void {
    this.#context.abort()
  }
}

let shapesKept = false

/** Once: an instance of each of this module's classes on a call's path, made up, kept (see `shapes.ts`). */
const keepShapes = (entry: RegisteredTool): void => {
  shapesKept = true
  const call: Call = { toolCall: { type: "toolCall", id: "", name: "", arguments: {} }, state: State.Waiting }
  const context = new CallContext(call, () => Effect.void)
  keepAll([new Prepared(call, entry, {}), context, new Running(context)])
}

/**
 * Phase 2 (TE 3). Calls the handler. An effect that is already complete (`Effect.succeed(result)`) needs
 * nothing more. A tool without a timeout runs right where it is called (`where`): in the call's own fiber
 * (parallel mode: {@link executeAll} stops it within the grace period) or in the batch's work fiber
 * (sequential mode: the supervision stops it, see {@link supervise}). A tool with a timeout runs apart
 * ({@link runApart}). Never starts a tool once the run is stopping (TE 8.1).
 */
const execute = <A, R>(
  batch: Batch<any>,
  prepared: Prepared,
  where: Where,
  then: (executed: Finalized) => Effect.Effect<A, never, R>
): Effect.Effect<A, never, R> => {
  const { call, entry } = prepared
  if (isAborted(batch)) return Effect.interrupt
  if (!shapesKept) keepShapes(entry)
  const context = new CallContext(call, batch.emit)
  const running: CallState = new Running(context)
  call.state = running
  let handled: Effect.Effect<ToolResult, unknown>
  try {
    handled = entry.handler(prepared.args, context)
  } catch (error) {
    handled = Effect.die(error)
  }
  if (Exit.isExit(handled)) return then(executedResult(entry.tool, handled as Exit.Exit<ToolResult, unknown>))
  // The handler itself may have aborted the run (or a listener of the signal did) while it was called: the
  // Effect it returned must then not run. Nothing else would stop it: the interruption of the batch is
  // deferred while the batch's own fiber is busy calling the handler.
  if (isAborted(batch)) {
    context.abort()
    return Effect.interrupt
  }
  const timeout = entry.tool.timeout ?? batch.timeout
  if (timeout === undefined) {
    // In the call's fiber, an interruption is seen by `executeAll`, which observes that fiber: it aborts the
    // signal and marks the call stopped once the tool's own finalizers are done. In the work fiber, the
    // supervision aborts the signal before it interrupts the work, and lets that interruption reach the tool
    // at its first wait (`toolInWork`), as it would reach a tool in a fiber of its own.
    if (where === "workFiber") batch.toolInWork = true
    return Effect.matchCauseEffect(handled as Effect.Effect<ToolResult, unknown>, {
      onSuccess: succeededThen.bind(undefined, batch, entry.tool, then) as (
        value: ToolResult
      ) => Effect.Effect<A, never, R>,
      onFailure: failedThen.bind(undefined, batch, entry.tool, then) as (
        cause: Cause.Cause<unknown>
      ) => Effect.Effect<A, never, R>
    })
  }
  // Runs once the tool's own finalizers are done: a tool that ignores cancellation never gets here.
  const run = Effect.onInterrupt(handled, () =>
    Effect.sync(() => {
      context.abort()
      if (call.state === running) call.state = State.Stopped
    }))
  return Effect.flatMapEager(runApart(batch, call, entry.tool, run, context, timeout), then)
}

// A tool in the work fiber that ends while the batch is stopping goes no further (no finalize, no later
// call): the supervision's interruption, sent a microtask later (see `toolInWork`), would have stopped it at
// its next step, as it stops the fiber of a tool that runs apart.
function succeededThen<A, R>(
  batch: Batch<any>,
  tool: Tool.Any,
  then: (executed: Finalized) => Effect.Effect<A, never, R>,
  value: ToolResult
): Effect.Effect<A, never, R> {
  return stoppedInWork(batch) ? Effect.interrupt : then(executedResult(tool, Exit.succeed(value)))
}

function failedThen<A, R>(
  batch: Batch<any>,
  tool: Tool.Any,
  then: (executed: Finalized) => Effect.Effect<A, never, R>,
  cause: Cause.Cause<unknown>
): Effect.Effect<A, never, R> {
  return stoppedInWork(batch) ? Effect.interrupt : then(executedResult(tool, Exit.failCause(cause)))
}

/** The tool in the work fiber (if any) has ended; whether the batch is stopping, so that it goes no further. */
function stoppedInWork(batch: Batch<any>): boolean {
  if (!batch.toolInWork) return false
  batch.toolInWork = false
  return isAborted(batch)
}

/**
 * A tool in a detached fiber of its own, so that on abort or timeout (TE 3.5) it can be stopped (its signal
 * aborted, then its fiber interrupted) and, if it ignores cancellation, abandoned after the grace period
 * while nothing else of the batch waits on it (TE 8.2).
 */
const runApart = (
  batch: Batch<any>,
  call: Call,
  tool: Tool.Any,
  run: Effect.Effect<ToolResult, unknown>,
  context: CallContext,
  timeout: Duration.Duration | undefined
): Effect.Effect<Finalized> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.withFiber((parent) => {
      // Started at once, in this uninterruptible step: a tool that finishes synchronously needs nothing more.
      const fiber = Effect.runForkWith(parent.context)(restore(run))
      const done = fiber.pollUnsafe()
      if (done !== undefined) return Effect.succeed(executedResult(tool, done))
      // The common case, without a generator: no limit, and no abort while the tool started.
      if (timeout === undefined && !isAborted(batch)) {
        return Effect.map(
          Effect.onInterrupt(restore(Fiber.await(fiber)), () => stopApart(batch, call, fiber, context)),
          (exit) => executedResult(tool, exit)
        )
      }
      return superviseApart(restore, batch, call, tool, fiber, context, timeout)
    })
  )

/**
 * Only a call still running becomes abandoned: by the time the wait is over, the supervisor may have
 * abandoned and settled it already (TE 8.3), and its settled state must stand.
 */
const abandonIfRunning = (call: Call, stopped: boolean): void => {
  if (!stopped && call.state._tag === "Running") call.state = State.Abandoned
}

/** Stops a tool running apart on abort: its signal, then its fiber; abandoned if it does not stop in time. */
const stopApart = (
  batch: Batch<any>,
  call: Call,
  fiber: Fiber.Fiber<ToolResult, unknown>,
  context: CallContext
): Effect.Effect<void> =>
  Effect.map(stopTool(fiber, () => context.abort(), batch.grace), (stopped) => abandonIfRunning(call, stopped))

const superviseApart = Effect.fnUntracedEager(function*(
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
  batch: Batch<any>,
  call: Call,
  tool: Tool.Any,
  fiber: Fiber.Fiber<ToolResult, unknown>,
  context: CallContext,
  timeout: Duration.Duration | undefined
) {
  const stop = () => stopTool(fiber, () => context.abort(), batch.grace)
  const stopOnAbort = () => stopApart(batch, call, fiber, context)
  // Aborted while the tool ran its first synchronous steps: the interruption of this fiber is deferred
  // until it waits, so stop the tool now rather than start waiting for it.
  if (isAborted(batch)) {
    yield* stopOnAbort()
    return yield* Effect.interrupt
  }
  if (timeout === undefined) {
    const exit = yield* restore(Fiber.await(fiber)).pipe(Effect.onInterrupt(stopOnAbort))
    return executedResult(tool, exit)
  }
  const exit = yield* restore(Effect.timeoutOption(Fiber.await(fiber), timeout)).pipe(
    Effect.onInterrupt(stopOnAbort)
  )
  if (Option.isSome(exit)) return executedResult(tool, exit.value)
  const stopped = yield* stop()
  // The tool may go on in the background: an abort while finalizing must still say so.
  abandonIfRunning(call, stopped)
  return errorResult(
    `Tool ${tool.name} timed out after ${Duration.format(timeout)}${
      stopped ? "" : " and was abandoned: it did not stop when cancelled"
    }`,
    { timedOut: true, abandoned: !stopped }
  )
})

// ---------------------------------------------------------------------------------------------------------
// Phase 3: finalize (TE 4)
// ---------------------------------------------------------------------------------------------------------

/** `afterToolCall`'s overrides, field by field. An absent, undefined or null field keeps the executed value (pi's `??`). */
const applyOverride = (executed: Finalized, override: AfterToolCallResult | undefined | void): Finalized => {
  if (!override) return executed
  const { result } = executed
  const terminate = override.terminate ?? result.terminate
  return {
    result: {
      content: override.content ?? result.content,
      details: override.details ?? result.details,
      ...(terminate !== undefined ? { terminate } : {})
    },
    isError: override.isError ?? executed.isError
  }
}

/** Phase 3 (TE 4). Applies `afterToolCall`, then goes on with the final outcome; a failure becomes an error result. */
const finalize = <A, R, R2>(
  batch: Batch<R>,
  prepared: Prepared,
  executed: Finalized,
  then: (outcome: Finalized) => Effect.Effect<A, never, R2>
): Effect.Effect<A, never, R | R2> => {
  const after = batch.after
  if (after === undefined) return then(executed)
  const call = prepared.call
  call.state = call.state._tag === "Abandoned" ? State.FinalizingAbandoned : State.Finalizing
  let overridden: Effect.Effect<AfterToolCallResult | undefined | void, unknown, R>
  try {
    overridden = after({
      assistantMessage: batch.assistantMessage,
      toolCall: call.toolCall,
      args: prepared.args,
      result: executed.result,
      isError: executed.isError,
      context: batch.context
    })
  } catch (error) {
    overridden = Effect.die(error)
  }
  if (Exit.isExit(overridden)) {
    const done = overridden as Exit.Exit<AfterToolCallResult | undefined | void, unknown>
    return Exit.isSuccess(done) ? overrideWith(executed, then, done.value) : afterFailed(then, done.cause)
  }
  // Pending: continued by bound module functions (see `startNow`).
  return Effect.matchCauseEffect(overridden, {
    onSuccess: overrideWith.bind(undefined, executed, then) as (
      override: AfterToolCallResult | undefined | void
    ) => Effect.Effect<A, never, R2>,
    onFailure: afterFailed.bind(undefined, then) as (cause: Cause.Cause<unknown>) => Effect.Effect<A, never, R2>
  })
}

function overrideWith<A, R2>(
  executed: Finalized,
  then: (outcome: Finalized) => Effect.Effect<A, never, R2>,
  override: AfterToolCallResult | undefined | void
): Effect.Effect<A, never, R2> {
  return then(applyOverride(executed, override))
}

/** TE 4: a failing `afterToolCall` makes the call an error result; an interruption passes. */
function afterFailed<A, R2>(
  then: (outcome: Finalized) => Effect.Effect<A, never, R2>,
  cause: Cause.Cause<unknown>
): Effect.Effect<A, never, R2> {
  return Cause.hasInterruptsOnly(cause)
    ? Effect.failCause(cause as Cause.Cause<never>)
    : then(errorResult(causeMessage(cause)))
}

// ---------------------------------------------------------------------------------------------------------
// Phases 4 and 5: end event (TE 5.1), tool-result message (TE 5.2)
// ---------------------------------------------------------------------------------------------------------

/** TE 2.1: a call's start event, before anything else of it (state and event together, see {@link atomically}). */
const emitStart = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> => atomically(batch, call, startNow)

// The steps below are module functions rather than closures: a closure made per call loses its optimized code
// at every major GC once none of it is alive (see `shapes.ts`), and is compiled again by the next batch.

const startNow = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> => {
  call.state = State.Preparing
  const { toolCall } = call
  Telemetry.toolStart(batch.trace, call, toolCall)
  return batch.emit({
    type: "tool_execution_start",
    toolCallId: toolCall.id,
    toolName: toolCall.name,
    args: toolCall.arguments
  })
}

/** Phase 4 (TE 5.1). Records the call's final outcome and emits its one end event. */
const emitEnd = <R>(batch: Batch<R>, call: Call, outcome: Finalized): Effect.Effect<void> => {
  if (!batch.directSink) {
    return Effect.uninterruptible(Effect.suspend(endNow.bind(undefined, batch, call, outcome)))
  }
  return endNow(batch, call, outcome)
}

const endNow = <R>(batch: Batch<R>, call: Call, outcome: Finalized): Effect.Effect<void> => {
  call.state = { _tag: "Ended", outcome }
  Telemetry.toolEnd(batch.trace, call, outcome)
  return batch.emit({
    type: "tool_execution_end",
    toolCallId: call.toolCall.id,
    toolName: call.toolCall.name,
    result: outcome.result,
    isError: outcome.isError
  })
}

/** Phase 5 (TE 5.2). The tool-result message of an ended call, timestamped no earlier than the previous one. */
const createMessage = <R>(batch: Batch<R>, call: Call, outcome: Finalized): ToolResultMessage => {
  batch.lastTimestamp = Math.max(batch.lastTimestamp, batch.clock.currentTimeMillisUnsafe())
  return {
    role: "toolResult",
    toolCallId: call.toolCall.id,
    toolName: call.toolCall.name,
    content: outcome.result.content,
    details: outcome.result.details,
    isError: outcome.isError,
    timestamp: batch.lastTimestamp
  }
}

/** Phase 5, announced: `message_start` then `message_end`, as one step an abort cannot split. */
const announce = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> => atomically(batch, call, announceNow)

const announceNow = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> => {
  const state = call.state
  if (state._tag !== "Ended") {
    return Effect.die(new Error(`effect-agent: tool call ${call.toolCall.id} announced in state ${state._tag}`))
  }
  const message = createMessage(batch, call, state.outcome)
  if (batch.syncSink) {
    // Both events right here: nothing can observe the state in between.
    call.state = { _tag: "Done", outcome: state.outcome, message }
    const started = batch.emit({ type: "message_start", message })
    if (Exit.isExit(started) && Exit.isSuccess(started)) return batch.emit({ type: "message_end", message })
    // Not an Exit: a subscriber failed, and its warning is logged first (as in the effectful case below).
    // An abort raised by that same delivery interrupts the work before the warning runs: the call is then
    // announcing, so that the settle phase still sends its message_end (TE 8.3).
    call.state = { _tag: "Announcing", outcome: state.outcome, message }
    return Effect.flatMap(started, () => {
      if (call.state._tag === "Announcing") call.state = { _tag: "Done", outcome: state.outcome, message }
      return batch.emit({ type: "message_end", message })
    })
  }
  call.state = { _tag: "Announcing", outcome: state.outcome, message }
  return Effect.flatMapEager(
    batch.emit({ type: "message_start", message }),
    announceEnd.bind(undefined, batch, call, state.outcome, message) as () => Effect.Effect<void>
  )
}

// A module function bound per call, not a closure (see `startNow`).
function announceEnd<R>(
  batch: Batch<R>,
  call: Call,
  outcome: Finalized,
  message: ToolResultMessage
): Effect.Effect<void> {
  if (call.state._tag === "Announcing") call.state = { _tag: "Done", outcome, message }
  return batch.emit({ type: "message_end", message })
}

/** The rest of phase 5 for a call an abort caught: its `message_end` if only `message_start` went out. */
const finishMessage = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> => {
  const state = call.state
  if (state._tag !== "Announcing") return announce(batch, call)
  call.state = { _tag: "Done", outcome: state.outcome, message: state.message }
  return batch.emit({ type: "message_end", message: state.message })
}

// ---------------------------------------------------------------------------------------------------------
// The two modes (TE 6)
// ---------------------------------------------------------------------------------------------------------

/**
 * Phases 2 and 3 of a prepared call, then `then` with its final outcome (in the same steps: a call costs
 * one step per phase that is really pending). With a trace each phase is a span (docs/telemetry.md OT 2.4);
 * without one they run exactly as they would untraced (OT 1.2).
 */
const executeAndFinalize = <A, R, R2>(
  batch: Batch<R>,
  prepared: Prepared,
  where: Where,
  then: (outcome: Finalized) => Effect.Effect<A, never, R2>
): Effect.Effect<A, never, R | R2> =>
  batch.trace === undefined
    ? execute(
      batch,
      prepared,
      where,
      finalizeThen.bind(undefined, batch, prepared, then) as (executed: Finalized) => Effect.Effect<A, never, R | R2>
    )
    : Effect.flatMapEager(
      Effect.flatMapEager(
        Telemetry.toolPhase(batch.trace, prepared.call, "execution", () => execute(batch, prepared, where, succeed)),
        (executed) =>
          Telemetry.toolPhase(
            batch.trace,
            prepared.call,
            "finalize",
            () => finalize(batch, prepared, executed, succeed)
          )
      ),
      then
    )

function finalizeThen<A, R, R2>(
  batch: Batch<R>,
  prepared: Prepared,
  then: (outcome: Finalized) => Effect.Effect<A, never, R2>,
  executed: Finalized
): Effect.Effect<A, never, R | R2> {
  return finalize(batch, prepared, executed, then)
}

const succeed = (outcome: Finalized): Effect.Effect<Finalized> => Effect.succeed(outcome)

/** Phases 4 and 5 of a finalized call: its end event, then its result message. */
const endAndAnnounce = <R>(batch: Batch<R>, call: Call, outcome: Finalized): Effect.Effect<void> => {
  const ended = emitEnd(batch, call, outcome)
  if (Exit.isExit(ended)) return Exit.isSuccess(ended) ? announce(batch, call) : ended
  return Effect.flatMap(ended, announce.bind(undefined, batch, call))
}

// The modes are loops of complete Effects chained eagerly (`forEachEager`, `flatMapEager`) rather than
// generators: a batch may hold 100 000 instant calls, and on that path a generator (and an iterator per
// `yield*`) per call costs measurably more in a long-running process.

/**
 * Sequential (TE 6.1): each call goes through all five phases before the next one starts; a call with an
 * immediate outcome skips execute and finalize.
 */
const runSequential = <R>(batch: Batch<R>, calls: ReadonlyArray<Call>): Effect.Effect<void, never, R> =>
  sequentialFrom(batch, calls, 0)

// The steps of a sequential call are module functions, continued by bound functions only where something
// is pending (see `startNow`).

/** The calls from `from` on; complete calls chained in a plain loop (yielding every 2048 calls, TE 9.5). */
function sequentialFrom<R>(batch: Batch<R>, calls: ReadonlyArray<Call>, from: number): Effect.Effect<void, never, R> {
  for (let i = from; i < calls.length; i++) {
    const effect = sequentialCall(batch, calls[i]!)
    if (!Exit.isExit(effect)) {
      return Effect.flatMap(effect, sequentialFrom.bind(undefined, batch, calls, i + 1) as Rest<R>)
    }
    if (Exit.isFailure(effect)) return effect
    if ((i & 2047) === 2047 && i + 1 < calls.length) {
      return Effect.flatMap(Effect.yieldNow, sequentialFrom.bind(undefined, batch, calls, i + 1) as Rest<R>)
    }
  }
  return Effect.void
}

/** One call of sequential mode: all five phases (an immediate outcome skips execute and finalize). */
function sequentialCall<R>(batch: Batch<R>, call: Call): Effect.Effect<void, never, R> {
  const started = emitStart(batch, call)
  if (Exit.isExit(started)) return Exit.isSuccess(started) ? sequentialPrepare(batch, call) : started
  return Effect.flatMap(started, sequentialPrepare.bind(undefined, batch, call) as Rest<R>)
}

/** A bound continuation that ignores the value it gets. */
type Rest<R> = () => Effect.Effect<void, never, R>

function sequentialPrepare<R>(batch: Batch<R>, call: Call): Effect.Effect<void, never, R> {
  const prepared = prepare(batch, call)
  if (Exit.isExit(prepared)) {
    const done = prepared as Exit.Exit<Prepared, ImmediateOutcome>
    return Exit.isSuccess(done) ? sequentialExecute(batch, done.value) : sequentialOutcome(batch, call, done.cause)
  }
  return Effect.matchCauseEffect(prepared, {
    onSuccess: sequentialExecute.bind(undefined, batch) as (prepared: Prepared) => Effect.Effect<void, never, R>,
    onFailure: sequentialOutcome.bind(undefined, batch, call) as (
      cause: Cause.Cause<ImmediateOutcome>
    ) => Effect.Effect<void, never, R>
  })
}

function sequentialExecute<R>(batch: Batch<R>, prepared: Prepared): Effect.Effect<void, never, R> {
  return executeAndFinalize(batch, prepared, "workFiber", endAndAnnounce.bind(undefined, batch, prepared.call))
}

/** A call that ended in prepare: its immediate outcome; an interruption passes. */
function sequentialOutcome<R>(
  batch: Batch<R>,
  call: Call,
  cause: Cause.Cause<ImmediateOutcome>
): Effect.Effect<void, never, R> {
  const outcome = Cause.findErrorOption(cause)
  return Option.isSome(outcome)
    ? endAndAnnounce(batch, call, immediateResult(outcome.value))
    : Effect.failCause(cause as Cause.Cause<never>)
}

/** Phases 2 to 4 of one prepared call in parallel mode: it ends as soon as it is finalized. */
const executeAndEnd = <R>(batch: Batch<R>, prepared: Prepared): Effect.Effect<void, never, R> =>
  executeAndFinalize(batch, prepared, "callFiber", emitEnd.bind(undefined, batch, prepared.call))

/** Step 1 of parallel mode for one call: its start event and prepare; an immediate outcome ends it here. */
function preflight<R>(batch: Batch<R>, prepared: Array<Prepared>, call: Call): Effect.Effect<void, never, R> {
  const started = emitStart(batch, call)
  if (Exit.isExit(started)) return Exit.isSuccess(started) ? preflightPrepare(batch, prepared, call) : started
  return Effect.flatMap(started, preflightPrepare.bind(undefined, batch, prepared, call) as Rest<R>)
}

// Module functions continued by bound functions only where something is pending (see `startNow`).

function preflightPrepare<R>(batch: Batch<R>, prepared: Array<Prepared>, call: Call): Effect.Effect<void, never, R> {
  const result = prepare(batch, call)
  if (Exit.isExit(result)) {
    const done = result as Exit.Exit<Prepared, ImmediateOutcome>
    return Exit.isSuccess(done) ? keepPrepared(prepared, done.value) : preflightOutcome(batch, call, done.cause)
  }
  return Effect.matchCauseEffect(result, {
    onSuccess: keepPrepared.bind(undefined, prepared),
    onFailure: preflightOutcome.bind(undefined, batch, call)
  })
}

function keepPrepared(prepared: Array<Prepared>, result: Prepared): Effect.Effect<void> {
  prepared.push(result)
  return Effect.void
}

/** A call that ended in prepare: its end event now (its message comes in source order); an interruption passes. */
function preflightOutcome<R>(batch: Batch<R>, call: Call, cause: Cause.Cause<ImmediateOutcome>): Effect.Effect<void> {
  const outcome = Cause.findErrorOption(cause)
  return Option.isSome(outcome)
    ? emitEnd(batch, call, immediateResult(outcome.value))
    : Effect.failCause(cause as Cause.Cause<never>)
}

/**
 * Parallel (TE 6.2), in three steps: prepare one call at a time in source order (an immediate outcome ends
 * right there); execute every prepared call together, each ending as soon as it is finalized; then announce
 * the result messages in source order. Must be called while running (the steps start at once).
 */
const runParallel = <R>(
  batch: Batch<R>,
  calls: ReadonlyArray<Call>,
  concurrency: number | "unbounded"
): Effect.Effect<void, never, R> => {
  const prepared: Array<Prepared> = []
  return Effect.flatMapEager(
    forEachEager(calls, preflight.bind(undefined, batch, prepared) as (call: Call) => Effect.Effect<void, never, R>),
    executePrepared.bind(undefined, batch, calls, prepared, concurrency) as () => Effect.Effect<void, never, R>
  )
}

// Steps 2 and 3 of parallel mode, as bound module functions (see `startNow`).

function executePrepared<R>(
  batch: Batch<R>,
  calls: ReadonlyArray<Call>,
  prepared: ReadonlyArray<Prepared>,
  concurrency: number | "unbounded"
): Effect.Effect<void, never, R> {
  return Effect.flatMap(
    executeAll(
      prepared,
      executeAndEnd.bind(undefined, batch) as (p: Prepared) => Effect.Effect<void, never, R>,
      concurrency,
      isAborted.bind(undefined, batch),
      batch.grace
    ),
    announceAll.bind(undefined, batch, calls)
  )
}

function announceAll(batch: Batch<any>, calls: ReadonlyArray<Call>): Effect.Effect<void> {
  return forEachEager(calls, announce.bind(undefined, batch) as (call: Call) => Effect.Effect<void>)
}

// ---------------------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------------------

/** The result message of a call; every call of a batch that returns has one (a missing one is a bug). */
const messageOf = (call: Call): ToolResultMessage => {
  const state = call.state
  if (state._tag === "Done" || state._tag === "Announcing") return state.message
  throw new Error(`effect-agent: tool call ${call.toolCall.id} left the batch in state ${state._tag}`)
}

/**
 * Runs the tool calls of an assistant message and returns their result messages in source order.
 *
 * Guarantees, whatever happens (tool failures, defects, timeouts, invalid results, failing subscribers,
 * abort by signal or by interrupting this fiber): every call gets exactly one `tool_execution_start`, one
 * `tool_execution_end` and one result message, in the order rules of its mode, and no event follows the
 * last result message. No tool starts executing after the abort. Events go to the {@link EventSink.EventSink}
 * in the context.
 */
export const executeToolCalls = <R = never>(
  assistantMessage: AssistantMessage,
  options: ToolExecutionOptions<R> = {}
): Effect.Effect<ToolBatchResult, never, ToolRegistry | R> =>
  uninterruptibleInFiber(batchInFiber<R>, { assistantMessage, options })

function batchInFiber<R>(
  input: { readonly assistantMessage: AssistantMessage; readonly options: ToolExecutionOptions<R> },
  restore: Restore,
  fiber: Fiber.Fiber<unknown, unknown>
): Effect.Effect<ToolBatchResult, never, R> {
  return Effect.flatMap(
    Telemetry.batchTrace,
    startBatch.bind(undefined, input.assistantMessage, input.options, restore, fiber) as (
      trace: Telemetry.BatchTrace | undefined
    ) => Effect.Effect<ToolBatchResult, never, R>
  )
}

function startBatch<R>(
  assistantMessage: AssistantMessage,
  options: ToolExecutionOptions<R>,
  restore: Restore,
  fiber: Fiber.Fiber<unknown, unknown>,
  trace: Telemetry.BatchTrace | undefined
): Effect.Effect<ToolBatchResult, never, R> {
  // Read from the fiber rather than yielded one by one: this runs once per assistant message.
  // Both are in the context: the Effect's type requires them.
  const registry = Context_.getUnsafe(fiber.context, ToolRegistry)
  const sink = Context_.getUnsafe(fiber.context, EventSink.EventSink)
  const toolCalls = toolCallsOf(assistantMessage)
  const calls: Array<Call> = []
  for (const toolCall of toolCalls) calls.push({ toolCall, state: State.Waiting })
  const grace = options.abandonAfter === undefined
    ? DEFAULT_GRACE
    : Duration.fromInputUnsafe(options.abandonAfter)
  const emitter = makeEmitter(sink)
  const batch: Batch<R> = {
    assistantMessage,
    context: options.context ?? Context.empty,
    registry,
    emit: emitter.emit,
    signal: options.signal,
    before: options.beforeToolCall,
    after: options.afterToolCall,
    timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
    grace,
    duplicates: laterDuplicates(calls, idOf),
    skipReason: skipReasonOf(options),
    stopping: false,
    syncSink: emitter.sync,
    directSink: emitter.direct,
    clock: fiber.getRef(Clock.Clock),
    lastTimestamp: 0,
    trace,
    toolInWork: false
  }
  const mode = chooseMode(toolCalls, registry, options.toolExecution)
  // Suspended: the phases run eagerly when called, and must run in the supervised fiber.
  const work = Effect.suspend(
    runMode.bind(undefined, batch, calls, mode, options.concurrency ?? "unbounded") as () => Effect.Effect<
      void,
      never,
      R
    >
  )
  return Effect.flatMap(
    supervise(
      work,
      calls,
      options.signal,
      grace,
      stopBatch.bind(undefined, batch),
      toolInWork.bind(undefined, batch),
      emitter.close,
      restore
    ),
    settle.bind(undefined, batch, calls, mode, emitter) as (
      exit: Exit.Exit<void, never>
    ) => Effect.Effect<ToolBatchResult>
  )
}

function runMode<R>(
  batch: Batch<R>,
  calls: ReadonlyArray<Call>,
  mode: ExecutionMode,
  concurrency: number | "unbounded"
): Effect.Effect<void, never, R> {
  return mode === "sequential" ? runSequential(batch, calls) : runParallel(batch, calls, concurrency)
}

const idOf = (call: Call): string => call.toolCall.id

/** No tool may start from now on (TE 8.1). */
function stopBatch(batch: Batch<any>): void {
  batch.stopping = true
}

function toolInWork(batch: Batch<any>): boolean {
  return batch.toolInWork
}

/** The batch's result, once every call has its message. */
const resultOf = (calls: ReadonlyArray<Call>, aborted: boolean): ToolBatchResult => ({
  messages: calls.map(messageOf),
  terminate: calls.length > 0 &&
    calls.every((call) => call.state._tag === "Done" && call.state.outcome.result.terminate === true),
  aborted
})

/** The end of a batch: after a failure the calls it caught are settled (TE 8.3); the batch's result. */
function settle<R>(
  batch: Batch<R>,
  calls: ReadonlyArray<Call>,
  mode: ExecutionMode,
  emitter: ReturnType<typeof makeEmitter>,
  exit: Exit.Exit<void, never>
): Effect.Effect<ToolBatchResult> {
  const aborted = isAborted(batch) || (Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause))
  if (Exit.isSuccess(exit)) return Exit.succeed(resultOf(calls, aborted))
  const result = () => resultOf(calls, aborted)
  const reason = aborted ? "the run was aborted" : `an internal error occurred (${causeMessage(exit.cause)})`
  // A slow subscriber gets at most the grace period per event.
  const bounded: Batch<R> = { ...batch, emit: emitter.bounded(batch.grace) }
  const settled = settleRemaining(calls, mode, reason, {
    start: (call) => emitStart(bounded, call),
    end: (call, outcome) => emitEnd(bounded, call, outcome),
    message: (call) => finishMessage(bounded, call)
  })
  return Effect.map(
    aborted ? settled : Effect.andThen(Effect.logError("effect-agent: tool batch failed", exit.cause), settled),
    result
  )
}

/**
 * The events of a batch as a Stream that ends after the last result message. Stopping the stream early
 * interrupts the batch (which still settles every call).
 */
export const toolExecutionEvents = <R = never>(
  assistantMessage: AssistantMessage,
  options: ToolExecutionOptions<R> = {}
): Stream.Stream<ToolExecutionEvent, never, ToolRegistry | R> =>
  Stream.callback<ToolExecutionEvent, never, ToolRegistry | R>((queue) =>
    executeToolCalls(assistantMessage, options).pipe(
      Effect.provideService(
        EventSink.EventSink,
        EventSink.fromCallback((event) => void Queue.offerUnsafe(queue, event as ToolExecutionEvent))
      ),
      Effect.andThen(Queue.end(queue))
    )
  )
