/**
 * The embedded SQLite client (src/durable/SqliteClient.ts, issue 12 item 4): statements compile and bind
 * through effect's `sqlite` dialect, transactions commit or roll back as a whole, concurrent fibers never
 * interleave a statement into another fiber's transaction, and a locked or corrupted file is a typed
 * `SqlError`, not a crash.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Stream } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { DatabaseSync } from "node:sqlite"
import { SqliteClient } from "../../src/durable/SqliteClient.ts"

const tempFile = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-agent-sqlite-"))
    return { dir, file: path.join(dir, "store.db") }
  }),
  ({ dir }) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const withClient = <A, E>(
  use: (sql: SqlClient.SqlClient, file: string) => Effect.Effect<A, E>,
  config: { readonly busyTimeoutMillis?: number } = {}
) =>
  Effect.gen(function*() {
    const { file } = yield* tempFile
    return yield* Effect.flatMap(SqlClient.SqlClient, (sql) => use(sql, file)).pipe(
      Effect.provide(SqliteClient.layer({ filename: file, ...config }))
    )
  })

const reasonOf = (exit: Exit.Exit<unknown, unknown>): string => {
  assert.isTrue(Exit.isFailure(exit))
  const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
  assert.strictEqual(error?._tag, "Fail")
  const failure = error?._tag === "Fail" ? error.error : undefined
  assert.isTrue(SqlError.isSqlError(failure), `expected a SqlError, got ${String(failure)}`)
  return (failure as SqlError.SqlError).reason._tag
}

describe("SqliteClient statements", () => {
  it.effect("creates, inserts with bound parameters of every kind, selects them back (DR 6.1)", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n REAL, flag INTEGER, missing TEXT)`
        yield* sql`INSERT INTO t ${sql.insert({ name: "o'brien; DROP TABLE t", n: 1.5, flag: true, missing: null })}`
        yield* sql`INSERT INTO t (name, n, flag, missing) VALUES (${"b"}, ${2}, ${false}, ${undefined})`
        const rows = yield* sql<{ id: number; name: string; n: number; flag: number; missing: null }>`
          SELECT * FROM t ORDER BY id`
        assert.deepStrictEqual(rows.map((r) => ({ ...r })), [
          { id: 1, name: "o'brien; DROP TABLE t", n: 1.5, flag: 1, missing: null },
          { id: 2, name: "b", n: 2, flag: 0, missing: null }
        ])
        const inList = yield* sql<{ name: string }>`SELECT name FROM t WHERE id IN ${sql.in([2, 3])}`
        assert.deepStrictEqual(inList.map((r) => r.name), ["b"])
        const returned = yield* sql<{ id: number }>`INSERT INTO t (name) VALUES ('c') RETURNING id`
        assert.deepStrictEqual(returned.map((r) => r.id), [3])
        const values = yield* sql`SELECT id, name FROM t WHERE id = ${3}`.values
        assert.deepStrictEqual(values.map((v) => [...v]), [[3, "c"]])
        const raw = (yield* sql`UPDATE t SET n = 9`.raw) as { changes: number }
        assert.strictEqual(raw.changes, 3)
        const streamed = yield* Stream.runCollect(sql<{ id: number }>`SELECT id FROM t ORDER BY id`.stream)
        assert.deepStrictEqual(streamed.map((r) => r.id), [1, 2, 3])
      })
    ))

  it.effect("a bad statement is a typed SqlError and the client stays usable (DR 6.4)", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(sql`SELEC nothing`)
        assert.isTrue(Exit.isFailure(exit))
        reasonOf(exit)
        const ok = yield* sql<{ one: number }>`SELECT 1 AS one`
        assert.strictEqual(ok[0].one, 1)
        yield* sql`CREATE TABLE u (k TEXT PRIMARY KEY)`
        yield* sql`INSERT INTO u VALUES ('a')`
        const dup = yield* Effect.exit(sql`INSERT INTO u VALUES ('a')`)
        assert.strictEqual(reasonOf(dup), "UniqueViolation")
      })
    ))
})

describe("SqliteClient transactions", () => {
  it.effect("a transaction that succeeds commits every statement (DR 6.2)", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE t (v INTEGER)`
        yield* sql.withTransaction(Effect.all([sql`INSERT INTO t VALUES (1)`, sql`INSERT INTO t VALUES (2)`]))
        const rows = yield* sql<{ v: number }>`SELECT v FROM t ORDER BY v`
        assert.deepStrictEqual(rows.map((r) => r.v), [1, 2])
      })
    ))

  it.effect("a transaction that fails, dies or is interrupted leaves nothing behind (DR 6.2)", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE t (v INTEGER)`
        const insertThen = <E>(after: Effect.Effect<never, E>) =>
          sql.withTransaction(Effect.andThen(sql`INSERT INTO t VALUES (1)`, after))
        yield* Effect.exit(insertThen(Effect.fail("boom")))
        yield* Effect.exit(insertThen(Effect.die("bug")))
        const started = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(
          sql.withTransaction(
            Effect.andThen(sql`INSERT INTO t VALUES (1)`, Deferred.succeed(started, undefined)).pipe(
              Effect.andThen(Effect.never)
            )
          )
        )
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        const rows = yield* sql`SELECT v FROM t`
        assert.strictEqual(rows.length, 0)
      })
    ))

  it.effect("a nested transaction that fails rolls back to its savepoint only (DR 6.2)", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE t (v INTEGER)`
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO t VALUES (1)`
          yield* Effect.exit(sql.withTransaction(Effect.andThen(sql`INSERT INTO t VALUES (2)`, Effect.fail("inner"))))
          yield* sql`INSERT INTO t VALUES (3)`
        }))
        const rows = yield* sql<{ v: number }>`SELECT v FROM t ORDER BY v`
        assert.deepStrictEqual(rows.map((r) => r.v), [1, 3])
      })
    ))
})

describe("SqliteClient concurrent use", () => {
  it.effect("concurrent read-modify-write transactions never lose an update (DR 6.3)", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE c (n INTEGER)`
        yield* sql`INSERT INTO c VALUES (0)`
        yield* Effect.forEach(
          Array.from({ length: 50 }, (_, i) => i),
          () =>
            sql.withTransaction(Effect.gen(function*() {
              const [row] = yield* sql<{ n: number }>`SELECT n FROM c`
              yield* Effect.yieldNow
              yield* sql`UPDATE c SET n = ${row.n + 1}`
            })),
          { concurrency: "unbounded", discard: true }
        )
        const [row] = yield* sql<{ n: number }>`SELECT n FROM c`
        assert.strictEqual(row.n, 50)
      })
    ))

  it.effect("a statement from another fiber waits for an open transaction and is not rolled back with it (DR 6.3)", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE t (v INTEGER)`
        const inside = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const tx = yield* Effect.forkChild(Effect.exit(sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO t VALUES (1)`
          yield* Deferred.succeed(inside, undefined)
          yield* Deferred.await(release)
          return yield* Effect.fail("abort")
        }))))
        yield* Deferred.await(inside)
        const outside = yield* Effect.forkChild(sql`INSERT INTO t VALUES (2)`)
        yield* Effect.yieldNow
        assert.isUndefined(outside.pollUnsafe(), "the outside statement ran inside the open transaction")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(tx)
        yield* Fiber.join(outside)
        const rows = yield* sql<{ v: number }>`SELECT v FROM t`
        assert.deepStrictEqual(rows.map((r) => r.v), [2])
      })
    ))
})

describe("SqliteClient file errors", () => {
  it.effect("a file locked by another connection gives a LockTimeoutError, and works once released (DR 6.4)", () =>
    withClient((sql, file) =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE t (v INTEGER)`
        const other = new DatabaseSync(file)
        other.exec("BEGIN EXCLUSIVE")
        other.exec("INSERT INTO t VALUES (1)")
        const exit = yield* Effect.exit(sql`INSERT INTO t VALUES (2)`)
        assert.strictEqual(reasonOf(exit), "LockTimeoutError")
        const txExit = yield* Effect.exit(sql.withTransaction(sql`INSERT INTO t VALUES (3)`))
        assert.strictEqual(reasonOf(txExit), "LockTimeoutError")
        other.exec("COMMIT")
        other.close()
        yield* sql`INSERT INTO t VALUES (4)`
        const rows = yield* sql<{ v: number }>`SELECT v FROM t ORDER BY v`
        assert.deepStrictEqual(rows.map((r) => r.v), [1, 4])
      }), { busyTimeoutMillis: 0 }))

  it.effect("a corrupted file fails to open with a typed SqlError that says so (DR 6.4)", () =>
    Effect.gen(function*() {
      const { file } = yield* tempFile
      fs.writeFileSync(file, Buffer.alloc(8192, 0x5a))
      const exit = yield* Effect.exit(
        Effect.provide(SqlClient.SqlClient, SqliteClient.layer({ filename: file }))
      )
      reasonOf(exit)
      const error = Exit.isFailure(exit) && exit.cause.reasons[0]._tag === "Fail"
        ? exit.cause.reasons[0].error as SqlError.SqlError
        : undefined
      assert.match(error?.message ?? "", /corrupted or is not a SQLite database/)
      // The file is left as it was: nothing was overwritten.
      assert.deepStrictEqual(fs.readFileSync(file), Buffer.alloc(8192, 0x5a))
    }))

  it.effect("a file that cannot be opened is a ConnectionError (DR 6.4)", () =>
    Effect.gen(function*() {
      const { dir } = yield* tempFile
      const exit = yield* Effect.exit(
        Effect.provide(SqlClient.SqlClient, SqliteClient.layer({ filename: path.join(dir, "no/such/dir.db") }))
      )
      assert.strictEqual(reasonOf(exit), "ConnectionError")
    }))
})
