/**
 * What every provider reads from the environment, in one place: `<PREFIX>_MODEL`, `<PREFIX>_BASE_URL` and
 * `<PREFIX>_API_KEY` (read as `Redacted`), and the layer that builds a provider from them.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import { Model, type ModelShape } from "../../Model.ts"

/** The settings read by {@link environment}: the key is absent when optional and unset. */
export interface EnvironmentSettings {
  readonly model: string
  readonly baseUrl: string
  readonly apiKey?: Redacted.Redacted<string>
}

/** `<prefix>_MODEL` (required), `<prefix>_BASE_URL` (default `defaultBaseUrl`), `<prefix>_API_KEY` (optional). */
export const environment = (prefix: string, defaultBaseUrl: string): Config.Config<EnvironmentSettings> =>
  Config.all({
    model: Config.String(`${prefix}_MODEL`),
    baseUrl: Config.String(`${prefix}_BASE_URL`).pipe(Config.withDefault(defaultBaseUrl)),
    apiKey: Config.Redacted(`${prefix}_API_KEY`).pipe(Config.option)
  }).pipe(Config.map(({ apiKey, baseUrl, model }) => ({
    model,
    baseUrl,
    ...(apiKey._tag === "Some" ? { apiKey: apiKey.value } : {})
  })))

/** As {@link environment}, with `<prefix>_API_KEY` required. */
export const environmentWithKey = (
  prefix: string,
  defaultBaseUrl: string
): Config.Config<EnvironmentSettings & { readonly apiKey: Redacted.Redacted<string> }> =>
  Config.all({
    apiKey: Config.Redacted(`${prefix}_API_KEY`),
    model: Config.String(`${prefix}_MODEL`),
    baseUrl: Config.String(`${prefix}_BASE_URL`).pipe(Config.withDefault(defaultBaseUrl))
  })

/** A provider's {@link Model} layer from its environment `config`, with `overrides` applied on top. */
export const layerFromConfig = <O>(
  config: Config.Config<O>,
  make: (options: O) => Effect.Effect<ModelShape, never, HttpClient.HttpClient>,
  overrides: Partial<O>
): Layer.Layer<Model, Config.ConfigError, HttpClient.HttpClient> =>
  Layer.effect(Model, Effect.flatMap(config, (options) => make({ ...options, ...overrides })))
