/** Picking the model provider for the command line: flags first, then the usual environment variables. */
import { Config, Effect, Layer, Option, type Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { Model } from "../Model.ts"
import * as Anthropic from "../providers/Anthropic.ts"
import * as Gemini from "../providers/Gemini.ts"
import * as OpenAiCompatible from "../providers/OpenAiCompatible.ts"
import * as OpenAiResponses from "../providers/OpenAiResponses.ts"

/** The providers the command line can use. */
export type ProviderName = "openai-compatible" | "anthropic" | "openai-responses" | "gemini"

/** What the flags say about the provider; anything missing comes from the environment. */
export interface ProviderFlags {
  readonly baseUrl: string | undefined
  readonly model: string | undefined
  readonly apiKey: Redacted.Redacted<string> | undefined
}

const orConfig = <A>(flag: A | undefined, config: Config.Config<A>): Effect.Effect<A, Config.ConfigError> =>
  flag !== undefined ? Effect.succeed(flag) : config

const optionalKey = (
  flag: Redacted.Redacted<string> | undefined,
  name: string
): Effect.Effect<Redacted.Redacted<string> | undefined, Config.ConfigError> =>
  flag !== undefined
    ? Effect.succeed(flag)
    : Effect.map(Config.Redacted(name).pipe(Config.option), (key) => Option.getOrUndefined(key))

/**
 * The model layer of a named provider over `fetch`. The model name and base URL come from `--model` and
 * `--base-url` or `OPENAI_MODEL` / `OPENAI_BASE_URL` (`ANTHROPIC_*`, `GEMINI_*`; `openai-responses` reads
 * `OPENAI_*`); the key from `--api-key` or `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` / `GEMINI_API_KEY`.
 */
export const providerLayer = (name: ProviderName, flags: ProviderFlags): Layer.Layer<Model, Config.ConfigError> => {
  if (name === "openai-responses" || name === "gemini") return newerProviderLayer(name, flags)
  const make = name === "openai-compatible"
    ? Effect.gen(function*() {
      const model = yield* orConfig(flags.model, Config.String("OPENAI_MODEL"))
      const baseUrl = yield* orConfig(
        flags.baseUrl,
        Config.String("OPENAI_BASE_URL").pipe(Config.withDefault(OpenAiCompatible.DEFAULT_BASE_URL))
      )
      const apiKey = yield* optionalKey(flags.apiKey, "OPENAI_API_KEY")
      return yield* OpenAiCompatible.make({ model, baseUrl, ...(apiKey !== undefined ? { apiKey } : {}) })
    })
    : Effect.gen(function*() {
      const model = yield* orConfig(flags.model, Config.String("ANTHROPIC_MODEL"))
      const baseUrl = yield* orConfig(
        flags.baseUrl,
        Config.String("ANTHROPIC_BASE_URL").pipe(Config.withDefault(Anthropic.DEFAULT_BASE_URL))
      )
      const apiKey = yield* orConfig(flags.apiKey, Config.Redacted("ANTHROPIC_API_KEY"))
      return yield* Anthropic.make({ model, baseUrl, apiKey, maxTokens: 8192 })
    })
  return Layer.effect(Model, make).pipe(Layer.provide(FetchHttpClient.layer))
}

/** The Responses and Gemini providers, read the same way: flags first, then their environment variables. */
const newerProviderLayer = (
  name: "openai-responses" | "gemini",
  flags: ProviderFlags
): Layer.Layer<Model, Config.ConfigError> => {
  const make = name === "openai-responses"
    ? Effect.gen(function*() {
      const model = yield* orConfig(flags.model, Config.String("OPENAI_MODEL"))
      const baseUrl = yield* orConfig(
        flags.baseUrl,
        Config.String("OPENAI_BASE_URL").pipe(Config.withDefault(OpenAiResponses.DEFAULT_BASE_URL))
      )
      const apiKey = yield* optionalKey(flags.apiKey, "OPENAI_API_KEY")
      return yield* OpenAiResponses.make({ model, baseUrl, ...(apiKey !== undefined ? { apiKey } : {}) })
    })
    : Effect.gen(function*() {
      const model = yield* orConfig(flags.model, Config.String("GEMINI_MODEL"))
      const baseUrl = yield* orConfig(
        flags.baseUrl,
        Config.String("GEMINI_BASE_URL").pipe(Config.withDefault(Gemini.DEFAULT_BASE_URL))
      )
      const apiKey = yield* orConfig(flags.apiKey, Config.Redacted("GEMINI_API_KEY"))
      return yield* Gemini.make({ model, baseUrl, apiKey })
    })
  return Layer.effect(Model, make).pipe(Layer.provide(FetchHttpClient.layer))
}
