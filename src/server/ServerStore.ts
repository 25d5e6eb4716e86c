/**
 * What the server keeps next to the engine's tables, in the same SQL store (SQLite for one runner,
 * PostgreSQL for a cluster), so any runner can answer for any run: the runs it accepted (workspace and
 * approval mode), every run's numbered events, and abort requests. The SQL is portable between both.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as SqlClient from "effect/sql/SqlClient"
import { createTables } from "./internal/ddl.ts"

/** A run as the server accepted it. */
export interface ServerRun {
  readonly runId: string
  readonly executionId: string
  /** The workspace, relative to the server's workspace root ("" for the root itself). */
  readonly workspace: string
  readonly approve: "all" | "none"
  readonly createdAt: number
}

/** One stored event of a run: its number (from 1, the SSE id) and its JSON. */
export interface StoredEvent {
  readonly seq: number
  readonly event: unknown
}

/** The server's tables. Storage failures are defects: the HTTP layer turns them into 500s. */
export interface ServerStoreShape {
  readonly createRun: (run: ServerRun) => Effect.Effect<void>
  readonly getRun: (runId: string) => Effect.Effect<Option.Option<ServerRun>>
  /** The run of a workflow execution; cached, since a run's row never changes. */
  readonly runOfExecution: (executionId: string) => Effect.Effect<Option.Option<ServerRun>>
  /** The highest event number of a run (0 when it has none). */
  readonly lastSeq: (runId: string) => Effect.Effect<number>
  /** Stores events under their numbers, in one statement; a number already stored is kept as it is. */
  readonly appendEvents: (runId: string, events: ReadonlyArray<StoredEvent>) => Effect.Effect<void>
  /** The events numbered above `after`, in order, at most `limit`. */
  readonly events: (runId: string, after: number, limit: number) => Effect.Effect<ReadonlyArray<StoredEvent>>
  readonly requestAbort: (runId: string, at: number) => Effect.Effect<void>
  readonly abortRequested: (runId: string) => Effect.Effect<boolean>
  /** Which of `runIds` have an abort request. */
}

type RunRow = {
  run_id: string
  execution_id: string
  workspace: string
  approve: string
  created_at: number | string
}

const toRun = (row: RunRow): ServerRun => ({
  runId: row.run_id,
  executionId: row.execution_id,
  workspace: row.workspace,
  approve: row.approve === "all" ? "all" : "none",
  createdAt: Number(row.created_at)
})

/** The server's store. */
export class ServerStore extends Context.Service<ServerStore, ServerStoreShape>()("effect-agent/server/ServerStore") {
  /** On the SQL client in context; creates its tables when missing. */
  static readonly layer: Layer.Layer<ServerStore, never, SqlClient.SqlClient> = Layer.effect(
    ServerStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* createTables(sql, [
        sql`CREATE TABLE IF NOT EXISTS effect_agent_server_runs (
          run_id TEXT PRIMARY KEY,
          execution_id TEXT NOT NULL,
          workspace TEXT NOT NULL,
          approve TEXT NOT NULL,
          created_at BIGINT NOT NULL
        )`,
        sql`CREATE TABLE IF NOT EXISTS effect_agent_events (
          run_id TEXT NOT NULL,
          seq INTEGER NOT NULL,
          event TEXT NOT NULL,
          PRIMARY KEY (run_id, seq)
        )`,
        sql`CREATE TABLE IF NOT EXISTS effect_agent_aborts (
          run_id TEXT PRIMARY KEY,
          requested_at BIGINT NOT NULL
        )`
      ])
      const byExecution = new Map<string, ServerRun>()
      const store: ServerStoreShape = {
        createRun: (run) =>
          sql`INSERT INTO effect_agent_server_runs (run_id, execution_id, workspace, approve, created_at)
            VALUES (${run.runId}, ${run.executionId}, ${run.workspace}, ${run.approve}, ${run.createdAt})`.pipe(
            Effect.asVoid,
            Effect.orDie
          ),
        getRun: (runId) =>
          sql<RunRow>`SELECT * FROM effect_agent_server_runs WHERE run_id = ${runId}`.pipe(
            Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toRun)),
            Effect.orDie
          ),
        runOfExecution: (executionId) =>
          Effect.suspend(() => {
            const cached = byExecution.get(executionId)
            if (cached !== undefined) return Effect.succeed(Option.some(cached))
            return sql<RunRow>`SELECT * FROM effect_agent_server_runs WHERE execution_id = ${executionId}`.pipe(
              Effect.map((rows) => {
                const run = Option.map(Option.fromNullishOr(rows[0]), toRun)
                if (Option.isSome(run)) byExecution.set(executionId, run.value)
                return run
              }),
              Effect.orDie
            )
          }),
        lastSeq: (runId) =>
          sql<{ seq: number | string | null }>`SELECT MAX(seq) AS seq FROM effect_agent_events WHERE run_id = ${runId}`
            .pipe(Effect.map((rows) => Number(rows[0]?.seq ?? 0)), Effect.orDie),
        appendEvents: (runId, events) =>
          events.length === 0 ? Effect.void : sql`INSERT INTO effect_agent_events ${
            sql.insert(
              events.map(({ event, seq }) => ({ run_id: runId, seq, event: JSON.stringify(event) })) as unknown as [
                Record<string, unknown>,
                ...Array<Record<string, unknown>>
              ]
            )
          } ON CONFLICT (run_id, seq) DO NOTHING`.pipe(Effect.asVoid, Effect.orDie),
        events: (runId, after, limit) =>
          sql<{ seq: number | string; event: string }>`SELECT seq, event FROM effect_agent_events
            WHERE run_id = ${runId} AND seq > ${after} ORDER BY seq LIMIT ${limit}`.pipe(
            Effect.map((rows) =>
              rows.map((row) => ({ seq: Number(row.seq), event: JSON.parse(row.event) as unknown }))
            ),
            Effect.orDie
          ),
        requestAbort: (runId, at) =>
          sql`INSERT INTO effect_agent_aborts (run_id, requested_at) VALUES (${runId}, ${at})
            ON CONFLICT (run_id) DO NOTHING`.pipe(Effect.asVoid, Effect.orDie),
        abortRequested: (runId) =>
          sql`SELECT run_id FROM effect_agent_aborts WHERE run_id = ${runId}`.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          )
      }
      return store
    })
  )
}
