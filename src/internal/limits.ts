/**
 * What a run has used, against its limits (docs/agent-loop.md, AL 5). Every count comes from the run's own
 * responses and tool results, so a durable run that replays them after a crash counts the same again; wall
 * time is read through {@link LimitClock}, which a durable run replaces with readings it stores.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type AssistantMessage, emptyUsage, text, toolCallsOf, type ToolResultMessage, type Usage } from "../Message.ts"
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

/** A run's counts at its start; `startedAt` is when its wall time counts from. */
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

const COUNTS = [
  "maxTurns",
  "maxToolCalls",
  "maxInputTokens",
  "maxOutputTokens",
  "maxCost",
  "maxRepeatedFailures"
] as const

/**
 * What is wrong with a run's limits, in one sentence, or `undefined` (AL 5.6): every count a number of at
 * least 0 (not NaN), the wall time a duration of at least 0, `costOf` a function.
 */
export const limitsProblem = (limits: RunLimits): string | undefined => {
  for (const name of COUNTS) {
    const value: unknown = limits[name]
    if (value !== undefined && !(typeof value === "number" && value >= 0)) {
      return `${name} must be a number of at least 0, not ${shownValue(value)}`
    }
  }
  const duration = limits.maxDuration
  if (duration !== undefined && !(millisOf(duration) >= 0)) {
    return `maxDuration must be a duration of at least 0 (milliseconds, or text such as "5 minutes"), not ${
      shownValue(duration)
    }`
  }
  const costOf: unknown = limits.costOf
  if (costOf !== undefined && typeof costOf !== "function") {
    return `costOf must be a function, not ${shownValue(costOf)}`
  }
  return undefined
}

/** A duration in milliseconds, NaN when it is not one (`Duration.fromInput` reads NaN as zero). */
const millisOf = (input: Duration.Input): number => {
  if (typeof input === "number") return input
  const decoded = Duration.fromInput(input)
  return Option.isSome(decoded) ? Duration.toMillis(decoded.value) : NaN
}

const shownValue = (value: unknown): string => {
  if (typeof value === "string") return JSON.stringify(clip(value))
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value)
  return value === null ? "null" : `a value of type ${typeof value}`
}

/** An assistant message the loop writes itself, in place of a model call (AL 5.3, AL 5.6). */
const fromLoop = (info: ModelInfo, timestamp: number) => ({
  role: "assistant" as const,
  api: info.api,
  provider: info.provider,
  model: info.model,
  usage: emptyUsage,
  timestamp
})

/**
 * The turn's message of a run whose limits are wrong (AL 5.6): no model call, an error the run ends with, as
 * with a model that failed (AL 3.2).
 */
export const invalidLimitsMessage = (info: ModelInfo, problem: string, timestamp: number): AssistantMessage => ({
  ...fromLoop(info, timestamp),
  content: [],
  stopReason: "error",
  errorMessage: `Invalid run limits: ${problem}`
})

/** A count a response reports: a finite number, or nothing (a provider that left it out counts as none). */
const amount = (value: number | undefined): number => typeof value === "number" && Number.isFinite(value) ? value : 0

/**
 * Counts a model call and what its response used. A response without usage, or without a cost, counts as
 * using none (AL 5.1). Returns what a caller's `costOf` threw, if it threw: the response then counts as
 * costing nothing, and the caller logs it.
 */
export const countResponse = (used: Used, limits: RunLimits, message: AssistantMessage): unknown => {
  const usage: Partial<Usage> = message.usage ?? {}
  used.turns++
  used.toolCalls += toolCallsOf(message).length
  used.inputTokens += amount(usage.input) + amount(usage.cacheRead) + amount(usage.cacheWrite)
  used.outputTokens += amount(usage.output)
  if (limits.costOf === undefined) {
    used.cost += amount(usage.cost?.total)
    return undefined
  }
  try {
    used.cost += amount(limits.costOf(message))
    return undefined
  } catch (error) {
    return error
  }
}

/**
 * JSON with the keys of every object sorted, so that `{a, b}` and `{b, a}` are the same arguments. Never
 * throws on what a model or a hook may put in arguments: a bigint is written with an `n`, a cycle as
 * `"[cycle]"`; anything else JSON cannot write (a getter that throws) gives `undefined`, and the failure is
 * then not counted as a repeat of any other.
 */
const canonical = (value: unknown): string | undefined => {
  // The objects being written, outermost first, as JSON.stringify visits them (the sorted copies it recurses
  // into), with the originals they stand for: a value met again inside itself is a cycle.
  const open: Array<unknown> = []
  const originals: Array<unknown> = []
  try {
    return JSON.stringify(value, function(this: unknown, _key, v: unknown) {
      if (typeof v === "bigint") return `${v}n`
      if (typeof v !== "object" || v === null) return v
      while (open.length > 0 && open[open.length - 1] !== this) {
        open.pop()
        originals.pop()
      }
      if (originals.includes(v)) return "[cycle]"
      const written = Array.isArray(v)
        ? v
        : Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      open.push(written)
      originals.push(v)
      return written
    })
  } catch {
    return undefined
  }
}

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
    const args = canonical(calls[i]?.arguments)
    if (args === undefined) return
    const key = `${result.toolName}\u0000${args}\u0000${error}`
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
    const limit = millisOf(limits.maxDuration)
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
  ...fromLoop(info, timestamp),
  content: [text(`[The run was stopped before the task was done: ${describe(reason)}.]`)],
  stopReason: "stop"
})
