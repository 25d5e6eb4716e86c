/**
 * A {@link Model} for any server speaking OpenAI's Chat Completions API with streaming: OpenAI itself,
 * Ollama, llama.cpp's server, vLLM, LM Studio, OpenRouter and the like.
 *
 * Text streams as text blocks, `reasoning_content` / `reasoning` deltas (where the server sends them) as
 * thinking blocks, and tool calls with their arguments as partial JSON, several per message. Usage comes
 * from `stream_options.include_usage`.
 *
 * @since 0.1.0
 */
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as Sse from "effect/encoding/Sse"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { Message, ToolResultMessage } from "../Message.ts"
import { Model, type ModelInfo, type ModelRequest, type ModelShape, type ThinkingLevel } from "../Model.ts"
import { makeUsage, type Pricing, ResponseBuilder } from "./internal/builder.ts"
import { environment, layerFromConfig } from "./internal/environment.ts"
import { isSameModel, sanitizeTranscript, takeToolResults } from "./internal/transcript.ts"
import {
  decodeJsonData,
  errorBodyMessage,
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

/**
 * A prompt-cache breakpoint, for servers that take Anthropic-style explicit caching in this format
 * (OpenRouter for Anthropic models).
 *
 * @internal
 */
export const CacheControl = Schema.Struct({ type: Schema.Literal("ephemeral") })

/** A text part of a message. @internal */
export const TextPart = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String,
  cache_control: Schema.optionalKey(CacheControl)
})
/** An image part of a user message, as a data URL. @internal */
export const ImagePart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({ url: Schema.String })
})

/** The system prompt. @internal */
export const SystemMessage = Schema.Struct({
  role: Schema.Literal("system"),
  content: Schema.Union([Schema.String, Schema.Array(TextPart)])
})
/** A user message: plain text, or text and image parts. @internal */
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  content: Schema.Union([Schema.String, Schema.Array(Schema.Union([TextPart, ImagePart]))])
})
/** A tool call in an assistant message; `arguments` is a JSON text. @internal */
export const ToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("function"),
  function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
})
/**
 * An assistant message. `reasoning_content` / `reasoning` carry back the reasoning a server streamed under
 * that name (llama.cpp and others want it back).
 *
 * @internal
 */
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.NullOr(Schema.String),
  tool_calls: Schema.optionalKey(Schema.Array(ToolCall)),
  reasoning_content: Schema.optionalKey(Schema.String),
  reasoning: Schema.optionalKey(Schema.String)
})
/** A tool result. @internal */
export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  tool_call_id: Schema.String,
  content: Schema.Union([Schema.String, Schema.Array(TextPart)])
})
/** Any message of a request. @internal */
export const ChatMessage = Schema.Union([SystemMessage, UserMessage, AssistantMessage, ToolMessage])
/** @since 0.1.0 @internal */
export type ChatMessage = typeof ChatMessage.Type

/** A function tool with its parameters' JSON Schema. @internal */
export const FunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: Schema.String,
    description: Schema.optionalKey(Schema.String),
    parameters: Schema.Record(Schema.String, Schema.Unknown)
  })
})

/** The request body of a streaming chat completion. @internal */
export const ChatCompletionRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(ChatMessage),
  stream: Schema.Literal(true),
  stream_options: Schema.optionalKey(Schema.Struct({ include_usage: Schema.Boolean })),
  tools: Schema.optionalKey(Schema.Array(FunctionTool)),
  max_tokens: Schema.optionalKey(Schema.Number),
  max_completion_tokens: Schema.optionalKey(Schema.Number),
  temperature: Schema.optionalKey(Schema.Number),
  reasoning_effort: Schema.optionalKey(Schema.String)
})
/** @since 0.1.0 @internal */
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

// ---------------------------------------------------------------------------------------------------------
// Wire format: the stream
// ---------------------------------------------------------------------------------------------------------

const nullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

/** A piece of a tool call: `index` says which call of the message it belongs to. @internal */
export const ToolCallDelta = Schema.Struct({
  index: nullable(Schema.Number),
  id: nullable(Schema.String),
  type: nullable(Schema.String),
  function: nullable(Schema.Struct({
    name: nullable(Schema.String),
    // Some servers send a whole call with the arguments as an object.
    arguments: nullable(Schema.Union([Schema.String, Schema.Record(Schema.String, Schema.Unknown)]))
  }))
})

/** The token counts of a response. @internal */
export const ChunkUsage = Schema.Struct({
  prompt_tokens: nullable(Schema.Number),
  completion_tokens: nullable(Schema.Number),
  prompt_tokens_details: nullable(Schema.Struct({ cached_tokens: nullable(Schema.Number) }))
})

/** One choice of a chunk. @internal */
export const ChunkChoice = Schema.Struct({
  index: nullable(Schema.Number),
  delta: nullable(Schema.Struct({
    role: nullable(Schema.String),
    content: nullable(Schema.String),
    reasoning_content: nullable(Schema.String),
    reasoning: nullable(Schema.String),
    tool_calls: nullable(Schema.Array(ToolCallDelta))
  })),
  finish_reason: nullable(Schema.String),
  usage: nullable(ChunkUsage)
})

/**
 * One `data:` payload of the stream (besides the final `[DONE]`). Some servers report errors this way:
 * an `error` field (OpenAI, OpenRouter), or vLLM's `{"object": "error", "message": …}`.
 *
 * @internal
 */
export const ChatCompletionChunk = Schema.Struct({
  id: nullable(Schema.String),
  object: nullable(Schema.String),
  message: nullable(Schema.String),
  model: nullable(Schema.String),
  choices: nullable(Schema.Array(ChunkChoice)),
  usage: nullable(ChunkUsage),
  error: nullable(Schema.Union([
    Schema.Struct({ message: Schema.String, type: nullable(Schema.String), code: nullable(Schema.Unknown) }),
    Schema.String
  ]))
})
/** @since 0.1.0 @internal */
export type ChatCompletionChunk = typeof ChatCompletionChunk.Type

/** A whole response, as a server that ignored `stream: true` sends it. @internal */
export const ChatCompletion = Schema.Struct({
  id: nullable(Schema.String),
  model: nullable(Schema.String),
  choices: Schema.Array(Schema.Struct({
    message: Schema.Struct({
      content: nullable(Schema.String),
      reasoning_content: nullable(Schema.String),
      reasoning: nullable(Schema.String),
      tool_calls: nullable(Schema.Array(Schema.Struct({
        id: nullable(Schema.String),
        type: nullable(Schema.String),
        function: Schema.Struct({
          name: Schema.String,
          arguments: Schema.Union([Schema.String, Schema.Record(Schema.String, Schema.Unknown)])
        })
      })))
    }),
    finish_reason: nullable(Schema.String)
  })),
  usage: nullable(ChunkUsage)
})
/** @since 0.1.0 @internal */
export type ChatCompletion = typeof ChatCompletion.Type

// ---------------------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------------------

/** Where OpenAI's API lives. @internal */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1"

/** The `api` of the messages this provider produces (pi's name for Chat Completions). */
const API = "openai-completions"

/** How to reach the server and what to ask of it. */
export interface Options extends TransportOptions {
  /** The model id, e.g. `gpt-4.1-mini`, `llama3.1:8b`. */
  readonly model: string
  /** The API root, without `/chat/completions`. Default `https://api.openai.com/v1`. */
  readonly baseUrl?: string | undefined
  /** Sent as a bearer token. Local servers usually need none. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** The `provider` of the messages produced. Default `openai` for OpenAI's API, else `openai-compatible`. */
  readonly provider?: string | undefined
  /**
   * The field carrying the token limit. Default `max_completion_tokens` for OpenAI's API (its reasoning
   * models refuse `max_tokens`), `max_tokens` elsewhere.
   */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens" | undefined
  /** Ask for usage in the stream (`stream_options.include_usage`). Default true. */
  readonly includeUsage?: boolean | undefined
  /** Send a model's own reasoning back under the field it came in. Default true. */
  readonly replayReasoning?: boolean | undefined
  /** Token limit when the request sets none. */
  readonly maxTokens?: number | undefined
  /** Temperature when the request sets none. */
  readonly temperature?: number | undefined
  /** Prices per million tokens, to compute `usage.cost`. Default: the model's `ModelCatalogue` entry, if any. */
  readonly pricing?: Pricing | undefined
  /**
   * Mark the system prompt and the newest user turn with `cache_control` breakpoints, as OpenRouter asks
   * for Anthropic models (other servers cache on their own, or reject the field). Default true for an
   * `anthropic/…` model on OpenRouter, false elsewhere.
   */
  readonly promptCaching?: boolean | undefined
}

interface Settings {
  readonly info: ModelInfo
  readonly url: string
  readonly maxTokensField: "max_tokens" | "max_completion_tokens"
  readonly includeUsage: boolean
  readonly replayReasoning: boolean
  readonly maxTokens: number | undefined
  readonly temperature: number | undefined
  readonly pricing: Pricing | undefined
  readonly promptCaching?: boolean | undefined
}

const isOpenRouter = (baseUrl: string) => /^https:\/\/openrouter\.ai(\/|$)/.test(baseUrl)

const isOpenAi = (baseUrl: string) => /^https:\/\/api\.openai\.com(\/|$)/.test(baseUrl)

const settingsOf = (options: Options): Settings => {
  const baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "")
  return {
    info: {
      api: API,
      provider: options.provider ?? (isOpenAi(baseUrl) ? "openai" : "openai-compatible"),
      model: options.model
    },
    url: `${baseUrl}/chat/completions`,
    maxTokensField: options.maxTokensField ?? (isOpenAi(baseUrl) ? "max_completion_tokens" : "max_tokens"),
    includeUsage: options.includeUsage ?? true,
    replayReasoning: options.replayReasoning ?? true,
    maxTokens: options.maxTokens,
    temperature: options.temperature,
    pricing: options.pricing,
    promptCaching: options.promptCaching ?? (isOpenRouter(baseUrl) && options.model.startsWith("anthropic/"))
  }
}

// ---------------------------------------------------------------------------------------------------------
// Our messages → the wire
// ---------------------------------------------------------------------------------------------------------

/** The reasoning fields servers stream, in the order they are looked at. */
const REASONING_FIELDS = ["reasoning_content", "reasoning"] as const
type ReasoningField = typeof REASONING_FIELDS[number]
const isReasoningField = (s: string | undefined): s is ReasoningField =>
  s !== undefined && (REASONING_FIELDS as ReadonlyArray<string>).includes(s)

const dataUrl = (image: { readonly data: string; readonly mimeType: string }) =>
  `data:${image.mimeType};base64,${image.data}`

const REASONING_EFFORT: Record<Exclude<ThinkingLevel, "off">, string> = {
  minimal: "minimal",
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "high"
}

const toolMessages = (results: ReadonlyArray<ToolResultMessage>): Array<ChatMessage> => {
  const out: Array<ChatMessage> = []
  const images: Array<typeof ImagePart.Type> = []
  for (const result of results) {
    const text = result.content.flatMap((block) => block.type === "text" ? [block.text] : []).join("\n")
    const own = result.content.flatMap((block) =>
      block.type === "image" ? [{ type: "image_url" as const, image_url: { url: dataUrl(block) } }] : []
    )
    images.push(...own)
    out.push({
      role: "tool",
      tool_call_id: result.toolCallId,
      content: text.length > 0 ? text : own.length > 0 ? "(see attached image)" : "(no output)"
    })
  }
  // Tool messages cannot hold images: they follow in a user message after the group.
  if (images.length > 0) {
    out.push({ role: "user", content: [{ type: "text", text: "Attached image(s) from tool result:" }, ...images] })
  }
  return out
}

const assistantMessage = (
  message: Extract<Message, { role: "assistant" }>,
  settings: Settings
): ChatMessage | undefined => {
  const sameModel = isSameModel(message, settings.info)
  const texts: Array<string> = []
  const reasoning: Array<string> = []
  let reasoningField: ReasoningField | undefined
  const calls: Array<typeof ToolCall.Type> = []
  for (const block of message.content) {
    switch (block.type) {
      case "text":
        if (block.text.trim().length > 0) texts.push(block.text)
        break
      case "thinking":
        if (block.redacted === true || block.thinking.trim().length === 0) break
        if (!sameModel) {
          // Another model's reasoning is context, not something this server can verify: plain text.
          texts.push(block.thinking)
        } else if (settings.replayReasoning && isReasoningField(block.thinkingSignature)) {
          reasoningField ??= block.thinkingSignature
          reasoning.push(block.thinking)
        }
        break
      case "toolCall":
        calls.push({
          id: block.id,
          type: "function",
          function: { name: block.name, arguments: JSON.stringify(block.arguments) }
        })
        break
    }
  }
  if (texts.length === 0 && calls.length === 0) return undefined
  return {
    role: "assistant",
    content: texts.length > 0 ? texts.join("\n\n") : null,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...(reasoningField !== undefined ? { [reasoningField]: reasoning.join("\n") } : {})
  }
}

/** Our messages in Chat Completions form. @internal */
export const toChatMessages = (
  systemPrompt: string,
  messages: ReadonlyArray<Message>,
  settings: Pick<Settings, "info" | "replayReasoning">
): Array<ChatMessage> => {
  const out: Array<ChatMessage> = []
  if (systemPrompt.length > 0) out.push({ role: "system", content: systemPrompt })
  const sane = sanitizeTranscript(messages)
  for (let i = 0; i < sane.length;) {
    const message = sane[i]!
    switch (message.role) {
      case "user": {
        if (typeof message.content === "string") {
          out.push({ role: "user", content: message.content })
        } else if (message.content.length > 0) {
          out.push({
            role: "user",
            content: message.content.map((block) =>
              block.type === "text"
                ? { type: "text" as const, text: block.text }
                : { type: "image_url" as const, image_url: { url: dataUrl(block) } }
            )
          })
        }
        i++
        break
      }
      case "assistant": {
        const wire = assistantMessage(message, settings as Settings)
        if (wire !== undefined) out.push(wire)
        i++
        break
      }
      case "toolResult": {
        const { next, results } = takeToolResults(sane, i)
        out.push(...toolMessages(results))
        i = next
        break
      }
    }
  }
  return out
}

const EPHEMERAL = { type: "ephemeral" } as const

/** The messages with cache breakpoints on the system prompt and on the newest user turn (prompt or tool result). */
const markCacheBreakpoints = (messages: Array<ChatMessage>): Array<ChatMessage> => {
  const out = messages.slice()
  const marked = (content: string | ReadonlyArray<typeof TextPart.Type | typeof ImagePart.Type>) => {
    const parts = typeof content === "string" ? [{ type: "text" as const, text: content }] : [...content]
    const index = parts.findLastIndex((part) => part.type === "text")
    if (index >= 0) parts[index] = { ...(parts[index] as typeof TextPart.Type), cache_control: EPHEMERAL }
    return parts
  }
  const system = out.findIndex((message) => message.role === "system")
  if (system >= 0) {
    const message = out[system] as typeof SystemMessage.Type
    out[system] = { role: "system", content: marked(message.content) as Array<typeof TextPart.Type> }
  }
  const newest = out.findLastIndex((message) => message.role === "user" || message.role === "tool")
  if (newest >= 0) {
    const message = out[newest]!
    if (message.role === "user") out[newest] = { role: "user", content: marked(message.content) }
    else if (message.role === "tool") {
      out[newest] = { ...message, content: marked(message.content) as Array<typeof TextPart.Type> }
    }
  }
  return out
}

/** The request body for a model request. @internal */
export const toRequestBody = (request: ModelRequest, settings: Settings): ChatCompletionRequest => {
  const maxTokens = request.options?.maxTokens ?? settings.maxTokens
  const temperature = request.options?.temperature ?? settings.temperature
  const level = request.options?.thinkingLevel
  return {
    model: settings.info.model,
    messages: settings.promptCaching === true
      ? markCacheBreakpoints(toChatMessages(request.systemPrompt, request.messages, settings))
      : toChatMessages(request.systemPrompt, request.messages, settings),
    stream: true,
    ...(settings.includeUsage ? { stream_options: { include_usage: true } } : {}),
    ...(request.tools.length > 0
      ? {
        tools: request.tools.map((tool) => ({
          type: "function" as const,
          function: { name: tool.name, description: tool.description, parameters: tool.parameters }
        }))
      }
      : {}),
    ...(maxTokens !== undefined ? { [settings.maxTokensField]: maxTokens } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(level !== undefined && level !== "off" ? { reasoning_effort: REASONING_EFFORT[level] } : {})
  }
}

// ---------------------------------------------------------------------------------------------------------
// The wire → our events
// ---------------------------------------------------------------------------------------------------------

const LABEL = "OpenAI-compatible API"

const mapFinishReason = (
  reason: string,
  hasToolCalls: boolean
): { readonly stopReason: "stop" | "length" | "toolUse" | "error"; readonly errorMessage?: string } => {
  switch (reason) {
    case "stop":
    case "end":
    case "eos":
      // Some servers say "stop" for a message that calls tools.
      return { stopReason: hasToolCalls ? "toolUse" : "stop" }
    case "length":
      return { stopReason: "length" }
    case "tool_calls":
    case "function_call":
      return { stopReason: "toolUse" }
    case "content_filter":
      return { stopReason: "error", errorMessage: "The response was stopped by the provider's content filter" }
    default:
      return { stopReason: "error", errorMessage: `The provider ended the response with finish_reason "${reason}"` }
  }
}

const decodeCompletion = Schema.decodeUnknownOption(Schema.fromJsonString(ChatCompletion))

/** A whole response as the stream chunks that would have carried it. */
const completionAsEvents = (body: string): ReadonlyArray<Sse.Event> | undefined => {
  const parsed = decodeCompletion(body)
  if (parsed._tag === "None" || parsed.value.choices.length === 0) return undefined
  const completion = parsed.value
  const choice = completion.choices[0]!
  const { tool_calls, ...message } = choice.message
  const chunk: ChatCompletionChunk = {
    ...(completion.id != null ? { id: completion.id } : {}),
    ...(completion.model != null ? { model: completion.model } : {}),
    choices: [{
      index: 0,
      delta: {
        ...message,
        ...(tool_calls != null ? { tool_calls: tool_calls.map((call, index) => ({ index, ...call })) } : {})
      },
      finish_reason: choice.finish_reason ?? "stop"
    }],
    ...(completion.usage != null ? { usage: completion.usage } : {})
  }
  return [{ _tag: "Event", event: "message", id: undefined, data: JSON.stringify(chunk) }]
}

const makeDecoder = (settings: Settings, scrub: Scrub) => {
  const decodeChunk = decodeJsonData(ChatCompletionChunk, LABEL, scrub)
  return (now: number): EventDecoder => {
    const builder = new ResponseBuilder(settings.info, now)
    let text: number | undefined
    let thinking: number | undefined
    /** Wire `index` → content index of the latest call with that index. */
    const byIndex = new Map<number, number>()
    /** Calls without an index, by id. */
    const byId = new Map<string, number>()
    /** Every call's content index, in the order opened. */
    const opened: Array<number> = []
    /** Pieces of calls whose index arrived before a lower one: held so that calls come out in index order. */
    const held = new Map<number, Array<typeof ToolCallDelta.Type>>()
    let finishReason: string | undefined
    let done = false

    const closeProse = () => {
      if (text !== undefined) builder.close(text)
      if (thinking !== undefined) builder.close(thinking)
      text = undefined
      thinking = undefined
    }

    const open = (delta: typeof ToolCallDelta.Type): number => {
      closeProse()
      const index = builder.openToolCall(delta.id ?? "", delta.function?.name ?? "")
      opened.push(index)
      return index
    }

    /**
     * True when every lower index has been seen. Indexes count from 0; a call whose predecessors never
     * come (a server counting from 1) is released when the response ends.
     */
    const inOrder = (wire: number): boolean => {
      if (wire > 10_000) return false // not a real position: released at the end
      for (let i = 0; i < wire; i++) if (!byIndex.has(i)) return false
      return true
    }

    const appendArguments = (index: number, delta: typeof ToolCallDelta.Type) => {
      const args = delta.function?.arguments
      if (args != null) builder.appendToolArguments(index, typeof args === "string" ? args : JSON.stringify(args))
    }

    const onToolCall = (delta: typeof ToolCallDelta.Type, force = false) => {
      const wire = delta.index
      if (wire == null) {
        // No index: the id says which call, or the piece continues the last call.
        let index = delta.id != null ? byId.get(delta.id) : opened[opened.length - 1]
        if (index === undefined) {
          index = open(delta)
          if (delta.id != null) byId.set(delta.id, index)
        } else {
          builder.completeToolCall(index, { id: delta.id ?? undefined, name: delta.function?.name ?? undefined })
        }
        appendArguments(index, delta)
        return
      }
      const existing = byIndex.get(wire)
      if (existing !== undefined) {
        const block = builder.block(existing)
        const current = block?.type === "toolCall" ? block.id : ""
        if (delta.id != null && delta.id !== "" && current !== "" && delta.id !== current) {
          // Same index, another id: another call (some servers number every call 0).
          const index = open(delta)
          byIndex.set(wire, index)
          appendArguments(index, delta)
          return
        }
        builder.completeToolCall(existing, { id: delta.id ?? undefined, name: delta.function?.name ?? undefined })
        appendArguments(existing, delta)
        return
      }
      const pending = held.get(wire)
      if (pending !== undefined || (!force && !inOrder(wire))) {
        held.set(wire, [...(pending ?? []), delta])
        return
      }
      const index = open(delta)
      byIndex.set(wire, index)
      appendArguments(index, delta)
      releaseHeld(false)
    }

    /** Opens held calls whose turn has come; with `all`, every held call, in index order. */
    const releaseHeld = (all: boolean) => {
      for (const wire of [...held.keys()].sort((a, b) => a - b)) {
        if (!all && !inOrder(wire)) break
        const pieces = held.get(wire)
        if (pieces === undefined) continue // released by a nested call
        held.delete(wire)
        for (const piece of pieces) onToolCall(piece, true)
      }
    }

    const serverError = (message: string) =>
      failure("stream", scrub(`${LABEL}: the server reported an error while streaming: ${message}`))

    const onEvent = (event: Sse.Event): ProviderFailure | undefined => {
      const data = event.data.trim()
      if (data === "[DONE]") {
        done = true
        return undefined
      }
      if (data === "") return undefined
      if (event.event === "error") return serverError(errorBodyMessage(data))
      const chunk = decodeChunk(data)
      if (chunk instanceof ProviderFailure) return chunk
      if (chunk.error != null) {
        return serverError(typeof chunk.error === "string" ? chunk.error : chunk.error.message)
      }
      if (chunk.object === "error") return serverError(chunk.message ?? data)
      builder.start()
      if (chunk.id != null && builder.responseId === undefined) builder.responseId = chunk.id
      if (chunk.model != null && builder.responseModel === undefined) builder.responseModel = chunk.model
      const choice = chunk.choices?.[0]
      const usage = chunk.usage ?? choice?.usage
      if (usage != null) {
        const prompt = usage.prompt_tokens ?? 0
        const cached = usage.prompt_tokens_details?.cached_tokens ?? 0
        builder.usage = makeUsage({
          input: Math.max(0, prompt - cached),
          output: usage.completion_tokens ?? 0,
          cacheRead: cached,
          cacheWrite: 0
        }, settings.pricing)
      }
      if (choice == null) return undefined
      const delta = choice.delta
      if (delta != null) {
        const field = REASONING_FIELDS.find((name) => {
          const value = delta[name]
          return typeof value === "string" && value.length > 0
        })
        if (field !== undefined) {
          if (thinking === undefined || thinking !== builder.lastIndex) {
            closeProse()
            thinking = builder.openThinking({ signature: field })
          }
          builder.appendThinking(thinking, delta[field]!)
        }
        if (delta.content != null && delta.content.length > 0) {
          if (text === undefined || text !== builder.lastIndex) {
            closeProse()
            text = builder.openText()
          }
          builder.appendText(text, delta.content)
        }
        for (const call of delta.tool_calls ?? []) onToolCall(call)
      }
      if (choice.finish_reason != null) finishReason = choice.finish_reason
      return undefined
    }

    const onEnd = (): ProviderFailure | undefined => {
      if (finishReason === undefined) {
        return failure("stream", `${LABEL}: the stream ended before the response was complete`)
      }
      releaseHeld(true)
      // Servers that give no id to a tool call: make one, the loop needs ids to pair results.
      let n = 0
      for (const index of opened) {
        const block = builder.block(index)
        if (block?.type === "toolCall" && block.id === "") {
          builder.completeToolCall(index, { id: `call_${builder.responseId ?? "local"}_${n++}` })
        }
      }
      builder.finishWith(mapFinishReason(finishReason, builder.hasToolCalls))
      return undefined
    }

    return { builder, onEvent, onEnd, ended: () => done, fromJson: completionAsEvents }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------------------

/** A model service talking to an OpenAI-compatible server. */
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
      options.apiKey !== undefined ? HttpClientRequest.bearerToken(request, options.apiKey) : request,
    bodySchema: ChatCompletionRequest,
    toBody: (request) => toRequestBody(request, settings),
    makeDecoder: (scrub) => makeDecoder(settings, scrub)
  })
}

/** A {@link Model} layer from explicit options. */
export const layer = (options: Options): Layer.Layer<Model, never, HttpClient.HttpClient> =>
  Layer.effect(Model, make(options))

/**
 * The options from the environment: `OPENAI_MODEL` (required), `OPENAI_BASE_URL` (default OpenAI's API)
 * and `OPENAI_API_KEY` (optional, read as `Redacted`).
 *
 * @internal
 */
export const config: Config.Config<Options> = environment("OPENAI", DEFAULT_BASE_URL)

/**
 * A {@link Model} layer configured from the environment, with `overrides` applied on top: `OPENAI_MODEL`
 * (required), `OPENAI_BASE_URL` (default OpenAI's API) and `OPENAI_API_KEY` (optional, read as `Redacted`).
 */
export const layerConfig = (
  overrides: Partial<Options> = {}
): Layer.Layer<Model, Config.ConfigError, HttpClient.HttpClient> => layerFromConfig(config, make, overrides)
