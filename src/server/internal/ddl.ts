import * as Effect from "effect/Effect"
import type * as SqlClient from "effect/sql/SqlClient"
import type { Statement } from "effect/sql/Statement"

/**
 * Runs `CREATE TABLE IF NOT EXISTS` statements so that runners starting at the same moment do not race:
 * PostgreSQL can fail one of two concurrent creations of the same table with a unique violation on its
 * catalog, so there the statements run in one transaction under an advisory lock.
 */
export const createTables = (
  sql: SqlClient.SqlClient,
  statements: ReadonlyArray<Statement<any>>
): Effect.Effect<void> =>
  sql.onDialectOrElse({
    pg: () =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(7283001)`
        for (const statement of statements) yield* statement
      })),
    orElse: () => Effect.forEach(statements, (statement) => statement, { discard: true })
  }).pipe(Effect.asVoid, Effect.orDie)
