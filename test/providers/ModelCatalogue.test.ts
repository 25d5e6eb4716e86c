import { assert, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema, Stream } from "effect"
import { LanguageModel, type Response } from "effect/ai"
import { Model, type ModelRequest } from "../../src/Model.ts"
import * as Anthropic from "../../src/providers/Anthropic.ts"
import * as EffectAi from "../../src/providers/EffectAi.ts"
import * as ModelCatalogue from "../../src/providers/ModelCatalogue.ts"
import * as OpenAiCompatible from "../../src/providers/OpenAiCompatible.ts"
import { anthropicFullEvents, anthropicSse, openAiFullStream, request, user } from "./support/fixtures.ts"
import { checkProtocol } from "./support/protocol.ts"
import { bytesIn, memoryClient } from "./support/server.ts"

const { builtIn, lookup } = ModelCatalogue

const idOf = (modelId: string) => lookup(builtIn, modelId)?.id
const contextWindow = (modelId: string, catalogue = builtIn) => lookup(catalogue, modelId)?.contextWindow

describe("ModelCatalogue: the data", () => {
  it("the built-in catalogue is what its Schema describes, with a date and entries for every vendor", () => {
    const decoded = Schema.decodeUnknownSync(ModelCatalogue.Catalogue)(builtIn)
    expect(decoded.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    const vendors = new Set(decoded.entries.map((e) => e.vendor))
    expect([...vendors].sort()).toEqual(["anthropic", "google", "openai"])
    for (const vendor of vendors) {
      expect(decoded.entries.filter((e) => e.vendor === vendor).length).toBeGreaterThanOrEqual(4)
    }
    for (const e of decoded.entries) {
      // A cached token never costs more than a fresh one; output never fits in more than the window.
      expect(e.pricing.cacheRead, e.id).toBeLessThanOrEqual(e.pricing.input)
      expect(e.maxOutput, e.id).toBeLessThanOrEqual(e.contextWindow)
    }
    // Ids and aliases name one entry each.
    const names = decoded.entries.flatMap((e) => [e.id, ...(e.aliases ?? [])])
    expect(new Set(names).size).toBe(names.length)
  })

  it("a malformed entry is refused by the Schema", () => {
    const bad = { ...builtIn.entries[0]!, contextWindow: -1 }
    expect(() => Schema.decodeUnknownSync(ModelCatalogue.CatalogueEntry)(bad)).toThrow()
    expect(() =>
      Schema.decodeUnknownSync(ModelCatalogue.CatalogueEntry)({ ...builtIn.entries[0]!, pricing: { input: 1 } })
    ).toThrow()
  })
})

describe("ModelCatalogue: lookup", () => {
  it("finds a model by its id, ignoring case", () => {
    expect(idOf("gpt-4.1-mini")).toBe("gpt-4.1-mini")
    expect(idOf("Claude-Sonnet-4-5")).toBe("claude-sonnet-4-5")
    expect(idOf("gemini-2.5-pro")).toBe("gemini-2.5-pro")
  })

  it("finds dated and versioned ids under their undated entry", () => {
    expect(idOf("claude-sonnet-4-5-20250929")).toBe("claude-sonnet-4-5")
    expect(idOf("claude-opus-4-20250514")).toBe("claude-opus-4")
    expect(idOf("claude-3-5-haiku-latest")).toBe("claude-3-5-haiku")
    expect(idOf("claude-sonnet-4-5@20250929")).toBe("claude-sonnet-4-5") // Vertex AI
    expect(idOf("gpt-4o-2024-08-06")).toBe("gpt-4o")
    expect(idOf("gpt-4o-mini-2024-07-18")).toBe("gpt-4o-mini")
    expect(idOf("gpt-4.1-2025-04-14")).toBe("gpt-4.1")
  })

  it("finds aliases and ids behind a routing prefix or spelled with dots", () => {
    expect(idOf("claude-sonnet-4-0")).toBe("claude-sonnet-4")
    expect(idOf("gemini-flash-latest")).toBe("gemini-2.5-flash")
    expect(idOf("anthropic/claude-sonnet-4.5")).toBe("claude-sonnet-4-5") // OpenRouter
    expect(idOf("openai/gpt-4.1")).toBe("gpt-4.1")
    expect(idOf("models/gemini-2.5-flash")).toBe("gemini-2.5-flash") // Gemini's own resource name
  })

  it("an unknown model has no entry, and a longer id never borrows a shorter entry's price", () => {
    expect(idOf("llama3.1:8b")).toBeUndefined()
    expect(idOf("gpt-4o-audio-preview")).toBeUndefined()
    expect(idOf("claude-sonnet-4-5-turbo")).toBeUndefined()
    expect(idOf("")).toBeUndefined()
  })

  it("lookup gives the context window of a known model, and of one withEntries added", () => {
    expect(contextWindow("claude-sonnet-4-5-20250929")).toBe(200_000)
    expect(contextWindow("gpt-4.1")).toBe(1_047_576)
    expect(contextWindow("gemini-2.5-flash")).toBe(1_048_576)
    expect(contextWindow("my-local-model")).toBeUndefined()
    const custom = ModelCatalogue.withEntries(builtIn, [
      {
        id: "my-local-model",
        vendor: "local",
        contextWindow: 32_768,
        maxOutput: 4096,
        pricing: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }
      }
    ])
    expect(contextWindow("my-local-model", custom)).toBe(32_768)
  })

  it.effect("entryFor reads the catalogue in effect, with what a layer added", () =>
    Effect.gen(function*() {
      expect((yield* ModelCatalogue.entryFor("gpt-4o-2024-08-06"))?.contextWindow).toBe(128_000)
      expect(yield* ModelCatalogue.entryFor("my-local-model")).toBeUndefined()
      const added = yield* ModelCatalogue.entryFor("my-local-model").pipe(
        Effect.provide(ModelCatalogue.layerWith([
          {
            id: "my-local-model",
            vendor: "local",
            contextWindow: 8192,
            maxOutput: 2048,
            pricing: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }
          }
        ]))
      )
      expect(added?.contextWindow).toBe(8192)
    }))

  it("pricingFor: explicit prices win, else the catalogue, else none", () => {
    const explicit = { input: 9, output: 9 }
    expect(ModelCatalogue.pricingFor(builtIn, "gpt-4.1", explicit)).toBe(explicit)
    expect(ModelCatalogue.pricingFor(builtIn, "gpt-4.1")).toEqual({
      input: 2,
      output: 8,
      cacheRead: 0.5,
      cacheWrite: 0
    })
    expect(ModelCatalogue.pricingFor(builtIn, "unknown")).toBeUndefined()
  })

  it.prop(
    "an added entry is found by its id and by any dated form of it, and replaces an entry of the same id",
    [
      Schema.String.check(Schema.isPattern(/^[a-z][a-z0-9]{0,8}(-[a-z][a-z0-9]{0,5}){0,3}$/)),
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000_000 }))
    ],
    ([id, window]) => {
      const added = {
        id,
        vendor: "test",
        contextWindow: window,
        maxOutput: 1,
        pricing: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 }
      }
      const catalogue = ModelCatalogue.withEntries(builtIn, [added])
      assert.strictEqual(lookup(catalogue, id), added)
      assert.strictEqual(lookup(catalogue, `${id}-20250101`), added)
      assert.strictEqual(lookup(catalogue, `${id.toUpperCase()}-2025-01-01`), added)
      assert.strictEqual(catalogue.entries.filter((e) => e.id === id).length, 1)
    },
    { arbitrary: { runs: 200 } }
  )
})

// ---------------------------------------------------------------------------------------------------------
// Cost per message, by every provider
// ---------------------------------------------------------------------------------------------------------

const finalMessage = (req: ModelRequest, layer: Layer.Layer<Model>) =>
  Model.use((model) => Stream.runCollect(model.stream(req))).pipe(
    Effect.map((events) => checkProtocol(events)),
    Effect.provide(layer)
  )

const openAi = (model: string, extra: Partial<OpenAiCompatible.Options> = {}) =>
  OpenAiCompatible.layer({ model, baseUrl: "http://memory/v1", ...extra }).pipe(
    Layer.provide(memoryClient(() => ({ chunks: bytesIn(openAiFullStream, 64) })))
  )

const anthropic = (model: string, extra: Partial<Anthropic.Options> = {}) =>
  Anthropic.layer({ model, baseUrl: "http://memory", apiKey: Redacted.make("k"), ...extra }).pipe(
    Layer.provide(memoryClient(() => ({ chunks: bytesIn(anthropicSse(anthropicFullEvents), 64) })))
  )

const perMillion = (tokens: number, price: number) => (tokens * price) / 1_000_000

describe("ModelCatalogue: cost per message", () => {
  it.effect("OpenAI-compatible: a catalogued model's message carries its cost (70 fresh, 30 cached in, 20 out)", () =>
    Effect.gen(function*() {
      const message = yield* finalMessage(request([user("hi")]), openAi("gpt-4.1-mini-2025-04-14"))
      expect(message.usage.cost.input).toBeCloseTo(perMillion(70, 0.4), 12)
      expect(message.usage.cost.cacheRead).toBeCloseTo(perMillion(30, 0.1), 12)
      expect(message.usage.cost.output).toBeCloseTo(perMillion(20, 1.6), 12)
      expect(message.usage.cost.cacheWrite).toBe(0)
      expect(message.usage.cost.total).toBeCloseTo(perMillion(70, 0.4) + perMillion(30, 0.1) + perMillion(20, 1.6), 12)
    }))

  it.effect("Anthropic: a dated id is priced from its undated entry, cache writes included", () =>
    Effect.gen(function*() {
      const message = yield* finalMessage(request([user("hi")]), anthropic("claude-sonnet-4-5-20250929"))
      const { cacheRead, cacheWrite, input, output } = message.usage
      expect([input, output, cacheRead, cacheWrite]).toEqual([25, 89, 10, 5])
      expect(message.usage.cost).toEqual({
        input: perMillion(25, 3),
        output: perMillion(89, 15),
        cacheRead: perMillion(10, 0.3),
        cacheWrite: perMillion(5, 3.75),
        total: perMillion(25, 3) + perMillion(89, 15) + perMillion(10, 0.3) + perMillion(5, 3.75)
      })
    }))

  it.effect("an explicit pricing option wins over the catalogue", () =>
    Effect.gen(function*() {
      const message = yield* finalMessage(
        request([user("hi")]),
        openAi("gpt-4.1-mini", { pricing: { input: 1_000_000, output: 0 } })
      )
      expect(message.usage.cost).toEqual({ input: 70, output: 0, cacheRead: 0, cacheWrite: 0, total: 70 })
    }))

  it.effect("a model the catalogue does not know costs 0", () =>
    Effect.gen(function*() {
      const message = yield* finalMessage(request([user("hi")]), openAi("llama3.1:8b"))
      expect(message.usage.totalTokens).toBe(120)
      expect(message.usage.cost).toEqual({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 })
    }))

  it.effect("entries added by a layer price models the built-in catalogue does not know, and replace its prices", () =>
    Effect.gen(function*() {
      const local = yield* finalMessage(
        request([user("hi")]),
        openAi("llama3.1:8b").pipe(
          Layer.provide(ModelCatalogue.layerWith([
            {
              id: "llama3.1:8b",
              vendor: "ollama",
              contextWindow: 131_072,
              maxOutput: 8192,
              pricing: { input: 1, output: 2, cacheRead: 0.5, cacheWrite: 0 }
            }
          ]))
        )
      )
      expect(local.usage.cost.total).toBeCloseTo(perMillion(70, 1) + perMillion(20, 2) + perMillion(30, 0.5), 12)
      const replaced = yield* finalMessage(
        request([user("hi")]),
        anthropic("claude-sonnet-4-5-20250929").pipe(
          Layer.provide(ModelCatalogue.layerWith([
            {
              id: "claude-sonnet-4-5",
              vendor: "anthropic",
              contextWindow: 1_000_000,
              maxOutput: 64_000,
              pricing: { input: 6, output: 22.5, cacheRead: 0.6, cacheWrite: 7.5 }
            }
          ]))
        )
      )
      expect(replaced.usage.cost.input).toBe(perMillion(25, 6))
      // Replacing the whole catalogue removes what it does not list.
      const none = yield* finalMessage(
        request([user("hi")]),
        anthropic("claude-sonnet-4-5").pipe(Layer.provide(ModelCatalogue.layer({ asOf: "2026-01-01", entries: [] })))
      )
      expect(none.usage.cost.total).toBe(0)
    }))

  it.effect("the effect/ai bridge prices its messages by the model it names", () =>
    Effect.gen(function*() {
      const parts: Array<Response.StreamPartEncoded> = [
        { type: "text-start", id: "t1" },
        { type: "text-delta", id: "t1", delta: "hi" },
        { type: "text-end", id: "t1" },
        {
          type: "finish",
          reason: "stop",
          usage: { inputTokens: { uncached: 80, total: 100, cacheRead: 20 }, outputTokens: { total: 30 } }
        }
      ]
      const languageModel = Layer.effect(
        LanguageModel.LanguageModel,
        LanguageModel.make({ generateText: () => Effect.die("not used"), streamText: () => Stream.fromIterable(parts) })
      )
      const message = yield* finalMessage(
        request([user("hi")]),
        EffectAi.layer({ provider: "google", model: "gemini-2.5-flash" }).pipe(Layer.provide(languageModel))
      )
      expect(message.usage.cost.total).toBeCloseTo(perMillion(80, 0.3) + perMillion(20, 0.03) + perMillion(30, 2.5), 12)
    }))
})
