/**
 * The streaming protocol of a model response, with pi's event shapes: a `start`, then per content block a
 * `*_start`, `*_delta`s and a `*_end`, and finally `done` or `error` carrying the final message.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { AssistantMessage, ToolCall } from "./Message.ts"

// The Schema types are written out (rather than inferred) so that declarations name `AssistantMessage`
// instead of spelling it out in every variant.

type Start = Schema.Struct<{ readonly type: Schema.Literal<"start">; readonly partial: typeof AssistantMessage }>
type Indexed<Type extends string> = Schema.Struct<{
  readonly type: Schema.Literal<Type>
  readonly contentIndex: Schema.Number
  readonly partial: typeof AssistantMessage
}>
type Delta<Type extends string> = Schema.Struct<{
  readonly type: Schema.Literal<Type>
  readonly contentIndex: Schema.Number
  readonly delta: Schema.String
  readonly partial: typeof AssistantMessage
}>
type TextEnd<Type extends string> = Schema.Struct<{
  readonly type: Schema.Literal<Type>
  readonly contentIndex: Schema.Number
  readonly content: Schema.String
  readonly partial: typeof AssistantMessage
}>
type ToolCallEnd = Schema.Struct<{
  readonly type: Schema.Literal<"toolcall_end">
  readonly contentIndex: Schema.Number
  readonly toolCall: typeof ToolCall
  readonly partial: typeof AssistantMessage
}>
type Done = Schema.Struct<{
  readonly type: Schema.Literal<"done">
  readonly reason: Schema.Literals<readonly ["stop", "length", "toolUse"]>
  readonly message: typeof AssistantMessage
}>
type Failed = Schema.Struct<{
  readonly type: Schema.Literal<"error">
  readonly reason: Schema.Literals<readonly ["aborted", "error"]>
  readonly error: typeof AssistantMessage
}>

const indexed = <Type extends string>(type: Type): Indexed<Type> =>
  Schema.Struct({ type: Schema.Literal(type), contentIndex: Schema.Number, partial: AssistantMessage })
const delta = <Type extends string>(type: Type): Delta<Type> =>
  Schema.Struct({
    type: Schema.Literal(type),
    contentIndex: Schema.Number,
    delta: Schema.String,
    partial: AssistantMessage
  })
const textEnd = <Type extends string>(type: Type): TextEnd<Type> =>
  Schema.Struct({
    type: Schema.Literal(type),
    contentIndex: Schema.Number,
    content: Schema.String,
    partial: AssistantMessage
  })

/** One step of a streamed assistant response. `partial` is the message so far. */
export const AssistantMessageEvent: Schema.toTaggedUnion<
  "type",
  readonly [
    Start,
    Indexed<"text_start">,
    Delta<"text_delta">,
    TextEnd<"text_end">,
    Indexed<"thinking_start">,
    Delta<"thinking_delta">,
    TextEnd<"thinking_end">,
    Indexed<"toolcall_start">,
    Delta<"toolcall_delta">,
    ToolCallEnd,
    Done,
    Failed
  ]
> = Schema.Union([
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
]).annotate({ identifier: "AssistantMessageEvent" }).pipe(Schema.toTaggedUnion("type"))

/** @since 0.1.0 */
export type AssistantMessageEvent = typeof AssistantMessageEvent.Type
