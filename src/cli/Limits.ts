/**
 * The limits of each task the command line runs (docs/agent-loop.md AL 5; docs/cli.md CLI 13): flags with
 * defaults that suit a person at the keyboard (a task that loops stops on its own, at a cost nobody would
 * be surprised by), the `RunLimits` they make, and the one line that says a task was stopped.
 */
import * as Flag from "effect/cli/Flag"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { Catalogue } from "../providers/ModelCatalogue.ts"
import * as RunLimits from "../RunLimits.ts"
import { terminalSafe } from "./internal/terminalText.ts"
import { UsageError } from "./startup.ts"
import * as Usage from "./Usage.ts"

/** The defaults: generous for real work, small enough to stop a run that goes round in circles. */
export const DEFAULT_LIMITS = {
  maxTurns: 100,
  maxToolCalls: 0,
  maxInputTokens: 0,
  maxOutputTokens: 0,
  maxCost: 5,
  maxMinutes: 60,
  maxRepeats: 3
} as const

const off = " (0: no limit)"

/** The limit flags; every one of them takes 0 for no limit. */
export const limitFlags = {
  maxTurns: Flag.Int("max-turns").pipe(
    Flag.withDescription(`Model calls one task may make${off}; default ${DEFAULT_LIMITS.maxTurns}.`),
    Flag.withDefault(DEFAULT_LIMITS.maxTurns)
  ),
  maxToolCalls: Flag.Int("max-tool-calls").pipe(
    Flag.withDescription(`Tool calls one task may make${off}; default none.`),
    Flag.withDefault(DEFAULT_LIMITS.maxToolCalls)
  ),
  maxInputTokens: Flag.Int("max-input-tokens").pipe(
    Flag.withDescription(`Prompt tokens (cache included) one task may use${off}; default none.`),
    Flag.withDefault(DEFAULT_LIMITS.maxInputTokens)
  ),
  maxOutputTokens: Flag.Int("max-output-tokens").pipe(
    Flag.withDescription(`Tokens the model may write in one task${off}; default none.`),
    Flag.withDefault(DEFAULT_LIMITS.maxOutputTokens)
  ),
  maxCost: Flag.Finite("max-cost").pipe(
    Flag.withDescription(
      `Dollars one task may spend, priced as the usage line prices them${off}; default ${DEFAULT_LIMITS.maxCost}.`
    ),
    Flag.withDefault(DEFAULT_LIMITS.maxCost)
  ),
  maxMinutes: Flag.Int("max-minutes").pipe(
    Flag.withDescription(`Minutes one task may take${off}; default ${DEFAULT_LIMITS.maxMinutes}.`),
    Flag.withDefault(DEFAULT_LIMITS.maxMinutes)
  ),
  maxRepeats: Flag.Int("max-repeats").pipe(
    Flag.withDescription(
      `Times a tool may fail with the same arguments and the same error before the task stops${off}; default ${DEFAULT_LIMITS.maxRepeats}.`
    ),
    Flag.withDefault(DEFAULT_LIMITS.maxRepeats)
  )
}

/** The values of {@link limitFlags}. */
export type LimitOptions = { readonly [K in keyof typeof limitFlags]: number }

/** The option that sets each limit, by the reason it stops a run with. */
const OPTION_OF: Record<RunLimits.LimitReached["_tag"], keyof LimitOptions> = {
  MaxTurns: "maxTurns",
  MaxToolCalls: "maxToolCalls",
  MaxInputTokens: "maxInputTokens",
  MaxOutputTokens: "maxOutputTokens",
  MaxCost: "maxCost",
  MaxDuration: "maxMinutes",
  RepeatedFailure: "maxRepeats"
}

const FLAG_OF_OPTION: Record<keyof LimitOptions, string> = {
  maxTurns: "--max-turns",
  maxToolCalls: "--max-tool-calls",
  maxInputTokens: "--max-input-tokens",
  maxOutputTokens: "--max-output-tokens",
  maxCost: "--max-cost",
  maxMinutes: "--max-minutes",
  maxRepeats: "--max-repeats"
}

/**
 * The limits the flags ask for: each flag that is not 0. A negative value, or a count that is not a whole
 * number, is refused with one line naming the flag. Cost is priced as the usage line prices it: the
 * provider's figure, else the model catalogue's price.
 */
export const limitsOf = (
  options: LimitOptions,
  catalogue?: Catalogue
): Effect.Effect<RunLimits.RunLimits, UsageError> => {
  for (const key of Object.keys(FLAG_OF_OPTION) as Array<keyof LimitOptions>) {
    const value = options[key]
    const whole = key === "maxCost" || Number.isSafeInteger(value)
    if (!(value >= 0) || !whole) {
      const flag = FLAG_OF_OPTION[key]
      return Effect.fail(
        new UsageError({
          flag,
          message: `${flag} must be 0 (no limit) or a positive ${
            key === "maxCost" ? "amount" : "whole number"
          } (got ${value}).`
        })
      )
    }
  }
  const given = (value: number) => (value > 0 ? value : undefined)
  return Effect.succeed({
    maxTurns: given(options.maxTurns),
    maxToolCalls: given(options.maxToolCalls),
    maxInputTokens: given(options.maxInputTokens),
    maxOutputTokens: given(options.maxOutputTokens),
    maxCost: given(options.maxCost),
    maxDuration: options.maxMinutes > 0 ? Duration.minutes(options.maxMinutes) : undefined,
    maxRepeatedFailures: given(options.maxRepeats),
    costOf: (message) => Usage.costOf(message, catalogue)
  })
}

/**
 * The one line that says a task was stopped, why, and which flag moves the limit. A repeated failure's error
 * is a tool's text: it is kept on the line (line breaks as spaces) and shown with no control character a
 * terminal would act on.
 */
export const stoppedLine = (reason: RunLimits.LimitReached): string => {
  const why = RunLimits.describe(reason).replace(/\s+/g, " ").trim()
  return terminalSafe(`stopped: ${why} (${FLAG_OF_OPTION[OPTION_OF[reason._tag]]} changes it)`)
}
