/**
 * Approvals for tools that change things. `write`, `edit` and `bash` run only when the person at the
 * terminal says yes (or `--yes` was given); with no terminal to ask they are blocked with a reason the model
 * can read. Some commands are refused whatever was said. In the interactive mode the person sees what the
 * call would do (a coloured diff for `edit` and `write`, the command for `bash`) and answers y / n / a / e
 * (rules CLI 4.1-4.5).
 */
import { diffLines } from "diff"
import * as Effect from "effect/Effect"
import { existsSync } from "node:fs"
import { isAbsolute, relative, resolve } from "node:path"
import type { BeforeToolCallContext, BeforeToolCallResult } from "../ToolExecution.ts"
import { refusal } from "./CommandPolicy.ts"
import { looksBinary, readBounded, realInside } from "./internal/files.ts"
import { terminalSafe } from "./internal/terminalText.ts"

/** The tools that need a yes before they run. */
export const NEEDS_APPROVAL: ReadonlySet<string> = new Set(["write", "edit", "bash"])

/** A call waiting for the person's answer. */
export interface ApprovalRequest {
  readonly toolName: string
  readonly toolCallId: string
  readonly args: unknown
}

/** The person's answer to a call. */
export type Decision =
  /** `y`: run this call. */
  | { readonly _tag: "Allow" }
  /** `a`: run this call and every later call of the same tool in this session without asking (CLI 4.3). */
  | { readonly _tag: "AllowAlways" }
  /** `n`, or `e` with the reason the model is told (CLI 4.4). */
  | { readonly _tag: "Deny"; readonly reason?: string | undefined }

/** How approvals are decided. */
export type ApprovalMode =
  /** Every call is allowed (`--yes`). */
  | { readonly _tag: "AllowAll" }
  /** The person is asked; `ask` returns their answer. */
  | { readonly _tag: "Ask"; readonly ask: (question: string) => Effect.Effect<boolean> }
  /** The person judges the call with what it would do in front of them (the interactive mode). */
  | { readonly _tag: "Judge"; readonly judge: (request: ApprovalRequest) => Effect.Effect<Decision> }
  /** No one can be asked: calls that need approval are blocked. */
  | { readonly _tag: "NoTerminal" }

/** The question shown for a call: the tool and its exact arguments. */
const question = (toolName: string, args: unknown): string => `Allow ${toolName} ${JSON.stringify(args, null, 2)}?`

/** The blocked result of a call the person declined, with their reason when they gave one (CLI 4.4). */
const declinedReason = (toolName: string, reason?: string): string =>
  reason === undefined || reason.trim() === ""
    ? `The user declined this ${toolName} call. It was not run.`
    : `The user declined this ${toolName} call. It was not run. The user said: ${reason.trim()}`

/**
 * The `beforeToolCall` hook implementing the approval policy for the tools named in `needsApproval` (default:
 * {@link NEEDS_APPROVAL}; the command line adds every MCP server's tool). Each hook remembers the tools the
 * person allowed with `a` for as long as it lives (one session); the command policy refuses what it refuses
 * even then.
 */
export const approvalHook = (mode: ApprovalMode, needsApproval: ReadonlySet<string> = NEEDS_APPROVAL) => {
  const always = new Set<string>()
  return (context: BeforeToolCallContext): Effect.Effect<BeforeToolCallResult | undefined> => {
    const name = context.toolCall.name
    if (!needsApproval.has(name)) return Effect.succeed(undefined)
    if (name === "bash") {
      const command = (context.args as { readonly command?: unknown } | undefined)?.command
      const why = typeof command === "string" ? refusal(command) : undefined
      if (why !== undefined) {
        return Effect.succeed({ block: true, reason: `Refused by policy: ${why}. Do not retry this command.` })
      }
    }
    switch (mode._tag) {
      case "AllowAll":
        return Effect.succeed(undefined)
      case "NoTerminal":
        return Effect.succeed({
          block: true,
          reason:
            `${name} needs the user's approval, but there is no terminal to ask. It was not run. The user can rerun with --yes to allow it.`
        })
      case "Ask":
        return Effect.map(
          mode.ask(question(name, context.args)),
          (yes) => yes ? undefined : { block: true, reason: declinedReason(name) }
        )
      case "Judge":
        if (always.has(name)) return Effect.succeed(undefined)
        return Effect.map(
          mode.judge({ toolName: name, toolCallId: context.toolCall.id, args: context.args }),
          (decision) => {
            switch (decision._tag) {
              case "Allow":
                return undefined
              case "AllowAlways":
                always.add(name)
                return undefined
              case "Deny":
                return { block: true, reason: declinedReason(name, decision.reason) }
            }
          }
        )
    }
  }
}

/** What an `edit` or `write` call would change, given the file's text now (`undefined`: no such file). */
const proposedText = (toolName: string, args: unknown, before: string | undefined): string | undefined => {
  const record = (typeof args === "object" && args !== null ? args : {}) as Record<string, unknown>
  if (toolName === "write") return typeof record.content === "string" ? record.content : undefined
  if (
    toolName === "edit" && before !== undefined && typeof record.oldText === "string" &&
    typeof record.newText === "string"
  ) {
    const at = before.indexOf(record.oldText)
    // The tool refuses a text found zero or several times; the preview then shows the two texts instead.
    if (at === -1 || before.indexOf(record.oldText, at + 1) !== -1) return undefined
    return before.slice(0, at) + record.newText + before.slice(at + record.oldText.length)
  }
  return undefined
}

/** The largest file a preview diffs against (CLI 12.4). */
export const PREVIEW_MAX_BYTES = 1024 * 1024

/** A file that is there but is not diffed: why, for the person. */
export interface Unshown {
  readonly unshown: string
}

/**
 * The text of the file an `edit` or `write` call names, for its preview (CLI 12.4): `undefined` when there is
 * no such file, the text when it is a text file of at most {@link PREVIEW_MAX_BYTES} whose real location is in
 * the workspace, else why it is not shown. Read without blocking: a FIFO the call names does not freeze the
 * terminal, a link out of the workspace is not shown.
 */
export const currentFile = (root: string, args: unknown): string | Unshown | undefined => {
  const given = (args as { readonly path?: unknown } | undefined)?.path
  if (typeof given !== "string") return undefined
  const full = resolve(root, given)
  const rel = relative(root, full)
  if (rel.startsWith("..") || isAbsolute(rel)) return { unshown: "outside the workspace" }
  const real = realInside(root, full)
  if (real === undefined) return existsSync(full) ? { unshown: "a link out of the workspace" } : undefined
  const read = readBounded(real, PREVIEW_MAX_BYTES)
  switch (read._tag) {
    case "Unreadable":
      return undefined
    case "NotAFile":
      return { unshown: "not a regular file" }
    case "File":
      if (read.truncated) return { unshown: `a file of ${read.size} bytes, too large to diff here` }
      if (looksBinary(read.bytes)) return { unshown: "a binary file" }
      return new TextDecoder().decode(read.bytes)
  }
}

/** Lines of a diff shown, at most; the rest is counted. */
const PREVIEW_LINES = 40
const CONTEXT_LINES = 3
/**
 * The most line edits the diff looks for (CLI 12.1). Finding a diff costs about the texts' length times the
 * edits, done while the terminal waits: two unrelated texts of 20 000 lines took 90 s. Beyond this the
 * preview counts the lines instead.
 */
const MAX_DIFF_EDITS = 1000

/**
 * What a call would do, as lines for the person: a unified-style diff (red removed, green added, three
 * lines of context) for `edit` and `write`, the command for `bash`, the arguments for anything else (CLI 4.1).
 * Everything from the model is made terminal-safe.
 */
export const preview = (
  request: ApprovalRequest,
  current: string | Unshown | undefined,
  options: { readonly color: boolean }
): Array<string> => {
  const unshown = typeof current === "object" ? current.unshown : undefined
  const before = typeof current === "string" ? current : undefined
  const paint = (text: string, code: string) => options.color ? `\x1b[${code}m${text}\x1b[0m` : text
  const record = (typeof request.args === "object" && request.args !== null ? request.args : {}) as Record<
    string,
    unknown
  >
  const path = typeof record.path === "string" ? terminalSafe(record.path) : ""
  if (request.toolName === "bash") {
    const command = typeof record.command === "string" ? record.command : JSON.stringify(request.args)
    return terminalSafe(command).split("\n").map((line, i) => paint(`${i === 0 ? "$" : " "} ${line}`, "1"))
  }
  if (request.toolName === "edit" || request.toolName === "write") {
    const after = proposedText(request.toolName, request.args, before)
    const header = request.toolName === "write"
      ? paint(`${current === undefined ? "new file" : "overwrite"} ${path}`, "1")
      : paint(`edit ${path}`, "1")
    // The file is there but not diffed: say why, then the call's own text (CLI 12.4).
    if (unshown !== undefined) {
      const note = paint(`  (the file now is ${unshown}: not shown)`, "2")
      return request.toolName === "write"
        ? [header, note, ...diffPreview("", String(record.content ?? ""), paint)]
        : [header, note, ...diffPreview(String(record.oldText ?? ""), String(record.newText ?? ""), paint)]
    }
    const [from, to] = after !== undefined
      ? [before ?? "", after]
      : [String(record.oldText ?? ""), String(record.newText ?? "")]
    return [header, ...diffPreview(from, to, paint)]
  }
  return JSON.stringify(request.args, null, 2).split("\n").map(terminalSafe)
}

const diffPreview = (from: string, to: string, paint: (text: string, code: string) => string): Array<string> => {
  const lines: Array<{ readonly mark: " " | "-" | "+"; readonly text: string }> = []
  const parts = diffLines(from, to, { maxEditLength: MAX_DIFF_EDITS })
  if (parts === undefined) {
    const count = (text: string) => text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0)
    return [paint(`  (too many changes to show: ${count(from)} lines now, ${count(to)} lines after)`, "2")]
  }
  for (const part of parts) {
    const body = part.value.endsWith("\n") ? part.value.slice(0, -1) : part.value
    const mark = part.added ? "+" : part.removed ? "-" : " "
    for (const text of body.split("\n")) lines.push({ mark, text })
  }
  // Keep the changed lines and a few lines of context around each.
  const keep = lines.map(() => false)
  lines.forEach((line, i) => {
    if (line.mark === " ") return
    for (let j = Math.max(0, i - CONTEXT_LINES); j <= Math.min(lines.length - 1, i + CONTEXT_LINES); j++) keep[j] = true
  })
  const out: Array<string> = []
  let skipped = false
  lines.forEach((line, i) => {
    if (!keep[i]) {
      if (!skipped) out.push(paint("  …", "2"))
      skipped = true
      return
    }
    skipped = false
    const text = `${line.mark} ${terminalSafe(line.text)}`
    out.push(line.mark === "+" ? paint(text, "32") : line.mark === "-" ? paint(text, "31") : paint(text, "2"))
  })
  if (out.length === 0) return [paint("  (no change)", "2")]
  return out.length > PREVIEW_LINES
    ? [...out.slice(0, PREVIEW_LINES), paint(`  … ${out.length - PREVIEW_LINES} more lines`, "2")]
    : out
}
