/**
 * The error of a pattern (`grep`'s regular expression, a glob) that the engine refused.
 *
 * Internal: no entry point exports it.
 */
import { InvalidPattern } from "./errors.ts"
import { clip } from "./internal.ts"

/**
 * The {@link InvalidPattern} for a pattern the regular-expression engine refused (`error` is what it threw):
 * the message names the pattern by its start and end only, and the engine's reason without the copy of
 * the whole pattern that V8 puts in it.
 */
export const invalidPattern = (kind: "regular expression" | "glob pattern", pattern: string, error: unknown) => {
  // V8 says "Invalid regular expression: /<the whole pattern>/<flags>: <reason>": keep the reason only.
  const said = error instanceof Error ? error.message : String(error)
  const reason = said.slice(said.lastIndexOf(": ") + 2)
  const hint = kind === "regular expression"
    ? "Fix it, or pass literal: true to search for the plain string."
    : "Fix it, or use a shorter pattern."
  return new InvalidPattern({
    pattern: clip(pattern),
    message: `Invalid ${kind} ${clip(JSON.stringify(pattern))}: ${clip(reason)}. ${hint}`
  })
}
