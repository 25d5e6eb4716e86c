/**
 * The prompt history of a project, kept under the state folder (`$EFFECT_AGENT_HOME`, default
 * `~/.effect-agent`) in `history/<folder name>-<hash of the folder's path>.jsonl`, one JSON string per
 * entry, so multi-line prompts survive and the project folder is never written to (CLI 1.2).
 */
import { createHash } from "node:crypto"
import { appendFileSync, mkdirSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import { readTailLines } from "../internal/files.ts"

/** How many entries are loaded (the newest). */
const HISTORY_LIMIT = 1000

/** How much of the end of the history file is read: room for the newest entries, however long it grew. */
const HISTORY_TAIL_BYTES = 4 * 1024 * 1024

/**
 * The history file of a project folder in the state folder (`SessionStore.stateFolder`, read through
 * `Config` as the sessions' is: CLI 12.9).
 */
export const historyFile = (root: string, stateFolder: string): string => {
  const hash = createHash("sha256").update(root).digest("hex").slice(0, 12)
  const name = basename(root).replace(/[^A-Za-z0-9._-]/g, "_") || "root"
  return join(stateFolder, "history", `${name}-${hash}.jsonl`)
}

/** A project's history, oldest first; `add` appends an entry in memory and on disk. */
export interface History {
  readonly file: string
  readonly entries: () => ReadonlyArray<string>
  /** Adds an entry (not a blank one, nor a repeat of the newest). A file that cannot be written loses nothing in memory. */
  readonly add: (entry: string) => void
}

/** Loads a project's history; an unreadable or partly corrupt file gives what could be read. */
export const load = (root: string, stateFolder: string): History => {
  const file = historyFile(root, stateFolder)
  let entries: Array<string> = []
  try {
    // Only the end is read (CLI 12.14): the file only grows, and a 3 GB one used to be read whole, fail,
    // and give no history at all; a FIFO there used to block the start for ever.
    for (const line of (readTailLines(file, HISTORY_TAIL_BYTES) ?? "").split("\n")) {
      if (line.trim() === "") continue
      try {
        const entry: unknown = JSON.parse(line)
        if (typeof entry === "string") entries.push(entry)
      } catch {
        // a line cut by a crash: skip it
      }
    }
  } catch {
    // no history yet
  }
  entries = entries.slice(-HISTORY_LIMIT)
  return {
    file,
    entries: () => entries,
    add: (entry) => {
      if (entry.trim() === "" || entries.at(-1) === entry) return
      entries.push(entry)
      try {
        mkdirSync(dirname(file), { recursive: true })
        appendFileSync(file, JSON.stringify(entry) + "\n")
      } catch {
        // the state folder is not writable: the history lasts this session only
      }
    }
  }
}
