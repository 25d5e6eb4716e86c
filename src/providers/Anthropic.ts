/**
 * A {@link Model} for Anthropic's Messages API with streaming: text, thinking with its signature,
 * redacted thinking, tool use with its input streamed as partial JSON, usage from `message_start` and
 * `message_delta`, and the stream's `error` events.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as Sse from "effect/encoding/Sse"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { Message, ToolResultMessage } from "../Message.ts"
import {
  Model,
  type ModelError,
  type ModelInfo,
  type ModelRequest,
  type ModelShape,
  type ThinkingLevel
} from "../Model.ts"
import { makeUsage, type Pricing, ResponseBuilder, type TokenCounts } from "./internal/builder.ts"
import { environmentWithKey, layerFromConfig } from "./internal/environment.ts"
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

/** A prompt-cache breakpoint: the prefix up to and including the block it marks is cached. @internal */
export const CacheControl = Schema.Struct({
  type: Schema.Literal("ephemeral"),
  ttl: Schema.optionalKey(Schema.Literals(["5m", "1h"]))
})
/** @since 0.1.0 @internal */
export type CacheControl = typeof CacheControl.Type

/** A text block. @internal */
export const TextBlock = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String,
  cache_control: Schema.optionalKey(CacheControl)
})
/** An image block, base64-encoded. @internal */
export const ImageBlock = Schema.Struct({
  type: Schema.Literal("image"),
  source: Schema.Struct({ type: Schema.Literal("base64"), media_type: Schema.String, data: Schema.String }),
  cache_control: Schema.optionalKey(CacheControl)
})
/** A thinking block sent back with its signature. @internal */
export const ThinkingBlock = Schema.Struct({
  type: Schema.Literal("thinking"),
  thinking: Schema.String,
  signature: Schema.String
})
/** A redacted thinking block, sent back as it came. @internal */
export const RedactedThinkingBlock = Schema.Struct({ type: Schema.Literal("redacted_thinking"), data: Schema.String })
/** A tool call. @internal */
export const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.Record(Schema.String, Schema.Unknown),
  cache_control: Schema.optionalKey(CacheControl)
})
/** A tool result, in a user message. Its content may hold images. @internal */
export const ToolResultBlock = Schema.Struct({
  type: Schema.Literal("tool_result"),
  tool_use_id: Schema.String,
  content: Schema.optionalKey(Schema.Array(Schema.Union([TextBlock, ImageBlock]))),
  is_error: Schema.optionalKey(Schema.Boolean),
  cache_control: Schema.optionalKey(CacheControl)
})
/** Any block of a request message. @internal */
export const ContentBlock = Schema.Union([
  TextBlock,
  ImageBlock,
  ThinkingBlock,
  RedactedThinkingBlock,
  ToolUseBlock,
  ToolResultBlock
])
/** @since 0.1.0 @internal */
export type ContentBlock = typeof ContentBlock.Type

/** A message of a request. @internal */
export const MessageParam = Schema.Struct({
  role: Schema.Literals(["user", "assistant"]),
  content: Schema.Union([Schema.String, Schema.Array(ContentBlock)])
})
/** @since 0.1.0 @internal */
export type MessageParam = typeof MessageParam.Type

/** A tool with its input's JSON Schema. @internal */
export const ToolDefinition = Schema.Struct({
  name: Schema.String,
  description: Schema.optionalKey(Schema.String),
  input_schema: Schema.Record(Schema.String, Schema.Unknown),
  cache_control: Schema.optionalKey(CacheControl)
})

/** The request body of a streaming Messages call. @internal */
export const MessagesRequest = Schema.Struct({
  model: Schema.String,
  max_tokens: Schema.Number,
  messages: Schema.Array(MessageParam),
  system: Schema.optionalKey(Schema.Array(TextBlock)),
  tools: Schema.optionalKey(Schema.Array(ToolDefinition)),
  stream: Schema.Literal(true),
  temperature: Schema.optionalKey(Schema.Number),
  thinking: Schema.optionalKey(Schema.Union([
    Schema.Struct({ type: Schema.Literal("enabled"), budget_tokens: Schema.Number }),
    Schema.Struct({ type: Schema.Literal("disabled") })
  ]))
})
/** @since 0.1.0 @internal */
export type MessagesRequest = typeof MessagesRequest.Type

// ---------------------------------------------------------------------------------------------------------
// Wire format: the stream
// ---------------------------------------------------------------------------------------------------------

const nullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

/** Token counts as `message_start` and `message_delta` carry them (the latter only what changed). @internal */
export const WireUsage = Schema.Struct({
  input_tokens: nullable(Schema.Number),
  output_tokens: nullable(Schema.Number),
  cache_creation_input_tokens: nullable(Schema.Number),
  cache_read_input_tokens: nullable(Schema.Number)
})

/** The first event: the message's id, model and input usage. @internal */
export const MessageStartEvent = Schema.Struct({
  type: Schema.Literal("message_start"),
  message: Schema.Struct({
    id: nullable(Schema.String),
    model: nullable(Schema.String),
    usage: nullable(WireUsage)
  })
})

/** The content blocks a `content_block_start` may open that we act on. @internal */
export const TextBlockStart = Schema.Struct({ type: Schema.Literal("text"), text: nullable(Schema.String) })
/** @internal */
export const ThinkingBlockStart = Schema.Struct({
  type: Schema.Literal("thinking"),
  thinking: nullable(Schema.String),
  signature: nullable(Schema.String)
})
/** @internal */
export const RedactedThinkingBlockStart = Schema.Struct({
  type: Schema.Literal("redacted_thinking"),
  data: Schema.String
})
/** @internal */
export const ToolUseBlockStart = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: nullable(Schema.Record(Schema.String, Schema.Unknown))
})
const KnownBlockStart = Schema.Union([
  TextBlockStart,
  ThinkingBlockStart,
  RedactedThinkingBlockStart,
  ToolUseBlockStart
])
const KNOWN_BLOCKS: ReadonlySet<string> = new Set(["text", "thinking", "redacted_thinking", "tool_use"])

/** The pieces of a block we act on. @internal */
export const TextDelta = Schema.Struct({ type: Schema.Literal("text_delta"), text: Schema.String })
/** @internal */
export const ThinkingDelta = Schema.Struct({ type: Schema.Literal("thinking_delta"), thinking: Schema.String })
/** @internal */
export const SignatureDelta = Schema.Struct({ type: Schema.Literal("signature_delta"), signature: Schema.String })
/** @internal */
export const InputJsonDelta = Schema.Struct({ type: Schema.Literal("input_json_delta"), partial_json: Schema.String })
const KnownDelta = Schema.Union([TextDelta, ThinkingDelta, SignatureDelta, InputJsonDelta])
const KNOWN_DELTAS: ReadonlySet<string> = new Set([
  "text_delta",
  "thinking_delta",
  "signature_delta",
  "input_json_delta"
])

/** What every block and delta has: its type. The ones we know are then decoded strictly; others are skipped. */
const Typed = Schema.StructWithRest(Schema.Struct({ type: Schema.String }), [
  Schema.Record(Schema.String, Schema.Unknown)
])

/** A content block begins (server tool use, web search results, … are skipped). @internal */
export const ContentBlockStartEvent = Schema.Struct({
  type: Schema.Literal("content_block_start"),
  index: Schema.Number,
  content_block: Typed
})

/** A piece of a content block (citations and other deltas are skipped). @internal */
export const ContentBlockDeltaEvent = Schema.Struct({
  type: Schema.Literal("content_block_delta"),
  index: Schema.Number,
  delta: Typed
})

/** A content block is complete. @internal */
export const ContentBlockStopEvent = Schema.Struct({ type: Schema.Literal("content_block_stop"), index: Schema.Number })

/** The stop reason and the final output usage. @internal */
export const MessageDeltaEvent = Schema.Struct({
  type: Schema.Literal("message_delta"),
  delta: Schema.Struct({ stop_reason: nullable(Schema.String), stop_sequence: nullable(Schema.String) }),
  usage: nullable(WireUsage)
})

/** The last event of a complete response. @internal */
export const MessageStopEvent = Schema.Struct({ type: Schema.Literal("message_stop") })

/** A keep-alive. @internal */
export const PingEvent = Schema.Struct({ type: Schema.Literal("ping") })

/** An error reported in the stream, e.g. `overloaded_error`. @internal */
export const ErrorEvent = Schema.Struct({
  type: Schema.Literal("error"),
  error: Schema.Struct({ type: Schema.String, message: Schema.String })
})

/** The event types we act on, by their `type`. Others (new ones the API may add) are ignored. */
const EventSchemas = {
  message_start: MessageStartEvent,
  content_block_start: ContentBlockStartEvent,
  content_block_delta: ContentBlockDeltaEvent,
  content_block_stop: ContentBlockStopEvent,
  message_delta: MessageDeltaEvent,
  message_stop: MessageStopEvent,
  ping: PingEvent,
  error: ErrorEvent
} as const

/** A whole message, as a server that ignored `stream: true` sends it. @internal */
export const MessageResponse = Schema.Struct({
  type: Schema.Literal("message"),
  id: nullable(Schema.String),
  model: nullable(Schema.String),
  content: Schema.Array(Typed),
  stop_reason: nullable(Schema.String),
  usage: nullable(WireUsage)
})

const decodeMessageResponse = Schema.decodeUnknownOption(Schema.fromJsonString(MessageResponse))

/** A whole message as the stream events that would have carried it. */
const messageAsEvents = (body: string): ReadonlyArray<Sse.Event> | undefined => {
  const parsed = decodeMessageResponse(body)
  if (parsed._tag === "None") return undefined
  const message = parsed.value
  const events: Array<{ readonly type: string; readonly [key: string]: unknown }> = [
    { type: "message_start", message: { id: message.id, model: message.model, usage: message.usage } },
    ...message.content.flatMap((content_block, index) => [
      { type: "content_block_start", index, content_block },
      { type: "content_block_stop", index }
    ]),
    { type: "message_delta", delta: { stop_reason: message.stop_reason ?? "end_turn" } },
    { type: "message_stop" }
  ]
  return events.map((event) => ({ _tag: "Event", event: event.type, id: undefined, data: JSON.stringify(event) }))
}

/** Any stream event's data: read for its `type` first. @internal */
export const EventEnvelope = Schema.Struct({ type: Schema.String })

// ---------------------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------------------

/** Where Anthropic's API lives. @internal */
export const DEFAULT_BASE_URL = "https://api.anthropic.com"

/** The `api` of the messages this provider produces (pi's name). */
const API = "anthropic-messages"

/** The API version header sent. @internal */
export const API_VERSION = "2023-06-01"

/** Thinking budgets in tokens per level. @internal */
export const THINKING_BUDGETS: Record<Exclude<ThinkingLevel, "off">, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32000
}

/** How to reach the API and what to ask of it. */
export interface Options extends TransportOptions {
  /** The model id, e.g. `claude-sonnet-4-5`. */
  readonly model: string
  /** Sent as `x-api-key`. */
  readonly apiKey: Redacted.Redacted<string>
  /** The API root, without `/v1/messages`. Default `https://api.anthropic.com`. */
  readonly baseUrl?: string | undefined
  /** The `provider` of the messages produced. Default `anthropic`. */
  readonly provider?: string | undefined
  /** Token limit when the request sets none (the API requires one). Default 8192. */
  readonly maxTokens?: number | undefined
  /** Temperature when the request sets none (never sent with thinking on). */
  readonly temperature?: number | undefined
  /** `anthropic-beta` features to enable. */
  readonly betas?: ReadonlyArray<string> | undefined
  /** Prices per million tokens, to compute `usage.cost`. Default: the model's `ModelCatalogue` entry, if any. */
  readonly pricing?: Pricing | undefined
  /**
   * Prompt caching: mark the system prompt, the tools and the newest user turn as cache breakpoints (3 of
   * the 4 the API allows), so each turn re-reads the transcript from the cache instead of paying for it
   * again. Reads and writes show in `usage.cacheRead` / `usage.cacheWrite`. Default true; false sends no
   * `cache_control` at all.
   */
  readonly promptCaching?: boolean | undefined
  /** How long cached prefixes live: `"5m"` (the API's default, sent as nothing) or `"1h"`. */
  readonly cacheTtl?: "5m" | "1h" | undefined
}

interface Settings {
  readonly info: ModelInfo
  readonly url: string
  readonly maxTokens: number
  readonly temperature: number | undefined
  readonly pricing: Pricing | undefined
  /** The breakpoint to mark, or none: prompt caching off. */
  readonly cacheControl?: CacheControl | undefined
}

const settingsOf = (options: Options): Settings => ({
  info: { api: API, provider: options.provider ?? "anthropic", model: options.model },
  url: `${(options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "")}/v1/messages`,
  maxTokens: options.maxTokens ?? 8192,
  temperature: options.temperature,
  pricing: options.pricing,
  cacheControl: options.promptCaching === false
    ? undefined
    : { type: "ephemeral", ...(options.cacheTtl === "1h" ? { ttl: "1h" as const } : {}) }
})

// ---------------------------------------------------------------------------------------------------------
// Our messages → the wire
// ---------------------------------------------------------------------------------------------------------

/** Anthropic accepts tool-use ids of `[a-zA-Z0-9_-]{1,64}`; ids from other providers are mapped into it. @internal */
export const normalizeToolUseId = (id: string): string => id.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64) || "_"

const imageBlock = (image: { readonly data: string; readonly mimeType: string }): typeof ImageBlock.Type => ({
  type: "image",
  source: { type: "base64", media_type: image.mimeType, data: image.data }
})

const assistantBlocks = (
  message: Extract<Message, { role: "assistant" }>,
  info: ModelInfo
): Array<ContentBlock> => {
  const sameModel = isSameModel(message, info)
  const blocks: Array<ContentBlock> = []
  for (const block of message.content) {
    switch (block.type) {
      case "text":
        if (block.text.trim().length > 0) blocks.push({ type: "text", text: block.text })
        break
      case "thinking":
        if (block.redacted === true) {
          // Opaque, and only valid for the model that wrote it.
          if (sameModel && block.thinkingSignature) {
            blocks.push({ type: "redacted_thinking", data: block.thinkingSignature })
          }
        } else if (block.thinking.trim().length > 0) {
          blocks.push(
            sameModel && block.thinkingSignature
              ? { type: "thinking", thinking: block.thinking, signature: block.thinkingSignature }
              : { type: "text", text: block.thinking } // unsigned or another model's: context as text
          )
        }
        break
      case "toolCall":
        blocks.push({ type: "tool_use", id: normalizeToolUseId(block.id), name: block.name, input: block.arguments })
        break
    }
  }
  return blocks
}

const toolResultBlocks = (results: ReadonlyArray<ToolResultMessage>): Array<ContentBlock> =>
  results.map((result) => {
    const content = result.content.flatMap((block): Array<typeof TextBlock.Type | typeof ImageBlock.Type> =>
      block.type === "text"
        ? block.text.length > 0 ? [{ type: "text", text: block.text }] : []
        : [imageBlock(block)]
    )
    return {
      type: "tool_result" as const,
      tool_use_id: normalizeToolUseId(result.toolCallId),
      ...(content.length > 0 ? { content } : {}),
      ...(result.isError ? { is_error: true } : {})
    }
  })

/** Our messages in Messages API form. @internal */
export const toMessageParams = (messages: ReadonlyArray<Message>, info: ModelInfo): Array<MessageParam> => {
  const out: Array<MessageParam> = []
  const sane = sanitizeTranscript(messages)
  for (let i = 0; i < sane.length;) {
    const message = sane[i]!
    switch (message.role) {
      case "user": {
        if (typeof message.content === "string") {
          if (message.content.trim().length > 0) out.push({ role: "user", content: message.content })
        } else {
          const blocks = message.content.flatMap((block): Array<ContentBlock> =>
            block.type === "text"
              ? block.text.trim().length > 0 ? [{ type: "text", text: block.text }] : []
              : [imageBlock(block)]
          )
          if (blocks.length > 0) out.push({ role: "user", content: blocks })
        }
        i++
        break
      }
      case "assistant": {
        const blocks = assistantBlocks(message, info)
        if (blocks.length > 0) out.push({ role: "assistant", content: blocks })
        i++
        break
      }
      case "toolResult": {
        const { next, results } = takeToolResults(sane, i)
        out.push({ role: "user", content: toolResultBlocks(results) })
        i = next
        break
      }
    }
  }
  return out
}

/**
 * The messages with a cache breakpoint on the last block of the newest user turn (a prompt, or tool
 * results). Thinking blocks cannot carry one; a user turn never holds them.
 */
const markNewestUserTurn = (messages: Array<MessageParam>, cacheControl: CacheControl): Array<MessageParam> => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!
    if (message.role !== "user") continue
    const blocks: Array<ContentBlock> = typeof message.content === "string"
      ? [{ type: "text", text: message.content }]
      : [...message.content]
    const last = blocks[blocks.length - 1]
    if (last === undefined || last.type === "thinking" || last.type === "redacted_thinking") return messages
    blocks[blocks.length - 1] = { ...last, cache_control: cacheControl }
    const out = messages.slice()
    out[i] = { role: "user", content: blocks }
    return out
  }
  return messages
}

/** The request body for a model request. @internal */
export const toRequestBody = (request: ModelRequest, settings: Settings): MessagesRequest => {
  const level = request.options?.thinkingLevel
  const budget = level !== undefined && level !== "off" ? THINKING_BUDGETS[level] : undefined
  const requested = request.options?.maxTokens ?? settings.maxTokens
  // The budget counts against max_tokens, which must exceed it.
  const maxTokens = budget !== undefined && requested <= budget ? budget + requested : requested
  const temperature = request.options?.temperature ?? settings.temperature
  const cache = settings.cacheControl
  const messages = toMessageParams(request.messages, settings.info)
  return {
    model: settings.info.model,
    max_tokens: maxTokens,
    messages: cache === undefined ? messages : markNewestUserTurn(messages, cache),
    ...(request.systemPrompt.length > 0
      ? { system: [{ type: "text" as const, text: request.systemPrompt, ...(cache ? { cache_control: cache } : {}) }] }
      : {}),
    ...(request.tools.length > 0
      ? {
        tools: request.tools.map((tool, i) => ({
          name: tool.name,
          description: tool.description,
          input_schema: { type: "object", ...tool.parameters },
          // One breakpoint after the last tool caches them all.
          ...(cache !== undefined && i === request.tools.length - 1 ? { cache_control: cache } : {})
        }))
      }
      : {}),
    stream: true,
    ...(budget !== undefined ? { thinking: { type: "enabled" as const, budget_tokens: budget } } : {}),
    ...(temperature !== undefined && budget === undefined ? { temperature } : {})
  }
}

// ---------------------------------------------------------------------------------------------------------
// The wire → our events
// ---------------------------------------------------------------------------------------------------------

const LABEL = "Anthropic API"

const mapStopReason = (
  reason: string
): { readonly stopReason: "stop" | "length" | "toolUse" | "error"; readonly errorMessage?: string } => {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
    case "pause_turn":
      return { stopReason: "stop" }
    case "max_tokens":
    case "model_context_window_exceeded":
      return { stopReason: "length" }
    case "tool_use":
      return { stopReason: "toolUse" }
    case "refusal":
      return { stopReason: "error", errorMessage: "The model declined to respond (stop_reason: refusal)" }
    default:
      return { stopReason: "error", errorMessage: `The API ended the response with stop_reason "${reason}"` }
  }
}

/** What an `error` event in the stream means. */
const streamErrorReason = (type: string): { readonly reason: ModelError["reason"]; readonly retryable: boolean } => {
  switch (type) {
    case "rate_limit_error":
      return { reason: "rate-limit", retryable: true }
    case "overloaded_error":
    case "api_error":
      return { reason: "http", retryable: true }
    case "authentication_error":
    case "permission_error":
      return { reason: "auth", retryable: false }
    default:
      return { reason: "stream", retryable: false }
  }
}

const makeDecoder = (settings: Settings, scrub: Scrub) => {
  const decodeEnvelope = decodeJsonData(EventEnvelope, LABEL, scrub)
  const decoders = Object.fromEntries(
    Object.entries(EventSchemas).map(([type, schema]) => [type, decodeJsonData(schema, LABEL, scrub)])
  ) as { [K in keyof typeof EventSchemas]: (data: string) => typeof EventSchemas[K]["Type"] | ProviderFailure }
  const strictly = <S extends Schema.Decoder<unknown>>(schema: S, what: string) => {
    const decode = Schema.decodeUnknownResult(schema)
    return (value: unknown): S["Type"] | ProviderFailure => {
      const result = decode(value)
      return result._tag === "Success"
        ? result.success
        : failure("decode", scrub(`${LABEL}: could not decode a ${what}: ${result.failure.message}`))
    }
  }
  const decodeBlock = strictly(KnownBlockStart, "content block")
  const decodeDelta = strictly(KnownDelta, "content block delta")

  return (now: number): EventDecoder => {
    const builder = new ResponseBuilder(settings.info, now)
    /** Wire block index → content index, for the blocks we keep. */
    const blocks = new Map<number, number>()
    let counts: TokenCounts = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }
    let stopReason: string | undefined
    let stopped = false

    const updateUsage = (usage: typeof WireUsage.Type | null | undefined) => {
      if (usage == null) return
      counts = {
        input: usage.input_tokens ?? counts.input,
        output: usage.output_tokens ?? counts.output,
        cacheRead: usage.cache_read_input_tokens ?? counts.cacheRead,
        cacheWrite: usage.cache_creation_input_tokens ?? counts.cacheWrite
      }
      builder.usage = makeUsage(counts, settings.pricing)
    }

    const onEvent = (event: Sse.Event): ProviderFailure | undefined => {
      if (event.data.trim() === "") return undefined
      const envelope = decodeEnvelope(event.data)
      if (envelope instanceof ProviderFailure) return envelope
      const type = envelope.type
      if (!(type in decoders)) return undefined
      const decoded = decoders[type as keyof typeof EventSchemas](event.data)
      if (decoded instanceof ProviderFailure) return decoded
      switch (decoded.type) {
        case "message_start": {
          if (decoded.message.id != null) builder.responseId = decoded.message.id
          if (decoded.message.model != null) builder.responseModel = decoded.message.model
          updateUsage(decoded.message.usage)
          builder.start()
          break
        }
        case "content_block_start": {
          builder.start()
          if (!KNOWN_BLOCKS.has(decoded.content_block.type)) break
          const block = decodeBlock(decoded.content_block)
          if (block instanceof ProviderFailure) return block
          switch (block.type) {
            case "text":
              blocks.set(decoded.index, builder.openText(block.text ?? ""))
              break
            case "thinking": {
              const index = builder.openThinking({ initial: block.thinking ?? "" })
              if (block.signature) builder.appendSignature(index, block.signature)
              blocks.set(decoded.index, index)
              break
            }
            case "redacted_thinking":
              blocks.set(decoded.index, builder.openThinking({ signature: block.data, redacted: true }))
              break
            case "tool_use":
              blocks.set(decoded.index, builder.openToolCall(block.id, block.name, block.input ?? {}))
              break
          }
          break
        }
        case "content_block_delta": {
          const index = blocks.get(decoded.index)
          if (index === undefined || !KNOWN_DELTAS.has(decoded.delta.type)) break
          const delta = decodeDelta(decoded.delta)
          if (delta instanceof ProviderFailure) return delta
          switch (delta.type) {
            case "text_delta":
              builder.appendText(index, delta.text)
              break
            case "thinking_delta":
              builder.appendThinking(index, delta.thinking)
              break
            case "signature_delta":
              builder.appendSignature(index, delta.signature)
              break
            case "input_json_delta":
              builder.appendToolArguments(index, delta.partial_json)
              break
          }
          break
        }
        case "content_block_stop": {
          const index = blocks.get(decoded.index)
          if (index !== undefined) builder.close(index)
          break
        }
        case "message_delta": {
          if (decoded.delta.stop_reason != null) stopReason = decoded.delta.stop_reason
          updateUsage(decoded.usage)
          break
        }
        case "message_stop": {
          stopped = true
          break
        }
        case "ping":
          break
        case "error": {
          const { reason, retryable } = streamErrorReason(decoded.error.type)
          return failure(
            reason,
            scrub(`${LABEL}: the stream reported ${decoded.error.type}: ${decoded.error.message}`),
            { retryable }
          )
        }
      }
      return undefined
    }

    const onEnd = (): ProviderFailure | undefined => {
      if (!stopped) return failure("stream", `${LABEL}: the stream ended before message_stop`)
      builder.finishWith(mapStopReason(stopReason ?? "end_turn"))
      return undefined
    }

    return { builder, onEvent, onEnd, ended: () => stopped, fromJson: messageAsEvents }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------------------

/** A model service talking to Anthropic's Messages API. */
export const make = (options: Options): Effect.Effect<ModelShape, never, HttpClient.HttpClient> =>
  Effect.flatMap(withPricing(options), makePriced)

const makePriced = (options: Options): Effect.Effect<ModelShape, never, HttpClient.HttpClient> => {
  const settings = settingsOf(options)
  return makeSseModel({
    label: LABEL,
    info: settings.info,
    url: settings.url,
    transport: resolveTransport(options),
    secrets: [options.apiKey],
    authorize: (request) =>
      request.pipe(
        HttpClientRequest.setHeaders({
          "anthropic-version": API_VERSION,
          ...(options.betas !== undefined && options.betas.length > 0
            ? { "anthropic-beta": options.betas.join(",") }
            : {})
        }),
        HttpClientRequest.setHeader("x-api-key", Redacted.value(options.apiKey))
      ),
    bodySchema: MessagesRequest,
    toBody: (request) => toRequestBody(request, settings),
    makeDecoder: (scrub) => makeDecoder(settings, scrub)
  })
}

/** A {@link Model} layer from explicit options. */
export const layer = (options: Options): Layer.Layer<Model, never, HttpClient.HttpClient> =>
  Layer.effect(Model, make(options))

/**
 * The options from the environment: `ANTHROPIC_API_KEY` (required, read as `Redacted`), `ANTHROPIC_MODEL`
 * (required), `ANTHROPIC_BASE_URL` (default Anthropic's API) and `ANTHROPIC_MAX_TOKENS` (default 8192).
 *
 * @internal
 */
export const config: Config.Config<Options> = Config.all({
  settings: environmentWithKey("ANTHROPIC", DEFAULT_BASE_URL),
  maxTokens: Config.Int("ANTHROPIC_MAX_TOKENS").pipe(Config.withDefault(8192))
}).pipe(Config.map(({ maxTokens, settings }) => ({ ...settings, maxTokens })))

/**
 * A {@link Model} layer configured from the environment, with `overrides` applied on top: `ANTHROPIC_API_KEY`
 * (required, read as `Redacted`), `ANTHROPIC_MODEL` (required), `ANTHROPIC_BASE_URL` (default Anthropic's API)
 * and `ANTHROPIC_MAX_TOKENS` (default 8192).
 */
export const layerConfig = (
  overrides: Partial<Options> = {}
): Layer.Layer<Model, Config.ConfigError, HttpClient.HttpClient> => layerFromConfig(config, make, overrides)
