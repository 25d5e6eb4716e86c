/**
 * The bridge to `effect/ai`, both ways:
 *
 * - any `effect/ai` `LanguageModel` (e.g. from `@effect/ai-openai` or `@effect/ai-anthropic`) serves as
 *   our {@link Model}: it streams with tool call resolution disabled, so our pipeline runs the tools, and
 *   its response parts become pi's events;
 * - an `effect/ai` `Toolkit` with its handlers becomes our tools ({@link RegisteredTool}s), each running
 *   through the toolkit's own `handle`.
 *
 * @since 0.1.0
 */
import * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as AiTool from "effect/ai/Tool"
import type * as Toolkit from "effect/ai/Toolkit"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { AssistantMessageEvent } from "../AssistantMessageEvent.ts"
import type { ToolResultContent } from "../Message.ts"
import { Model, ModelError, type ModelInfo, type ModelOptions, type ModelRequest, type ModelShape } from "../Model.ts"
import * as Tool from "../Tool.ts"
import { type DuplicateToolName, type RegisteredTool, ToolRegistry } from "../ToolRegistry.ts"
import { makeUsage, type Pricing, ResponseBuilder } from "./internal/builder.ts"
import { isSameModel, sanitizeTranscript } from "./internal/transcript.ts"
import { ModelCatalogue, pricingFor } from "./ModelCatalogue.ts"

// ---------------------------------------------------------------------------------------------------------
// LanguageModel → Model
// ---------------------------------------------------------------------------------------------------------

/** How the bridged model names itself in the messages it produces. */
export interface Options {
  /** Default `effect-ai`. */
  readonly api?: string | undefined
  /** Default `effect-ai`. */
  readonly provider?: string | undefined
  /** Default `unknown`; set it to the model the `LanguageModel` talks to. */
  readonly model?: string | undefined
  /** Prices per million tokens, to compute `usage.cost`. Default: the `model`'s `ModelCatalogue` entry, if any. */
  readonly pricing?: Pricing | undefined
  /**
   * How a request's temperature, token limit and thinking level reach the `LanguageModel`, whose
   * settings are provider-specific: given the options, return the response stream with them applied,
   * e.g. `(options, parts) => parts.pipe(Stream.provideService(OpenAiLanguageModel.Config, {
   * temperature: options.temperature, max_output_tokens: options.maxTokens }))`. The options are also
   * always available to the `LanguageModel` as the {@link RequestOptions} reference.
   */
  readonly applyOptions?: ((options: ModelOptions, parts: PartStream) => PartStream) | undefined
}

/** The response stream of a `LanguageModel`, as the bridge consumes it. */
type PartStream = Stream.Stream<Response.StreamPart<any>, unknown>

/**
 * The options of the request being served (temperature, token limit, thinking level), provided to the
 * `LanguageModel`'s stream so that an implementation or wrapper can read them without knowing this library.
 */
export const RequestOptions = Context.Reference<ModelOptions>("effect-agent/EffectAi/RequestOptions", {
  defaultValue: () => ({})
})

/** The tag that marks a thinking signature as this bridge's: the reasoning parts' provider metadata, as JSON. */
const SIGNATURE_PREFIX = "effect-ai:"

/** A thinking block's signature back as the options of a reasoning part; `undefined` when it is not ours. */
const reasoningOptions = (signature: string | undefined): Prompt.ReasoningPartEncoded["options"] | undefined => {
  if (signature === undefined || !signature.startsWith(SIGNATURE_PREFIX)) return undefined
  try {
    const value: unknown = JSON.parse(signature.slice(SIGNATURE_PREFIX.length))
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value as any : undefined
  } catch {
    return undefined
  }
}

/**
 * Our messages as an `effect/ai` prompt (encoded form). With `info`, reasoning this same model produced
 * goes back with the provider metadata it came with (signatures, encrypted content) as its options.
 *
 * @internal
 */
export const toPrompt = (
  request: Pick<ModelRequest, "systemPrompt" | "messages">,
  info?: ModelInfo | undefined
): Prompt.Prompt => {
  const messages: Array<Prompt.MessageEncoded> = []
  if (request.systemPrompt.length > 0) messages.push({ role: "system", content: request.systemPrompt })
  const file = (block: { readonly data: string; readonly mimeType: string }): Prompt.FilePartEncoded => ({
    type: "file",
    mediaType: block.mimeType,
    data: block.data
  })
  for (const message of sanitizeTranscript(request.messages)) {
    switch (message.role) {
      case "user":
        messages.push({
          role: "user",
          content: typeof message.content === "string"
            ? [{ type: "text", text: message.content }]
            : message.content.map((block) => block.type === "text" ? { type: "text", text: block.text } : file(block))
        })
        break
      case "assistant": {
        const content: Array<Prompt.AssistantMessagePartEncoded> = []
        for (const block of message.content) {
          if (block.type === "text") {
            if (block.text.length > 0) content.push({ type: "text", text: block.text })
          } else if (block.type === "thinking") {
            if (block.redacted !== true && block.thinking.length > 0) {
              const options = info !== undefined && isSameModel(message, info)
                ? reasoningOptions(block.thinkingSignature)
                : undefined
              content.push({ type: "reasoning", text: block.thinking, ...(options !== undefined ? { options } : {}) })
            }
          } else {
            content.push({
              type: "tool-call",
              id: block.id,
              name: block.name,
              params: block.arguments,
              providerExecuted: false
            })
          }
        }
        if (content.length > 0) messages.push({ role: "assistant", content })
        break
      }
      case "toolResult": {
        const text = message.content.flatMap((block) => block.type === "text" ? [block.text] : []).join("\n")
        const hasImages = message.content.some((block) => block.type === "image")
        messages.push({
          role: "tool",
          content: [{
            type: "tool-result",
            id: message.toolCallId,
            name: message.toolName,
            isFailure: message.isError,
            result: text,
            ...(hasImages
              ? {
                modelOutput: message.content.map((block) =>
                  block.type === "text" ? { type: "text" as const, text: block.text } : file(block)
                )
              }
              : {}),
            providerExecuted: false
          }]
        })
        break
      }
    }
  }
  return Prompt.make(messages)
}

/**
 * The tools of a request as an `effect/ai` toolkit: dynamic tools with the JSON Schemas we were given.
 * Tool call resolution is disabled, so the handler is never called.
 */
const toolkitOf = (request: ModelRequest): Toolkit.WithHandler<Record<string, AiTool.Any>> => {
  const tools: Record<string, AiTool.Any> = {}
  for (const spec of request.tools) {
    tools[spec.name] = AiTool.dynamic(spec.name, {
      description: spec.description,
      parameters: spec.parameters as any
    }) as unknown as AiTool.Any
  }
  return {
    tools,
    handle: (name: PropertyKey) => Effect.die(new Error(`effect-agent runs tool ${String(name)} itself`))
  } as unknown as Toolkit.WithHandler<Record<string, AiTool.Any>>
}

const reasonOfAiError = (tag: string): ModelError["reason"] => {
  switch (tag) {
    case "NetworkError":
      return "network"
    case "RateLimitError":
    case "QuotaExhaustedError":
      return "rate-limit"
    case "AuthenticationError":
      return "auth"
    case "InvalidRequestError":
    case "ContentPolicyError":
    case "InternalProviderError":
      return "http"
    case "InvalidResponseError":
    case "InvalidOutputError":
      return "decode"
    default:
      return "unknown"
  }
}

/** An `effect/ai` failure as a {@link ModelError}. */
const toModelError = (error: unknown): ModelError => {
  if (AiError.isAiError(error)) {
    return new ModelError({
      reason: reasonOfAiError(error.reason._tag),
      message: error.message,
      retryable: error.isRetryable
    })
  }
  if (Schema.isSchemaError(error)) {
    return new ModelError({ reason: "decode", message: `Could not decode the model's response: ${error.message}` })
  }
  const message = error instanceof Error ? error.message : String(error)
  return new ModelError({ reason: "unknown", message })
}

const mapFinish = (
  reason: Response.FinishReason,
  hasToolCalls: boolean
): { readonly stopReason: "stop" | "length" | "toolUse" | "error"; readonly errorMessage?: string } => {
  switch (reason) {
    case "length":
      return { stopReason: "length" }
    case "tool-calls":
      return { stopReason: "toolUse" }
    case "content-filter":
      return { stopReason: "error", errorMessage: "The response was stopped by the provider's content filter" }
    case "error":
      return { stopReason: "error", errorMessage: "The provider ended the response with an error" }
    case "pause":
      // Not an answer: the provider stopped a long turn (e.g. server tools) and expects to be called again.
      return {
        stopReason: "error",
        errorMessage: "The provider paused the turn (finish reason \"pause\"): send the conversation again to continue"
      }
    case "other":
      return {
        stopReason: "error",
        errorMessage: "The provider ended the response for a reason it did not name (finish reason \"other\")"
      }
    default:
      return { stopReason: hasToolCalls ? "toolUse" : "stop" }
  }
}

/** Turns `effect/ai` stream parts into pi's events, keeping the message under construction. */
const makePartHandler = (info: ModelInfo, pricing: Pricing | undefined, now: number) => {
  const builder = new ResponseBuilder(info, now)
  const byId = new Map<string, number>()
  let finished = false

  /** The provider metadata of each reasoning block, merged over its parts: signatures often come last. */
  const reasoningMetadata = new Map<number, Record<string, Record<string, unknown>>>()
  const keepMetadata = (index: number, metadata: Response.ProviderMetadata | undefined) => {
    if (metadata === undefined || Object.keys(metadata).length === 0) return
    const merged = { ...reasoningMetadata.get(index) }
    for (const [provider, fields] of Object.entries(metadata)) {
      if (fields !== null && typeof fields === "object") merged[provider] = { ...merged[provider], ...fields }
    }
    reasoningMetadata.set(index, merged)
    builder.setSignature(index, `${SIGNATURE_PREFIX}${JSON.stringify(merged)}`)
  }

  const openOrGet = (kind: "text" | "reasoning", id: string): number => {
    const key = `${kind}:${id}`
    const existing = byId.get(key)
    if (existing !== undefined && builder.isOpen(existing)) return existing
    const index = kind === "text" ? builder.openText() : builder.openThinking()
    byId.set(key, index)
    return index
  }

  const onPart = (part: Response.StreamPart<any>): ModelError | undefined => {
    builder.start()
    switch (part.type) {
      case "response-metadata":
        if (part.id !== undefined) builder.responseId = part.id
        if (part.modelId !== undefined) builder.responseModel = part.modelId
        break
      case "text-start":
        openOrGet("text", part.id)
        break
      case "text-delta":
        builder.appendText(openOrGet("text", part.id), part.delta)
        break
      case "text-end": {
        const index = byId.get(`text:${part.id}`)
        if (index !== undefined) builder.close(index)
        break
      }
      case "reasoning-start":
        keepMetadata(openOrGet("reasoning", part.id), part.metadata)
        break
      case "reasoning-delta": {
        const index = openOrGet("reasoning", part.id)
        keepMetadata(index, part.metadata)
        builder.appendThinking(index, part.delta)
        break
      }
      case "reasoning-end": {
        const index = byId.get(`reasoning:${part.id}`)
        if (index !== undefined) {
          keepMetadata(index, part.metadata)
          builder.close(index)
        }
        break
      }
      case "tool-params-start":
        if (part.providerExecuted) break
        byId.set(`tool:${part.id}`, builder.openToolCall(part.id, part.name))
        break
      case "tool-params-delta": {
        const index = byId.get(`tool:${part.id}`)
        if (index !== undefined) builder.appendToolArguments(index, part.delta)
        break
      }
      case "tool-call": {
        if (part.providerExecuted) break
        let index = byId.get(`tool:${part.id}`)
        if (index === undefined || !builder.isOpen(index)) {
          index = builder.openToolCall(part.id, part.name)
          byId.set(`tool:${part.id}`, index)
        }
        // The complete call is authoritative over the streamed pieces.
        const params = part.params
        builder.setToolArguments(
          index,
          typeof params === "object" && params !== null && !Array.isArray(params)
            ? params as Record<string, unknown>
            : {}
        )
        builder.close(index)
        break
      }
      case "finish": {
        const usage = part.usage
        const cacheRead = usage.inputTokens.cacheRead ?? 0
        const cacheWrite = usage.inputTokens.cacheWrite ?? 0
        builder.usage = makeUsage({
          input: usage.inputTokens.uncached ??
            Math.max(0, (usage.inputTokens.total ?? 0) - cacheRead - cacheWrite),
          // Reasoning tokens are output tokens: counted even when the provider gives no total.
          output: usage.outputTokens.total ??
            (usage.outputTokens.text ?? 0) + (usage.outputTokens.reasoning ?? 0),
          cacheRead,
          cacheWrite
        }, pricing)
        builder.finishWith(mapFinish(part.reason, builder.hasToolCalls))
        finished = true
        break
      }
      case "error":
        return new ModelError({
          reason: "stream",
          message: `The model reported an error while streaming: ${
            part.error instanceof Error ? part.error.message : JSON.stringify(part.error)
          }`
        })
      default:
        break
    }
    return undefined
  }

  const onEnd = (): ModelError | undefined => {
    if (finished) return undefined
    return new ModelError({ reason: "stream", message: "The model's stream ended without a finish part" })
  }

  return { builder, onPart, onEnd, finished: () => finished }
}

/**
 * Streams one request through an `effect/ai` `LanguageModel`. The request's options (temperature, token
 * limit, thinking level) are provided as {@link RequestOptions} and handed to `applyOptions`, since each
 * provider has its own settings for them.
 */
const streamWith = (
  languageModel: LanguageModel.LanguageModel,
  info: ModelInfo,
  pricing: Pricing | undefined,
  request: ModelRequest,
  applyOptions?: ((options: ModelOptions, parts: PartStream) => PartStream) | undefined
): Stream.Stream<AssistantMessageEvent, ModelError> =>
  Stream.unwrap(Effect.map(Clock.currentTimeMillis, (now) => {
    const handler = makePartHandler(info, pricing, now)
    const requestOptions: ModelOptions = request.options ?? {}
    const options = {
      prompt: toPrompt(request, info),
      disableToolCallResolution: true,
      toolCallValidation: "deferred",
      ...(request.tools.length > 0 ? { toolkit: toolkitOf(request) } : {})
    }
    const raw = (languageModel.streamText as (options: unknown) => PartStream)(options)
    const configured = applyOptions === undefined ? raw : applyOptions(requestOptions, raw)
    const parts = configured.pipe(Stream.provideService(RequestOptions, requestOptions))
    return parts.pipe(
      Stream.mapError(toModelError),
      Stream.mapEffect((part) => {
        const error = handler.finished() ? undefined : handler.onPart(part)
        return error === undefined ? Effect.succeed(handler.builder.drain()) : Effect.fail(error)
      }),
      Stream.concat(Stream.suspend(() => {
        const error = handler.onEnd()
        return error === undefined ? Stream.succeed(handler.builder.drain()) : Stream.fail(error)
      })),
      Stream.flattenIterable
    )
  }))

/** The {@link Model} served by the `LanguageModel` in the context. */
export const make = (options: Options = {}): Effect.Effect<ModelShape, never, LanguageModel.LanguageModel> =>
  Effect.gen(function*() {
    const languageModel = yield* LanguageModel.LanguageModel
    const info: ModelInfo = {
      api: options.api ?? "effect-ai",
      provider: options.provider ?? "effect-ai",
      model: options.model ?? "unknown"
    }
    const pricing = pricingFor(yield* ModelCatalogue, info.model, options.pricing)
    return Model.of({
      info,
      stream: (request) => streamWith(languageModel, info, pricing, request, options.applyOptions)
    })
  })

/** A {@link Model} layer over the `LanguageModel` the layer is given. */
export const layer = (options: Options = {}): Layer.Layer<Model, never, LanguageModel.LanguageModel> =>
  Layer.effect(Model, make(options))

// ---------------------------------------------------------------------------------------------------------
// Toolkit → our tools
// ---------------------------------------------------------------------------------------------------------

/** A toolkit's tool failed (its failure, encoded, is the message). */
export class ToolkitToolFailure extends Schema.TaggedError<ToolkitToolFailure>()("ToolkitToolFailure", {
  toolName: Schema.String,
  message: Schema.String
}) {}

const textOf = (value: unknown): string => {
  if (typeof value === "string") return value
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

const contentOf = (result: AiTool.HandlerResult<AiTool.Any>): ReadonlyArray<ToolResultContent> => {
  if (result.modelOutput !== undefined && result.modelOutput.length > 0) {
    return result.modelOutput.map((part): ToolResultContent => {
      if (part.type === "text") return { type: "text", text: part.text }
      if (part.mediaType.startsWith("image/") && typeof part.data === "string") {
        return { type: "image", data: part.data, mimeType: part.mediaType }
      }
      return { type: "text", text: `[${part.mediaType} file${part.fileName ? ` ${part.fileName}` : ""}]` }
    })
  }
  return [{ type: "text", text: textOf(result.encodedResult) }]
}

/**
 * The tools of an `effect/ai` toolkit as our tools, each paired with a handler that runs the toolkit's
 * `handle`: the arguments our pipeline validated (with the tool's own parameter Schema) are encoded back
 * and handed over, preliminary results become `update`s, and a failure result (`failureMode: "return"`)
 * or a handler failure becomes an error result. Needs the toolkit's handlers (its `toLayer`).
 */
export const toolsFromToolkit = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>
): Effect.Effect<ReadonlyArray<RegisteredTool>, never, AiTool.HandlersFor<Tools>> =>
  Effect.gen(function*() {
    const withHandler = yield* toolkit
    // The services the handlers were built with; `handle` asks for them again when it runs.
    const services = yield* Effect.context<any>()
    return Object.values(withHandler.tools as Record<string, AiTool.Any>).map((aiTool): RegisteredTool => {
      const parameters = aiTool.parametersSchema as unknown as Tool.Parameters
      const tool = Tool.make(aiTool.name, {
        description: AiTool.getDescription(aiTool) ?? "",
        parameters
      })
      const jsonSchema = AiTool.getJsonSchema(aiTool) as Tool.JsonSchema
      const bridged: Tool.Tool.Any = { ...tool, jsonSchema }
      const encode = Schema.encodeUnknownEffect(aiTool.parametersSchema as Schema.Codec<unknown, unknown>)
      // Made once per tool, not per call (the lint rule in tools/lint/eslint.config.mjs says why).
      const handle = Effect.fnUntraced(function*(args: unknown, context: Tool.ToolContext) {
        const encoded = yield* encode(args)
        const results = yield* withHandler.handle(aiTool.name as keyof Tools, encoded as never, context.toolCallId)
        let final: AiTool.HandlerResult<AiTool.Any> | undefined
        yield* Stream.runForEach(results as Stream.Stream<AiTool.HandlerResult<AiTool.Any>, unknown>, (result) => {
          if (result.preliminary) {
            return context.update({ content: contentOf(result), details: result.encodedResult })
          }
          final = result
          return Effect.void
        })
        if (final === undefined) {
          return yield* new ToolkitToolFailure({ toolName: aiTool.name, message: "The tool produced no result" })
        }
        if (final.isFailure) {
          return yield* new ToolkitToolFailure({ toolName: aiTool.name, message: textOf(final.encodedResult) })
        }
        const result: Tool.ToolResult = { content: contentOf(final), details: final.encodedResult }
        return result
      })
      const handler: Tool.Handler<unknown> = (args, context) =>
        handle(args, context).pipe(Effect.provideContext(services as Context.Context<never>)) as Effect.Effect<
          Tool.ToolResult,
          unknown
        >
      return { tool: bridged, handler }
    })
  }) as Effect.Effect<ReadonlyArray<RegisteredTool>, never, AiTool.HandlersFor<Tools>>

/** A {@link ToolRegistry} of a toolkit's tools (see {@link toolsFromToolkit}). */
export const registryFromToolkit = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>
): Layer.Layer<ToolRegistry, DuplicateToolName, AiTool.HandlersFor<Tools>> =>
  Layer.unwrap(Effect.map(toolsFromToolkit(toolkit), ToolRegistry.fromEntries))
