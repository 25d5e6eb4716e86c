/**
 * The durable runs' own state (start ledger, inbox, run index) in PostgreSQL. `RunState.ts` writes them in
 * SQLite's dialect (AUTOINCREMENT, INSERT OR IGNORE); these are the same tables and rules in PostgreSQL's.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { createTables } from "./ddl.ts"
import { Inbox, RunIndex, StartLedger } from "../../durable/RunState.ts"

/** The start ledger: one committed row per step, written before the step runs. */
export const startLedger: Layer.Layer<StartLedger, never, SqlClient.SqlClient> = Layer.effect(
  StartLedger,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* createTables(sql, [sql`CREATE TABLE IF NOT EXISTS effect_agent_step_starts (
      run_id TEXT NOT NULL,
      step_id TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      PRIMARY KEY (run_id, step_id)
    )`])
    return {
      start: (runId, stepId) =>
        sql<{ attempts: number }>`INSERT INTO effect_agent_step_starts (run_id, step_id, attempts)
          VALUES (${runId}, ${stepId}, 1)
          ON CONFLICT (run_id, step_id) DO UPDATE SET attempts = effect_agent_step_starts.attempts + 1
          RETURNING attempts`.pipe(
          Effect.map((rows) => Number(rows[0]?.attempts ?? 1)),
          // Without a committed start the honest answer for a side-effecting step is unknown: stop the run.
          Effect.orDie
        )
    }
  })
)

/** The inbox: messages kept until a step takes them, keyed by the step. */
export const inbox: Layer.Layer<Inbox, never, SqlClient.SqlClient> = Layer.effect(
  Inbox,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* createTables(sql, [sql`CREATE TABLE IF NOT EXISTS effect_agent_inbox (
      seq BIGSERIAL PRIMARY KEY,
      run_id TEXT NOT NULL,
      kind TEXT NOT NULL,
      message TEXT NOT NULL,
      taken_by TEXT
    )`])
    return {
      send: (runId, kind, message) =>
        sql`INSERT INTO effect_agent_inbox (run_id, kind, message) VALUES (${runId}, ${kind}, ${
          JSON.stringify(message)
        })`.pipe(Effect.asVoid, Effect.orDie),
      take: (runId, kind, step) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE effect_agent_inbox SET taken_by = ${step}
            WHERE run_id = ${runId} AND kind = ${kind} AND taken_by IS NULL`
          const rows = yield* sql<{ message: string }>`SELECT message FROM effect_agent_inbox
            WHERE run_id = ${runId} AND kind = ${kind} AND taken_by = ${step} ORDER BY seq`
          return rows.map((row) => JSON.parse(row.message) as unknown)
        })).pipe(Effect.orDie)
    }
  })
)

/** The run index. */
export const runIndex: Layer.Layer<RunIndex, never, SqlClient.SqlClient> = Layer.effect(
  RunIndex,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* createTables(sql, [sql`CREATE TABLE IF NOT EXISTS effect_agent_runs (
      run_id TEXT PRIMARY KEY,
      started_at BIGINT NOT NULL,
      title TEXT NOT NULL
    )`])
    return {
      record: (entry) =>
        sql`INSERT INTO effect_agent_runs (run_id, started_at, title)
          VALUES (${entry.runId}, ${entry.startedAt}, ${entry.title})
          ON CONFLICT (run_id) DO NOTHING`.pipe(Effect.asVoid, Effect.orDie),
      list: sql<{ run_id: string; started_at: number | string; title: string }>`SELECT run_id, started_at, title
        FROM effect_agent_runs ORDER BY started_at DESC, run_id`.pipe(
        Effect.map((rows) => rows.map((r) => ({ runId: r.run_id, startedAt: Number(r.started_at), title: r.title }))),
        Effect.orDie
      )
    }
  })
)
