/**
 * `/undo`: the files the last turn changed, put back. Before an approved `write` or `edit` runs, the file it
 * names is copied (its bytes, or that it did not exist); `/undo` restores every file of the newest turn that
 * changed any, and forgets that turn, so a second `/undo` goes one turn further back (CLI 2.6). Changes made
 * by `bash` are not seen and not undone.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { dirname, isAbsolute, relative, resolve } from "node:path"

/** A file as it was before a turn first changed it: its bytes, or `undefined` when it did not exist. */
interface Snapshot {
  readonly path: string
  readonly bytes: Uint8Array | undefined
}

/** What `/undo` did. */
export interface UndoReport {
  readonly restored: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  readonly failed: ReadonlyArray<string>
}

/** The snapshots of a session, by turn. */
export interface Snapshots {
  /** Starts a turn (a prompt sent to the model). */
  readonly beginTurn: () => void
  /** Copies the file a `write`/`edit` call names, once per turn, before it runs. Paths outside the workspace are skipped. */
  readonly before: (toolName: string, args: unknown) => void
  /** Restores the newest turn that changed files; `undefined` when there is none. */
  readonly undo: () => UndoReport | undefined
}

/** Snapshots of files under `root`. */
export const make = (root: string): Snapshots => {
  const turns: Array<Map<string, Snapshot>> = []
  const inside = (path: string): string | undefined => {
    const full = resolve(root, path)
    const rel = relative(root, full)
    return rel === "" || rel.startsWith("..") || isAbsolute(rel) ? undefined : full
  }
  return {
    beginTurn: () => void turns.push(new Map()),
    before: (toolName, args) => {
      if (toolName !== "write" && toolName !== "edit") return
      const given = (args as { readonly path?: unknown } | undefined)?.path
      if (typeof given !== "string") return
      const full = inside(given)
      if (full === undefined) return
      if (turns.length === 0) turns.push(new Map())
      const turn = turns[turns.length - 1]!
      if (turn.has(full)) return
      let bytes: Uint8Array | undefined
      try {
        bytes = statSync(full).isFile() ? readFileSync(full) : undefined
      } catch {
        bytes = undefined
      }
      turn.set(full, { path: full, bytes })
    },
    undo: () => {
      while (turns.length > 0 && turns[turns.length - 1]!.size === 0) turns.pop()
      const turn = turns.pop()
      if (turn === undefined) return undefined
      const restored: Array<string> = []
      const removed: Array<string> = []
      const failed: Array<string> = []
      for (const snapshot of turn.values()) {
        const shown = relative(root, snapshot.path)
        try {
          if (snapshot.bytes === undefined) {
            if (existsSync(snapshot.path)) {
              rmSync(snapshot.path)
              removed.push(shown)
            }
          } else {
            mkdirSync(dirname(snapshot.path), { recursive: true })
            writeFileSync(snapshot.path, snapshot.bytes)
            restored.push(shown)
          }
        } catch {
          failed.push(shown)
        }
      }
      return { restored, removed, failed }
    }
  }
}
