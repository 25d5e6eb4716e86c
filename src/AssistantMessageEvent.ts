/**
 * The streaming protocol of a model response, with pi's event shapes: a `start`, then per content block a
 * `*_start`, `*_delta`s and a `*_end`, and finally `done` or `error` carrying the final message.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { AssistantMessage, ToolCall } from "./Message.ts"

const indexed = <Type extends string>(type: Type) =>
  Schema.Struct({ type: Schema.Literal(type), contentIndex: Schema.Number, partial: AssistantMessage })
const delta = <Type extends string>(type: Type) =>
  Schema.Struct({
    type: Schema.Literal(type),
    contentIndex: Schema.Number,
    delta: Schema.String,
    partial: AssistantMessage
  })
const textEnd = <Type extends string>(type: Type) =>
  Schema.Struct({
    type: Schema.Literal(type),
    contentIndex: Schema.Number,
    content: Schema.String,
    partial: AssistantMessage
  })

/** One step of a streamed assistant response. `partial` is the message so far. */
export const AssistantMessageEvent = Schema.Union([
  Schema.Struct({ type: Schema.Literal("start"), partial: AssistantMessage }),
  indexed("text_start"),
  delta("text_delta"),
  textEnd("text_end"),
  indexed("thinking_start"),
  delta("thinking_delta"),
  textEnd("thinking_end"),
  indexed("toolcall_start"),
  delta("toolcall_delta"),
  Schema.Struct({
    type: Schema.Literal("toolcall_end"),
    contentIndex: Schema.Number,
    toolCall: ToolCall,
    partial: AssistantMessage
  }),
  Schema.Struct({
    type: Schema.Literal("done"),
    reason: Schema.Literals(["stop", "length", "toolUse"]),
    message: AssistantMessage
  }),
  Schema.Struct({
    type: Schema.Literal("error"),
    reason: Schema.Literals(["aborted", "error"]),
    error: AssistantMessage
  })
]).pipe(Schema.toTaggedUnion("type"))

/** @since 0.1.0 */
export type AssistantMessageEvent = typeof AssistantMessageEvent.Type
