/**
 * What the common models of OpenAI, Anthropic and Google can hold and what they cost: context window,
 * largest output, and dollars per million tokens for input, output, cache reads and cache writes.
 *
 * The catalogue is data (a Schema), read through the {@link ModelCatalogue} reference: the built-in
 * {@link builtIn} unless a layer replaces it or adds entries. Every provider computes the cost of each
 * message it produces from it: an explicit `pricing` option wins, else the catalogue entry for the model id,
 * else the cost stays 0.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Pricing } from "./internal/builder.ts"

// ---------------------------------------------------------------------------------------------------------
// The data
// ---------------------------------------------------------------------------------------------------------

const Dollars = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))
const Tokens = Schema.Int.check(Schema.isGreaterThan(0))

/** Dollars per million tokens. A vendor that does not bill a kind of token has 0 there. */
const ModelPricing = Schema.Struct({
  input: Dollars,
  output: Dollars,
  cacheRead: Dollars,
  cacheWrite: Dollars
})

/**
 * One model. `id` is the vendor's undated id; `aliases` are other ids that name the same model and price.
 * Dated or versioned ids (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`, `…@20250929`, `…-latest`)
 * find their entry without being listed (see {@link lookup}).
 */
export const CatalogueEntry = Schema.Struct({
  id: Schema.String,
  vendor: Schema.String,
  aliases: Schema.optionalKey(Schema.Array(Schema.String)),
  /** The most tokens (input and output together) one request may use. */
  contextWindow: Tokens,
  /** The most output tokens one response may have. */
  maxOutput: Tokens,
  pricing: ModelPricing
})
/** @since 0.1.0 */
export type CatalogueEntry = typeof CatalogueEntry.Type

/** A catalogue: its entries and the date (`YYYY-MM-DD`) their figures were taken. */
export const Catalogue = Schema.Struct({
  asOf: Schema.String,
  entries: Schema.Array(CatalogueEntry)
})
/** @since 0.1.0 */
export type Catalogue = typeof Catalogue.Type

const entry = (
  vendor: string,
  id: string,
  contextWindow: number,
  maxOutput: number,
  [input, output, cacheRead, cacheWrite]: readonly [number, number, number, number],
  aliases?: ReadonlyArray<string>
): CatalogueEntry => ({
  id,
  vendor,
  ...(aliases !== undefined ? { aliases } : {}),
  contextWindow,
  maxOutput,
  pricing: { input, output, cacheRead, cacheWrite }
})

/**
 * The built-in catalogue. Prices change and new models appear: these figures are the vendors' list prices
 * as of {@link Catalogue.asOf} (standard tier, prompts under any long-context surcharge threshold, e.g.
 * Gemini's 200k), gathered from the vendors' pricing pages as collected in `@mariozechner/pi-ai` 0.73.1.
 * Anthropic's cache write is the 5-minute write; Google bills cache storage by the hour, not per token
 * written, so its cache write is 0. Override or extend it with {@link layer} / {@link layerWith}.
 */
export const builtIn: Catalogue = {
  asOf: "2026-05-08",
  entries: [
    // OpenAI: cached input is billed as `cacheRead`; writing the cache costs nothing extra.
    entry("openai", "gpt-5.5", 272_000, 128_000, [5, 30, 0.5, 0]),
    entry("openai", "gpt-5.4", 272_000, 128_000, [2.5, 15, 0.25, 0]),
    entry("openai", "gpt-5.4-mini", 400_000, 128_000, [0.75, 4.5, 0.075, 0]),
    entry("openai", "gpt-5.4-nano", 400_000, 128_000, [0.2, 1.25, 0.02, 0]),
    entry("openai", "gpt-5.2", 400_000, 128_000, [1.75, 14, 0.175, 0]),
    entry("openai", "gpt-5.1", 400_000, 128_000, [1.25, 10, 0.125, 0]),
    entry("openai", "gpt-5", 400_000, 128_000, [1.25, 10, 0.125, 0]),
    entry("openai", "gpt-5-mini", 400_000, 128_000, [0.25, 2, 0.025, 0]),
    entry("openai", "gpt-5-nano", 400_000, 128_000, [0.05, 0.4, 0.005, 0]),
    entry("openai", "gpt-4.1", 1_047_576, 32_768, [2, 8, 0.5, 0]),
    entry("openai", "gpt-4.1-mini", 1_047_576, 32_768, [0.4, 1.6, 0.1, 0]),
    entry("openai", "gpt-4.1-nano", 1_047_576, 32_768, [0.1, 0.4, 0.025, 0]),
    entry("openai", "gpt-4o", 128_000, 16_384, [2.5, 10, 1.25, 0]),
    entry("openai", "gpt-4o-mini", 128_000, 16_384, [0.15, 0.6, 0.075, 0]),
    entry("openai", "o3", 200_000, 100_000, [2, 8, 0.5, 0]),
    entry("openai", "o4-mini", 200_000, 100_000, [1.1, 4.4, 0.275, 0]),
    // Anthropic
    entry("anthropic", "claude-opus-4-7", 1_000_000, 128_000, [5, 25, 0.5, 6.25]),
    entry("anthropic", "claude-opus-4-6", 1_000_000, 128_000, [5, 25, 0.5, 6.25]),
    entry("anthropic", "claude-opus-4-5", 200_000, 64_000, [5, 25, 0.5, 6.25]),
    entry("anthropic", "claude-opus-4-1", 200_000, 32_000, [15, 75, 1.5, 18.75]),
    entry("anthropic", "claude-opus-4", 200_000, 32_000, [15, 75, 1.5, 18.75], ["claude-opus-4-0"]),
    entry("anthropic", "claude-sonnet-4-6", 1_000_000, 64_000, [3, 15, 0.3, 3.75]),
    entry("anthropic", "claude-sonnet-4-5", 200_000, 64_000, [3, 15, 0.3, 3.75]),
    entry("anthropic", "claude-sonnet-4", 200_000, 64_000, [3, 15, 0.3, 3.75], ["claude-sonnet-4-0"]),
    entry("anthropic", "claude-haiku-4-5", 200_000, 64_000, [1, 5, 0.1, 1.25]),
    entry("anthropic", "claude-3-7-sonnet", 200_000, 64_000, [3, 15, 0.3, 3.75]),
    entry("anthropic", "claude-3-5-haiku", 200_000, 8_192, [0.8, 4, 0.08, 1]),
    // Google: Gemini 2.5 Pro and 3.x Pro cost more for prompts over 200k tokens; that tier is not modelled.
    entry("google", "gemini-3.1-pro-preview", 1_048_576, 65_536, [2, 12, 0.2, 0]),
    entry("google", "gemini-3-pro-preview", 1_000_000, 64_000, [2, 12, 0.2, 0]),
    entry("google", "gemini-3-flash-preview", 1_048_576, 65_536, [0.5, 3, 0.05, 0]),
    entry("google", "gemini-2.5-pro", 1_048_576, 65_536, [1.25, 10, 0.125, 0]),
    entry("google", "gemini-2.5-flash", 1_048_576, 65_536, [0.3, 2.5, 0.03, 0], ["gemini-flash-latest"]),
    entry("google", "gemini-2.5-flash-lite", 1_048_576, 65_536, [0.1, 0.4, 0.025, 0], ["gemini-flash-lite-latest"]),
    entry("google", "gemini-2.0-flash", 1_048_576, 8_192, [0.1, 0.4, 0.025, 0])
  ]
}

// ---------------------------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------------------------

// Lower case, no routing prefix (`anthropic/…`, `models/…`), dots as dashes (`claude-sonnet-4.5` is how
// OpenRouter spells `claude-sonnet-4-5`).
const normalize = (id: string): string => {
  const lower = id.trim().toLowerCase()
  return lower.slice(lower.lastIndexOf("/") + 1).replaceAll(".", "-")
}

// A trailing date or version: `-20250929`, `-2024-08-06`, `@20250929`, `-latest`, `-001`, `-v1:0`, `:0`.
const VERSION_SUFFIX = /(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2}|latest|\d{3}|v\d+(?::\d+)?)|:\d+)$/

/**
 * The entry for a model id, or `undefined`. Tried in order: the id itself or an alias (ignoring case, a
 * routing prefix such as `openai/` or `models/`, and `.` versus `-`), then the same with trailing dates or
 * version tags removed one at a time, so `claude-sonnet-4-5-20250929`, `claude-sonnet-4-5@20250929` and
 * `anthropic/claude-sonnet-4.5` all find `claude-sonnet-4-5`. A longer unknown id never borrows a shorter
 * entry's price: `gpt-4o-audio` does not match `gpt-4o`.
 */
export const lookup = (catalogue: Catalogue, modelId: string): CatalogueEntry | undefined => {
  const byId = new Map<string, CatalogueEntry>()
  // Later entries win, so entries added by a user replace the built-in ones.
  for (const e of catalogue.entries) {
    byId.set(normalize(e.id), e)
    for (const alias of e.aliases ?? []) byId.set(normalize(alias), e)
  }
  let candidate = normalize(modelId)
  for (;;) {
    const found = byId.get(candidate)
    if (found !== undefined) return found
    const stripped = candidate.replace(VERSION_SUFFIX, "")
    if (stripped === candidate || stripped.length === 0) return undefined
    candidate = stripped
  }
}

/**
 * The catalogue with `entries` added; an entry whose id (normalised as in {@link lookup}) is already there
 * replaces the old one, aliases included.
 *
 * @internal
 */
export const withEntries = (catalogue: Catalogue, entries: ReadonlyArray<CatalogueEntry>): Catalogue => {
  const replaced = new Set(entries.map((e) => normalize(e.id)))
  return {
    asOf: catalogue.asOf,
    entries: [...catalogue.entries.filter((e) => !replaced.has(normalize(e.id))), ...entries]
  }
}

/**
 * The prices that apply to a model: `explicit` when given, else the catalogue's entry for `modelId`, else
 * `undefined` (the cost is then 0).
 *
 * @internal
 */
export const pricingFor = (
  catalogue: Catalogue,
  modelId: string,
  explicit?: Pricing | undefined
): Pricing | undefined => explicit ?? lookup(catalogue, modelId)?.pricing

// ---------------------------------------------------------------------------------------------------------
// The service
// ---------------------------------------------------------------------------------------------------------

/** The catalogue in effect: {@link builtIn} unless a layer below provides another. */
export const ModelCatalogue = Context.Reference<Catalogue>("effect-agent/ModelCatalogue", {
  defaultValue: () => builtIn
})

/** The entry for a model id in the catalogue in effect (see {@link lookup}), or `undefined`. */
export const entryFor = (modelId: string): Effect.Effect<CatalogueEntry | undefined> =>
  Effect.map(ModelCatalogue, (catalogue) => lookup(catalogue, modelId))

/** A layer that replaces the whole catalogue. */
export const layer = (catalogue: Catalogue): Layer.Layer<never> => Layer.succeed(ModelCatalogue, catalogue)

/** A layer that adds entries to the catalogue in effect (or replaces those with the same id). */
export const layerWith = (entries: ReadonlyArray<CatalogueEntry>): Layer.Layer<never> =>
  Layer.effect(ModelCatalogue, Effect.map(ModelCatalogue, (catalogue) => withEntries(catalogue, entries)))

/**
 * Provider options with their `pricing` resolved against the catalogue in effect (see {@link pricingFor}):
 * what every provider's `make` runs first, so each message it produces carries its cost.
 *
 * @internal
 */
export const withPricing = <O extends { readonly model: string; readonly pricing?: Pricing | undefined }>(
  options: O
): Effect.Effect<O> =>
  Effect.map(ModelCatalogue, (catalogue) => {
    const pricing = pricingFor(catalogue, options.model, options.pricing)
    return pricing === options.pricing ? options : { ...options, pricing }
  })
