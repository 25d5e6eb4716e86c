/**
 * `/undo`: the files the last turn changed, put back. Before an approved `write` or `edit` runs, the file it
 * names is copied (its bytes, or that it did not exist); when the call ends, a failed call's copy is dropped
 * (it changed nothing) and a successful call's result is remembered. `/undo` restores every file of the
 * newest turn that changed any, and forgets that turn, so a second `/undo` goes one turn further back
 * (CLI 2.8). A file changed again since that turn, or whose real location is now outside the workspace, is
 * left as it is and reported (CLI 12.6). Changes made by `bash` are not seen and not undone.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { dirname, isAbsolute, relative, resolve } from "node:path"
import { realInside } from "../internal/files.ts"

/** A file as it was before a turn first changed it: its bytes, or `undefined` when it did not exist. */
interface Snapshot {
  readonly path: string
  readonly bytes: Uint8Array | undefined
  /** The calls of the turn on this file that have not ended yet. */
  readonly pending: Set<string>
  /** Whether one of them succeeded (the file was changed). */
  succeeded: boolean
  /** The file as the last successful call left it (`undefined`: removed, or not known yet). */
  after: Uint8Array | undefined
  /** Whether {@link after} was taken (an ended successful call was seen). */
  afterKnown: boolean
}

/** What `/undo` did. */
export interface UndoReport {
  readonly restored: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  readonly failed: ReadonlyArray<string>
  /** Changed again since the turn (by the person, `bash`, another program): left as they are (CLI 12.6). */
  readonly changed: ReadonlyArray<string>
}

/** The snapshots of a session, by turn. */
export interface Snapshots {
  /** Starts a turn (a prompt sent to the model). */
  readonly beginTurn: () => void
  /**
   * Copies the file a `write`/`edit` call names, once per turn, before it runs. Paths outside the workspace
   * (links followed) are skipped.
   */
  readonly before: (toolName: string, args: unknown, toolCallId?: string) => void
  /** A call seen by {@link before} ended: a failed call changed nothing, a successful one's result is kept. */
  readonly after: (toolCallId: string, isError: boolean) => void
  /** Restores the newest turn that changed files; `undefined` when there is none. */
  readonly undo: () => UndoReport | undefined
}

const readIfFile = (path: string): Uint8Array | undefined => {
  try {
    return statSync(path).isFile() ? readFileSync(path) : undefined
  } catch {
    return undefined
  }
}

const sameBytes = (a: Uint8Array | undefined, b: Uint8Array | undefined): boolean =>
  a === undefined || b === undefined ? a === b : Buffer.from(a).equals(Buffer.from(b))

/** Snapshots of files under `root`. */
export const make = (root: string): Snapshots => {
  const turns: Array<Map<string, Snapshot>> = []
  const byCall = new Map<string, Snapshot>()
  /** Whether `full`, or the nearest folder above it that exists, is really inside the workspace. */
  const reallyInside = (full: string): boolean => {
    for (let at = full;; at = dirname(at)) {
      let exists = false
      try {
        lstatSync(at)
        exists = true
      } catch {
        // not there (yet): its folder decides
      }
      if (exists) return at === root || realInside(root, at) !== undefined
      if (dirname(at) === at) return false
    }
  }
  const inside = (path: string): string | undefined => {
    const full = resolve(root, path)
    const rel = relative(root, full)
    if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return undefined
    return reallyInside(full) ? full : undefined
  }
  let anonymous = 0
  return {
    beginTurn: () => void turns.push(new Map()),
    before: (toolName, args, toolCallId = `anonymous-${anonymous++}`) => {
      if (toolName !== "write" && toolName !== "edit") return
      const given = (args as { readonly path?: unknown } | undefined)?.path
      if (typeof given !== "string") return
      const full = inside(given)
      if (full === undefined) return
      if (turns.length === 0) turns.push(new Map())
      const turn = turns[turns.length - 1]!
      let snapshot = turn.get(full)
      if (snapshot === undefined) {
        snapshot = {
          path: full,
          bytes: readIfFile(full),
          pending: new Set(),
          succeeded: false,
          after: undefined,
          afterKnown: false
        }
        turn.set(full, snapshot)
      }
      snapshot.pending.add(toolCallId)
      byCall.set(toolCallId, snapshot)
    },
    after: (toolCallId, isError) => {
      const snapshot = byCall.get(toolCallId)
      if (snapshot === undefined) return
      byCall.delete(toolCallId)
      snapshot.pending.delete(toolCallId)
      if (!isError) {
        snapshot.succeeded = true
        snapshot.after = readIfFile(snapshot.path)
        snapshot.afterKnown = true
      }
      // Every call on the file failed: the turn did not change it, and /undo must not touch it.
      if (snapshot.pending.size === 0 && !snapshot.succeeded) {
        for (const turn of turns) if (turn.get(snapshot.path) === snapshot) turn.delete(snapshot.path)
      }
    },
    undo: () => {
      while (turns.length > 0 && turns[turns.length - 1]!.size === 0) turns.pop()
      const turn = turns.pop()
      if (turn === undefined) return undefined
      const restored: Array<string> = []
      const removed: Array<string> = []
      const failed: Array<string> = []
      const changed: Array<string> = []
      for (const snapshot of turn.values()) {
        const shown = relative(root, snapshot.path)
        // Changed since the turn ended, or now a link out of the workspace: putting the old bytes back
        // would destroy work that is not the turn's, or write outside.
        if (
          !reallyInside(snapshot.path) || (snapshot.afterKnown && !sameBytes(readIfFile(snapshot.path), snapshot.after))
        ) {
          changed.push(shown)
          continue
        }
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
      return { restored, removed, failed, changed }
    }
  }
}
