/**
 * The system prompt the command line gives the model: the instructions (ours, or `--system-prompt`), the
 * project's context files (`AGENTS.md`, `CLAUDE.md`) found in the workspace and every folder above it, the
 * working folder, the date and the tools, then `--append-system-prompt` (rules CLI 6.x in `docs/cli.md`).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import { looksBinary, readBounded } from "./internal/files.ts"

/** The instructions used when `--system-prompt` is not given. */
export const DEFAULT_INSTRUCTIONS = [
  "You are a careful coding agent working in a workspace folder.",
  "Use the tools to look before you change anything; prefer small, exact edits.",
  "Paths are relative to the workspace root. Say plainly what you did and what failed."
].join(" ")

/** The file names read as project context, in the order they are taken within one folder. */
const CONTEXT_FILE_NAMES: ReadonlyArray<string> = ["AGENTS.md", "CLAUDE.md"]

/** The most characters of one context file put in the prompt; the rest is cut with a note (CLI 6.3). */
export const CONTEXT_FILE_MAX_CHARS = 64 * 1024

/** The most bytes read of one context file: enough for {@link CONTEXT_FILE_MAX_CHARS} UTF-16 units of UTF-8. */
const CONTEXT_FILE_MAX_BYTES = CONTEXT_FILE_MAX_CHARS * 3 + 4

/** A context file as loaded. */
export interface ContextFile {
  /** Absolute path. */
  readonly path: string
  readonly text: string
  /** The file was longer than {@link CONTEXT_FILE_MAX_CHARS} and was cut. */
  readonly truncated: boolean
}

/**
 * The context files for a workspace: `<state>/AGENTS.md` (the person's own, for every project) first, then
 * from the outermost folder (the file system root) down to the workspace, `AGENTS.md` then `CLAUDE.md` in
 * each, so the most specific file comes last (CLI 6.1). A file whose real path or text was already taken
 * (`CLAUDE.md` as a link to `AGENTS.md`) is taken once; an unreadable or binary one is skipped (CLI 6.2, 12.5).
 */
export const load = Effect.fn("ProjectContext.load")(function*(root: string, stateFolder?: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const folders: Array<string> = []
  for (let folder = path.resolve(root);; folder = path.dirname(folder)) {
    folders.unshift(folder)
    if (path.dirname(folder) === folder) break
  }
  const candidates = [
    ...(stateFolder === undefined ? [] : [path.join(stateFolder, "AGENTS.md")]),
    ...folders.flatMap((folder) => CONTEXT_FILE_NAMES.map((name) => path.join(folder, name)))
  ]
  const seenPaths = new Set<string>()
  const seenTexts = new Set<string>()
  const files: Array<ContextFile> = []
  for (const candidate of candidates) {
    const info = yield* Effect.option(fs.stat(candidate))
    if (Option.isNone(info) || info.value.type !== "File") continue
    const real = yield* fs.realPath(candidate).pipe(Effect.orElseSucceed(() => candidate))
    if (seenPaths.has(real)) continue
    seenPaths.add(real)
    // Read bounded and without blocking (CLI 12.5): a 3 GB or sparse file is not loaded to keep 64 KB of it,
    // a file swapped for a FIFO since the check above does not stall the start.
    const read = readBounded(real, CONTEXT_FILE_MAX_BYTES)
    if (read._tag !== "File" || looksBinary(read.bytes)) continue
    const trimmed = new TextDecoder().decode(read.bytes).trim()
    if (trimmed === "" || seenTexts.has(trimmed)) continue
    seenTexts.add(trimmed)
    const truncated = read.truncated || trimmed.length > CONTEXT_FILE_MAX_CHARS
    files.push({ path: candidate, text: truncated ? trimmed.slice(0, CONTEXT_FILE_MAX_CHARS) : trimmed, truncated })
  }
  return files as ReadonlyArray<ContextFile>
})

/** What the system prompt is built from. */
export interface SystemPromptParts {
  /** `--system-prompt`: replaces {@link DEFAULT_INSTRUCTIONS}. */
  readonly instructions?: string | undefined
  /** `--append-system-prompt`: added at the very end. */
  readonly append?: string | undefined
  readonly contextFiles: ReadonlyArray<ContextFile>
  /** The working folder (the workspace). */
  readonly workspace: string
  /** Now, in milliseconds since the epoch (from `Clock`, so tests can fix it). */
  readonly now: number
  readonly tools: ReadonlyArray<{ readonly name: string; readonly description: string }>
}

const firstSentence = (text: string): string => {
  const line = text.replace(/\s+/g, " ").trim()
  const end = line.search(/\.(\s|$)/)
  return end === -1 ? line : line.slice(0, end + 1)
}

/**
 * The system prompt, in this order (CLI 6.4): the instructions; each context file under a heading naming
 * its path; the working folder, today's date (UTC, `YYYY-MM-DD`) and the tools with the first sentence of
 * their descriptions; the appended text. `--system-prompt` replaces only the instructions: the project's
 * context and the environment are still given.
 */
export const systemPrompt = (parts: SystemPromptParts): string => {
  const sections = [parts.instructions ?? DEFAULT_INSTRUCTIONS]
  if (parts.contextFiles.length > 0) {
    sections.push(
      "# Project context\n\nInstructions from the project's context files, outermost folder first; a later file is " +
        "more specific and wins where they differ."
    )
    for (const file of parts.contextFiles) {
      sections.push(`## ${file.path}\n\n${file.text}${file.truncated ? "\n\n[cut: the file is longer]" : ""}`)
    }
  }
  const tools = parts.tools.map((tool) => `- ${tool.name}: ${firstSentence(tool.description)}`).join("\n")
  sections.push(
    `# Environment\n\nWorking folder: ${parts.workspace}\nDate: ${new Date(parts.now).toISOString().slice(0, 10)}` +
      (tools === "" ? "" : `\nTools:\n${tools}`)
  )
  if (parts.append !== undefined && parts.append.trim() !== "") sections.push(parts.append)
  return sections.join("\n\n")
}

/**
 * The start-up line naming what was loaded (CLI 6.5): `context: AGENTS.md, ../CLAUDE.md` with paths relative
 * to the workspace (or absolute when outside every parent, e.g. the state folder), plus `custom system
 * prompt` / `appended system prompt` when those flags were given; `undefined` when there is nothing to say.
 */
export const describeLoaded = (
  relative: (path: string) => string,
  files: ReadonlyArray<ContextFile>,
  flags: { readonly instructions: boolean; readonly append: boolean }
): string | undefined => {
  const items = files.map((file) => relative(file.path) + (file.truncated ? " (cut)" : ""))
  if (flags.instructions) items.push("custom system prompt")
  if (flags.append) items.push("appended system prompt")
  return items.length === 0 ? undefined : `context:   ${items.join(", ")}`
}
