/**
 * What a run has used, against its limits (docs/agent-loop.md, AL 5). Every count comes from the run's own
 * responses and tool results, so a durable run that replays them after a crash counts the same again; wall
 * time is read through {@link LimitClock}, which a durable run replaces with readings it stores.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import { type AssistantMessage, emptyUsage, text, toolCallsOf, type ToolResultMessage } from "../Message.ts"
import type { ModelInfo } from "../Model.ts"
import { describe, type LimitReached, type RunLimits } from "../RunLimits.ts"
import { clip } from "./clip.ts"

/**
 * The clock a run's wall-time limit is read from. A durable run provides one whose readings are stored,
 * so that a replay takes the decisions the first execution took.
 */
export const LimitClock = Context.Reference<Effect.Effect<number>>("effect-agent/LimitClock", {
  defaultValue: () => Clock.currentTimeMillis
})

/** One kind of failure: a tool, its arguments and its error. */
interface Failure {
  readonly toolName: string
  readonly error: string
  count: number
}

/** What a run has used so far. */
export interface Used {
  turns: number
  toolCalls: number
  inputTokens: number
  outputTokens: number
  cost: number
  /** The same failure seen most often, and every kind seen, by tool, arguments and error text. */
  worst: Failure | undefined
  readonly failures: Map<string, Failure>
  /** When the run started (read only when it has a wall-time limit). */
  startedAt: number
}

export const nothingUsed = (startedAt: number): Used => ({
  turns: 0,
  toolCalls: 0,
  inputTokens: 0,
  outputTokens: 0,
  cost: 0,
  worst: undefined,
  failures: new Map(),
  startedAt
})

/** Counts a model call and what its response used. */
export const countResponse = (used: Used, limits: RunLimits, message: AssistantMessage): void => {
  const usage = message.usage
  used.turns++
  used.toolCalls += toolCallsOf(message).length
  used.inputTokens += usage.input + usage.cacheRead + usage.cacheWrite
  used.outputTokens += usage.output
  used.cost += limits.costOf === undefined ? usage.cost.total : limits.costOf(message)
}

/** JSON with the keys of every object sorted, so that `{a, b}` and `{b, a}` are the same arguments. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v)

const textOf = (result: ToolResultMessage): string =>
  result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n")

/** Counts the failures of a batch, by tool, arguments and error. */
export const countFailures = (
  used: Used,
  message: AssistantMessage,
  results: ReadonlyArray<ToolResultMessage>
): void => {
  const calls = toolCallsOf(message)
  results.forEach((result, i) => {
    if (!result.isError) return
    const error = textOf(result)
    const key = `${result.toolName}\u0000${canonical(calls[i]?.arguments)}\u0000${error}`
    let failure = used.failures.get(key)
    if (failure === undefined) {
      failure = { toolName: result.toolName, error: clip(error), count: 0 }
      used.failures.set(key, failure)
    }
    failure.count++
    if (used.worst === undefined || failure.count > used.worst.count) used.worst = failure
  })
}

/** The first limit the run has reached, if any (in the order of `RunLimits`' fields). */
export const limitReached = (limits: RunLimits, used: Used, now: number): LimitReached | undefined => {
  const over = (limit: number | undefined, value: number) => limit !== undefined && value >= limit
  if (over(limits.maxTurns, used.turns)) return { _tag: "MaxTurns", limit: limits.maxTurns!, used: used.turns }
  if (over(limits.maxToolCalls, used.toolCalls)) {
    return { _tag: "MaxToolCalls", limit: limits.maxToolCalls!, used: used.toolCalls }
  }
  if (over(limits.maxInputTokens, used.inputTokens)) {
    return { _tag: "MaxInputTokens", limit: limits.maxInputTokens!, used: used.inputTokens }
  }
  if (over(limits.maxOutputTokens, used.outputTokens)) {
    return { _tag: "MaxOutputTokens", limit: limits.maxOutputTokens!, used: used.outputTokens }
  }
  if (over(limits.maxCost, used.cost)) return { _tag: "MaxCost", limit: limits.maxCost!, used: used.cost }
  if (limits.maxDuration !== undefined) {
    const limit = Duration.toMillis(Duration.fromInputUnsafe(limits.maxDuration))
    const elapsed = now - used.startedAt
    if (elapsed >= limit) return { _tag: "MaxDuration", limit, used: elapsed }
  }
  const worst = used.worst
  if (worst !== undefined && over(limits.maxRepeatedFailures, worst.count)) {
    return {
      _tag: "RepeatedFailure",
      limit: limits.maxRepeatedFailures!,
      used: worst.count,
      toolName: worst.toolName,
      error: worst.error
    }
  }
  return undefined
}

/**
 * The note a stopped run leaves in its transcript (AL 5.3): an assistant message, so that the model reads
 * it in a later run and the transcript ends as a finished run's does.
 */
export const limitNote = (info: ModelInfo, reason: LimitReached, timestamp: number): AssistantMessage => ({
  role: "assistant",
  content: [text(`[The run was stopped before the task was done: ${describe(reason)}.]`)],
  api: info.api,
  provider: info.provider,
  model: info.model,
  usage: emptyUsage,
  stopReason: "stop",
  timestamp
})
