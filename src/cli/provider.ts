/** The model provider the command line talks to, chosen by `--provider` and configured by flags or the environment. */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { Model } from "../Model.ts"
import * as Anthropic from "../providers/Anthropic.ts"
import * as Gemini from "../providers/Gemini.ts"
import type { ProviderName } from "../providers/index.ts"
import * as OpenAiCompatible from "../providers/OpenAiCompatible.ts"
import * as OpenAiResponses from "../providers/OpenAiResponses.ts"
import { UsageError } from "./startup.ts"

export type { ProviderName } from "../providers/index.ts"

/** What the flags say about the provider; anything missing comes from the environment. */
export interface ProviderFlags {
  readonly baseUrl: string | undefined
  readonly model: string | undefined
  readonly apiKey: Redacted.Redacted<string> | undefined
}

/** Everything a provider needs, resolved from the flags and the environment. */
export interface ProviderSettings {
  readonly name: ProviderName
  readonly model: string
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string> | undefined
  /** Anthropic's token limit per response (`ANTHROPIC_MAX_TOKENS`); the provider's default when unset. */
  readonly maxTokens: number | undefined
}

/** How each provider is read from the environment and built: the one list the command line uses. */
const PROVIDERS: Record<ProviderName, {
  readonly prefix: string
  readonly defaultBaseUrl: string
  readonly keyRequired: boolean
}> = {
  "openai-compatible": { prefix: "OPENAI", defaultBaseUrl: OpenAiCompatible.DEFAULT_BASE_URL, keyRequired: false },
  "openai-responses": { prefix: "OPENAI", defaultBaseUrl: OpenAiResponses.DEFAULT_BASE_URL, keyRequired: false },
  anthropic: { prefix: "ANTHROPIC", defaultBaseUrl: Anthropic.DEFAULT_BASE_URL, keyRequired: true },
  gemini: { prefix: "GEMINI", defaultBaseUrl: Gemini.DEFAULT_BASE_URL, keyRequired: true }
}

/**
 * The environment variables of the providers, for `--help`: derived from the one table above, so a new
 * provider cannot be left out.
 */
export const providerEnvironment: ReadonlyArray<readonly [string, string]> = (() => {
  const byPrefix = new Map<string, Array<ProviderName>>()
  for (const [name, provider] of Object.entries(PROVIDERS) as Array<[ProviderName, (typeof PROVIDERS)[ProviderName]]>) {
    byPrefix.set(provider.prefix, [...(byPrefix.get(provider.prefix) ?? []), name])
  }
  const rows: Array<readonly [string, string]> = []
  for (const [prefix, names] of byPrefix) {
    const which = names.join(", ")
    rows.push([`${prefix}_API_KEY`, `the API key of ${which} (--api-key)`])
    rows.push([`${prefix}_MODEL`, `the model of ${which} (--model)`])
    rows.push([`${prefix}_BASE_URL`, `the base URL of ${which} (--base-url)`])
    if (prefix === "ANTHROPIC") rows.push(["ANTHROPIC_MAX_TOKENS", "the most tokens of one anthropic answer"])
  }
  return rows
})()

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
 * `<PREFIX>_MODEL` / `<PREFIX>_BASE_URL` (`OPENAI_` for both OpenAI APIs, `ANTHROPIC_`, `GEMINI_`); the key
 * from `--api-key` or `<PREFIX>_API_KEY`. A model is always required, a key by Anthropic and Gemini (local
 * OpenAI-compatible servers need none); a missing one is a {@link UsageError} naming the flag and the variable.
 */
export const providerSettings = Effect.fn("providerSettings")(function*(name: ProviderName, flags: ProviderFlags) {
  const { defaultBaseUrl, keyRequired, prefix } = PROVIDERS[name]
  const model = yield* setting(
    name,
    "a model",
    "--model",
    flags.model,
    `${prefix}_MODEL`,
    Config.String(`${prefix}_MODEL`)
  )
  const baseUrl = yield* setting(
    name,
    "a base URL",
    "--base-url",
    flags.baseUrl,
    `${prefix}_BASE_URL`,
    Config.String(`${prefix}_BASE_URL`).pipe(Config.withDefault(defaultBaseUrl))
  )
  const keyConfig = Config.Redacted(`${prefix}_API_KEY`)
  const apiKey: Redacted.Redacted<string> | undefined = yield* setting(
    name,
    "an API key",
    "--api-key",
    flags.apiKey,
    `${prefix}_API_KEY`,
    keyRequired ? keyConfig : keyConfig.pipe(Config.option, Config.map(Option.getOrUndefined))
  )
  const maxTokens = name === "anthropic"
    ? yield* setting(
      name,
      "a positive whole number",
      "ANTHROPIC_MAX_TOKENS",
      undefined,
      "ANTHROPIC_MAX_TOKENS",
      Config.schema(Schema.Int.check(Schema.isGreaterThan(0)), "ANTHROPIC_MAX_TOKENS").pipe(
        Config.option,
        Config.map(Option.getOrUndefined)
      )
    )
    : undefined
  return { name, model, baseUrl, apiKey, maxTokens } satisfies ProviderSettings
})

const build = (settings: ProviderSettings) => {
  const { apiKey, baseUrl, model } = settings
  const key = apiKey !== undefined ? { apiKey } : {}
  switch (settings.name) {
    case "openai-compatible":
      return OpenAiCompatible.make({ model, baseUrl, ...key })
    case "openai-responses":
      return OpenAiResponses.make({ model, baseUrl, ...key })
    case "anthropic":
      return Anthropic.make({
        model,
        baseUrl,
        apiKey: apiKey ?? Redacted.make(""),
        ...(settings.maxTokens !== undefined ? { maxTokens: settings.maxTokens } : {})
      })
    case "gemini":
      return Gemini.make({ model, baseUrl, apiKey: apiKey ?? Redacted.make("") })
  }
}

/** The model layer of a provider over `fetch`, from resolved settings. */
export const providerLayer = (settings: ProviderSettings): Layer.Layer<Model> =>
  Layer.effect(Model, build(settings)).pipe(
    Layer.provide(FetchHttpClient.layer)
  )
