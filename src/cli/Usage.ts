/**
 * Tokens, cost and context use of a conversation, per turn and in total, as the command line shows them:
 * `↑ 12.3k ↓ 840 $0.0421 ctx 6%` (rules CLI 5.x in `docs/cli.md`).
 *
 * A tally is computed from the assistant messages' `usage`: the tokens each request read (`↑`, input plus
 * cache reads and writes, because all of it is prompt the model read) and wrote (`↓`), and their cost. A
 * message whose provider reported no cost (a local server, a model the provider had no price for) is priced
 * from the model catalogue when the catalogue knows the model; otherwise its cost stays 0. The context
 * share is the size of the last request (its prompt plus its answer, which the next request carries) over
 * the model's context window from the catalogue; unknown when the catalogue does not know the model.
 *
 * @since 0.1.0
 */
import type { AgentMessage, AssistantMessage } from "../Message.ts"
import { isMessage } from "../Message.ts"
import * as ModelCatalogue from "../providers/ModelCatalogue.ts"

/** Token counts and cost of one or more model requests. */
export interface UsageTally {
  /** Prompt tokens read, cache reads and writes included. */
  readonly input: number
  /** Of `input`, the tokens read from the provider's cache. */
  readonly cacheRead: number
  /** Of `input`, the tokens written to the provider's cache. */
  readonly cacheWrite: number
  /** Tokens the model wrote. */
  readonly output: number
  /** Dollars. */
  readonly cost: number
  /** Model requests counted. */
  readonly requests: number
  /** Tokens of the last request (prompt and answer): what the next request starts from. */
  readonly contextTokens: number
  /** The last request's model context window, when the catalogue knows the model. */
  readonly contextWindow: number | undefined
}

/** The tally of nothing: every count 0, the context window unknown. */
export const empty: UsageTally = {
  input: 0,
  cacheRead: 0,
  cacheWrite: 0,
  output: 0,
  cost: 0,
  requests: 0,
  contextTokens: 0,
  contextWindow: undefined
}

/**
 * The cost of one message: the provider's figure when it reported one, else the catalogue's price for the
 * message's model applied to its token counts, else 0 (CLI 5.2).
 */
export const costOf = (
  message: AssistantMessage,
  catalogue: ModelCatalogue.Catalogue = ModelCatalogue.builtIn
): number => {
  const usage = message.usage
  if (usage.cost.total > 0) return usage.cost.total
  const pricing = ModelCatalogue.lookup(catalogue, message.model)?.pricing
  if (pricing === undefined) return 0
  return (usage.input * pricing.input + usage.output * pricing.output + usage.cacheRead * pricing.cacheRead +
    usage.cacheWrite * pricing.cacheWrite) / 1_000_000
}

/** The tally of one assistant message (one model request). */
export const ofMessage = (
  message: AssistantMessage,
  catalogue: ModelCatalogue.Catalogue = ModelCatalogue.builtIn
): UsageTally => {
  const usage = message.usage
  const input = usage.input + usage.cacheRead + usage.cacheWrite
  return {
    input,
    cacheRead: usage.cacheRead,
    cacheWrite: usage.cacheWrite,
    output: usage.output,
    cost: costOf(message, catalogue),
    requests: 1,
    contextTokens: input + usage.output,
    contextWindow: ModelCatalogue.lookup(catalogue, message.model)?.contextWindow
  }
}

/**
 * Two tallies together: counts and cost summed; the context is the later one's when it made a request
 * (the later request is the one that shows how full the context is now), else the earlier one's.
 */
export const add = (earlier: UsageTally, later: UsageTally): UsageTally => ({
  input: earlier.input + later.input,
  cacheRead: earlier.cacheRead + later.cacheRead,
  cacheWrite: earlier.cacheWrite + later.cacheWrite,
  output: earlier.output + later.output,
  cost: earlier.cost + later.cost,
  requests: earlier.requests + later.requests,
  contextTokens: later.requests > 0 ? later.contextTokens : earlier.contextTokens,
  contextWindow: later.requests > 0 ? later.contextWindow : earlier.contextWindow
})

/**
 * The tally of a transcript (or a slice of one, e.g. the messages one turn added): every assistant
 * message counted once, in order; other messages ignored (CLI 5.1).
 */
export const ofMessages = (
  messages: Iterable<AgentMessage>,
  catalogue: ModelCatalogue.Catalogue = ModelCatalogue.builtIn
): UsageTally => {
  let tally = empty
  for (const message of messages) {
    if (isMessage(message) && message.role === "assistant") tally = add(tally, ofMessage(message, catalogue))
  }
  return tally
}

/** The share of the context window in use, 0–100 (may pass 100), or `undefined` when the window is unknown. */
export const contextPercent = (tally: UsageTally): number | undefined =>
  tally.contextWindow === undefined ? undefined : (tally.contextTokens / tally.contextWindow) * 100

/** A token count for a person: `840`, `12.3k`, `1.25M`. */
export const formatTokens = (tokens: number): string => {
  if (tokens < 1000) return String(Math.round(tokens))
  if (tokens < 10_000) return `${(tokens / 1000).toFixed(1)}k`
  if (tokens < 1_000_000) return `${Math.round(tokens / 1000)}k`
  return `${(tokens / 1_000_000).toFixed(2)}M`
}

/** Dollars for a person: four decimals under a dollar (small turns stay visible), two above. */
export const formatCost = (dollars: number): string => dollars < 1 ? `$${dollars.toFixed(4)}` : `$${dollars.toFixed(2)}`

/**
 * One line: `↑ <in> ↓ <out> $<cost> ctx <n>%` (CLI 5.3). The context part is left out when the window is
 * unknown or nothing was requested yet; a share under 1 % shows one decimal so it is never a flat 0.
 */
export const format = (tally: UsageTally): string => {
  const parts = [`↑ ${formatTokens(tally.input)}`, `↓ ${formatTokens(tally.output)}`, formatCost(tally.cost)]
  const percent = tally.requests > 0 ? contextPercent(tally) : undefined
  if (percent !== undefined) parts.push(`ctx ${percent < 1 ? percent.toFixed(1) : Math.round(percent)}%`)
  return parts.join(" ")
}
