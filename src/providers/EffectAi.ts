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
import { Context, Effect, Layer, Schema, Stream } from "effect"
import {
  AiError,
  LanguageModel,
  Prompt,
  type Response,
  Tool as AiTool,
  type Toolkit
} from "effect/ai"
import type { AssistantMessageEvent } from "../AssistantMessageEvent.ts"
import type { ToolResultContent } from "../Message.ts"
import { Model, ModelError, type ModelErrorReason, type ModelInfo, type ModelRequest, type ModelShape } from "../Model.ts"
import * as Tool from "../Tool.ts"
import { type DuplicateToolName, type RegisteredTool, ToolRegistry } from "../ToolRegistry.ts"
import { ModelCatalogue, pricingFor } from "./ModelCatalogue.ts"
import { makeUsage, type Pricing, ResponseBuilder } from "./internal/builder.ts"
import { sanitizeTranscript } from "./internal/transcript.ts"

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
}

/** Our messages as an `effect/ai` prompt (encoded form). */
export const toPrompt = (request: Pick<ModelRequest, "systemPrompt" | "messages">): Prompt.Prompt => {
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
              content.push({ type: "reasoning", text: block.thinking })
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

const reasonOfAiError = (tag: string): ModelErrorReason => {
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
export const toModelError = (error: unknown): ModelError => {
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
    default:
      return { stopReason: hasToolCalls ? "toolUse" : "stop" }
  }
}

/** Turns `effect/ai` stream parts into pi's events, keeping the message under construction. */
const makePartHandler = (info: ModelInfo, pricing: Pricing | undefined) => {
  const builder = new ResponseBuilder(info, Date.now())
  const byId = new Map<string, number>()
  let finished = false

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
        openOrGet("reasoning", part.id)
        break
      case "reasoning-delta":
        builder.appendThinking(openOrGet("reasoning", part.id), part.delta)
        break
      case "reasoning-end": {
        const index = byId.get(`reasoning:${part.id}`)
        if (index !== undefined) builder.close(index)
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
          typeof params === "object" && params !== null && !Array.isArray(params) ? params as Record<string, unknown> : {}
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
          output: usage.outputTokens.total ?? 0,
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
 * Streams one request through an `effect/ai` `LanguageModel`. Per-request options (temperature, token
 * limit, thinking level) are the `LanguageModel`'s own configuration and are not passed on.
 */
export const streamWith = (
  languageModel: LanguageModel.LanguageModel,
  info: ModelInfo,
  pricing: Pricing | undefined,
  request: ModelRequest
): Stream.Stream<AssistantMessageEvent, ModelError> =>
  Stream.suspend(() => {
    const handler = makePartHandler(info, pricing)
    const options = {
      prompt: toPrompt(request),
      disableToolCallResolution: true,
      toolCallValidation: "deferred",
      ...(request.tools.length > 0 ? { toolkit: toolkitOf(request) } : {})
    }
    const parts = (languageModel.streamText as (options: unknown) => Stream.Stream<Response.StreamPart<any>, unknown>)(
      options
    )
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
  })

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
    return Model.of({ info, stream: (request) => streamWith(languageModel, info, pricing, request) })
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
      const handler: Tool.Handler<unknown> = (args, context) =>
        Effect.gen(function*() {
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
          return { content: contentOf(final), details: final.encodedResult }
        }).pipe(Effect.provideContext(services as Context.Context<never>)) as Effect.Effect<Tool.ToolResult, unknown>
      return { tool: bridged, handler }
    })
  }) as Effect.Effect<ReadonlyArray<RegisteredTool>, never, AiTool.HandlersFor<Tools>>

/** A {@link ToolRegistry} of a toolkit's tools (see {@link toolsFromToolkit}). */
export const registryFromToolkit = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>
): Layer.Layer<ToolRegistry, DuplicateToolName, AiTool.HandlersFor<Tools>> =>
  Layer.unwrap(Effect.map(toolsFromToolkit(toolkit), ToolRegistry.fromEntries))
