/**
 * What a tool batch takes and gives: its configuration (mode, concurrency, timeouts) with the two hooks and
 * what they see and may decide, its options beside the assistant message, and its result. The batch itself
 * is `ToolExecution.ts`, which re-exports these.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type { AgentContext } from "./AgentContext.ts"
import type { AssistantMessage, ToolCall, ToolResultContent, ToolResultMessage } from "./Message.ts"
import type { ExecutionMode, ToolResult } from "./Tool.ts"

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
