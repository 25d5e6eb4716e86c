/**
 * Everything an agent run tells its observers, with pi's event shapes (`type`-discriminated), so a UI
 * written for pi's events reads ours.
 *
 * Each event is a Schema and an interface of the same name. The Schema types are written out, naming the
 * message Schemas they hold, so that declarations stay small.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { AssistantMessageEvent } from "./AssistantMessageEvent.ts"
import { AssistantMessage, Message, ToolCall, ToolResultMessage } from "./Message.ts"
import { LimitReached } from "./RunLimits.ts"
import { ToolResultSchema } from "./Tool.ts"

/** An application's own message kind (see `Message.CustomMessage`), carried as it is. */
const CustomMessage: Schema.StructWithRest<
  Schema.Struct<{ readonly role: Schema.String; readonly timestamp: Schema.optionalKey<Schema.Number> }>,
  readonly [Schema.$Record<Schema.String, Schema.Unknown>]
> = Schema.StructWithRest(
  Schema.Struct({ role: Schema.String, timestamp: Schema.optionalKey(Schema.Number) }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)

/** A transcript message in an event: a model message, or an application's own kind (any object with a `role`). */
const EventMessage: Schema.Union<readonly [typeof Message, typeof CustomMessage]> = Schema.Union([
  Message,
  CustomMessage
])

/** A tool call is about to be prepared. `args` are the raw arguments from the assistant message. */
const ToolExecutionStart: Schema.Struct<{
  readonly type: Schema.Literal<"tool_execution_start">
  readonly toolCallId: Schema.String
  readonly toolName: Schema.String
  readonly args: typeof ToolCall.fields.arguments
}> = Schema.Struct({
  type: Schema.Literal("tool_execution_start"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  args: ToolCall.fields.arguments
}).annotate({ identifier: "ToolExecutionStart" })
interface ToolExecutionStart extends Schema.Schema.Type<typeof ToolExecutionStart> {}

/**
 * A running tool reported progress with a partial result. Always between the call's start and end events;
 * `args` are the raw arguments.
 */
const ToolExecutionUpdate: Schema.Struct<{
  readonly type: Schema.Literal<"tool_execution_update">
  readonly toolCallId: Schema.String
  readonly toolName: Schema.String
  readonly args: typeof ToolCall.fields.arguments
  readonly partialResult: typeof ToolResultSchema
}> = Schema.Struct({
  type: Schema.Literal("tool_execution_update"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  args: ToolCall.fields.arguments,
  partialResult: ToolResultSchema
}).annotate({ identifier: "ToolExecutionUpdate" })
interface ToolExecutionUpdate extends Schema.Schema.Type<typeof ToolExecutionUpdate> {}

/**
 * A tool call of a parallel batch waits for earlier calls of the batch that touch what it touches (TE 11),
 * named by their ids; it starts executing once the last of them has ended. Between the call's start and
 * end events, and only for a call that waits.
 */
const ToolExecutionWaiting: Schema.Struct<{
  readonly type: Schema.Literal<"tool_execution_waiting">
  readonly toolCallId: Schema.String
  readonly toolName: Schema.String
  readonly waitingFor: Schema.$Array<Schema.String>
}> = Schema.Struct({
  type: Schema.Literal("tool_execution_waiting"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  waitingFor: Schema.Array(Schema.String)
}).annotate({ identifier: "ToolExecutionWaiting" })
interface ToolExecutionWaiting extends Schema.Schema.Type<typeof ToolExecutionWaiting> {}

/** A tool call has its final result (emitted exactly once per call). */
const ToolExecutionEnd: Schema.Struct<{
  readonly type: Schema.Literal<"tool_execution_end">
  readonly toolCallId: Schema.String
  readonly toolName: Schema.String
  readonly result: typeof ToolResultSchema
  readonly isError: Schema.Boolean
}> = Schema.Struct({
  type: Schema.Literal("tool_execution_end"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  result: ToolResultSchema,
  isError: Schema.Boolean
}).annotate({ identifier: "ToolExecutionEnd" })
interface ToolExecutionEnd extends Schema.Schema.Type<typeof ToolExecutionEnd> {}

/** A message enters the transcript. */
const MessageStart: Schema.Struct<{
  readonly type: Schema.Literal<"message_start">
  readonly message: typeof EventMessage
}> = Schema.Struct({ type: Schema.Literal("message_start"), message: EventMessage }).annotate({
  identifier: "MessageStart"
})
interface MessageStart extends Schema.Schema.Type<typeof MessageStart> {}

/** The assistant message being streamed changed; `assistantMessageEvent` says how. */
const MessageUpdate: Schema.Struct<{
  readonly type: Schema.Literal<"message_update">
  readonly message: typeof AssistantMessage
  readonly assistantMessageEvent: typeof AssistantMessageEvent
}> = Schema.Struct({
  type: Schema.Literal("message_update"),
  message: AssistantMessage,
  assistantMessageEvent: AssistantMessageEvent
}).annotate({ identifier: "MessageUpdate" })
interface MessageUpdate extends Schema.Schema.Type<typeof MessageUpdate> {}

/** A message is complete. */
const MessageEnd: Schema.Struct<{
  readonly type: Schema.Literal<"message_end">
  readonly message: typeof EventMessage
}> = Schema.Struct({ type: Schema.Literal("message_end"), message: EventMessage }).annotate({
  identifier: "MessageEnd"
})
interface MessageEnd extends Schema.Schema.Type<typeof MessageEnd> {}

/** A run begins. Always the first event of a run. */
const AgentStart: Schema.Struct<{ readonly type: Schema.Literal<"agent_start"> }> = Schema.Struct({
  type: Schema.Literal("agent_start")
}).annotate({ identifier: "AgentStart" })
interface AgentStart extends Schema.Schema.Type<typeof AgentStart> {}

/**
 * A run is over; `messages` are the messages the run added. Always the last event of a run. `limitReached`
 * says which of the run's limits stopped it, when one did (AL 5).
 */
const AgentEnd: Schema.Struct<{
  readonly type: Schema.Literal<"agent_end">
  readonly messages: Schema.$Array<typeof EventMessage>
  readonly limitReached: Schema.optionalKey<typeof LimitReached>
}> = Schema.Struct({
  type: Schema.Literal("agent_end"),
  messages: Schema.Array(EventMessage),
  limitReached: Schema.optionalKey(LimitReached)
}).annotate({ identifier: "AgentEnd" })
interface AgentEnd extends Schema.Schema.Type<typeof AgentEnd> {}

/** A turn (one model response and its tool batch) begins. */
const TurnStart: Schema.Struct<{ readonly type: Schema.Literal<"turn_start"> }> = Schema.Struct({
  type: Schema.Literal("turn_start")
}).annotate({ identifier: "TurnStart" })
interface TurnStart extends Schema.Schema.Type<typeof TurnStart> {}

/** A turn is over: its assistant message and the tool results of its batch, in source order. */
const TurnEnd: Schema.Struct<{
  readonly type: Schema.Literal<"turn_end">
  readonly message: typeof EventMessage
  readonly toolResults: Schema.$Array<typeof ToolResultMessage>
}> = Schema.Struct({
  type: Schema.Literal("turn_end"),
  message: EventMessage,
  toolResults: Schema.Array(ToolResultMessage)
}).annotate({ identifier: "TurnEnd" })
interface TurnEnd extends Schema.Schema.Type<typeof TurnEnd> {}

/** The events of one tool batch. */
export const ToolExecutionEvent: Schema.toTaggedUnion<
  "type",
  readonly [
    typeof ToolExecutionStart,
    typeof ToolExecutionUpdate,
    typeof ToolExecutionWaiting,
    typeof ToolExecutionEnd,
    typeof MessageStart,
    typeof MessageEnd
  ]
> = Schema.Union([
  ToolExecutionStart,
  ToolExecutionUpdate,
  ToolExecutionWaiting,
  ToolExecutionEnd,
  MessageStart,
  MessageEnd
]).annotate({ identifier: "ToolExecutionEvent" }).pipe(Schema.toTaggedUnion("type"))
/** @since 0.1.0 */
export type ToolExecutionEvent =
  | ToolExecutionStart
  | ToolExecutionUpdate
  | ToolExecutionWaiting
  | ToolExecutionEnd
  | MessageStart
  | MessageEnd

/** Every event of an agent run, discriminated by `type`. */
export const AgentEvent: Schema.toTaggedUnion<
  "type",
  readonly [
    typeof AgentStart,
    typeof AgentEnd,
    typeof TurnStart,
    typeof TurnEnd,
    typeof MessageStart,
    typeof MessageUpdate,
    typeof MessageEnd,
    typeof ToolExecutionStart,
    typeof ToolExecutionUpdate,
    typeof ToolExecutionWaiting,
    typeof ToolExecutionEnd
  ]
> = Schema.Union([
  AgentStart,
  AgentEnd,
  TurnStart,
  TurnEnd,
  MessageStart,
  MessageUpdate,
  MessageEnd,
  ToolExecutionStart,
  ToolExecutionUpdate,
  ToolExecutionWaiting,
  ToolExecutionEnd
]).annotate({ identifier: "AgentEvent" }).pipe(Schema.toTaggedUnion("type"))
/** @since 0.1.0 */
export type AgentEvent =
  | AgentStart
  | AgentEnd
  | TurnStart
  | TurnEnd
  | MessageStart
  | MessageUpdate
  | MessageEnd
  | ToolExecutionStart
  | ToolExecutionUpdate
  | ToolExecutionWaiting
  | ToolExecutionEnd
