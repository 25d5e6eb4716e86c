/**
 * The conversation data: content blocks and the three message kinds, as Schemas whose JSON shapes are
 * pi's (`@mariozechner/pi-ai`), so a pi transcript decodes unchanged and ours encodes to what pi reads.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** A piece of text. `textSignature` is an opaque provider token that must be sent back unchanged. */
export const TextContent = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String,
  textSignature: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "TextContent" })
/** @since 0.1.0 */
export interface TextContent extends Schema.Schema.Type<typeof TextContent> {}

/** The model's reasoning. A redacted block keeps its opaque payload in `thinkingSignature`. */
export const ThinkingContent = Schema.Struct({
  type: Schema.Literal("thinking"),
  thinking: Schema.String,
  thinkingSignature: Schema.optionalKey(Schema.String),
  redacted: Schema.optionalKey(Schema.Boolean)
}).annotate({ identifier: "ThinkingContent" })
/** @since 0.1.0 */
export interface ThinkingContent extends Schema.Schema.Type<typeof ThinkingContent> {}

/** An image, base64-encoded. */
export const ImageContent = Schema.Struct({
  type: Schema.Literal("image"),
  data: Schema.String,
  mimeType: Schema.String
}).annotate({ identifier: "ImageContent" })
/** @since 0.1.0 */
export interface ImageContent extends Schema.Schema.Type<typeof ImageContent> {}

/** The arguments of a tool call as the model sent them: never mutated by the pipeline. */
const ToolCallArguments = Schema.Record(Schema.String, Schema.Unknown)

/** A tool call requested by the model, one content block of an assistant message. */
export const ToolCall = Schema.Struct({
  type: Schema.Literal("toolCall"),
  id: Schema.String,
  name: Schema.String,
  arguments: ToolCallArguments,
  thoughtSignature: Schema.optionalKey(Schema.String),
  /**
   * The argument text exactly as the model streamed it, present only when that text was not valid JSON
   * (then `arguments` holds whatever could be salvaged, often `{}`). The prepare phase turns it into an
   * `InvalidToolArguments` outcome that says "not valid JSON" instead of validating the salvage.
   */
  rawArguments: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "ToolCall" })
/** @since 0.1.0 */
export interface ToolCall extends Schema.Schema.Type<typeof ToolCall> {}

/** What a tool result (and a user message) may hold: text and images. */
export const ToolResultContent: Schema.Union<readonly [typeof TextContent, typeof ImageContent]> = Schema.Union([
  TextContent,
  ImageContent
])
/** @since 0.1.0 */
export type ToolResultContent = typeof ToolResultContent.Type

/** The content blocks of an assistant message. */
export const AssistantContent: Schema.Union<readonly [typeof TextContent, typeof ThinkingContent, typeof ToolCall]> =
  Schema.Union([TextContent, ThinkingContent, ToolCall])
/** @since 0.1.0 */
export type AssistantContent = typeof AssistantContent.Type

/** Token counts and their cost, as pi reports them. */
export const Usage = Schema.Struct({
  input: Schema.Number,
  output: Schema.Number,
  cacheRead: Schema.Number,
  cacheWrite: Schema.Number,
  totalTokens: Schema.Number,
  cost: Schema.Struct({
    input: Schema.Number,
    output: Schema.Number,
    cacheRead: Schema.Number,
    cacheWrite: Schema.Number,
    total: Schema.Number
  })
}).annotate({ identifier: "Usage" })
/** @since 0.1.0 */
export interface Usage extends Schema.Schema.Type<typeof Usage> {}

/** A usage with every count at zero: for messages no model produced (scripted, synthetic). */
export const emptyUsage: Usage = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
}

/** Why an assistant message ended. `error` and `aborted` carry an `errorMessage`. */
export const StopReason = Schema.Literals(["stop", "length", "toolUse", "error", "aborted"])
/** @since 0.1.0 */
export type StopReason = typeof StopReason.Type

/** A message from the person (or the application speaking for them). */
export const UserMessage: Schema.Struct<{
  readonly role: Schema.Literal<"user">
  readonly content: Schema.Union<readonly [Schema.String, Schema.$Array<typeof ToolResultContent>]>
  readonly timestamp: Schema.Number
}> = Schema.Struct({
  role: Schema.Literal("user"),
  content: Schema.Union([Schema.String, Schema.Array(ToolResultContent)]),
  timestamp: Schema.Number
}).annotate({ identifier: "UserMessage" })
/** @since 0.1.0 */
export interface UserMessage extends Schema.Schema.Type<typeof UserMessage> {}

/** A model's response. Tool calls are `toolCall` blocks in `content`, in the order the model wrote them. */
export const AssistantMessage: Schema.Struct<{
  readonly role: Schema.Literal<"assistant">
  readonly content: Schema.$Array<typeof AssistantContent>
  readonly api: Schema.String
  readonly provider: Schema.String
  readonly model: Schema.String
  readonly responseModel: Schema.optionalKey<Schema.String>
  readonly responseId: Schema.optionalKey<Schema.String>
  readonly diagnostics: Schema.optionalKey<Schema.$Array<Schema.Unknown>>
  readonly usage: typeof Usage
  readonly stopReason: typeof StopReason
  readonly errorMessage: Schema.optionalKey<Schema.String>
  readonly timestamp: Schema.Number
}> = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.Array(AssistantContent),
  api: Schema.String,
  provider: Schema.String,
  model: Schema.String,
  responseModel: Schema.optionalKey(Schema.String),
  responseId: Schema.optionalKey(Schema.String),
  diagnostics: Schema.optionalKey(Schema.Array(Schema.Unknown)),
  usage: Usage,
  stopReason: StopReason,
  errorMessage: Schema.optionalKey(Schema.String),
  timestamp: Schema.Number
}).annotate({ identifier: "AssistantMessage" })
/** @since 0.1.0 */
export interface AssistantMessage extends Schema.Schema.Type<typeof AssistantMessage> {}

/**
 * The outcome of one tool call, fed back to the model. `terminate` is deliberately absent: it is a runtime
 * hint for the loop, not part of the transcript.
 */
export const ToolResultMessage: Schema.Struct<{
  readonly role: Schema.Literal<"toolResult">
  readonly toolCallId: Schema.String
  readonly toolName: Schema.String
  readonly content: Schema.$Array<typeof ToolResultContent>
  readonly details: Schema.optionalKey<Schema.Unknown>
  readonly isError: Schema.Boolean
  readonly timestamp: Schema.Number
}> = Schema.Struct({
  role: Schema.Literal("toolResult"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  content: Schema.Array(ToolResultContent),
  details: Schema.optionalKey(Schema.Unknown),
  isError: Schema.Boolean,
  timestamp: Schema.Number
}).annotate({ identifier: "ToolResultMessage" })
/** @since 0.1.0 */
export interface ToolResultMessage extends Schema.Schema.Type<typeof ToolResultMessage> {}

/** The messages a model understands, discriminated by `role`. */
export const Message: Schema.toTaggedUnion<
  "role",
  readonly [typeof UserMessage, typeof AssistantMessage, typeof ToolResultMessage]
> = Schema.Union([UserMessage, AssistantMessage, ToolResultMessage]).pipe(Schema.toTaggedUnion("role"))
/** @since 0.1.0 */
export type Message = UserMessage | AssistantMessage | ToolResultMessage

/**
 * A message an application adds to the transcript for its own purposes (a notification, an artifact). It
 * never reaches the model unless `convertToLlm` turns it into a {@link Message}.
 */
export interface CustomMessage {
  readonly role: string
  readonly timestamp?: number
  readonly [key: string]: unknown
}

/** Anything the transcript may hold: a model message or an application's own kind. */
export type AgentMessage = Message | CustomMessage

/** Tells a model message from an application's custom one. */
export const isMessage = (message: AgentMessage): message is Message =>
  message.role === "user" || message.role === "assistant" || message.role === "toolResult"

/** The tool calls of an assistant message, in source order. @internal */
export const toolCallsOf = (message: AssistantMessage): ReadonlyArray<ToolCall> => {
  const calls: Array<ToolCall> = []
  for (const block of message.content) {
    if (block.type === "toolCall") calls.push(block)
  }
  return calls
}

/** A text content block. */
export const text = (value: string): TextContent => ({ type: "text", text: value })

/** The text of a model message: its text blocks joined, other blocks shown as `[type]`. */
export const textOf = (message: Message): string =>
  typeof message.content === "string"
    ? message.content
    : message.content.map((block) => block.type === "text" ? block.text : `[${block.type}]`).join(" ")
