/**
 * A {@link Model} for Google's Gemini API (`models/{model}:streamGenerateContent?alt=sse`).
 *
 * Text parts stream as text blocks, thought parts (`thought: true`, the model's thought summaries) as
 * thinking blocks, function calls (which arrive whole) as tool calls. A part's `thoughtSignature` is kept on
 * its block (`textSignature`, `thinkingSignature`, `thoughtSignature`) and sent back on the same part when
 * the transcript returns to the same model, as Gemini requires for function calling with thinking. Usage,
 * with cached and thought tokens, comes from `usageMetadata`.
 *
 * @since 0.1.0
 */
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as Sse from "effect/encoding/Sse"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { AssistantMessage, Message, ToolResultMessage } from "../Message.ts"
import { Model, ModelError, type ModelInfo, type ModelRequest, type ModelShape, type ThinkingLevel } from "../Model.ts"
import { makeUsage, type Pricing, ResponseBuilder } from "./internal/builder.ts"
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

/** A text part; a thought part when `thought` is true. `thoughtSignature` goes back as it came. @internal */
export const TextPart = Schema.Struct({
  text: Schema.String,
  thought: Schema.optionalKey(Schema.Boolean),
  thoughtSignature: Schema.optionalKey(Schema.String)
})
/** An image, base64-encoded. @internal */
export const InlineDataPart = Schema.Struct({
  inlineData: Schema.Struct({ mimeType: Schema.String, data: Schema.String })
})
/** A function call the model made. @internal */
export const FunctionCallPart = Schema.Struct({
  functionCall: Schema.Struct({
    name: Schema.String,
    args: Schema.Record(Schema.String, Schema.Unknown),
    id: Schema.optionalKey(Schema.String)
  }),
  thoughtSignature: Schema.optionalKey(Schema.String)
})
/** A function's result: `{ output }`, or `{ error }` when the tool failed. @internal */
export const FunctionResponsePart = Schema.Struct({
  functionResponse: Schema.Struct({
    name: Schema.String,
    response: Schema.Union([
      Schema.Struct({ output: Schema.String }),
      Schema.Struct({ error: Schema.String })
    ]),
    id: Schema.optionalKey(Schema.String)
  })
})
/** Any part of a request. @internal */
export const Part = Schema.Union([TextPart, InlineDataPart, FunctionCallPart, FunctionResponsePart])
/** @since 0.1.0 @internal */
export type Part = typeof Part.Type

/** A turn: the user's (including function results) or the model's. @internal */
export const Content = Schema.Struct({
  role: Schema.Literals(["user", "model"]),
  parts: Schema.Array(Part)
})
/** @since 0.1.0 @internal */
export type Content = typeof Content.Type

/** A function the model may call, its parameters as a JSON Schema. @internal */
export const FunctionDeclaration = Schema.Struct({
  name: Schema.String,
  description: Schema.optionalKey(Schema.String),
  parametersJsonSchema: Schema.Record(Schema.String, Schema.Unknown)
})

/** How much the model thinks, and whether its thoughts are returned. @internal */
export const ThinkingConfig = Schema.Struct({
  includeThoughts: Schema.optionalKey(Schema.Boolean),
  thinkingBudget: Schema.optionalKey(Schema.Number),
  thinkingLevel: Schema.optionalKey(Schema.String)
})

/** The request body of `streamGenerateContent`. @internal */
export const GenerateContentRequest = Schema.Struct({
  contents: Schema.Array(Content),
  systemInstruction: Schema.optionalKey(Schema.Struct({ parts: Schema.Array(Schema.Struct({ text: Schema.String })) })),
  tools: Schema.optionalKey(Schema.Array(Schema.Struct({ functionDeclarations: Schema.Array(FunctionDeclaration) }))),
  generationConfig: Schema.optionalKey(Schema.Struct({
    maxOutputTokens: Schema.optionalKey(Schema.Number),
    temperature: Schema.optionalKey(Schema.Number),
    thinkingConfig: Schema.optionalKey(ThinkingConfig)
  }))
})
/** @since 0.1.0 @internal */
export type GenerateContentRequest = typeof GenerateContentRequest.Type

// ---------------------------------------------------------------------------------------------------------
// Wire format: the stream
// ---------------------------------------------------------------------------------------------------------

const optional = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

/** A part of a streamed candidate; kinds not read here (code execution, files) pass through. @internal */
export const ResponsePart = Schema.Struct({
  text: optional(Schema.String),
  thought: optional(Schema.Boolean),
  thoughtSignature: optional(Schema.String),
  functionCall: optional(Schema.Struct({
    name: Schema.String,
    args: optional(Schema.Record(Schema.String, Schema.Unknown)),
    id: optional(Schema.String)
  }))
})

/** A candidate answer; only the first is read. @internal */
export const Candidate = Schema.Struct({
  content: optional(Schema.Struct({ role: optional(Schema.String), parts: optional(Schema.Array(ResponsePart)) })),
  finishReason: optional(Schema.String),
  finishMessage: optional(Schema.String),
  index: optional(Schema.Number)
})

/** The token counts so far (each chunk carries the running totals). @internal */
export const UsageMetadata = Schema.Struct({
  promptTokenCount: optional(Schema.Number),
  candidatesTokenCount: optional(Schema.Number),
  thoughtsTokenCount: optional(Schema.Number),
  cachedContentTokenCount: optional(Schema.Number),
  totalTokenCount: optional(Schema.Number)
})

/** One `data:` payload of the stream. @internal */
export const GenerateContentChunk = Schema.Struct({
  candidates: optional(Schema.Array(Candidate)),
  usageMetadata: optional(UsageMetadata),
  modelVersion: optional(Schema.String),
  responseId: optional(Schema.String),
  promptFeedback: optional(Schema.Struct({ blockReason: optional(Schema.String) })),
  error: optional(
    Schema.Struct({ code: optional(Schema.Number), message: Schema.String, status: optional(Schema.String) })
  )
})
/** @since 0.1.0 @internal */
export type GenerateContentChunk = typeof GenerateContentChunk.Type

// ---------------------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------------------

/** Where the Gemini API lives. @internal */
export const DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

/** The `api` of the messages this provider produces (pi's name for the Gemini API). */
const API = "google-generative-ai"

/**
 * The signature Gemini documents for a function call it did not sign itself (e.g. one from another model
 * in the transcript): Gemini 3 refuses a model turn whose first function call is unsigned otherwise.
 *
 * @internal
 */
export const SKIP_SIGNATURE = "skip_thought_signature_validator"

/** How to reach the API and what to ask of it. */
export interface Options extends TransportOptions {
  /** The model id, e.g. `gemini-2.5-flash`, `gemini-3-pro-preview`. */
  readonly model: string
  /** Sent as `x-goog-api-key`. */
  readonly apiKey: Redacted.Redacted<string>
  /** The API root, without `/models/…`. Default `https://generativelanguage.googleapis.com/v1beta`. */
  readonly baseUrl?: string | undefined
  /** The `provider` of the messages produced. Default `google`. */
  readonly provider?: string | undefined
  /** Token limit when the request sets none. */
  readonly maxTokens?: number | undefined
  /** Temperature when the request sets none. */
  readonly temperature?: number | undefined
  /** Prices per million tokens, to compute `usage.cost`. Default: the model's `ModelCatalogue` entry, if any. */
  readonly pricing?: Pricing | undefined
}

interface Settings {
  readonly info: ModelInfo
  readonly url: string
  readonly maxTokens: number | undefined
  readonly temperature: number | undefined
  readonly pricing: Pricing | undefined
}

const bareModel = (model: string) => model.slice(model.lastIndexOf("/") + 1)
const isGemini3 = (model: string) => bareModel(model).startsWith("gemini-3")

const settingsOf = (options: Options): Settings => ({
  info: { api: API, provider: options.provider ?? "google", model: options.model },
  url: `${(options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "")}/models/${
    encodeURIComponent(bareModel(options.model))
  }:streamGenerateContent?alt=sse`,
  maxTokens: options.maxTokens,
  temperature: options.temperature,
  pricing: options.pricing
})

// ---------------------------------------------------------------------------------------------------------
// Our messages → the wire
// ---------------------------------------------------------------------------------------------------------

const inlineData = (image: { readonly data: string; readonly mimeType: string }): Part => ({
  inlineData: { mimeType: image.mimeType, data: image.data }
})

// Gemini 2.5 takes a token budget; Gemini 3 a level ("low" or "high" on every Gemini 3 model).
const THINKING_BUDGET: Record<Exclude<ThinkingLevel, "off">, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 24_576,
  xhigh: 24_576
}
const THINKING_LEVEL: Record<Exclude<ThinkingLevel, "off">, string> = {
  minimal: "low",
  low: "low",
  medium: "high",
  high: "high",
  xhigh: "high"
}

const modelContent = (message: AssistantMessage, info: ModelInfo): Content | undefined => {
  const sameModel = isSameModel(message, info)
  const parts: Array<Part> = []
  let firstCall = true
  for (const block of message.content) {
    switch (block.type) {
      case "thinking":
        if (block.redacted === true) break
        if (sameModel) {
          if (block.thinking.length > 0 || block.thinkingSignature !== undefined) {
            parts.push({
              text: block.thinking,
              thought: true,
              ...(block.thinkingSignature !== undefined ? { thoughtSignature: block.thinkingSignature } : {})
            })
          }
        } else if (block.thinking.trim().length > 0) {
          // Another model's reasoning is context, not something Gemini can verify: plain text.
          parts.push({ text: block.thinking })
        }
        break
      case "text": {
        const signature = sameModel ? block.textSignature : undefined
        if (block.text.trim().length > 0 || signature !== undefined) {
          parts.push({ text: block.text, ...(signature !== undefined ? { thoughtSignature: signature } : {}) })
        }
        break
      }
      case "toolCall": {
        // Gemini 3 checks the first call of each model turn (of parallel calls only the first is signed):
        // when that one has no signature of its own, it gets the documented skip value.
        const own = sameModel ? block.thoughtSignature : undefined
        const signature = own ?? (firstCall && isGemini3(info.model) ? SKIP_SIGNATURE : undefined)
        firstCall = false
        parts.push({
          functionCall: { name: block.name, args: block.arguments },
          ...(signature !== undefined ? { thoughtSignature: signature } : {})
        })
        break
      }
    }
  }
  return parts.length > 0 ? { role: "model", parts } : undefined
}

const toolContents = (results: ReadonlyArray<ToolResultMessage>): Array<Content> => {
  const responses: Array<Part> = []
  const images: Array<Part> = []
  for (const result of results) {
    const text = result.content.flatMap((block) => block.type === "text" ? [block.text] : []).join("\n")
    const own = result.content.flatMap((block) => block.type === "image" ? [inlineData(block)] : [])
    images.push(...own)
    const value = text.length > 0 ? text : own.length > 0 ? "(see attached image)" : "(no output)"
    responses.push({
      functionResponse: { name: result.toolName, response: result.isError ? { error: value } : { output: value } }
    })
  }
  const out: Array<Content> = [{ role: "user", parts: responses }]
  // A function response holds no images on every model: they follow in a user turn of their own.
  if (images.length > 0) out.push({ role: "user", parts: [{ text: "Attached image(s) from tool result:" }, ...images] })
  return out
}

/** Our messages as Gemini contents. @internal */
export const toContents = (messages: ReadonlyArray<Message>, info: ModelInfo): Array<Content> => {
  const out: Array<Content> = []
  const sane = sanitizeTranscript(messages)
  for (let i = 0; i < sane.length;) {
    const message = sane[i]!
    switch (message.role) {
      case "user": {
        const parts: Array<Part> = typeof message.content === "string"
          ? [{ text: message.content }]
          : message.content.map((block) => block.type === "text" ? { text: block.text } : inlineData(block))
        if (parts.length > 0) out.push({ role: "user", parts })
        i++
        break
      }
      case "assistant": {
        const content = modelContent(message, info)
        if (content !== undefined) out.push(content)
        i++
        break
      }
      case "toolResult": {
        const { next, results } = takeToolResults(sane, i)
        out.push(...toolContents(results))
        i = next
        break
      }
    }
  }
  return out
}

/** The request body for a model request. @internal */
export const toRequestBody = (request: ModelRequest, settings: Settings): GenerateContentRequest => {
  const maxTokens = request.options?.maxTokens ?? settings.maxTokens
  const temperature = request.options?.temperature ?? settings.temperature
  const level = request.options?.thinkingLevel
  const thinkingConfig = level === undefined || level === "off"
    ? undefined
    : isGemini3(settings.info.model)
    ? { includeThoughts: true, thinkingLevel: THINKING_LEVEL[level] }
    : { includeThoughts: true, thinkingBudget: THINKING_BUDGET[level] }
  const generationConfig = {
    ...(maxTokens !== undefined ? { maxOutputTokens: maxTokens } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(thinkingConfig !== undefined ? { thinkingConfig } : {})
  }
  return {
    contents: toContents(request.messages, settings.info),
    ...(request.systemPrompt.length > 0 ? { systemInstruction: { parts: [{ text: request.systemPrompt }] } } : {}),
    ...(request.tools.length > 0
      ? {
        tools: [{
          functionDeclarations: request.tools.map((tool) => ({
            name: tool.name,
            description: tool.description,
            parametersJsonSchema: tool.parameters
          }))
        }]
      }
      : {}),
    ...(Object.keys(generationConfig).length > 0 ? { generationConfig } : {})
  }
}

// ---------------------------------------------------------------------------------------------------------
// The wire → our events
// ---------------------------------------------------------------------------------------------------------

const LABEL = "Gemini API"

const SAFETY_REASONS: ReadonlySet<string> = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "LANGUAGE"
])

const mapFinishReason = (
  reason: string,
  hasToolCalls: boolean,
  finishMessage: string | undefined
): { readonly stopReason: "stop" | "length" | "toolUse" | "error"; readonly errorMessage?: string } => {
  const detail = finishMessage !== undefined ? `: ${finishMessage}` : ""
  if (reason === "STOP") return { stopReason: hasToolCalls ? "toolUse" : "stop" }
  if (reason === "MAX_TOKENS") return { stopReason: "length" }
  if (SAFETY_REASONS.has(reason)) {
    return {
      stopReason: "error",
      errorMessage: `The response was stopped by the provider's content filter (${reason})${detail}`
    }
  }
  return { stopReason: "error", errorMessage: `The provider ended the response with finishReason "${reason}"${detail}` }
}

const makeDecoder = (settings: Settings, scrub: Scrub) => {
  const decodeChunk = decodeJsonData(GenerateContentChunk, LABEL, scrub)
  return (now: number): EventDecoder => {
    const builder = new ResponseBuilder(settings.info, now)
    let prose: number | undefined
    let finishReason: string | undefined
    let finishMessage: string | undefined
    let blocked: string | undefined
    let calls = 0

    const closeProse = () => {
      if (prose !== undefined) builder.close(prose)
      prose = undefined
    }

    const onPart = (part: typeof ResponsePart.Type) => {
      const signature = part.thoughtSignature ?? undefined
      if (part.functionCall != null) {
        closeProse()
        const id = part.functionCall.id ?? `call_${builder.responseId ?? builder.timestamp}_${calls}`
        calls++
        const index = builder.openToolCall(id, part.functionCall.name)
        if (signature !== undefined) builder.setSignature(index, signature)
        // A call comes whole: its arguments are one delta.
        builder.appendToolArguments(index, JSON.stringify(part.functionCall.args ?? {}))
        builder.close(index)
        return
      }
      if (part.text == null || (part.text === "" && signature === undefined)) return
      const kind = part.thought === true ? "thinking" : "text"
      if (part.text === "" && signature !== undefined && prose !== undefined) {
        // A signature sent on its own, after the text it signs.
        builder.setSignature(prose, signature)
        return
      }
      if (prose === undefined || builder.block(prose)?.type !== kind) {
        closeProse()
        prose = kind === "text" ? builder.openText() : builder.openThinking()
      }
      if (kind === "text") builder.appendText(prose, part.text)
      else builder.appendThinking(prose, part.text)
      if (signature !== undefined) builder.setSignature(prose, signature)
    }

    const onEvent = (event: Sse.Event): ProviderFailure | undefined => {
      const data = event.data.trim()
      if (data === "" || data === "[DONE]") return undefined
      const chunk = decodeChunk(data)
      if (chunk instanceof ProviderFailure) return chunk
      if (chunk.error != null) {
        const status = chunk.error.status != null ? ` (${chunk.error.status})` : ""
        return failure(
          "stream",
          scrub(`${LABEL}: the server reported an error while streaming: ${chunk.error.message}${status}`)
        )
      }
      builder.start()
      if (chunk.responseId != null && builder.responseId === undefined) builder.responseId = chunk.responseId
      if (chunk.modelVersion != null && builder.responseModel === undefined) builder.responseModel = chunk.modelVersion
      const usage = chunk.usageMetadata
      if (usage != null) {
        const cached = usage.cachedContentTokenCount ?? 0
        builder.usage = makeUsage({
          input: Math.max(0, (usage.promptTokenCount ?? 0) - cached),
          // Thought tokens are billed as output.
          output: (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
          cacheRead: cached,
          cacheWrite: 0
        }, settings.pricing)
      }
      if (chunk.promptFeedback?.blockReason != null) blocked = chunk.promptFeedback.blockReason
      const candidate = chunk.candidates?.[0]
      if (candidate == null) return undefined
      for (const part of candidate.content?.parts ?? []) onPart(part)
      if (candidate.finishReason != null) finishReason = candidate.finishReason
      if (candidate.finishMessage != null) finishMessage = candidate.finishMessage
      return undefined
    }

    const onEnd = (): ProviderFailure | undefined => {
      if (finishReason === undefined) {
        if (blocked !== undefined) {
          builder.finishWith({
            stopReason: "error",
            errorMessage: `The prompt was blocked by the provider (${blocked})`
          })
          return undefined
        }
        return failure("stream", `${LABEL}: the stream ended before the response was complete`)
      }
      builder.finishWith(mapFinishReason(finishReason, builder.hasToolCalls, finishMessage))
      return undefined
    }

    // Gemini sends no end marker: the response is complete when the body ends after a finish reason.
    return { builder, onEvent, onEnd, ended: () => false }
  }
}

// Gemini answers a bad key with HTTP 400 (`API_KEY_INVALID`), not 401: it is still an auth fault.
const asAuthFault = (error: ModelError): ModelError =>
  error.reason === "http" && error.status === 400 && /API key not valid|API_KEY_INVALID/i.test(error.message)
    ? new ModelError({ reason: "auth", message: error.message, status: 400, retryable: false })
    : error

// ---------------------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------------------

/** A model service talking to the Gemini API. */
export const make = (options: Options): Effect.Effect<ModelShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const priced = yield* withPricing(options)
    const settings = settingsOf(priced)
    const model = yield* makeSseModel({
      label: LABEL,
      info: settings.info,
      url: settings.url,
      transport: resolveTransport(priced),
      secrets: [priced.apiKey],
      authorize: HttpClientRequest.setHeader("x-goog-api-key", Redacted.value(priced.apiKey)),
      bodySchema: GenerateContentRequest,
      toBody: (request) => toRequestBody(request, settings),
      makeDecoder: (scrub) => makeDecoder(settings, scrub)
    })
    return { info: model.info, stream: (request) => Stream.mapError(model.stream(request), asAuthFault) }
  })

/** A {@link Model} layer from explicit options. */
export const layer = (options: Options): Layer.Layer<Model, never, HttpClient.HttpClient> =>
  Layer.effect(Model, make(options))

/**
 * The options from the environment: `GEMINI_API_KEY` (required, read as `Redacted`), `GEMINI_MODEL`
 * (required) and `GEMINI_BASE_URL` (default Google's API).
 *
 * @internal
 */
export const config: Config.Config<Options> = environmentWithKey("GEMINI", DEFAULT_BASE_URL)

/**
 * A {@link Model} layer configured from the environment, with `overrides` applied on top: `GEMINI_API_KEY`
 * (required, read as `Redacted`), `GEMINI_MODEL` (required) and `GEMINI_BASE_URL` (default Google's API).
 */
export const layerConfig = (
  overrides: Partial<Options> = {}
): Layer.Layer<Model, Config.ConfigError, HttpClient.HttpClient> => layerFromConfig(config, make, overrides)
