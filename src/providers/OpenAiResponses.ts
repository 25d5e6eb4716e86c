/**
 * A {@link Model} for OpenAI's Responses API (`POST /v1/responses` with streaming), the API OpenAI's
 * reasoning models are meant to be used through.
 *
 * Text streams as text blocks, reasoning summaries as thinking blocks, function calls with their arguments
 * as partial JSON. Requests are stateless (`store: false`): a reasoning model's reasoning comes back as an
 * encrypted item, kept in the thinking block's signature and sent back with the next request to the same
 * model, together with the ids of the items that followed it, so the model picks up where it stopped.
 * Usage, with cached input, comes from the final `response.completed` event.
 *
 * @since 0.1.0
 */
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as Sse from "effect/encoding/Sse"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { AssistantMessage, Message, ToolResultMessage } from "../Message.ts"
import { Model, type ModelInfo, type ModelRequest, type ModelShape, type ThinkingLevel } from "../Model.ts"
import { makeUsage, type Pricing, ResponseBuilder } from "./internal/builder.ts"
import { environment, layerFromConfig } from "./internal/environment.ts"
import { isSameModel, sanitizeTranscript, takeToolResults } from "./internal/transcript.ts"
import {
  decodeJsonData,
  type EventDecoder,
  failure,
  makeSseModel,
  ProviderFailure,
  resolveTransport,
  type Scrub,
  type TransportOptions
} from "./internal/transport.ts"
import { withPricing } from "./ModelCatalogue.ts"

// ---------------------------------------------------------------------------------------------------------
// Wire format: the request
// ---------------------------------------------------------------------------------------------------------

/** Text from the user. @internal */
export const InputText = Schema.Struct({ type: Schema.Literal("input_text"), text: Schema.String })
/** An image from the user, as a data URL. @internal */
export const InputImage = Schema.Struct({
  type: Schema.Literal("input_image"),
  image_url: Schema.String,
  detail: Schema.Literal("auto")
})
/** A user message. @internal */
export const UserInput = Schema.Struct({
  type: Schema.Literal("message"),
  role: Schema.Literal("user"),
  content: Schema.Array(Schema.Union([InputText, InputImage]))
})
/** A text the model wrote, sent back as plain assistant input (no item id). @internal */
export const AssistantInput = Schema.Struct({
  type: Schema.Literal("message"),
  role: Schema.Literal("assistant"),
  content: Schema.String
})
/** A text the model wrote, sent back as the output item it was, id included. @internal */
export const OutputMessage = Schema.Struct({
  type: Schema.Literal("message"),
  role: Schema.Literal("assistant"),
  id: Schema.String,
  status: Schema.Literal("completed"),
  content: Schema.Array(Schema.Struct({
    type: Schema.Literal("output_text"),
    text: Schema.String,
    annotations: Schema.Array(Schema.Unknown)
  }))
})
/** A part of a reasoning summary. @internal */
export const SummaryText = Schema.Struct({ type: Schema.Literal("summary_text"), text: Schema.String })
/**
 * A reasoning item: what the model thought, encrypted, and its summary. This is also what a thinking
 * block's `thinkingSignature` holds (as JSON), to be sent back unchanged.
 *
 * @internal
 */
export const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: Schema.String,
  summary: Schema.Array(SummaryText),
  encrypted_content: Schema.optionalKey(Schema.NullOr(Schema.String))
})
/** @since 0.1.0 @internal */
export type ReasoningItem = typeof ReasoningItem.Type
/** A function call the model made. `id` is the output item's id, `call_id` what results answer. @internal */
export const FunctionCallInput = Schema.Struct({
  type: Schema.Literal("function_call"),
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String,
  id: Schema.optionalKey(Schema.String)
})
/** A function's result. @internal */
export const FunctionCallOutput = Schema.Struct({
  type: Schema.Literal("function_call_output"),
  call_id: Schema.String,
  output: Schema.String
})
/** Any item of a request's `input`. @internal */
export const InputItem = Schema.Union([
  UserInput,
  AssistantInput,
  OutputMessage,
  ReasoningItem,
  FunctionCallInput,
  FunctionCallOutput
])
/** @since 0.1.0 @internal */
export type InputItem = typeof InputItem.Type

/** A function tool. `strict` is sent as false: the API's default (true) refuses most JSON Schemas. @internal */
export const FunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  name: Schema.String,
  description: Schema.optionalKey(Schema.String),
  parameters: Schema.Record(Schema.String, Schema.Unknown),
  strict: Schema.Boolean
})

/** The request body of a streaming response. @internal */
export const ResponsesRequest = Schema.Struct({
  model: Schema.String,
  input: Schema.Array(InputItem),
  instructions: Schema.optionalKey(Schema.String),
  stream: Schema.Literal(true),
  store: Schema.Boolean,
  include: Schema.optionalKey(Schema.Array(Schema.String)),
  tools: Schema.optionalKey(Schema.Array(FunctionTool)),
  max_output_tokens: Schema.optionalKey(Schema.Number),
  temperature: Schema.optionalKey(Schema.Number),
  reasoning: Schema.optionalKey(Schema.Struct({ effort: Schema.String, summary: Schema.optionalKey(Schema.String) }))
})
/** @since 0.1.0 @internal */
export type ResponsesRequest = typeof ResponsesRequest.Type

// ---------------------------------------------------------------------------------------------------------
// Wire format: the stream
// ---------------------------------------------------------------------------------------------------------

const optional = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

/** The token counts of a response. @internal */
export const ResponseUsage = Schema.Struct({
  input_tokens: Schema.Number,
  output_tokens: Schema.Number,
  input_tokens_details: optional(Schema.Struct({ cached_tokens: optional(Schema.Number) })),
  output_tokens_details: optional(Schema.Struct({ reasoning_tokens: optional(Schema.Number) })),
  total_tokens: optional(Schema.Number)
})

/** The response object the lifecycle events carry (the fields read here). @internal */
export const ResponseObject = Schema.Struct({
  id: optional(Schema.String),
  model: optional(Schema.String),
  status: optional(Schema.String),
  usage: optional(ResponseUsage),
  incomplete_details: optional(Schema.Struct({ reason: optional(Schema.String) })),
  error: optional(Schema.Struct({ code: optional(Schema.String), message: Schema.String }))
})

/** An output item as `response.output_item.added` / `.done` carry it; kinds not read here pass through. @internal */
export const OutputItem = Schema.Struct({
  type: Schema.String,
  id: optional(Schema.String),
  // function_call
  call_id: optional(Schema.String),
  name: optional(Schema.String),
  arguments: optional(Schema.String),
  // reasoning
  summary: optional(Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.String }))),
  encrypted_content: optional(Schema.String),
  // message
  content: optional(Schema.Array(Schema.Struct({
    type: Schema.String,
    text: optional(Schema.String),
    refusal: optional(Schema.String)
  })))
})

const lifecycle = <T extends string>(type: T) => Schema.Struct({ type: Schema.Literal(type), response: ResponseObject })

/** `response.created`, `response.in_progress`, `response.completed`, `response.incomplete`, `response.failed`. @internal */
export const ResponseLifecycleEvent = Schema.Union([
  lifecycle("response.created"),
  lifecycle("response.in_progress"),
  lifecycle("response.completed"),
  lifecycle("response.incomplete"),
  lifecycle("response.failed")
])
/** `response.output_item.added` / `.done`. @internal */
export const OutputItemEvent = Schema.Struct({
  type: Schema.Literals(["response.output_item.added", "response.output_item.done"]),
  output_index: Schema.Number,
  item: OutputItem
})
/** A piece of text, refusal, reasoning summary, reasoning text or function arguments. @internal */
export const DeltaEvent = Schema.Struct({
  type: Schema.Literals([
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta"
  ]),
  output_index: Schema.Number,
  summary_index: Schema.optionalKey(Schema.Number),
  delta: Schema.String
})
/** The whole arguments of a function call, after its deltas. @internal */
export const ArgumentsDoneEvent = Schema.Struct({
  type: Schema.Literal("response.function_call_arguments.done"),
  output_index: Schema.Number,
  arguments: Schema.String
})
/** An error reported in the stream. @internal */
export const ErrorEvent = Schema.Struct({
  type: Schema.Literal("error"),
  code: optional(Schema.String),
  message: Schema.String
})

/** Every event read here. Other events (`response.content_part.added`, `….done`, …) are skipped. @internal */
export const StreamEvent = Schema.Union([
  ResponseLifecycleEvent,
  OutputItemEvent,
  DeltaEvent,
  ArgumentsDoneEvent,
  ErrorEvent
])
/** @since 0.1.0 @internal */
export type StreamEvent = typeof StreamEvent.Type

const HANDLED: ReadonlySet<string> = new Set([
  "response.created",
  "response.in_progress",
  "response.completed",
  "response.incomplete",
  "response.failed",
  "response.output_item.added",
  "response.output_item.done",
  "response.output_text.delta",
  "response.refusal.delta",
  "response.reasoning_summary_text.delta",
  "response.reasoning_text.delta",
  "response.function_call_arguments.delta",
  "response.function_call_arguments.done",
  "error"
])
const EventType = Schema.Struct({ type: Schema.String })

// ---------------------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------------------

/** Where OpenAI's API lives. @internal */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1"

/** The `api` of the messages this provider produces (pi's name for the Responses API). */
const API = "openai-responses"

/** How to reach the server and what to ask of it. */
export interface Options extends TransportOptions {
  /** The model id, e.g. `gpt-5-mini`, `o4-mini`, `gpt-4.1`. */
  readonly model: string
  /** The API root, without `/responses`. Default `https://api.openai.com/v1`. */
  readonly baseUrl?: string | undefined
  /** Sent as a bearer token. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** The `provider` of the messages produced. Default `openai`. */
  readonly provider?: string | undefined
  /**
   * Whether the model reasons, so its encrypted reasoning is asked for (`include`) and sent back. Default:
   * true for ids starting `o<digit>`, `gpt-5` (not its `-chat` variants), `gpt-oss` or `codex` (other models
   * refuse the `include`).
   */
  readonly reasoning?: boolean | undefined
  /** Token limit when the request sets none. */
  readonly maxTokens?: number | undefined
  /** Temperature when the request sets none (reasoning models refuse one). */
  readonly temperature?: number | undefined
  /** Prices per million tokens, to compute `usage.cost`. Default: the model's `ModelCatalogue` entry, if any. */
  readonly pricing?: Pricing | undefined
}

interface Settings {
  readonly info: ModelInfo
  readonly url: string
  readonly reasoning: boolean
  readonly maxTokens: number | undefined
  readonly temperature: number | undefined
  readonly pricing: Pricing | undefined
}

/**
 * Whether a model id names a reasoning model, the default of {@link Options.reasoning}: ids starting
 * `o<digit>`, `gpt-5`, `gpt-oss` or `codex` (after any routing prefix), except GPT-5's `-chat` variants.
 *
 * @internal
 */
export const isReasoningModel = (model: string): boolean => {
  const bare = model.slice(model.lastIndexOf("/") + 1)
  return /^(o\d|gpt-5|gpt-oss|codex)/.test(bare) && !/-chat(-|$)/.test(bare)
}

const settingsOf = (options: Options): Settings => ({
  info: { api: API, provider: options.provider ?? "openai", model: options.model },
  url: `${(options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "")}/responses`,
  reasoning: options.reasoning ?? isReasoningModel(options.model),
  maxTokens: options.maxTokens,
  temperature: options.temperature,
  pricing: options.pricing
})

// ---------------------------------------------------------------------------------------------------------
// Our messages → the wire
// ---------------------------------------------------------------------------------------------------------

const dataUrl = (image: { readonly data: string; readonly mimeType: string }) =>
  `data:${image.mimeType};base64,${image.data}`

const REASONING_EFFORT: Record<Exclude<ThinkingLevel, "off">, string> = {
  minimal: "minimal",
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "high"
}

const decodeReasoning = Schema.decodeUnknownOption(Schema.fromJsonString(ReasoningItem))

/** The reasoning item a thinking block carries, if it can be sent back (it has its encrypted content). */
const replayableReasoning = (signature: string | undefined): ReasoningItem | undefined => {
  if (signature === undefined) return undefined
  const item = Option.getOrUndefined(decodeReasoning(signature))
  // Without its encrypted content a reasoning item is only a reference to stored state, and nothing is
  // stored (`store: false`): the API would answer 404.
  return item !== undefined && typeof item.encrypted_content === "string" && item.encrypted_content.length > 0
    ? item
    : undefined
}

const PiTextSignature = Schema.fromJsonString(Schema.Struct({ id: Schema.String }))
const decodePiTextSignature = Schema.decodeUnknownOption(PiTextSignature)

// A message item's id: ours keep it as the text's signature; pi writes `{"v":1,"id":…}` there.
const messageIdOf = (signature: string): string =>
  signature.startsWith("{")
    ? Option.getOrElse(Option.map(decodePiTextSignature(signature), (s) => s.id), () => signature)
    : signature

// pi writes a Responses call's ids as `call_id|item_id`; ours keeps the item id in `thoughtSignature`.
const callIdOf = (id: string) => id.split("|")[0]!
const itemIdOf = (call: { readonly id: string; readonly thoughtSignature?: string | undefined }) =>
  call.thoughtSignature ?? (call.id.includes("|") ? call.id.slice(call.id.indexOf("|") + 1) : undefined)

const assistantItems = (message: AssistantMessage, info: ModelInfo): Array<InputItem> => {
  const sameModel = isSameModel(message, info)
  // The ids of the items that followed a reasoning item are only sent along with it: an item id the API
  // sees without its reasoning, or reasoning without the items after it, is refused.
  const thinking = message.content.filter((block) => block.type === "thinking" && block.redacted !== true)
  const withIds = sameModel &&
    thinking.every((block) => block.type === "thinking" && replayableReasoning(block.thinkingSignature))
  const out: Array<InputItem> = []
  for (const block of message.content) {
    switch (block.type) {
      case "thinking": {
        const item = sameModel ? replayableReasoning(block.thinkingSignature) : undefined
        if (item !== undefined) {
          out.push({
            type: "reasoning",
            id: item.id,
            summary: item.summary,
            encrypted_content: item.encrypted_content!
          })
        } else if (!sameModel && block.redacted !== true && block.thinking.trim().length > 0) {
          // Another model's reasoning is context, not something this API can verify: plain text.
          out.push({ type: "message", role: "assistant", content: block.thinking })
        }
        break
      }
      case "text":
        if (block.text.trim().length === 0) break
        out.push(
          withIds && block.textSignature !== undefined
            ? {
              type: "message",
              role: "assistant",
              id: messageIdOf(block.textSignature),
              status: "completed",
              content: [{ type: "output_text", text: block.text, annotations: [] }]
            }
            : { type: "message", role: "assistant", content: block.text }
        )
        break
      case "toolCall": {
        const itemId = withIds ? itemIdOf(block) : undefined
        out.push({
          type: "function_call",
          call_id: callIdOf(block.id),
          name: block.name,
          arguments: JSON.stringify(block.arguments),
          ...(itemId !== undefined ? { id: itemId } : {})
        })
        break
      }
    }
  }
  return out
}

const toolItems = (results: ReadonlyArray<ToolResultMessage>): Array<InputItem> => {
  const out: Array<InputItem> = []
  const images: Array<typeof InputImage.Type> = []
  for (const result of results) {
    const text = result.content.flatMap((block) => block.type === "text" ? [block.text] : []).join("\n")
    const own = result.content.flatMap((block) =>
      block.type === "image"
        ? [{ type: "input_image" as const, image_url: dataUrl(block), detail: "auto" as const }]
        : []
    )
    images.push(...own)
    out.push({
      type: "function_call_output",
      call_id: callIdOf(result.toolCallId),
      output: text.length > 0 ? text : own.length > 0 ? "(see attached image)" : "(no output)"
    })
  }
  // A function's output is text here: its images follow in a user message after the group.
  if (images.length > 0) {
    out.push({
      type: "message",
      role: "user",
      content: [{ type: "input_text", text: "Attached image(s) from tool result:" }, ...images]
    })
  }
  return out
}

/** Our messages as Responses input items. @internal */
export const toInputItems = (messages: ReadonlyArray<Message>, info: ModelInfo): Array<InputItem> => {
  const out: Array<InputItem> = []
  const sane = sanitizeTranscript(messages)
  for (let i = 0; i < sane.length;) {
    const message = sane[i]!
    switch (message.role) {
      case "user": {
        const content = typeof message.content === "string"
          ? [{ type: "input_text" as const, text: message.content }]
          : message.content.map((block) =>
            block.type === "text"
              ? { type: "input_text" as const, text: block.text }
              : { type: "input_image" as const, image_url: dataUrl(block), detail: "auto" as const }
          )
        if (content.length > 0) out.push({ type: "message", role: "user", content })
        i++
        break
      }
      case "assistant":
        out.push(...assistantItems(message, info))
        i++
        break
      case "toolResult": {
        const { next, results } = takeToolResults(sane, i)
        out.push(...toolItems(results))
        i = next
        break
      }
    }
  }
  return out
}

/** The request body for a model request. @internal */
export const toRequestBody = (request: ModelRequest, settings: Settings): ResponsesRequest => {
  const maxTokens = request.options?.maxTokens ?? settings.maxTokens
  const temperature = request.options?.temperature ?? settings.temperature
  const level = request.options?.thinkingLevel
  return {
    model: settings.info.model,
    input: toInputItems(request.messages, settings.info),
    ...(request.systemPrompt.length > 0 ? { instructions: request.systemPrompt } : {}),
    stream: true,
    store: false,
    ...(settings.reasoning ? { include: ["reasoning.encrypted_content"] } : {}),
    ...(request.tools.length > 0
      ? {
        tools: request.tools.map((tool) => ({
          type: "function" as const,
          name: tool.name,
          description: tool.description,
          parameters: tool.parameters,
          strict: false
        }))
      }
      : {}),
    ...(maxTokens !== undefined ? { max_output_tokens: maxTokens } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(level !== undefined && level !== "off"
      ? { reasoning: { effort: REASONING_EFFORT[level], summary: "auto" } }
      : {})
  }
}

// ---------------------------------------------------------------------------------------------------------
// The wire → our events
// ---------------------------------------------------------------------------------------------------------

const LABEL = "OpenAI Responses API"

const makeDecoder = (settings: Settings, scrub: Scrub) => {
  const decodeType = decodeJsonData(EventType, LABEL, scrub)
  const decodeEvent = decodeJsonData(StreamEvent, LABEL, scrub)
  return (now: number): EventDecoder => {
    const builder = new ResponseBuilder(settings.info, now)
    // Our block for each output item, by its `output_index`.
    const blocks = new Map<number, number>()
    // Which summary part a thinking block is in, to separate parts with a blank line.
    const summaryPart = new Map<number, number>()
    // Tool calls whose arguments already arrived (a finished item repeats them whole).
    const argumentsStreamed = new Set<number>()
    let done = false

    const blockFor = (outputIndex: number, kind: "text" | "thinking"): number => {
      const known = blocks.get(outputIndex)
      if (known !== undefined && builder.block(known)?.type === kind && builder.isOpen(known)) return known
      const index = kind === "text" ? builder.openText() : builder.openThinking()
      blocks.set(outputIndex, index)
      return index
    }

    const onItemAdded = (outputIndex: number, item: typeof OutputItem.Type) => {
      switch (item.type) {
        case "message": {
          const index = builder.openText()
          if (item.id != null) builder.setSignature(index, item.id)
          blocks.set(outputIndex, index)
          break
        }
        case "reasoning":
          blocks.set(outputIndex, builder.openThinking())
          break
        case "function_call": {
          const index = builder.openToolCall(item.call_id ?? item.id ?? "", item.name ?? "")
          if (item.id != null) builder.setSignature(index, item.id)
          if (item.arguments != null && item.arguments.length > 0) {
            argumentsStreamed.add(index)
            builder.appendToolArguments(index, item.arguments)
          }
          blocks.set(outputIndex, index)
          break
        }
      }
    }

    const onItemDone = (outputIndex: number, item: typeof OutputItem.Type) => {
      switch (item.type) {
        case "message": {
          let index = blocks.get(outputIndex)
          if (index === undefined) {
            index = blockFor(outputIndex, "text")
            if (item.id != null) builder.setSignature(index, item.id)
          }
          const block = builder.block(index)
          // A server that sent the text only whole, in the finished item.
          if (block?.type === "text" && block.text === "") {
            const whole = (item.content ?? []).map((part) => part.text ?? part.refusal ?? "").join("")
            builder.appendText(index, whole)
          }
          builder.close(index)
          break
        }
        case "reasoning": {
          const index = blockFor(outputIndex, "thinking")
          const block = builder.block(index)
          const summary = (item.summary ?? []).flatMap((part) => part.type === "summary_text" ? [part] : [])
          if (block?.type === "thinking" && block.thinking === "") {
            builder.appendThinking(index, summary.map((part) => part.text).join("\n\n"))
          }
          if (item.id != null) {
            const replay: ReasoningItem = {
              type: "reasoning",
              id: item.id,
              summary: summary.map((part) => ({ type: "summary_text", text: part.text })),
              ...(item.encrypted_content != null ? { encrypted_content: item.encrypted_content } : {})
            }
            builder.setSignature(index, JSON.stringify(replay))
          }
          builder.close(index)
          break
        }
        case "function_call": {
          let index = blocks.get(outputIndex)
          if (index === undefined) {
            index = builder.openToolCall(item.call_id ?? item.id ?? "", item.name ?? "")
            blocks.set(outputIndex, index)
          }
          builder.completeToolCall(index, { id: item.call_id ?? undefined, name: item.name ?? undefined })
          const block = builder.block(index)
          if (item.id != null && block?.type === "toolCall" && block.thoughtSignature === undefined) {
            builder.setSignature(index, item.id)
          }
          if (item.arguments != null && item.arguments.length > 0 && !argumentsStreamed.has(index)) {
            builder.appendToolArguments(index, item.arguments)
          }
          builder.close(index)
          break
        }
      }
    }

    const onDelta = (event: typeof DeltaEvent.Type) => {
      switch (event.type) {
        case "response.output_text.delta":
        case "response.refusal.delta":
          builder.appendText(blockFor(event.output_index, "text"), event.delta)
          break
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta": {
          const index = blockFor(event.output_index, "thinking")
          const part = event.summary_index ?? 0
          const previous = summaryPart.get(index)
          summaryPart.set(index, part)
          builder.appendThinking(
            index,
            previous !== undefined && previous !== part ? `\n\n${event.delta}` : event.delta
          )
          break
        }
        case "response.function_call_arguments.delta": {
          const index = blocks.get(event.output_index)
          if (index === undefined || builder.block(index)?.type !== "toolCall") break
          argumentsStreamed.add(index)
          builder.appendToolArguments(index, event.delta)
          break
        }
      }
    }

    const onLifecycle = (event: typeof ResponseLifecycleEvent.Type): ProviderFailure | undefined => {
      const response = event.response
      if (response.id != null && builder.responseId === undefined) builder.responseId = response.id
      if (response.model != null && builder.responseModel === undefined) builder.responseModel = response.model
      if (response.usage != null) {
        const cached = response.usage.input_tokens_details?.cached_tokens ?? 0
        builder.usage = makeUsage({
          input: Math.max(0, response.usage.input_tokens - cached),
          output: response.usage.output_tokens,
          cacheRead: cached,
          cacheWrite: 0
        }, settings.pricing)
      }
      switch (event.type) {
        case "response.completed":
          done = true
          builder.finishWith({ stopReason: builder.hasToolCalls ? "toolUse" : "stop" })
          return undefined
        case "response.incomplete": {
          done = true
          const reason = response.incomplete_details?.reason ?? "unknown"
          builder.finishWith(
            reason === "max_output_tokens"
              ? { stopReason: "length" }
              : reason === "content_filter"
              ? { stopReason: "error", errorMessage: "The response was stopped by the provider's content filter" }
              : { stopReason: "error", errorMessage: `The response is incomplete (${reason})` }
          )
          return undefined
        }
        case "response.failed": {
          const error = response.error
          const detail = error != null
            ? `${error.message}${error.code != null ? ` (${error.code})` : ""}`
            : "no reason given"
          // Retried by the transport only while nothing has been streamed.
          return failure("stream", scrub(`${LABEL}: the response failed: ${detail}`), {
            retryable: error?.code === "server_error"
          })
        }
        default:
          return undefined
      }
    }

    const onEvent = (event: Sse.Event): ProviderFailure | undefined => {
      const data = event.data.trim()
      if (data === "" || data === "[DONE]") return undefined
      const envelope = decodeType(data)
      if (envelope instanceof ProviderFailure) return envelope
      if (!HANDLED.has(envelope.type)) return undefined
      const decoded = decodeEvent(data)
      if (decoded instanceof ProviderFailure) return decoded
      if (decoded.type === "error") {
        const code = decoded.code != null ? ` (${decoded.code})` : ""
        return failure(
          "stream",
          scrub(`${LABEL}: the server reported an error while streaming: ${decoded.message}${code}`)
        )
      }
      builder.start()
      switch (decoded.type) {
        case "response.output_item.added":
          onItemAdded(decoded.output_index, decoded.item)
          return undefined
        case "response.output_item.done":
          onItemDone(decoded.output_index, decoded.item)
          return undefined
        case "response.function_call_arguments.done": {
          const index = blocks.get(decoded.output_index)
          if (index !== undefined && !argumentsStreamed.has(index) && decoded.arguments.length > 0) {
            argumentsStreamed.add(index)
            builder.appendToolArguments(index, decoded.arguments)
          }
          return undefined
        }
        case "response.output_text.delta":
        case "response.refusal.delta":
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta":
        case "response.function_call_arguments.delta":
          onDelta(decoded)
          return undefined
        default:
          return onLifecycle(decoded)
      }
    }

    const onEnd = (): ProviderFailure | undefined =>
      done ? undefined : failure("stream", `${LABEL}: the stream ended before the response was complete`)

    return { builder, onEvent, onEnd, ended: () => done }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------------------

/** A model service talking to the Responses API. */
export const make = (options: Options): Effect.Effect<ModelShape, never, HttpClient.HttpClient> =>
  Effect.flatMap(withPricing(options), (priced) => {
    const settings = settingsOf(priced)
    return makeSseModel({
      label: LABEL,
      info: settings.info,
      url: settings.url,
      transport: resolveTransport(priced),
      secrets: [priced.apiKey],
      authorize: (request) =>
        priced.apiKey !== undefined ? HttpClientRequest.bearerToken(request, priced.apiKey) : request,
      bodySchema: ResponsesRequest,
      toBody: (request) => toRequestBody(request, settings),
      makeDecoder: (scrub) => makeDecoder(settings, scrub)
    })
  })

/** A {@link Model} layer from explicit options. */
export const layer = (options: Options): Layer.Layer<Model, never, HttpClient.HttpClient> =>
  Layer.effect(Model, make(options))

/**
 * The options from the environment, the same variables as the Chat Completions provider: `OPENAI_MODEL`
 * (required), `OPENAI_BASE_URL` (default OpenAI's API) and `OPENAI_API_KEY` (optional, read as `Redacted`).
 *
 * @internal
 */
export const config: Config.Config<Options> = environment("OPENAI", DEFAULT_BASE_URL)

/**
 * A {@link Model} layer configured from the environment, with `overrides` applied on top. The variables are
 * the Chat Completions provider's: `OPENAI_MODEL` (required), `OPENAI_BASE_URL` (default OpenAI's API) and
 * `OPENAI_API_KEY` (optional, read as `Redacted`).
 */
export const layerConfig = (
  overrides: Partial<Options> = {}
): Layer.Layer<Model, Config.ConfigError, HttpClient.HttpClient> => layerFromConfig(config, make, overrides)
