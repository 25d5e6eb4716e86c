/**
 * Pieces of the `node:sqlite` client that are not API: error classification, parameter binding and the
 * prepared-statement cache.
 */
import * as Effect from "effect/Effect"
import * as SqlErrors from "effect/sql/SqlError"
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite"

const SQLITE_CORRUPT = 11
const SQLITE_NOTADB = 26
const SQLITE_CONSTRAINT = 19
const SQLITE_CONSTRAINT_UNIQUE = 2067

/**
 * Maps a `node:sqlite` error to a `SqlErrorReason`. node:sqlite reports the SQLite result code as
 * `errcode`, which effect's classifier reads as `errno`; a corrupted file gets a message that says so,
 * because SQLite's own ("file is not a database") does not tell a user what to do.
 */
export const classifyError = (cause: unknown, message: string, operation: string): SqlErrors.SqlErrorReason => {
  const errcode = typeof cause === "object" && cause !== null && "errcode" in cause
    ? (cause as { readonly errcode: unknown }).errcode
    : undefined
  const detail = cause instanceof Error ? cause.message : String(cause)
  if (typeof errcode === "number") {
    const primary = errcode & 0xff
    if (primary === SQLITE_CORRUPT || primary === SQLITE_NOTADB) {
      return new SqlErrors.UnknownError({
        cause,
        message: `${message}: the database file is corrupted or is not a SQLite database (${detail})`,
        operation
      })
    }
    // node:sqlite reports the primary code (19) for every constraint; SQLite's message names the kind.
    const errno = primary === SQLITE_CONSTRAINT && /UNIQUE constraint failed|PRIMARY KEY/.test(detail)
      ? SQLITE_CONSTRAINT_UNIQUE
      : errcode
    // The classifier reads `errno`; the original error stays the cause.
    return SqlErrors.classifySqliteError(Object.assign(cause as object, { errno }), {
      message: `${message}: ${detail}`,
      operation
    })
  }
  return SqlErrors.classifySqliteError(cause, { message: `${message}: ${detail}`, operation })
}

/**
 * node:sqlite binds only null, numbers, bigints, strings and byte arrays; it throws on `undefined` and
 * booleans, which the statement compiler passes through. Returns the input itself when nothing needs
 * changing (the common case) so binding costs no copy.
 */
export const normalizeParams = (params: ReadonlyArray<unknown>): Array<SQLInputValue> => {
  let out: Array<unknown> | undefined
  for (let i = 0; i < params.length; i++) {
    const p = params[i]
    let q: unknown = p
    if (p === undefined) q = null
    else if (typeof p === "boolean") q = p ? 1 : 0
    else if (p instanceof Date) q = p.toISOString()
    if (q !== p) {
      out ??= params.slice()
      out[i] = q
    }
  }
  return (out ?? params) as Array<SQLInputValue>
}

/** A bounded least-recently-used map of prepared statements. */
export class StatementCache {
  private readonly entries = new Map<string, StatementSync>()
  private readonly capacity: number
  constructor(capacity: number) {
    this.capacity = capacity
  }
  get(sql: string): StatementSync | undefined {
    const statement = this.entries.get(sql)
    if (statement !== undefined) {
      this.entries.delete(sql)
      this.entries.set(sql, statement)
    }
    return statement
  }
  set(sql: string, statement: StatementSync): void {
    if (this.capacity <= 0) return
    this.entries.set(sql, statement)
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
  }
}

/**
 * Holds an exclusive SQLite lock on `<file>-owner` until the scope closes, so only one process at a time
 * works on a store. The operating system drops the lock when the process dies, even by SIGKILL, so a resumed
 * store never waits for a lease to expire. A second process gets a `LockTimeoutError` reason at once (DR 5.3).
 */
export const holdOwnerLock = (file: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const db = new DatabaseSync(`${file}-owner`, { timeout: 0 })
        try {
          db.exec("PRAGMA locking_mode = EXCLUSIVE")
          db.exec("BEGIN EXCLUSIVE")
        } catch (cause) {
          db.close()
          throw cause
        }
        return db
      },
      catch: (cause) =>
        new SqlErrors.SqlError({
          reason: classifyError(cause, `The run store ${file} is in use by another process`, "lock")
        })
    }),
    (db) => Effect.sync(() => db.isOpen && db.close())
  )
