/**
 * TE 2.3: a call's arguments as the tool will get them: read as JSON, passed through the tool's
 * `prepareArguments` shim, coerced and validated against its parameter Schema into a fresh value. Every
 * failure is an `InvalidToolArguments` (or a `PrepareFailed` from the shim) whose text says exactly what is
 * wrong, bounded in what it echoes back (TE 9.4).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as SchemaIssue from "effect/SchemaIssue"
import { InvalidToolArguments, type PrepareFailed } from "../ImmediateOutcome.ts"
import type { ToolCall } from "../Message.ts"
import type { Tool } from "../Tool.ts"
import { echo, NotJson, readArguments } from "./arguments.ts"
import { clip } from "./clip.ts"
import { type Decode, decodeUnknownExit } from "./decoding.ts"
import { causeMessage } from "./errorText.ts"
import { userStage } from "./outcomes.ts"

/** Validation issues listed in an outcome text; the rest are counted. */
const MAX_ISSUES_SHOWN = 20

const decoders = new WeakMap<Tool.Any, Decode>()

/** A tool's decoder, built once. Not `Schema.decodeUnknownExit` itself: the Schema may come from another copy of effect. */
const decoderOf = (tool: Tool.Any): Decode => {
  let decode = decoders.get(tool)
  if (decode === undefined) {
    decode = decodeUnknownExit(tool.parameters)
    decoders.set(tool, decode)
  }
  return decode
}

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const pathText = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined): string =>
  path === undefined || path.length === 0
    ? "root"
    : path.map((segment) => String(typeof segment === "object" ? segment.key : segment)).join(".")

const safeJson = (value: unknown): string => {
  try {
    return JSON.stringify(value, null, 2) ?? String(value)
  } catch {
    return String(value)
  }
}

const ids = (toolCall: ToolCall) => ({ toolCallId: toolCall.id, toolName: toolCall.name })

/** The model's text is not a JSON object: the parser's reason and the text, both bounded. */
const notJson = (toolCall: ToolCall, given: NotJson) =>
  new InvalidToolArguments({
    ...ids(toolCall),
    message: `Invalid arguments for tool "${clip(toolCall.name)}": the arguments are not valid JSON: ${
      clip(given.reason)
    }\n\nReceived arguments:\n${echo(given.text)}`,
    issues: [{ path: "root", message: `not valid JSON: ${given.reason}` }]
  })

/** Coerces and validates into a fresh value, or fails with the issues (at most {@link MAX_ISSUES_SHOWN}). */
const validate = (toolCall: ToolCall, tool: Tool.Any, raw: unknown): Effect.Effect<unknown, InvalidToolArguments> => {
  const exit = decoderOf(tool)(tool.coerce(raw))
  if (Exit.isSuccess(exit)) return Effect.succeed(exit.value)
  const error = Cause.findErrorOption(exit.cause)
  const issues = Option.isSome(error)
    ? formatIssues(error.value.issue).issues.map((issue) => ({ path: pathText(issue.path), message: issue.message }))
    : [{ path: "root", message: causeMessage(exit.cause) }]
  // Schema's messages may quote the offending value, and the arguments may be huge: both are bounded (TE 9.4).
  const shown = issues.slice(0, MAX_ISSUES_SHOWN)
  const more = issues.length - shown.length
  const message = `Validation failed for tool "${tool.name}":\n${
    shown.map((i) => `  - ${clip(i.path)}: ${clip(i.message)}`).join("\n")
  }${more > 0 ? `\n  … and ${more} more` : ""}\n\nReceived arguments:\n${echo(safeJson(raw))}`
  return Effect.fail(new InvalidToolArguments({ ...ids(toolCall), message, issues }))
}

/** TE 2.3: the call's validated arguments for `tool`. Complete at once unless the tool's shim waits. */
export const validatedArguments = (
  toolCall: ToolCall,
  tool: Tool.Any
): Effect.Effect<unknown, InvalidToolArguments | PrepareFailed> => {
  const given = readArguments(toolCall)
  if (given instanceof NotJson) return Effect.fail(notJson(toolCall, given))
  const shim = tool.prepareArguments
  if (shim === undefined) return validate(toolCall, tool, given)
  return Effect.flatMapEager(
    userStage(toolCall, "prepareArguments", () => shim(given)),
    (raw) => validate(toolCall, tool, raw)
  )
}
