/**
 * Reading a tool call's arguments as the model wrote them: the parsed object, or the reason the text is not a
 * JSON object (with the parser's position), so the model is told what is really wrong with what it sent.
 */
import type { ToolCall } from "../Message.ts"
import { clip } from "./clip.ts"

/** The model's argument text could not be read as a JSON object. */
export class NotJson {
  /** The JSON parser's message (with its position), or what the text held instead of an object. */
  readonly reason: string
  /** The text as the model sent it. */
  readonly text: string
  constructor(reason: string, text: string) {
    this.reason = reason
    this.text = text
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const kindOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`

const parseError = (text: string): string | undefined => {
  try {
    JSON.parse(text)
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

const END = "Unexpected end of JSON input"

/**
 * Where the text stops being JSON, for the parser messages that do not say (V8 omits it for an unexpected
 * token): the shortest prefix that fails for another reason than ending early ends at the offending character.
 */
const positionOf = (text: string): number => {
  let low = 1
  let high = text.length
  while (low < high) {
    const mid = (low + high) >>> 1
    const error = parseError(text.slice(0, mid))
    if (error !== undefined && error !== END) high = mid
    else low = mid + 1
  }
  return low - 1
}

/** Parses argument text that must hold a JSON object. */
const parseObject = (text: string): unknown => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    const reason = /position \d+/.test(message)
      ? message
      : message === END
      ? `${message} at position ${text.length} (the end of the text)`
      : `${message} (at position ${positionOf(text)})`
    return new NotJson(reason, text)
  }
  return isPlainObject(parsed) ? parsed : new NotJson(`expected a JSON object, got ${kindOf(parsed)}`, text)
}

/**
 * The arguments to validate, or {@link NotJson}. `rawArguments` (present only when the provider could not
 * parse the model's text) wins over the salvaged `arguments`; arguments that arrive as a string (some models
 * encode the object twice) are parsed when they hold a JSON object. Anything else passes through untouched.
 */
export const readArguments = (toolCall: ToolCall): unknown => {
  const raw = toolCall.rawArguments
  if (raw !== undefined) return parseObject(raw)
  const args: unknown = toolCall.arguments
  return typeof args === "string" ? parseObject(args) : args
}

/** At most this many characters of argument text are echoed back to the model. */
const ARGUMENTS_ECHO_MAX_CHARS = 2_000

/** Argument text to echo back, cut to a bounded length (TE 9.4). */
export const echo = (text: string): string => clip(text, ARGUMENTS_ECHO_MAX_CHARS)
