/**
 * TE 3.3, TE 3.4: what a tool's run comes to as an executed result (a success must have the shape of a
 * `ToolResult`; a failure or defect becomes an error result carrying its message), and TE 4: what
 * `afterToolCall` makes of it.
 */
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type { Tool, ToolResult } from "../Tool.ts"
import { ToolResultSchema } from "../Tool.ts"
import type { AfterToolCallResult } from "../ToolBatch.ts"
import { errorResult, type Finalized } from "./callState.ts"
import { causeMessage } from "./errorText.ts"

/**
 * A handler failure that is reported as exactly this error result (content and details) rather than by its
 * message: durable runs replay a stored timeout with it (docs/durability.md DR 4.2).
 */
export class ToolErrorResult extends Error {
  readonly result: ToolResult
  constructor(result: ToolResult) {
    super(result.content.map((c) => (c.type === "text" ? c.text : "")).join(""))
    this.result = result
  }
}

const isValidResult = Schema.is(ToolResultSchema)
const decodeResult = Schema.decodeUnknownExit(ToolResultSchema)

/**
 * The common shape of a result, checked by hand first because every call's result goes through it (the
 * Schema's check costs several times more); anything less plain is left to the Schema, which also explains
 * a failure.
 */
const isPlainResult = (value: unknown): value is ToolResult => {
  if (typeof value !== "object" || value === null) return false
  const { content, terminate } = value as { readonly content?: unknown; readonly terminate?: unknown }
  if (!Array.isArray(content) || (terminate !== undefined && typeof terminate !== "boolean")) return false
  for (const block of content) {
    if (typeof block !== "object" || block === null) return false
    const b = block as {
      readonly type?: unknown
      readonly text?: unknown
      readonly data?: unknown
      readonly mimeType?: unknown
    }
    if (b.type === "text") {
      if (typeof b.text !== "string" || "textSignature" in b) return false
    } else if (b.type !== "image" || typeof b.data !== "string" || typeof b.mimeType !== "string") {
      return false
    }
  }
  return true
}

/** A tool's exit as its executed result: failures, defects, interruptions and invalid results become error results. */
export const executedResult = (tool: Tool.Any, exit: Exit.Exit<ToolResult, unknown>): Finalized => {
  if (Exit.isSuccess(exit)) {
    const value = exit.value
    if (isPlainResult(value) || isValidResult(value)) return { result: value, isError: false }
    const decoded = decodeResult(value)
    const reason = Exit.isFailure(decoded) ? causeMessage(decoded.cause) : "unexpected shape"
    return errorResult(`Tool ${tool.name} returned an invalid result: ${reason}`)
  }
  if (Cause.hasInterruptsOnly(exit.cause)) return errorResult(`Tool ${tool.name} was interrupted`)
  const settled = exit.cause.reasons.find((r) => r._tag === "Fail" && r.error instanceof ToolErrorResult)
  if (settled?._tag === "Fail") return { result: (settled.error as ToolErrorResult).result, isError: true }
  return errorResult(causeMessage(exit.cause))
}

/** TE 4: `afterToolCall`'s overrides, field by field; an absent or null field keeps the executed value. */
export const applyOverride = (executed: Finalized, override: AfterToolCallResult | undefined | void): Finalized => {
  if (!override) return executed
  const { result } = executed
  const terminate = override.terminate ?? result.terminate
  return {
    result: {
      content: override.content ?? result.content,
      details: override.details ?? result.details,
      ...(terminate !== undefined ? { terminate } : {})
    },
    isError: override.isError ?? executed.isError
  }
}
