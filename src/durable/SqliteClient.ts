/**
 * An `effect/sql` `SqlClient` over Node's built-in `node:sqlite` (Node 22.13+, no flag): the embedded
 * store of durable runs. One file, one connection, no server (docs/durability.md DR 6).
 *
 * Every statement and every transaction holds the connection's only permit, so fibers never interleave
 * statements inside another fiber's transaction. Failures of the driver (a file locked by another process,
 * a corrupted file, bad SQL, a constraint) come back as a typed `SqlError` whose `reason` says which.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Reactivity from "effect/reactivity/Reactivity"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Sql from "effect/sql/SqlClient"
import type * as SqlConnection from "effect/sql/SqlConnection"
import * as SqlErrors from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import * as Stream from "effect/Stream"
import { DatabaseSync, type StatementSync } from "node:sqlite"
import { classifyError, normalizeParams, StatementCache } from "./internal/sqlite.ts"

/** How the client opens its file. */
export interface SqliteClientConfig {
  /** Path of the database file (created when missing), or `":memory:"`. */
  readonly filename: string
  /** Open without write access. */
  readonly readonly?: boolean | undefined
  /**
   * How long a statement waits for a lock held by another connection or process before failing with a
   * `LockTimeoutError` reason. Default 5000 ms; 0 fails at once.
   */
  readonly busyTimeoutMillis?: number | undefined
  /** Keep the rollback journal instead of switching the file to write-ahead logging. */
  readonly disableWAL?: boolean | undefined
  /**
   * `"full"` (default) syncs the log on every commit, so a committed transaction survives a power cut;
   * `"normal"` survives a crash of the process but may lose the last commits on a power cut, and is faster.
   */
  readonly synchronous?: "full" | "normal" | undefined
  /** How many prepared statements are kept for reuse. Default 256. */
  readonly statementCacheSize?: number | undefined
  /** Renames identifiers in queries (e.g. camelCase to snake_case). */
  readonly transformQueryNames?: ((name: string) => string) | undefined
  /** Renames columns in results (e.g. snake_case to camelCase). */
  readonly transformResultNames?: ((name: string) => string) | undefined
}

/** The client: the generic `SqlClient` plus the configuration it was opened with. */
export interface SqliteClientShape extends Sql.SqlClient {
  readonly config: SqliteClientConfig
}

/** The `node:sqlite` client as a service of its own; `layer` also provides it as the generic `SqlClient`. */
export class SqliteClient extends Context.Service<SqliteClient, SqliteClientShape>()(
  "effect-agent/durable/SqliteClient"
) {
  /**
   * Opens the file for the life of the layer and closes it when the layer is released. Fails with a
   * `SqlError` when the file cannot be opened, is locked past the busy timeout, or is not a database.
   */
  static readonly layer = (
    config: SqliteClientConfig
  ): Layer.Layer<SqliteClient | Sql.SqlClient, SqlErrors.SqlError> =>
    Layer.effectContext(
      Effect.map(make(config), (client) => Context.make(SqliteClient, client).pipe(Context.add(Sql.SqlClient, client)))
    ).pipe(Layer.provide(Reactivity.layer))
}

const ATTR_DB_SYSTEM_NAME = "db.system.name"

const sqlError = (cause: unknown, message: string, operation: string) =>
  new SqlErrors.SqlError({ reason: classifyError(cause, message, operation) })

/**
 * Opens a client for the life of the current scope. The file is checked at open (header and schema are
 * read), so a corrupted file or a lock held elsewhere fails here with a typed `SqlError` rather than at the
 * first query.
 */
const make = Effect.fnUntraced(function*(config: SqliteClientConfig) {
  const db = yield* Effect.acquireRelease(
    Effect.try({
      try: () => {
        const db = new DatabaseSync(config.filename, {
          readOnly: config.readonly ?? false,
          timeout: config.busyTimeoutMillis ?? 5000
        })
        try {
          // Reading the schema touches the header: a file that is not a database fails now.
          db.prepare("SELECT count(*) FROM sqlite_schema").get()
          if (config.disableWAL !== true && config.readonly !== true && config.filename !== ":memory:") {
            db.exec("PRAGMA journal_mode = WAL")
          }
          db.exec(`PRAGMA synchronous = ${config.synchronous === "normal" ? "NORMAL" : "FULL"}`)
        } catch (cause) {
          db.close()
          throw cause
        }
        return db
      },
      catch: (cause) => sqlError(cause, `Failed to open SQLite database ${config.filename}`, "open")
    }),
    (db) => Effect.sync(() => db.isOpen && db.close())
  )

  const prepared = new StatementCache(config.statementCacheSize ?? 256)
  const preparedArrays = new StatementCache(32)

  const prepare = (cache: StatementCache | undefined, sql: string, arrays: boolean): StatementSync => {
    const cached = cache?.get(sql)
    if (cached !== undefined) return cached
    const statement = db.prepare(sql)
    if (arrays) statement.setReturnArrays(true)
    cache?.set(sql, statement)
    return statement
  }

  // node:sqlite is synchronous: each statement runs to completion before another can start, so a cached
  // statement is never used by two fibers at once.
  const runWith = (
    cache: StatementCache | undefined,
    sql: string,
    params: ReadonlyArray<unknown>,
    mode: "rows" | "raw" | "arrays"
  ): Effect.Effect<any, SqlErrors.SqlError> =>
    Effect.withFiber<any, SqlErrors.SqlError>((fiber) => {
      try {
        const statement = prepare(cache, sql, mode === "arrays")
        statement.setReadBigInts(Context.get(fiber.context, Sql.SafeIntegers))
        const args = normalizeParams(params)
        if (statement.columns().length > 0) return Effect.succeed(statement.all(...args))
        const result = statement.run(...args)
        return Effect.succeed(
          mode === "raw" ? { changes: result.changes, lastInsertRowid: result.lastInsertRowid } : []
        )
      } catch (cause) {
        return Effect.fail(sqlError(cause, "Failed to execute statement", "execute"))
      }
    })

  const connection: SqlConnection.Connection = {
    execute: (sql, params, transformRows) => {
      const rows = runWith(prepared, sql, params, "rows")
      return transformRows ? Effect.map(rows, transformRows) : rows
    },
    executeRaw: (sql, params) => runWith(prepared, sql, params, "raw"),
    executeValues: (sql, params) => runWith(preparedArrays, sql, params, "arrays"),
    executeValuesUnprepared: (sql, params) => runWith(undefined, sql, params, "arrays"),
    executeUnprepared: (sql, params, transformRows) => {
      const rows = runWith(undefined, sql, params, "rows")
      return transformRows ? Effect.map(rows, transformRows) : rows
    },
    executeStream: (sql, params, transformRows) =>
      Stream.suspend(() => {
        try {
          // A fresh statement: its cursor stays open while the stream is pulled.
          const statement = db.prepare(sql)
          const rows = statement.iterate(...normalizeParams(params)) as Iterable<any>
          const stream = Stream.fromIterable(rows)
          return transformRows ? Stream.mapArray(stream, (chunk) => transformRows(chunk) as any) : stream
        } catch (cause) {
          return Stream.fail(sqlError(cause, "Failed to execute statement", "stream"))
        }
      })
  }

  const semaphore = yield* Semaphore.make(1)
  const acquirers = Sql.makeSqliteAcquirers({
    connection: Effect.succeed(connection),
    semaphore,
    isTransaction: () => db.isTransaction
  })

  const client = yield* Sql.make({
    acquirer: acquirers.acquirer,
    borrower: acquirers.borrower,
    transactionAcquirer: acquirers.transactionAcquirer,
    onCommitFailure: acquirers.onCommitFailure,
    isTransaction: acquirers.isTransaction,
    // Takes the write lock at BEGIN, so a transaction waits for another process's writer up front instead
    // of failing half-way when it first writes.
    beginTransaction: "BEGIN IMMEDIATE",
    prepareTransactionControls: true,
    compiler: Statement.makeCompilerSqlite(config.transformQueryNames),
    driver: "effect-agent-sqlite",
    spanAttributes: [[ATTR_DB_SYSTEM_NAME, "sqlite"]],
    transformRows: config.transformResultNames
      ? Statement.defaultTransforms(config.transformResultNames).array
      : undefined
  })
  return Object.assign(client, { config }) as SqliteClientShape
}) as (
  config: SqliteClientConfig
) => Effect.Effect<SqliteClientShape, SqlErrors.SqlError, Scope.Scope | Reactivity.Reactivity>
