/**
 * Where the command line keeps its sessions: under the state folder (`$EFFECT_AGENT_HOME`, default
 * `~/.effect-agent`), in `sessions/<project>/`, one folder per workspace, never inside the workspace itself
 * (rules CLI 7.x in `docs/cli.md`). Lists a project's sessions for `--continue` and the `--resume` picker.
 *
 * @since 0.1.0
 */
import * as Prompt from "effect/cli/Prompt"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Terminal from "effect/Terminal"
import { createHash } from "node:crypto"
import * as StateFolder from "../internal/stateFolder.ts"
import type { Message } from "../Message.ts"
import * as Session from "../Session.ts"
import { displayWidth, graphemes } from "./interactive/internal/text.ts"
import * as PromptInput from "./internal/promptInput.ts"
import { terminalSafe } from "./internal/terminalText.ts"
import { UsageError } from "./startup.ts"

/**
 * The state folder: `$EFFECT_AGENT_HOME` (through `Config`) made absolute when set and not blank, else
 * `~/.effect-agent` (CLI 7.1); the one reading the durable-run store and the prompt history use too.
 */
export const stateFolder: Effect.Effect<string> = StateFolder.stateFolder

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
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
    ? `${(bytes / 1024).toFixed(1)} KB`
    : `${(bytes / 1048576).toFixed(1)} MB`

/** How a session is shown in the picker: date, size, message count and first prompt, on one line. */
export const describe = (session: SessionSummary, width = 100): string => {
  const date = new Date(session.modified).toISOString().slice(0, 16).replace("T", " ")
  const head = `${date}  ${formatBytes(session.bytes).padStart(8)}  ${String(session.messages).padStart(3)} msg  `
  const room = Math.max(10, width - head.length)
  const prompt = session.firstPrompt === "" ? "(no prompt)" : terminalSafe(session.firstPrompt)
  return head + fitCells(prompt, room)
}

/**
 * The text cut to at most `cells` display cells (CLI 12.10): measured by grapheme cluster and display width,
 * so a wide character counts two cells and no emoji or surrogate pair is split; `…` marks a cut.
 */
const fitCells = (text: string, cells: number): string => {
  if (displayWidth(text) <= cells) return text
  let used = 0
  let end = 0
  for (const { index, segment } of graphemes(text)) {
    const width = displayWidth(segment)
    if (used + width > cells - 1) break
    used += width
    end = index + segment.length
  }
  return text.slice(0, end) + "…"
}

/** The picker's question (CLI 7.3); the folder's name is terminal-safe (CLI 12.10). */
export const pickerMessage = (root: string, flag: string): string =>
  `Pick a session of ${terminalSafe(root)} (${flag === "--fork" ? "forked into a new file" : "continued in place"})`

/** The session flags of the command (`--session`, `--resume`, `--continue`, `--fork`). */
export interface SessionFlags {
  readonly session: Option.Option<string>
  /** `Some("")`: the flag was given without a file. */
  readonly resume: Option.Option<string>
  readonly continue: boolean
  /** `Some("")`: the flag was given without a file. */
  readonly fork: Option.Option<string>
}

/** The session flags with the words left for the task (see {@link takeFileWord}). */
export interface SessionFlagsAndWords extends SessionFlags {
  readonly words: ReadonlyArray<string>
}

/**
 * `--resume FILE` and `--fork FILE` written with a space: the flags take their file only as `--resume=FILE`,
 * so FILE arrives as the first word of the task. When `--resume` (or `--fork`) came without a file and the
 * first word names an existing file (or ends in `.jsonl`), that word is the flag's file and not part of the
 * task (CLI 7.4).
 */
export const takeFileWord = Effect.fn("SessionStore.takeFileWord")(function*(
  flags: SessionFlags,
  words: ReadonlyArray<string>
) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const bare = (flag: Option.Option<string>) => Option.isSome(flag) && flag.value === ""
  const first = words[0]
  if (first === undefined || !(bare(flags.resume) || bare(flags.fork))) return { ...flags, words }
  const info = yield* Effect.option(fs.stat(path.resolve(first)))
  const isFile = Option.isSome(info) && info.value.type === "File"
  // A missing `….jsonl` is still meant as the file: reading it then fails with a clear error.
  if (!isFile && !first.endsWith(".jsonl")) return { ...flags, words }
  return {
    ...flags,
    ...(bare(flags.resume) ? { resume: Option.some(first) } : { fork: Option.some(first) }),
    words: words.slice(1)
  } satisfies SessionFlagsAndWords
})

/** Which session file a run reads and which it writes. */
export interface SessionPlan {
  /** The transcript to start from, if any. */
  readonly source: string | undefined
  /** The file this run appends to (made by its first message). */
  readonly target: string
  readonly how: "new" | "resumed" | "continued" | "forked"
  /** A line for the person (e.g. `--continue` found nothing to continue). */
  readonly note: string | undefined
}

/**
 * The picker of `--resume` / `--fork` without a file (CLI 7.3): this folder's sessions, newest first, each
 * with its date, size, message count and first prompt. Fails with a {@link UsageError} when there is none.
 */
const pick = Effect.fn("SessionStore.pick")(function*(root: string, flag: string) {
  const sessions = yield* list(root)
  if (sessions.length === 0) {
    return yield* new UsageError({ flag, message: `${flag}: no saved sessions for ${root} yet.` })
  }
  const terminal = yield* Terminal.Terminal
  const columns = yield* terminal.columns
  return yield* PromptInput.run(Prompt.Select({
    message: pickerMessage(root, flag),
    choices: sessions.map((session) => ({ title: describe(session, Math.max(40, columns - 6)), value: session.path })),
    maxPerPage: 10
  })).pipe(
    Effect.mapError(() => new UsageError({ flag, message: `${flag}: no session picked.` }))
  )
})

/**
 * The plan for the session flags (CLI 7.2-7.4): at most one of `--resume`, `--continue`, `--fork`.
 * `--resume FILE` appends to FILE; `--continue` to this folder's latest session (a new one, with a note, when
 * there is none); `--fork FILE` copies FILE's transcript into a new file and leaves FILE as it was; without a
 * file, `--resume` and `--fork` open the picker, which needs a terminal (`canPick`). `--session FILE` names
 * the file written; otherwise a resumed or continued session is written in place and a new or forked one
 * gets a new file in the project's sessions folder.
 */
export const plan = Effect.fn("SessionStore.plan")(function*(flags: SessionFlags, root: string, canPick: boolean) {
  const path = yield* Path.Path
  const fs = yield* FileSystem.FileSystem
  const chosen = [
    Option.isSome(flags.resume) && "--resume",
    flags.continue && "--continue",
    Option.isSome(flags.fork) && "--fork"
  ]
    .filter((x): x is string => x !== false)
  if (chosen.length > 1) {
    return yield* new UsageError({
      flag: chosen[1],
      message: `${chosen.join(" and ")} cannot be used together: pick one.`
    })
  }
  const fromFlag = (flag: Option.Option<string>, name: string) =>
    Effect.gen(function*() {
      if (Option.isNone(flag)) return undefined
      if (flag.value !== "") {
        const file = path.resolve(flag.value)
        // A FIFO or a device is refused before it is read (CLI 12.13): reading `--fork=fifo` waited for a
        // writer for ever, past SIGTERM, and `/dev/zero` would fill the memory.
        const info = yield* Effect.option(fs.stat(file))
        if (Option.isSome(info) && info.value.type !== "File") {
          return yield* new UsageError({
            flag: name,
            message: `${name}=${
              terminalSafe(flag.value)
            }: not a regular file (${info.value.type}); give a session file.`
          })
        }
        return file
      }
      if (!canPick) {
        return yield* new UsageError({
          flag: name,
          message:
            `${name} without a file opens a picker, which needs a terminal: give ${name}=FILE, or use --continue.`
        })
      }
      return yield* pick(root, name)
    })
  let note: string | undefined
  let how: SessionPlan["how"] = "new"
  let source = yield* fromFlag(flags.resume, "--resume")
  if (source !== undefined) how = "resumed"
  const forked = yield* fromFlag(flags.fork, "--fork")
  if (forked !== undefined) {
    source = forked
    how = "forked"
  }
  if (flags.continue) {
    const found = yield* latest(root)
    if (found === undefined) note = `--continue: no earlier session for ${root}; starting a new one.`
    else {
      source = found.path
      how = "continued"
    }
  }
  if (Option.isSome(flags.session)) {
    // The writer reads the file it appends to: a FIFO there would stall the start as `--fork=fifo` did.
    const info = yield* Effect.option(fs.stat(path.resolve(flags.session.value)))
    if (Option.isSome(info) && info.value.type !== "File") {
      return yield* new UsageError({
        flag: "--session",
        message: `--session ${
          terminalSafe(flags.session.value)
        }: not a regular file (${info.value.type}); give a session file.`
      })
    }
  }
  const target = Option.isSome(flags.session)
    ? path.resolve(flags.session.value)
    : source !== undefined && how !== "forked"
    ? source
    : yield* Session.newSessionPath(yield* projectFolder(root))
  return { source, target, how, note } satisfies SessionPlan
})
