/**
 * Running the tool calls of one assistant message: five phases per call (prepare, execute, finalize, emit
 * end, create the tool-result message), in sequential or parallel mode, with abort, timeouts and faults
 * handled so that every call ends with exactly one end event and one result message.
 *
 * The contract is `docs/tool-execution.md`.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Duration, Effect, Exit, Fiber, Option, Queue, Schema, SchemaIssue, Stream } from "effect"
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
import { echo, NotJson, readArguments } from "./internal/arguments.ts"
import { clip } from "./internal/clip.ts"
import { type Decode, decodeUnknownExit } from "./internal/decoding.ts"
import { makeEmitter } from "./internal/emitter.ts"
import { callUser, forEachEager } from "./internal/eager.ts"
import { causeMessage } from "./internal/errorText.ts"
import type { AssistantMessage, ToolCall, ToolResultContent, ToolResultMessage } from "./Message.ts"
import { toolCallsOf } from "./Message.ts"
import * as Telemetry from "./internal/telemetry.ts"
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
  /**
   * When set, no call is executed: each one ends at once with this text (after its duplicate-id check). The
   * loop uses it for the tool calls of a response that cannot be trusted, e.g. one cut at the token limit.
   */
  readonly skipReason?: string | undefined
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

/** The mode a batch will run in: sequential if configured so or if any called tool requires it. */
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
// Internal state of one batch
// ---------------------------------------------------------------------------------------------------------

/** Where a call stands; used after an abort to say honestly what happened to it. */
type Stage = "waiting" | "preparing" | "prepared" | "running" | "stopped" | "finalizing" | "settled"

interface Finalized {
  readonly result: ToolResult
  readonly isError: boolean
  /** The immediate outcome's tag, for telemetry (docs/telemetry.md OT 2.3). */
  readonly errorType?: string
}

interface Call {
  readonly toolCall: ToolCall
  /** Aborts the signal handed to the running tool (set while it runs). */
  abort: (() => void) | undefined
  stage: Stage
  started: boolean
  ended: boolean
  announced: boolean
  /** Set just before its `message_end` goes out (an abandoned work phase may never send it). */
  messageEnded: boolean
  abandoned: boolean
  outcome: Finalized | undefined
  message: ToolResultMessage | undefined
}

interface Prepared {
  readonly call: Call
  readonly entry: RegisteredTool
  readonly args: unknown
}

interface Batch<R> {
  readonly assistantMessage: AssistantMessage
  readonly context: AgentContext
  readonly registry: ToolRegistryShape
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
  /** The same sink for the settle phase: bounded by the grace period. */
  readonly emitBounded: (event: AgentEvent) => Effect.Effect<void>
  readonly signal: AbortSignal | undefined
  readonly before: ToolExecutionConfig<R>["beforeToolCall"]
  readonly after: ToolExecutionConfig<R>["afterToolCall"]
  readonly timeout: Duration.Duration | undefined
  readonly grace: Duration.Duration
  readonly seenIds: Set<string>
  readonly skipReason: string | undefined
  /** Set when the batch is being stopped (signal or interruption): no tool may start after it. */
  stopping: boolean
  /** The sink delivers synchronously (see {@link makeEmitter}). */
  readonly syncSink: boolean
  readonly clock: Clock.Clock
  lastTimestamp: number
  /** The batch's spans and metrics; `undefined` when nothing is recorded (docs/telemetry.md OT 1.2). */
  readonly trace: Telemetry.BatchTrace | undefined
}

const DEFAULT_GRACE = Duration.seconds(2)

const errorResult = (text: string, details: unknown = {}): Finalized => ({
  result: { content: [{ type: "text", text }], details },
  isError: true
})

const isAborted = (batch: Batch<any>): boolean => batch.stopping || batch.signal?.aborted === true

/**
 * Runs a step that sets a call's flags and emits: directly when the sink is synchronous (nothing can come
 * between them), otherwise as one uninterruptible step, so an abort can never leave a call marked without
 * its event (or the reverse).
 */
const atomically = <R>(batch: Batch<R>, step: () => Effect.Effect<void>): Effect.Effect<void> =>
  batch.syncSink ? step() : Effect.uninterruptible(Effect.suspend(step))

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
    onFailure: (cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.fail(
          new PrepareFailed({ toolCallId: toolCall.id, toolName: toolCall.name, message: causeMessage(cause), stage })
        )
  })

const abortedBeforeStart = (toolCall: ToolCall) =>
  new AbortedBeforeStart({
    toolCallId: toolCall.id,
    toolName: toolCall.name,
    message: `Tool ${clip(toolCall.name)} was not executed: the run was aborted before it started.`
  })

/**
 * Phase 1. Looks the tool up, applies the compatibility shim, validates, and asks `beforeToolCall`. Every
 * way the call can end here is a typed error: the immediate outcome.
 */
const prepare = <R>(batch: Batch<R>, call: Call): Effect.Effect<Prepared, ImmediateOutcome, R> => {
  const { toolCall } = call
  call.stage = "preparing"
  if (batch.seenIds.has(toolCall.id)) {
    return Effect.fail(
      new DuplicateToolCallId({
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        message:
          `Tool call id "${clip(toolCall.id)}" is a duplicate: an earlier call in this message has the same id, so this one was not executed.`
      })
    )
  }
  batch.seenIds.add(toolCall.id)
  if (batch.skipReason !== undefined) {
    return Effect.fail(new ToolCallSkipped({ toolCallId: toolCall.id, toolName: toolCall.name, message: batch.skipReason }))
  }
  if (isAborted(batch)) return Effect.fail(abortedBeforeStart(toolCall))
  const entry = batch.registry.get(toolCall.name)
  if (entry === undefined) {
    return Effect.fail(
      new ToolNotFound({ toolCallId: toolCall.id, toolName: toolCall.name, message: `Tool ${clip(toolCall.name)} not found` })
    )
  }
  const given = readArguments(toolCall)
  if (given instanceof NotJson) {
    return Effect.fail(
      new InvalidToolArguments({
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        message: `Invalid arguments for tool "${clip(toolCall.name)}": the arguments are not valid JSON: ${clip(given.reason)}` +
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
  if (before === undefined) {
    return Effect.mapEager(validated, (args) => {
      call.stage = "prepared"
      return { call, entry, args }
    })
  }
  return Effect.flatMapEager(validated, (args) =>
    Effect.flatMapEager(
      Telemetry.toolPhase(batch.trace, call, "approval", () =>
        guardStage(
          toolCall,
          "beforeToolCall",
          () => before({ assistantMessage: batch.assistantMessage, toolCall, args, context: batch.context })
        )),
      (decision): Effect.Effect<Prepared, ImmediateOutcome> => {
        if (decision && decision.block === true) {
          return Effect.fail(
            new ToolCallBlocked({
              toolCallId: toolCall.id,
              toolName: toolCall.name,
              message: decision.reason || "Tool execution was blocked",
              terminate: decision.terminate === true
            })
          )
        }
        if (isAborted(batch)) return Effect.fail(abortedBeforeStart(toolCall))
        const replaced = decision && decision.args !== undefined ? decision.args : args
        call.stage = "prepared"
        return Effect.succeed({ call, entry, args: replaced })
      }
    ))
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
    const b = block as { readonly type?: unknown; readonly text?: unknown; readonly data?: unknown; readonly mimeType?: unknown }
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
 * interrupts its fiber, waiting at most the grace period. A tool that does not stop is abandoned.
 */
const stopTool = (
  call: Call,
  fiber: Fiber.Fiber<unknown, unknown>,
  abortSignal: () => void,
  grace: Duration.Duration
) =>
  Effect.sync(abortSignal).pipe(
    Effect.andThen(Effect.interruptible(Fiber.interrupt(fiber))),
    Effect.timeoutOption(grace),
    Effect.map((stopped) => {
      if (Option.isNone(stopped)) call.abandoned = true
    })
  )

/** What a running tool gets besides its arguments; `signal` is created on first access. */
class CallContext implements ToolContext {
  readonly toolCallId: string
  readonly #call: Call
  readonly #emit: (event: AgentEvent) => Effect.Effect<void>
  #controller: AbortController | undefined = undefined
  #aborted = false
  constructor(call: Call, emit: (event: AgentEvent) => Effect.Effect<void>) {
    this.toolCallId = call.toolCall.id
    this.#call = call
    this.#emit = emit
  }
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      // Asked for only after the abort (e.g. in the tool's own cleanup): it must say so.
      if (this.#aborted) this.#controller.abort(this.#reason())
    }
    return this.#controller.signal
  }
  /** An own function, so that a tool may destructure it from its context. */
  readonly update = (partialResult: ToolResult): Effect.Effect<void> =>
    Effect.suspend(() => {
      const call = this.#call
      if (call.stage !== "running") return Effect.void
      const { toolCall } = call
      return Effect.uninterruptible(this.#emit({
        type: "tool_execution_update",
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        args: toolCall.arguments,
        partialResult
      }))
    })
  abort(): void {
    this.#aborted = true
    this.#controller?.abort(this.#reason())
  }
  #reason(): Error {
    return new Error(`Tool call ${this.toolCallId} was interrupted`)
  }
}

/**
 * Phase 2. Calls the handler. An effect that is already complete (`Effect.succeed(result)`) needs nothing
 * more. With `inline` (the caller runs this call in a fiber of its own that it stops within the grace period,
 * see {@link executeAll}) a tool without a timeout runs right there. Anything else runs in a detached fiber
 * of its own, so that on abort or timeout it can be stopped (its signal aborted, then its fiber interrupted)
 * and, if it ignores cancellation, abandoned after the grace period while nothing else of the batch waits
 * on it. Never starts a tool once the run is stopping.
 */
const execute = <R>(batch: Batch<R>, prepared: Prepared, inline: boolean): Effect.Effect<Finalized> => {
  const { call, entry } = prepared
  if (isAborted(batch)) return Effect.interrupt
  call.stage = "running"
  const context = new CallContext(call, batch.emit)
  call.abort = () => context.abort()
  const handled = callUser(() => entry.handler(prepared.args, context))
  if (Exit.isExit(handled)) return Effect.succeed(executedResult(entry.tool, handled as Exit.Exit<ToolResult, unknown>))
  // The handler itself may have aborted the run (or a listener of the signal did) while it was called: the
  // Effect it returned must then not run. Nothing else would stop it: the interruption of the batch is
  // deferred while the batch's own fiber is busy calling the handler.
  if (isAborted(batch)) {
    context.abort()
    return Effect.interrupt
  }
  // Runs once the tool's own finalizers are done: a tool that ignores cancellation never gets here.
  const run = Effect.onInterrupt(handled, () =>
    Effect.sync(() => {
      context.abort()
      call.stage = "stopped"
    }))
  const timeout = entry.tool.timeout ?? batch.timeout
  if (inline && timeout === undefined) return Effect.map(Effect.exit(run), (exit) => executedResult(entry.tool, exit))
  return Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDetach(restore(run), { startImmediately: true }), (fiber) => {
      const done = fiber.pollUnsafe()
      if (done !== undefined) return Effect.succeed(executedResult(entry.tool, done))
      const stop = () => stopTool(call, fiber, () => context.abort(), batch.grace)
      // Aborted while the tool ran its first synchronous steps: the interruption of this fiber is deferred
      // until it waits, so stop the tool now rather than start waiting for it.
      if (isAborted(batch)) return Effect.andThen(stop(), Effect.interrupt)
      if (timeout === undefined) {
        return restore(Fiber.await(fiber)).pipe(
          Effect.onInterrupt(stop),
          Effect.map((exit) => executedResult(entry.tool, exit))
        )
      }
      return restore(Effect.timeoutOption(Fiber.await(fiber), timeout)).pipe(
        Effect.onInterrupt(stop),
        Effect.flatMap((exit) =>
          Option.isSome(exit)
            ? Effect.succeed(executedResult(entry.tool, exit.value))
            : Effect.map(stop(), () =>
              errorResult(
                `Tool ${entry.tool.name} timed out after ${Duration.format(timeout)}${
                  call.abandoned ? " and was abandoned: it did not stop when cancelled" : ""
                }`,
                { timedOut: true, abandoned: call.abandoned }
              ))
        )
      )
    })
  )
}

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

/** Phase 3. Applies `afterToolCall`; its failure becomes an error result. */
const finalize = <R>(batch: Batch<R>, prepared: Prepared, executed: Finalized): Effect.Effect<Finalized, never, R> => {
  const after = batch.after
  if (after === undefined) return Effect.succeed(executed)
  prepared.call.stage = "finalizing"
  return Effect.matchCauseEffectEager(
    callUser(() =>
      after({
        assistantMessage: batch.assistantMessage,
        toolCall: prepared.call.toolCall,
        args: prepared.args,
        result: executed.result,
        isError: executed.isError,
        context: batch.context
      })
    ),
    {
      onSuccess: (override) => Effect.succeed(applyOverride(executed, override)),
      onFailure: (cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause as Cause.Cause<never>)
          : Effect.succeed(errorResult(causeMessage(cause)))
    }
  )
}

// ---------------------------------------------------------------------------------------------------------
// Phases 4 and 5: end event, tool-result message
// ---------------------------------------------------------------------------------------------------------

/** Emits a call's start event (flag and event together, see {@link atomically}). */
const emitStart = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> =>
  atomically(batch, () => {
    call.started = true
    const { toolCall } = call
    Telemetry.toolStart(batch.trace, call, toolCall)
    return batch.emit({
      type: "tool_execution_start",
      toolCallId: toolCall.id,
      toolName: toolCall.name,
      args: toolCall.arguments
    })
  })

/** Phase 4 (TE 5.1). Records the call's final outcome and emits its one end event. */
const emitEnd = <R>(batch: Batch<R>, call: Call, finalized: Finalized): Effect.Effect<void> =>
  atomically(batch, () => {
    call.outcome = finalized
    call.ended = true
    call.stage = "settled"
    call.abort = undefined
    Telemetry.toolEnd(batch.trace, call, finalized)
    return batch.emit({
      type: "tool_execution_end",
      toolCallId: call.toolCall.id,
      toolName: call.toolCall.name,
      result: finalized.result,
      isError: finalized.isError
    })
  })

/** Phase 5 (TE 5.2). The tool-result message of a settled call, timestamped no earlier than the previous one. */
const createMessage = <R>(batch: Batch<R>, call: Call, now: number): ToolResultMessage => {
  const { result, isError } = call.outcome!
  batch.lastTimestamp = Math.max(batch.lastTimestamp, now)
  const message: ToolResultMessage = {
    role: "toolResult",
    toolCallId: call.toolCall.id,
    toolName: call.toolCall.name,
    content: result.content,
    details: result.details,
    isError,
    timestamp: batch.lastTimestamp
  }
  call.message = message
  return message
}

/** Phase 5, announced: `message_start` then `message_end`, as one step an abort cannot split. */
const announce = <R>(batch: Batch<R>, call: Call): Effect.Effect<void> =>
  atomically(batch, () => {
    const message = createMessage(batch, call, batch.clock.currentTimeMillisUnsafe())
    call.announced = true
    return Effect.flatMapEager(batch.emit({ type: "message_start", message }), () => {
      call.messageEnded = true
      return batch.emit({ type: "message_end", message })
    })
  })

// ---------------------------------------------------------------------------------------------------------
// The two modes
// ---------------------------------------------------------------------------------------------------------

const executeAndFinalize = <R>(
  batch: Batch<R>,
  prepared: Prepared,
  inline = false
): Effect.Effect<Finalized, never, R> =>
  batch.trace === undefined
    ? Effect.flatMapEager(execute(batch, prepared, inline), (executed) => finalize(batch, prepared, executed))
    : Effect.flatMapEager(
      Telemetry.toolPhase(batch.trace, prepared.call, "execution", () => execute(batch, prepared, inline)),
      (executed) => Telemetry.toolPhase(batch.trace, prepared.call, "finalize", () => finalize(batch, prepared, executed))
    )

/** Prepare, and on success execute and finalize: the finalized outcome of one call. */
const outcomeOf = <R>(batch: Batch<R>, call: Call): Effect.Effect<Finalized, never, R> =>
  Effect.matchCauseEffectEager(prepare(batch, call), {
    onFailure: (cause) => {
      const outcome = Cause.findErrorOption(cause)
      return Option.isSome(outcome)
        ? Effect.succeed(immediateResult(outcome.value))
        : Effect.failCause(cause as Cause.Cause<never>)
    },
    onSuccess: (prepared) => executeAndFinalize(batch, prepared)
  })

/** Sequential: each call goes through all five phases before the next one starts. */
const runSequential = <R>(batch: Batch<R>, calls: ReadonlyArray<Call>): Effect.Effect<void, never, R> =>
  Effect.suspend(() =>
    forEachEager(calls, (call) =>
      Effect.flatMapEager(
        emitStart(batch, call),
        () =>
          Effect.flatMapEager(
            outcomeOf(batch, call),
            (finalized) => Effect.flatMapEager(emitEnd(batch, call, finalized), () => announce(batch, call))
          )
      ))
  )

/**
 * Parallel: preflight one call at a time in source order (an immediate outcome ends right there), then
 * execute every prepared call together with `Effect.forEach`, each ending as soon as it is finalized;
 * finally announce the result messages in source order.
 */
const runParallel = <R>(
  batch: Batch<R>,
  calls: ReadonlyArray<Call>,
  concurrency: number | "unbounded"
): Effect.Effect<void, never, R> =>
  Effect.suspend(() => {
    const prepared: Array<Prepared> = []
    const preflight = forEachEager(calls, (call) =>
      Effect.flatMapEager(emitStart(batch, call), () =>
        Effect.matchCauseEffectEager(prepare(batch, call), {
          onFailure: (cause) => {
            const outcome = Cause.findErrorOption(cause)
            return Option.isSome(outcome)
              ? emitEnd(batch, call, immediateResult(outcome.value))
              : Effect.failCause(cause as Cause.Cause<never>)
          },
          onSuccess: (p) => {
            prepared.push(p)
            return Effect.void
          }
        })))
    return Effect.flatMapEager(preflight, () =>
      Effect.flatMap(
        executeAll(
          batch,
          prepared,
          (p) => Effect.flatMapEager(executeAndFinalize(batch, p, true), (finalized) => emitEnd(batch, p.call, finalized)),
          concurrency
        ),
        () => forEachEager(calls, (call) => announce(batch, call))
      ))
  })

/**
 * The execute phase of parallel mode: starts each prepared call, in source order, once a slot is free (at
 * most `concurrency` at once). The abort check is made at the very moment a call would start, so an abort
 * raised by an earlier call (its tool, its hook, a subscriber of its events) stops every later one.
 *
 * A call whose handler and hooks return already-complete Effects needs no fiber; any other runs in one fiber
 * of its own (its tool inline, unless a timeout needs the tool apart, see {@link execute}), registered in the
 * same uninterruptible step that forks it, so that interrupting this phase always reaches every started call. Stopping gives the calls
 * the grace period together; a call whose tool ignores cancellation is then abandoned, alone: its fiber is
 * detached, so nothing of the batch waits on it, and being interrupted it never goes on to finalize.
 */
const executeAll = <R>(
  batch: Batch<R>,
  prepared: ReadonlyArray<Prepared>,
  run: (p: Prepared) => Effect.Effect<void, never, R>,
  concurrency: number | "unbounded"
): Effect.Effect<void, never, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.suspend(() => {
      const limit = concurrency === "unbounded" ? Number.POSITIVE_INFINITY : Math.max(1, concurrency)
      const running = new Map<Fiber.Fiber<void, never>, Call>()
      let failure: Cause.Cause<never> | undefined
      let wake: (() => void) | undefined
      let index = 0
      let forked = 0
      const settled = (fiber: Fiber.Fiber<void, never>) => (exit: Exit.Exit<void, never>) => {
        running.delete(fiber)
        if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) failure ??= exit.cause
        const resume = wake
        wake = undefined
        resume?.()
      }
      // Only one waiter at a time: the loop, or the stop below once the loop is interrupted.
      const change = Effect.callback<void>((resume) => {
        wake = () => resume(Effect.void)
      })
      const stopAll = Effect.suspend(() => {
        for (const [fiber, call] of running) {
          if (call.stage === "running") call.abort?.()
          fiber.interruptUnsafe()
        }
        const drained: Effect.Effect<void> = Effect.suspend(() =>
          running.size === 0 ? Effect.void : Effect.flatMap(change, () => drained)
        )
        return Effect.map(Effect.timeoutOption(Effect.interruptible(drained), batch.grace), (stopped) => {
          if (Option.isSome(stopped)) return
          for (const call of running.values()) {
            if (call.stage === "running" || call.stage === "finalizing") call.abandoned = true
          }
        })
      })
      const loop = (): Effect.Effect<void, never, R> => {
        while (failure === undefined) {
          if (index === prepared.length || running.size >= limit) {
            return running.size === 0 ? Effect.void : Effect.flatMap(restore(change), loop)
          }
          if (isAborted(batch)) return Effect.interrupt
          const p = prepared[index++]
          const effect = run(p)
          if (Exit.isExit(effect)) {
            if (Exit.isFailure(effect)) return effect
            // A huge batch of instant calls must not starve the other fibers.
            if ((index & 2047) === 0) return Effect.flatMap(Effect.yieldNow, loop)
            continue
          }
          return Effect.flatMap(Effect.forkDetach(effect, { startImmediately: true }), (fiber) => {
            const exit = fiber.pollUnsafe()
            if (exit === undefined) {
              running.set(fiber, p.call)
              fiber.addObserver(settled(fiber))
              // Let the first timers and I/O of the started calls through while the later ones start.
              if ((++forked & 63) === 0) return Effect.flatMap(Effect.yieldNow, loop)
            } else {
              settled(fiber)(exit)
            }
            return loop()
          })
        }
        return Effect.andThen(stopAll, Effect.failCause(failure))
      }
      return loop().pipe(Effect.onInterrupt(() => stopAll))
    })
  )

// ---------------------------------------------------------------------------------------------------------
// After an abort
// ---------------------------------------------------------------------------------------------------------

/** The honest result of a call the abort caught before it settled. */
const interruptedResult = (call: Call, reason: string): Finalized => {
  const name = call.toolCall.name
  const started = call.stage === "running" || call.stage === "stopped" || call.stage === "finalizing"
  if (!started) {
    return errorResult(`Tool ${name} was not executed: ${reason} before it started.`, {
      aborted: true,
      started: false
    })
  }
  const abandoned = call.abandoned ? " It did not stop when cancelled and was abandoned." : ""
  return errorResult(
    `Tool ${name} was interrupted after it started: ${reason}. It may have had side effects.${abandoned}`,
    { aborted: true, started: true, abandoned: call.abandoned }
  )
}

/**
 * Gives every call that the abort caught its start (if it had none), end and result message, keeping the
 * order rules of the mode. A slow subscriber gets at most the grace period per event.
 */
const settleRemaining = <R>(
  batch: Batch<R>,
  calls: ReadonlyArray<Call>,
  mode: ExecutionMode,
  reason: string
): Effect.Effect<void> => {
  const bounded: Batch<R> = { ...batch, emit: batch.emitBounded }
  const start = (call: Call) => call.started ? Effect.void : emitStart(bounded, call)
  const end = (call: Call) => call.ended ? Effect.void : emitEnd(bounded, call, interruptedResult(call, reason))
  const message = (call: Call) =>
    !call.announced
      ? announce(bounded, call)
      : call.messageEnded
      ? Effect.void
      : Effect.suspend(() => {
        call.messageEnded = true
        return bounded.emit({ type: "message_end", message: call.message! })
      })
  return mode === "sequential"
    ? Effect.forEach(calls, (call) => start(call).pipe(Effect.andThen(end(call)), Effect.andThen(message(call))), {
      discard: true
    })
    : Effect.forEach(calls, start, { discard: true }).pipe(
      Effect.andThen(Effect.forEach(calls, end, { discard: true })),
      Effect.andThen(Effect.forEach(calls, message, { discard: true }))
    )
}

/** Resolves when the signal fires (at once if it has). */
const whenAborted = (signal: AbortSignal): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    if (signal.aborted) return resume(Effect.void)
    const onAbort = () => resume(Effect.void)
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

/**
 * Runs the work phase in its own fiber until it finishes, the signal fires, or this fiber is interrupted.
 * On abort the running tools' signals are aborted first (so cleanup that waits on them can finish), then
 * the work is interrupted and given the grace period to stop. Work that does not stop in time (a tool that
 * ignores cancellation, a subscriber that never returns) is abandoned: `abandon` drops its later events.
 * Returns how the work ended.
 */
const supervise = <R>(
  work: Effect.Effect<void, never, R>,
  calls: ReadonlyArray<Call>,
  signal: AbortSignal | undefined,
  grace: Duration.Duration,
  stop: () => void,
  abandon: () => void,
  restore: <A, E, R2>(effect: Effect.Effect<A, E, R2>) => Effect.Effect<A, E, R2>
): Effect.Effect<Exit.Exit<void>, never, R> =>
  Effect.gen(function*() {
    // Detached: a child fiber would be awaited when this one exits, and abandoned work must not hold it.
    // Not started immediately, so that an interruption arriving while it would run synchronously is seen.
    const fiber = yield* Effect.forkDetach(Effect.interruptible(work))
    const waiting = signal === undefined
      ? Fiber.await(fiber)
      : Effect.raceFirst(Fiber.await(fiber), Effect.as(whenAborted(signal), undefined))
    const first = yield* Effect.exit(restore(waiting))
    if (Exit.isSuccess(first) && first.value !== undefined) return first.value
    stop()
    for (const call of calls) if (call.stage === "running") call.abort?.()
    fiber.interruptUnsafe()
    const stopped = yield* Effect.timeoutOption(Effect.interruptible(Fiber.await(fiber)), grace)
    if (Option.isSome(stopped)) return stopped.value
    for (const call of calls) if (call.stage === "running" || call.stage === "finalizing") call.abandoned = true
    abandon()
    return Exit.interrupt()
  })

// ---------------------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------------------

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
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const sink = yield* EventSink.EventSink
      const toolCalls = toolCallsOf(assistantMessage)
      const calls: Array<Call> = toolCalls.map((toolCall) => ({
        toolCall,
        abort: undefined,
        stage: "waiting",
        started: false,
        ended: false,
        announced: false,
        messageEnded: false,
        abandoned: false,
        outcome: undefined,
        message: undefined
      }))
      const grace = options.abandonAfter === undefined ? DEFAULT_GRACE : Duration.fromInputUnsafe(options.abandonAfter)
      const emitter = makeEmitter(sink)
      const batch: Batch<R> = {
        assistantMessage,
        context: options.context ?? Context.empty,
        registry,
        emit: emitter.emit,
        emitBounded: emitter.bounded(grace),
        signal: options.signal,
        before: options.beforeToolCall,
        after: options.afterToolCall,
        timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
        grace,
        seenIds: new Set(),
        skipReason: options.skipReason,
        stopping: false,
        syncSink: emitter.sync,
        clock: yield* Clock.Clock,
        lastTimestamp: 0,
        trace: yield* Telemetry.batchTrace
      }
      const mode = chooseMode(toolCalls, registry, options.toolExecution)
      const work = mode === "sequential"
        ? runSequential(batch, calls)
        : runParallel(batch, calls, options.concurrency ?? "unbounded")
      const exit = yield* supervise(work, calls, options.signal, grace, () => {
        batch.stopping = true
      }, emitter.close, restore)
      const aborted = isAborted(batch) || (Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause))
      if (Exit.isFailure(exit)) {
        const reason = aborted ? "the run was aborted" : `an internal error occurred (${causeMessage(exit.cause)})`
        if (!aborted) yield* Effect.logError("effect-agent: tool batch failed", exit.cause)
        yield* settleRemaining(batch, calls, mode, reason)
      }
      return {
        messages: calls.map((call) => call.message!),
        terminate: calls.length > 0 && calls.every((call) => call.outcome?.result.terminate === true),
        aborted
      }
    })
  )

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
