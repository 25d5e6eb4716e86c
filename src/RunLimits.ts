/**
 * What one run of the agent loop may use before it stops (docs/agent-loop.md, AL 5): model calls, tool
 * calls, tokens, money, wall time, and the same failing call over and over. A run that reaches a limit ends
 * cleanly at the next point where nothing is in flight (before a model call, never inside a tool batch),
 * says why on `agent_end` (`limitReached`), and leaves a note in its transcript.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import type { AssistantMessage } from "./Message.ts"

/**
 * The limits of a run, each counted from the run's start over what the run itself did. Leave a field out
 * for no limit. A limit is checked before each model call: a run stops once it has used at least that
 * much, so it can go past a limit by what one turn uses (one response's tokens, one batch's calls).
 */
export interface RunLimits {
  /** Model calls. */
  readonly maxTurns?: number | undefined
  /** Tool calls the model asked for (every call of every batch, run or not). */
  readonly maxToolCalls?: number | undefined
  /** Prompt tokens the model read, cache reads and writes included, summed over the run's model calls. */
  readonly maxInputTokens?: number | undefined
  /** Tokens the model wrote, summed over the run's model calls. */
  readonly maxOutputTokens?: number | undefined
  /** Money, in the unit of the responses' `usage.cost` (or of {@link RunLimits.costOf}), summed. */
  readonly maxCost?: number | undefined
  /** Wall-clock time since the run started. */
  readonly maxDuration?: Duration.Input | undefined
  /**
   * How many times the same tool may fail with the same arguments and the same error: the run stops when
   * one such failure has happened this many times (a model going round in circles).
   */
  readonly maxRepeatedFailures?: number | undefined
  /**
   * The cost of one response. Default: what the provider reported (`usage.cost.total`); pass a price list
   * for providers that report none.
   */
  readonly costOf?: ((message: AssistantMessage) => number) | undefined
}

const counted = { limit: Schema.Number, used: Schema.Number }

/** The run made as many model calls as it may. */
export const MaxTurns = Schema.TaggedStruct("MaxTurns", counted)
/** The model asked for as many tool calls as the run may make. */
export const MaxToolCalls = Schema.TaggedStruct("MaxToolCalls", counted)
/** The model read as many prompt tokens as the run may use. */
export const MaxInputTokens = Schema.TaggedStruct("MaxInputTokens", counted)
/** The model wrote as many tokens as the run may use. */
export const MaxOutputTokens = Schema.TaggedStruct("MaxOutputTokens", counted)
/** The run spent as much as it may. */
export const MaxCost = Schema.TaggedStruct("MaxCost", counted)
/** The run took as long as it may (milliseconds). */
export const MaxDuration = Schema.TaggedStruct("MaxDuration", counted)
/** The same tool failed with the same arguments and the same error this many times. */
export const RepeatedFailure = Schema.TaggedStruct("RepeatedFailure", {
  ...counted,
  toolName: Schema.String,
  error: Schema.String
})

/** Why a run stopped before it was done. */
export const LimitReached = Schema.Union([
  MaxTurns,
  MaxToolCalls,
  MaxInputTokens,
  MaxOutputTokens,
  MaxCost,
  MaxDuration,
  RepeatedFailure
]).annotate({ identifier: "LimitReached" })

/** A {@link LimitReached} value. */
export type LimitReached = typeof LimitReached.Type

const amount = (reason: LimitReached, value: number): string => {
  switch (reason._tag) {
    case "MaxTurns":
      return `${value} model call${value === 1 ? "" : "s"}`
    case "MaxToolCalls":
      return `${value} tool call${value === 1 ? "" : "s"}`
    case "MaxInputTokens":
      return `${value} input tokens`
    case "MaxOutputTokens":
      return `${value} output tokens`
    case "MaxCost":
      return `$${Number(value.toFixed(4))}`
    case "MaxDuration":
      return Duration.format(Duration.millis(value))
    case "RepeatedFailure":
      return `${value} time${value === 1 ? "" : "s"}`
  }
}

/** What happened, in one sentence a person or a model can read. */
export const describe = (reason: LimitReached): string => {
  if (reason._tag === "RepeatedFailure") {
    return `the tool ${reason.toolName} failed ${amount(reason, reason.used)} with the same arguments and the ` +
      `same error (the limit is ${amount(reason, reason.limit)}): ${reason.error}`
  }
  return `the run used ${amount(reason, reason.used)}; its limit is ${amount(reason, reason.limit)}`
}
