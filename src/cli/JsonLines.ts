/**
 * The `--json` output: one JSON object per line per agent event, in pi's event shapes, with nothing
 * repeated that an earlier line already said, so the output grows with what happened and not with the
 * square of it.
 *
 * - `message_update` carries only its `assistantMessageEvent`, without the message so far: no `message`,
 *   no `partial`, and for `done` / `error` no final message (the `message_end` line that follows has it).
 *   A text, thinking or tool-call argument delta is just the new piece.
 * - `tool_execution_update` carries no `args` (the call's `tool_execution_start` line has them). When the
 *   text of the partial result only grew since the call's previous update, `partialResult.content` is
 *   replaced by `textAppended`, the text added; otherwise (first update, or text that was cut or changed)
 *   `partialResult` is whole.
 * - Every other event is printed whole: each message once at `message_start` / `message_end`, once more in
 *   its `turn_end` and `agent_end` (a constant factor, never a growing one).
 *
 * Lines are exact JSON (`JSON.stringify`): control characters inside strings are escaped, so a line never
 * holds a raw newline or escape sequence.
 */
import type { AgentEvent } from "../AgentEvent.ts"

/** An encoder for one run's events. It remembers each running call's last text to print only what was added. */
export interface JsonLineEncoder {
  /** The event as one line of JSON, without the newline. */
  readonly encode: (event: AgentEvent) => string
}

/** The text of a partial result made only of text blocks, or undefined when it holds anything else. */
const textOnly = (partial: unknown): string | undefined => {
  if (typeof partial !== "object" || partial === null) return undefined
  const content = (partial as { readonly content?: unknown }).content
  if (!Array.isArray(content)) return undefined
  let text = ""
  for (const block of content) {
    if (typeof block !== "object" || block === null || block.type !== "text" || typeof block.text !== "string") {
      return undefined
    }
    text += block.text
  }
  return content.length === 1 ? text : undefined
}

/** Drops the repeated message from a streaming step, keeping what changed. */
const streamingStep = (step: Extract<AgentEvent, { type: "message_update" }>["assistantMessageEvent"]) => {
  switch (step.type) {
    case "done":
      return { type: step.type, reason: step.reason }
    case "error":
      return { type: step.type, reason: step.reason }
    default: {
      const { partial: _partial, ...rest } = step
      return rest
    }
  }
}

/**
 * `JSON.stringify` that cannot throw: a tool's `details` are arbitrary values, and one that JSON cannot hold
 * (a bigint, a cycle) must not take the run down. Bigints become strings; a value that still fails is
 * replaced by a line naming the event and the reason.
 */
const stringify = (value: { readonly type: string; readonly [key: string]: unknown }): string => {
  try {
    return JSON.stringify(value, (_key, v: unknown) => typeof v === "bigint" ? v.toString() : v)
  } catch (error) {
    const id = (value as { readonly toolCallId?: unknown }).toolCallId
    return JSON.stringify({
      type: value.type,
      ...(typeof id === "string" ? { toolCallId: id } : {}),
      unencodable: error instanceof Error ? error.message : String(error)
    })
  }
}

/** A fresh encoder (one per run of the command). */
export const makeJsonLineEncoder = (): JsonLineEncoder => {
  /** The text of each running call's previous update. */
  const lastText = new Map<string, string>()
  const encode = (event: AgentEvent): string => {
    switch (event.type) {
      case "message_update":
        return stringify({ type: event.type, assistantMessageEvent: streamingStep(event.assistantMessageEvent) })
      case "tool_execution_update": {
        const { args: _args, ...rest } = event
        const text = textOnly(event.partialResult)
        const previous = lastText.get(event.toolCallId)
        if (text === undefined) {
          lastText.delete(event.toolCallId)
          return stringify(rest)
        }
        lastText.set(event.toolCallId, text)
        if (previous === undefined || !text.startsWith(previous)) return stringify(rest)
        const { content: _content, ...others } = event.partialResult as Record<string, unknown>
        return stringify({ ...rest, partialResult: others, textAppended: text.slice(previous.length) })
      }
      case "tool_execution_end":
        lastText.delete(event.toolCallId)
        return stringify(event)
      default:
        return stringify(event)
    }
  }
  return { encode }
}
