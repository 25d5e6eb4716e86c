/**
 * What a tool running inside a durable run learns about its call: a key that stays the same across
 * crashes and resumes, and which attempt this is. A tool that talks to an outside system can send the key
 * along (e.g. as an `Idempotency-Key` header) so that running it again after a crash does no harm (DR 2.2).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"

/** The durable identity of one tool call. */
export interface ToolAttemptInfo {
  /** `<run id>/<tool call id>`: the same on every attempt of this call, different for every other call. */
  readonly idempotencyKey: string
  /** 1 on the first execution; 2 or more when the call is run again after the process died during it. */
  readonly attempt: number
}

/**
 * Read it from a tool handler with `yield* ToolAttempt`. Outside a durable run it is `undefined`: the call
 * runs once in this process and there is nothing to de-duplicate against.
 */
export const ToolAttempt = Context.Reference<ToolAttemptInfo | undefined>("effect-agent/durable/ToolAttempt", {
  defaultValue: () => undefined
})
