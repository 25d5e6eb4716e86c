import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import { HttpClient } from "effect/http"
import { type ProviderFlags, providerLayer, providerSettings } from "../../src/cli/provider.ts"
import { Model } from "../../src/Model.ts"
import * as Providers from "../../src/providers/index.ts"

describe("picking the Responses and Gemini providers by name", () => {
  const noHttp = Layer.succeed(HttpClient.HttpClient, HttpClient.make(() => Effect.die("no network in this test")))
  const infoOf = (layer: Layer.Layer<Model, unknown, HttpClient.HttpClient>, env: Record<string, string>) =>
    Model.use((model) => Effect.succeed(model.info)).pipe(
      Effect.provide(layer.pipe(Layer.provide([noHttp, ConfigProvider.layer(ConfigProvider.fromEnv({ env }))])))
    )

  it.effect("layerConfig and EFFECT_AGENT_PROVIDER build them from OPENAI_* and GEMINI_*", () =>
    Effect.gen(function*() {
      expect(
        yield* infoOf(Providers.layerConfig("openai-responses"), {
          OPENAI_MODEL: "gpt-5-mini",
          OPENAI_API_KEY: "k-123"
        })
      )
        .toEqual({ api: "openai-responses", provider: "openai", model: "gpt-5-mini" })
      expect(
        yield* infoOf(Providers.layerConfig("gemini"), { GEMINI_MODEL: "gemini-2.5-flash", GEMINI_API_KEY: "k-123" })
      )
        .toEqual({ api: "google-generative-ai", provider: "google", model: "gemini-2.5-flash" })
      expect(
        (yield* infoOf(Providers.layerFromEnv, {
          EFFECT_AGENT_PROVIDER: "gemini",
          GEMINI_MODEL: "gemini-2.5-pro",
          GEMINI_API_KEY: "k-123"
        })).api
      ).toBe("google-generative-ai")
      expect(
        (yield* infoOf(Providers.layerFromEnv, { EFFECT_AGENT_PROVIDER: "openai-responses", OPENAI_MODEL: "o4-mini" }))
          .api
      )
        .toBe("openai-responses")
      const missingKey = yield* Effect.flip(infoOf(Providers.layerConfig("gemini"), { GEMINI_MODEL: "gemini-2.5-pro" }))
      expect((missingKey as { _tag: string })._tag).toBe("ConfigError")
    }))

  it.effect("the CLI's --provider builds them from the flags, falling back to the environment", () =>
    Effect.gen(function*() {
      const env = (vars: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnv({ env: vars }))
      const info = (name: Providers.ProviderName, flags: ProviderFlags, vars: Record<string, string>) =>
        providerSettings(name, flags).pipe(
          Effect.flatMap((settings) =>
            Model.use((model) => Effect.succeed(model.info)).pipe(Effect.provide(providerLayer(settings)))
          ),
          Effect.provide(env(vars))
        )
      const noFlags = { baseUrl: undefined, model: undefined, apiKey: undefined }
      expect(yield* info("gemini", { ...noFlags, model: "gemini-2.5-pro", apiKey: Redacted.make("k-123") }, {}))
        .toEqual({ api: "google-generative-ai", provider: "google", model: "gemini-2.5-pro" })
      expect(yield* info("gemini", noFlags, { GEMINI_MODEL: "gemini-env", GEMINI_API_KEY: "k-123" }))
        .toMatchObject({ model: "gemini-env" })
      expect(yield* info("openai-responses", { ...noFlags, model: "o4-mini" }, {}))
        .toEqual({ api: "openai-responses", provider: "openai", model: "o4-mini" })
      const noKey = yield* Effect.flip(info("gemini", { ...noFlags, model: "gemini-2.5-pro" }, {}))
      expect(noKey._tag).toBe("UsageError")
      expect(noKey.message).toContain("GEMINI_API_KEY")
    }))
})
