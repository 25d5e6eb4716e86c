/**
 * Where the command line keeps its sessions: under the state folder (`$EFFECT_AGENT_HOME`, default
 * `~/.effect-agent`), in `sessions/<project>/`, one folder per workspace, never inside the workspace itself
 * (rules CLI 7.x in `docs/cli.md`). Lists a project's sessions for `--continue` and the `--resume` picker.
 *
 * @since 0.1.0
 */
import { Config, Effect, FileSystem, Option, Path } from "effect"
import { createHash } from "node:crypto"
import { homedir } from "node:os"
import * as Session from "../Session.ts"
import type { Message } from "../Message.ts"
import { terminalSafe } from "./internal/terminalText.ts"

/** The state folder: `$EFFECT_AGENT_HOME` when set and not empty, else `~/.effect-agent` (CLI 7.1). */
export const stateFolder: Effect.Effect<string, never, Path.Path> = Effect.gen(function*() {
  const path = yield* Path.Path
  const given = yield* Config.String("EFFECT_AGENT_HOME").pipe(Config.option, Effect.orElseSucceed(() => Option.none()))
  return Option.isSome(given) && given.value.trim() !== ""
    ? path.resolve(given.value)
    : path.join(homedir(), ".effect-agent")
})

/**
 * The folder name of a workspace: its absolute path made a file name (separators and other unsafe
 * characters as `-`, cut to its last 60 characters) and the first 8 hex digits of the path's SHA-256, so two
 * paths that read the same once flattened (`/a-b`, `/a/b`) still get different folders (CLI 7.1).
 */
export const projectSlug = (root: string): string => {
  const flat = root.replace(/^[/\\]+/, "").replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "")
  const hash = createHash("sha256").update(root).digest("hex").slice(0, 8)
  return `${flat.slice(-60).replace(/^-+/, "") || "root"}-${hash}`
}

/** The sessions folder of a workspace: `<state>/sessions/<project>/`. */
export const projectFolder = (root: string): Effect.Effect<string, never, Path.Path> =>
  Effect.gen(function*() {
    const path = yield* Path.Path
    return path.join(yield* stateFolder, "sessions", projectSlug(root))
  })

/** A saved session as the picker shows it. */
export interface SessionSummary {
  readonly path: string
  /** Last written, in milliseconds since the epoch. */
  readonly modified: number
  readonly bytes: number
  readonly messages: number
  /** The text of the first user message, on one line; empty when there is none. */
  readonly firstPrompt: string
}

const firstPromptOf = (messages: ReadonlyArray<Message>): string => {
  const first = messages.find((m) => m.role === "user")
  if (first === undefined || first.role !== "user") return ""
  const text = typeof first.content === "string"
    ? first.content
    : first.content.map((block) => block.type === "text" ? block.text : "[image]").join(" ")
  return text.replace(/\s+/g, " ").trim()
}

/**
 * The sessions saved for a workspace, newest first (by last write). A file that cannot be read as a session
 * is left out of the list rather than failing it: the picker shows what can be resumed (CLI 7.3).
 */
export const list = Effect.fn("SessionStore.list")(function*(root: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const folder = yield* projectFolder(root)
  const names = yield* fs.readDirectory(folder).pipe(Effect.orElseSucceed(() => [] as Array<string>))
  const found: Array<SessionSummary> = []
  for (const name of names) {
    if (!name.endsWith(".jsonl")) continue
    const file = path.join(folder, name)
    const info = yield* Effect.option(fs.stat(file))
    if (Option.isNone(info) || info.value.type !== "File") continue
    const contents = yield* Effect.option(Session.read(file))
    if (Option.isNone(contents)) continue
    found.push({
      path: file,
      modified: Option.match(info.value.mtime, { onNone: () => 0, onSome: (at) => at.getTime() }),
      bytes: Number(info.value.size),
      messages: contents.value.messages.length,
      firstPrompt: firstPromptOf(contents.value.messages)
    })
  }
  // Newest first; the name (a time stamp) breaks ties so the order is stable.
  return found.sort((a, b) => b.modified - a.modified || (a.path < b.path ? 1 : -1))
})

/** The most recent session of a workspace (CLI 7.2), if any. */
export const latest = (root: string) => Effect.map(list(root), (sessions) => sessions[0])

const formatBytes = (bytes: number): string =>
  bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1048576).toFixed(1)} MB`

/** How a session is shown in the picker: date, size, message count and first prompt, on one line. */
export const describe = (session: SessionSummary, width = 100): string => {
  const date = new Date(session.modified).toISOString().slice(0, 16).replace("T", " ")
  const head = `${date}  ${formatBytes(session.bytes).padStart(8)}  ${String(session.messages).padStart(3)} msg  `
  const room = Math.max(10, width - head.length)
  const prompt = session.firstPrompt === "" ? "(no prompt)" : terminalSafe(session.firstPrompt)
  return head + (prompt.length > room ? prompt.slice(0, room - 1) + "…" : prompt)
}
