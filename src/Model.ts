/**
 * The model interface: the only way the loop reaches a model. A model turns a request (system prompt,
 * messages converted for the model, tools' JSON Schemas, options) into a stream of assistant-message events
 * that ends with `done` or `error`, or fails with a typed {@link ModelError}.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type { AssistantMessageEvent } from "./AssistantMessageEvent.ts"
import type { Message } from "./Message.ts"
import type { JsonSchema } from "./Tool.ts"

/** A tool as the model sees it. */
export interface ToolSpec {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema
}

/** How hard a reasoning model should think. */
export type ThinkingLevel = "off" | "minimal" | "low" | "medium" | "high" | "xhigh"

/** Per-run options a provider may honour; unknown ones are ignored. */
export interface ModelOptions {
  readonly temperature?: number | undefined
  readonly maxTokens?: number | undefined
  readonly thinkingLevel?: ThinkingLevel | undefined
}

/** One model call. */
export interface ModelRequest {
  readonly systemPrompt: string
  readonly messages: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<ToolSpec>
  readonly options?: ModelOptions | undefined
}

/** Why a model call failed. */
const ModelErrorReason = Schema.Literals([
  "http",
  "rate-limit",
  "auth",
  "network",
  "decode",
  "timeout",
  "stream",
  "config",
  "unknown"
])

/**
 * A model call failed. `message` is meant for people and models alike and never contains credentials;
 * `status` is the HTTP status where there was one.
 */
export class ModelError extends Schema.TaggedError<ModelError>()("ModelError", {
  reason: ModelErrorReason,
  message: Schema.String,
  status: Schema.optionalKey(Schema.Number),
  retryable: Schema.optionalKey(Schema.Boolean)
}) {}

/** What identifies a model in the messages it produces (`api`, `provider`, `model` of an assistant message). */
export interface ModelInfo {
  readonly api: string
  readonly provider: string
  readonly model: string
}

/** The shape of a model service. */
export interface ModelShape {
  readonly info: ModelInfo
  /**
   * Streams one response. The stream starts with `start`, carries the content events, and ends with `done`
   * (the final message) or `error` (a final message with `stopReason` `error` or `aborted`). Interrupting the
   * stream cancels the request.
   */
  readonly stream: (request: ModelRequest) => Stream.Stream<AssistantMessageEvent, ModelError>
}

/** The model a run talks to. */
export class Model extends Context.Service<Model, ModelShape>()("effect-agent/Model") {}
