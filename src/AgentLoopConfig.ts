/**
 * How a run of the agent loop behaves: its hooks (the tool batch's, and the loop's own around the model
 * call and between turns), its queues of steering and follow-up messages, its model options and its signal.
 * The loop itself is `AgentLoop.ts`, which re-exports these.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type { AgentContext } from "./AgentContext.ts"
import type { AgentMessage, AssistantMessage, Message, ToolResultMessage } from "./Message.ts"
import type { ModelOptions } from "./Model.ts"
import type { RunLimits } from "./RunLimits.ts"
import type { ToolExecutionConfig } from "./ToolBatch.ts"

/** What `shouldStopAfterTurn` sees once a turn is over. */
export interface ShouldStopAfterTurnContext {
  readonly message: AssistantMessage
  readonly toolResults: ReadonlyArray<ToolResultMessage>
  readonly context: AgentContext
  readonly newMessages: ReadonlyArray<AgentMessage>
}

/**
 * How a run behaves. Hooks are Effects that may use services `R`; their failures are contained (see each
 * field).
 */
export interface AgentLoopConfig<R = never> extends ToolExecutionConfig<R> {
  /**
   * Turns the transcript into the messages the model reads; application messages are dropped or converted
   * here. Default: keep user, assistant and tool-result messages. A failure ends the turn with an `error`
   * assistant message.
   */
  readonly convertToLlm?:
    | ((messages: ReadonlyArray<AgentMessage>) => Effect.Effect<ReadonlyArray<Message>, unknown, R>)
    | undefined
  /**
   * Rewrites the transcript before `convertToLlm` (pruning, injection). A failure ends the turn with an
   * `error` assistant message.
   */
  readonly transformContext?:
    | ((messages: ReadonlyArray<AgentMessage>) => Effect.Effect<ReadonlyArray<AgentMessage>, unknown, R>)
    | undefined
  /** Messages to inject after the current batch (read after each whole batch and its `turn_end`). */
  readonly getSteeringMessages?: Effect.Effect<ReadonlyArray<AgentMessage>, never, R> | undefined
  /** Messages to process when the agent would otherwise stop. */
  readonly getFollowUpMessages?: Effect.Effect<ReadonlyArray<AgentMessage>, never, R> | undefined
  /**
   * Asked after each turn; `true` ends the run before steering and follow-ups are read. A failure is logged
   * and ends the run the same way (stopping is the safe choice).
   */
  readonly shouldStopAfterTurn?:
    | ((context: ShouldStopAfterTurnContext) => Effect.Effect<boolean, unknown, R>)
    | undefined
  /** Options passed to the model on every call. */
  readonly modelOptions?: ModelOptions | undefined
  /** Aborting it ends the run: the current response ends `aborted`, the batch settles, no model call follows. */
  readonly signal?: AbortSignal | undefined
  /**
   * What the run may use: model calls, tool calls, tokens, cost, wall time, repeated failures (AL 5). A run
   * that reaches one stops before its next model call, with the reason on `agent_end`.
   */
  readonly limits?: RunLimits | undefined
}
