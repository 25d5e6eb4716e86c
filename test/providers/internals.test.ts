import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Layer, Schema } from "effect"
import { Redacted } from "effect"
import { HttpClient } from "effect/http"
import { Model } from "../../src/Model.ts"
import * as Providers from "../../src/providers/index.ts"
import { parseArguments, parsePartialJson } from "../../src/providers/internal/partialJson.ts"
import { MISSING_RESULT_TEXT, sanitizeTranscript } from "../../src/providers/internal/transcript.ts"
import { errorBodyMessage, makeScrub, retryAfterOf } from "../../src/providers/internal/transport.ts"
import { assistant, toolResult, user } from "./support/fixtures.ts"

describe("partial JSON", () => {
  it("parses complete JSON as JSON.parse does", () => {
    expect(parsePartialJson("{\"a\": [1, 2, {\"b\": null}], \"c\": \"x\\\"y\"}")).toEqual({
      a: [1, 2, { b: null }],
      c: "x\"y"
    })
  })

  it.each(
    [
      ["{", {}],
      ["{\"a", {}],
      ["{\"a\"", {}],
      ["{\"a\":", {}],
      ["{\"a\": 1", { a: 1 }],
      ["{\"a\": 1,", { a: 1 }],
      ["{\"a\": 1, \"b\": \"hel", { a: 1, b: "hel" }],
      ["{\"a\": 1, \"b\": \"hel\\", { a: 1, b: "hel" }],
      ["{\"a\": 1, \"b\": \"x\\u00", { a: 1, b: "x" }],
      ["{\"a\": 1, \"b\": \"naïve ✓", { a: 1, b: "naïve ✓" }],
      ["{\"a\": [1, 2", { a: [1, 2] }],
      ["{\"a\": [1, {\"b\": tr", { a: [1, {}] }],
      ["{\"a\": -", {}],
      ["{\"a\": 1.", {}],
      ["{\"a\": 1e", {}],
      ["{\"a\": {\"b\": {\"c\": fals", { a: { b: {} } }],
      ["  ", undefined]
    ] as const
  )("%j → %j", (text, expected) => {
    expect(parsePartialJson(text)).toEqual(expected)
  })

  it("rejects what is not the start of a JSON value", () => {
    expect(parsePartialJson("{\"a\": x")).toBeUndefined()
    expect(parsePartialJson("{\"a\": 1}}")).toBeUndefined()
    expect(parseArguments("[1, 2]")).toEqual({})
    expect(parseArguments("not json")).toEqual({})
  })

  const Args = Schema.Record(
    Schema.String,
    Schema.Union([
      Schema.String,
      Schema.Finite,
      Schema.Boolean,
      Schema.Array(Schema.String),
      Schema.Struct({ n: Schema.Finite })
    ])
  )
  it.prop(
    "every prefix of a JSON object parses, without throwing, to an object; the whole text to the value",
    [Args],
    ([value]) => {
      const text = JSON.stringify(value, null, 1)
      for (let i = 0; i <= text.length; i++) {
        const parsed = parseArguments(text.slice(0, i))
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return false
        // Keys seen in a prefix are keys of the value.
        for (const key of Object.keys(parsed)) if (!(key in value)) return false
      }
      expect(parseArguments(text)).toEqual(JSON.parse(text)) // (-0 does not survive JSON)
      return true
    }
  )
})

describe("transcript sanitizing", () => {
  it("drops errored and aborted turns with the results of their calls, and answers orphaned calls", () => {
    const out = sanitizeTranscript([
      user("a"),
      assistant([{ type: "toolCall", id: "1", name: "t", arguments: {} }], { stopReason: "aborted" }),
      toolResult("1", "t", [{ type: "text", text: "not started" }], true),
      assistant([{ type: "toolCall", id: "2", name: "t", arguments: {} }, {
        type: "toolCall",
        id: "3",
        name: "t",
        arguments: {}
      }]),
      toolResult("3", "t", [{ type: "text", text: "three" }]),
      toolResult("3", "t", [{ type: "text", text: "three again" }]),
      assistant([{ type: "text", text: "next" }])
    ])
    expect(
      out.map((m) =>
        m.role === "toolResult"
          ? `result:${m.toolCallId}:${m.content[0]!.type === "text" && m.content[0].text}`
          : m.role
      )
    ).toEqual([
      "user",
      "assistant",
      "result:3:three",
      `result:2:${MISSING_RESULT_TEXT}`,
      "assistant"
    ])
  })
})

describe("transport helpers", () => {
  it("reads retry-after in seconds, as an HTTP date, and retry-after-ms", () => {
    const now = Date.parse("2026-01-01T00:00:00.000Z")
    expect(Duration.toMillis(retryAfterOf({ "retry-after": "2" }, now)!)).toBe(2000)
    expect(Duration.toMillis(retryAfterOf({ "retry-after-ms": "150", "retry-after": "9" }, now)!)).toBe(150)
    const inFive = new Date(now + 5000).toUTCString()
    expect(Duration.toMillis(retryAfterOf({ "retry-after": inFive }, now)!)).toBe(5000)
    expect(Duration.toMillis(retryAfterOf({ "retry-after": inFive }, now + 9000)!)).toBe(0)
    expect(retryAfterOf({}, now)).toBeUndefined()
    expect(retryAfterOf({ "retry-after": "soon" }, now)).toBeUndefined()
  })

  it("finds the message of the error bodies servers send", () => {
    expect(errorBodyMessage(JSON.stringify({ error: { message: "bad", type: "invalid_request_error" } }))).toBe(
      "bad (invalid_request_error)"
    )
    expect(errorBodyMessage(JSON.stringify({ type: "error", error: { type: "not_found_error", message: "model: x" } })))
      .toBe(
        "model: x (not_found_error)"
      )
    expect(errorBodyMessage(JSON.stringify({ error: "model 'x' not found" }))).toBe("model 'x' not found")
    expect(errorBodyMessage(JSON.stringify({ detail: "Not Found" }))).toBe("Not Found")
    expect(errorBodyMessage("<html>502 Bad Gateway</html>")).toBe("<html>502 Bad Gateway</html>")
    expect(errorBodyMessage("x".repeat(2000)).length).toBeLessThan(600)
  })

  it("scrubs secrets from texts", () => {
    const scrub = makeScrub([Redacted.make("sk-secret-1"), undefined, Redacted.make("ab")])
    expect(scrub("key sk-secret-1 and sk-secret-1, ab")).toBe("key [redacted] and [redacted], ab")
  })
})

describe("picking a provider by name", () => {
  const noHttp = Layer.succeed(HttpClient.HttpClient, HttpClient.make(() => Effect.die("no network in this test")))
  const env = (vars: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnv({ env: vars }))
  const infoOf = (layer: Layer.Layer<Model, unknown, HttpClient.HttpClient>, vars: Record<string, string>) =>
    Model.use((model) => Effect.succeed(model.info)).pipe(
      Effect.provide(layer.pipe(Layer.provide([noHttp, env(vars)])))
    )

  it.effect("layerConfig(name) builds the named provider from its environment", () =>
    Effect.gen(function*() {
      expect(
        yield* infoOf(Providers.layerConfig("openai-compatible"), {
          OPENAI_MODEL: "llama3",
          OPENAI_BASE_URL: "http://localhost:11434/v1"
        })
      )
        .toEqual({ api: "openai-completions", provider: "openai-compatible", model: "llama3" })
      expect(
        yield* infoOf(Providers.layerConfig("anthropic"), { ANTHROPIC_MODEL: "claude-x", ANTHROPIC_API_KEY: "k-123" })
      )
        .toEqual({ api: "anthropic-messages", provider: "anthropic", model: "claude-x" })
    }))

  it.effect("layerFromEnv follows EFFECT_AGENT_PROVIDER; an unknown name or missing settings is a ConfigError", () =>
    Effect.gen(function*() {
      expect(
        (yield* infoOf(Providers.layerFromEnv, {
          EFFECT_AGENT_PROVIDER: "anthropic",
          ANTHROPIC_MODEL: "claude-x",
          ANTHROPIC_API_KEY: "k-123"
        })).provider
      ).toBe("anthropic")
      expect((yield* infoOf(Providers.layerFromEnv, { OPENAI_MODEL: "m" })).provider).toBe("openai")
      const unknown = yield* Effect.flip(infoOf(Providers.layerFromEnv, { EFFECT_AGENT_PROVIDER: "no-such-provider" }))
      expect((unknown as { _tag: string })._tag).toBe("ConfigError")
      const missing = yield* Effect.flip(infoOf(Providers.layerConfig("anthropic"), { ANTHROPIC_MODEL: "m" }))
      expect((missing as { _tag: string })._tag).toBe("ConfigError")
      expect(Providers.providerNames).toEqual(["openai-compatible", "anthropic", "openai-responses", "gemini"])
    }))
})
