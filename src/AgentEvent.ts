/**
 * Everything an agent run tells its observers, with pi's event shapes (`type`-discriminated), so a UI
 * written for pi's events reads ours.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { AssistantMessageEvent } from "./AssistantMessageEvent.ts"
import { AssistantMessage, Message, ToolResultMessage } from "./Message.ts"

/**
 * A transcript message in an event. Application messages are carried as they are, so this is the model
 * message union widened by any object with a `role`.
 */
const EventMessage = Schema.Union([
  Message,
  Schema.StructWithRest(Schema.Struct({ role: Schema.String }), [Schema.Record(Schema.String, Schema.Unknown)])
])

/** A tool call is about to be prepared. `args` are the raw arguments from the assistant message. */
export const ToolExecutionStart = Schema.Struct({
  type: Schema.Literal("tool_execution_start"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  args: Schema.Unknown
})
/** @since 0.1.0 */
export type ToolExecutionStart = typeof ToolExecutionStart.Type

/** A running tool reported progress. Always between the call's start and end events. */
export const ToolExecutionUpdate = Schema.Struct({
  type: Schema.Literal("tool_execution_update"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  args: Schema.Unknown,
  partialResult: Schema.Unknown
})
/** @since 0.1.0 */
export type ToolExecutionUpdate = typeof ToolExecutionUpdate.Type

/** A tool call has its final result (emitted exactly once per call). */
export const ToolExecutionEnd = Schema.Struct({
  type: Schema.Literal("tool_execution_end"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  result: Schema.Unknown,
  isError: Schema.Boolean
})
/** @since 0.1.0 */
export type ToolExecutionEnd = typeof ToolExecutionEnd.Type

/** A message enters the transcript. */
export const MessageStart = Schema.Struct({ type: Schema.Literal("message_start"), message: EventMessage })
/** @since 0.1.0 */
export type MessageStart = typeof MessageStart.Type

/** The assistant message being streamed changed; `assistantMessageEvent` says how. */
export const MessageUpdate = Schema.Struct({
  type: Schema.Literal("message_update"),
  message: AssistantMessage,
  assistantMessageEvent: AssistantMessageEvent
})
/** @since 0.1.0 */
export type MessageUpdate = typeof MessageUpdate.Type

/** A message is complete. */
export const MessageEnd = Schema.Struct({ type: Schema.Literal("message_end"), message: EventMessage })
/** @since 0.1.0 */
export type MessageEnd = typeof MessageEnd.Type

/** A run begins. Always the first event of a run. */
export const AgentStart = Schema.Struct({ type: Schema.Literal("agent_start") })
/** A run is over; `messages` are the messages the run added. Always the last event of a run. */
export const AgentEnd = Schema.Struct({ type: Schema.Literal("agent_end"), messages: Schema.Array(EventMessage) })
/** A turn (one model response and its tool batch) begins. */
export const TurnStart = Schema.Struct({ type: Schema.Literal("turn_start") })
/** A turn is over: its assistant message and the tool results of its batch, in source order. */
export const TurnEnd = Schema.Struct({
  type: Schema.Literal("turn_end"),
  message: EventMessage,
  toolResults: Schema.Array(ToolResultMessage)
})

/** The events of one tool batch. */
export const ToolExecutionEvent = Schema.Union([
  ToolExecutionStart,
  ToolExecutionUpdate,
  ToolExecutionEnd,
  MessageStart,
  MessageEnd
]).pipe(Schema.toTaggedUnion("type"))
/** @since 0.1.0 */
export type ToolExecutionEvent = typeof ToolExecutionEvent.Type

/** Every event of an agent run, discriminated by `type`. */
export const AgentEvent = Schema.Union([
  AgentStart,
  AgentEnd,
  TurnStart,
  TurnEnd,
  MessageStart,
  MessageUpdate,
  MessageEnd,
  ToolExecutionStart,
  ToolExecutionUpdate,
  ToolExecutionEnd
]).pipe(Schema.toTaggedUnion("type"))
/** @since 0.1.0 */
export type AgentEvent = typeof AgentEvent.Type
