/** Picking the model provider for the command line: flags first, then the usual environment variables. */
import { Config, Effect, Layer, Option, type Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { Model } from "../Model.ts"
import * as Anthropic from "../providers/Anthropic.ts"
import * as OpenAiCompatible from "../providers/OpenAiCompatible.ts"
import { UsageError } from "./startup.ts"

/** The providers the command line can use. */
export type ProviderName = "openai-compatible" | "anthropic"

/** What the flags say about the provider; anything missing comes from the environment. */
export interface ProviderFlags {
  readonly baseUrl: string | undefined
  readonly model: string | undefined
  readonly apiKey: Redacted.Redacted<string> | undefined
}

/** Everything a provider needs, resolved from the flags and the environment. */
export type ProviderSettings =
  | {
    readonly name: "openai-compatible"
    readonly model: string
    readonly baseUrl: string
    readonly apiKey: Redacted.Redacted<string> | undefined
  }
  | {
    readonly name: "anthropic"
    readonly model: string
    readonly baseUrl: string
    readonly apiKey: Redacted.Redacted<string>
  }

const PREFIX: Record<ProviderName, string> = { "openai-compatible": "OPENAI", anthropic: "ANTHROPIC" }

/** The flag's value, else the variable's; unset or unreadable, a one-line error naming both. */
const setting = <A>(
  name: ProviderName,
  what: string,
  flag: string,
  value: A | undefined,
  variable: string,
  config: Config.Config<A>
): Effect.Effect<A, UsageError> =>
  value !== undefined ? Effect.succeed(value) : Effect.mapError(config, () =>
    new UsageError({
      flag,
      message: `--provider ${name} needs ${what}: pass ${flag}, or set ${variable} in the environment.`
    }))

/**
 * The settings of a named provider. The model name and base URL come from `--model` and `--base-url` or
 * `OPENAI_MODEL` / `OPENAI_BASE_URL` (`ANTHROPIC_*`); the key from `--api-key` or `OPENAI_API_KEY` /
 * `ANTHROPIC_API_KEY`. A model is always required, a key only by Anthropic (local OpenAI-compatible servers
 * need none); a missing one is a {@link UsageError} naming the flag and the variable.
 */
export const providerSettings = Effect.fn("providerSettings")(function*(name: ProviderName, flags: ProviderFlags) {
  const prefix = PREFIX[name]
  const model = yield* setting(name, "a model", "--model", flags.model, `${prefix}_MODEL`, Config.String(`${prefix}_MODEL`))
  const defaultBaseUrl = name === "anthropic" ? Anthropic.DEFAULT_BASE_URL : OpenAiCompatible.DEFAULT_BASE_URL
  const baseUrl = yield* setting(
    name,
    "a base URL",
    "--base-url",
    flags.baseUrl,
    `${prefix}_BASE_URL`,
    Config.String(`${prefix}_BASE_URL`).pipe(Config.withDefault(defaultBaseUrl))
  )
  const keyConfig = Config.Redacted(`${prefix}_API_KEY`)
  if (name === "anthropic") {
    const apiKey = yield* setting(name, "an API key", "--api-key", flags.apiKey, `${prefix}_API_KEY`, keyConfig)
    return { name, model, baseUrl, apiKey } satisfies ProviderSettings as ProviderSettings
  }
  const apiKey = yield* setting(
    name,
    "an API key",
    "--api-key",
    flags.apiKey,
    `${prefix}_API_KEY`,
    keyConfig.pipe(Config.option, Config.map(Option.getOrUndefined))
  )
  return { name, model, baseUrl, apiKey } satisfies ProviderSettings as ProviderSettings
})

/** The model layer of a provider over `fetch`, from resolved settings. */
export const providerLayer = (settings: ProviderSettings): Layer.Layer<Model> => {
  const make = settings.name === "openai-compatible"
    ? OpenAiCompatible.make({
      model: settings.model,
      baseUrl: settings.baseUrl,
      ...(settings.apiKey !== undefined ? { apiKey: settings.apiKey } : {})
    })
    : Anthropic.make({ model: settings.model, baseUrl: settings.baseUrl, apiKey: settings.apiKey, maxTokens: 8192 })
  return Layer.effect(Model, make).pipe(Layer.provide(FetchHttpClient.layer))
}
