/**
 * The model providers, and picking one by name.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Model } from "../Model.ts"
import * as Anthropic from "./Anthropic.ts"
import * as Gemini from "./Gemini.ts"
import * as OpenAiCompatible from "./OpenAiCompatible.ts"
import * as OpenAiResponses from "./OpenAiResponses.ts"

export * as Anthropic from "./Anthropic.ts"
export * as EffectAi from "./EffectAi.ts"
export * as Gemini from "./Gemini.ts"
export * as ModelCatalogue from "./ModelCatalogue.ts"
export * as OpenAiCompatible from "./OpenAiCompatible.ts"
export * as OpenAiResponses from "./OpenAiResponses.ts"

/** The providers that can be picked by name. */
export const ProviderName = Schema.Literals(["openai-compatible", "anthropic", "openai-responses", "gemini"])
/** @since 0.1.0 */
export type ProviderName = typeof ProviderName.Type

/** The provider names, e.g. for a CLI flag's choices. */
export const providerNames: ReadonlyArray<ProviderName> = ProviderName.literals

/**
 * The {@link Model} layer of the named provider, configured from the environment: `OPENAI_*` for
 * `"openai-compatible"` and `"openai-responses"`, `ANTHROPIC_*` for `"anthropic"`, `GEMINI_*` for
 * `"gemini"` (see each provider's `layerConfig`).
 */
export const layerConfig = (name: ProviderName): Layer.Layer<Model, Config.ConfigError, HttpClient.HttpClient> => {
  switch (name) {
    case "openai-compatible":
      return OpenAiCompatible.layerConfig()
    case "anthropic":
      return Anthropic.layerConfig()
    case "openai-responses":
      return OpenAiResponses.layerConfig()
    case "gemini":
      return Gemini.layerConfig()
  }
}

/** The provider name from `EFFECT_AGENT_PROVIDER`, default `"openai-compatible"`. */
const providerNameConfig: Config.Config<ProviderName> = Config.Literals(
  ProviderName.literals,
  "EFFECT_AGENT_PROVIDER"
).pipe(Config.withDefault<ProviderName>("openai-compatible"))

/** The {@link Model} layer of the provider named by `EFFECT_AGENT_PROVIDER`, configured from the environment. */
export const layerFromEnv: Layer.Layer<Model, Config.ConfigError, HttpClient.HttpClient> = Layer.unwrap(
  Effect.map(providerNameConfig, layerConfig)
)
