/**
 * The state of durable runs that the workflow engine does not keep: which steps have started (and how
 * often), and which runs a store has seen. Both live in the run store next to the engine's tables, in SQL
 * that SQLite and PostgreSQL both accept; in-memory versions go with the in-memory engine.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"

/** Records the start of a step and returns its attempt number (1 the first time). */
export interface StartLedgerShape {
  readonly start: (runId: string, stepId: string) => Effect.Effect<number>
}

/**
 * Which steps of durable runs have started, and how often. The workflow engine stores a step's result once
 * it finishes, but cannot tell a step that never ran from one that was running when the process died; the
 * ledger can, because a start is committed before the step's side effects begin (DR 2.1).
 */
export class StartLedger extends Context.Service<StartLedger, StartLedgerShape>()("effect-agent/durable/StartLedger") {
  /** In memory: for the in-memory workflow engine, where nothing survives the process anyway. */
  static readonly layerMemory: Layer.Layer<StartLedger> = Layer.sync(StartLedger, () => {
    const starts = new Map<string, number>()
    return {
      start: (runId, stepId) =>
        Effect.sync(() => {
          const key = `${runId}\u0000${stepId}`
          const attempt = (starts.get(key) ?? 0) + 1
          starts.set(key, attempt)
          return attempt
        })
    }
  })

  /** In the run store: one committed row per step, written before the step runs. */
  static readonly layerSql: Layer.Layer<StartLedger, never, SqlClient.SqlClient> = Layer.effect(
    StartLedger,
    Effect.gen(function*() {
      // Without the client's name transforms: the queries name their columns as the tables do.
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* sql`CREATE TABLE IF NOT EXISTS effect_agent_step_starts (
        run_id TEXT NOT NULL,
        step_id TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        PRIMARY KEY (run_id, step_id)
      )`.pipe(Effect.orDie)
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
}

/** A run as the run index lists it. */
export interface RunEntry {
  readonly runId: string
  /** When the run was first started (ms since the epoch). */
  readonly startedAt: number
  /** The text of its first prompt, cut to 200 characters, for people choosing a run to resume. */
  readonly title: string
}

/** The runs a store has seen, newest first; the engine keeps no list of its own that names run ids. */
export interface RunIndexShape {
  /** Records a run the first time it is started; later calls for the same id change nothing. */
  readonly record: (entry: RunEntry) => Effect.Effect<void>
  readonly list: Effect.Effect<ReadonlyArray<RunEntry>>
}

/** The index of durable runs. */
export class RunIndex extends Context.Service<RunIndex, RunIndexShape>()("effect-agent/durable/RunIndex") {
  /** In memory, for the in-memory engine. */
  static readonly layerMemory: Layer.Layer<RunIndex> = Layer.sync(RunIndex, () => {
    const entries = new Map<string, RunEntry>()
    return {
      record: (entry) => Effect.sync(() => void (entries.has(entry.runId) || entries.set(entry.runId, entry))),
      list: Effect.sync(() => [...entries.values()].sort((a, b) => b.startedAt - a.startedAt))
    }
  })

  /** In the run store. */
  static readonly layerSql: Layer.Layer<RunIndex, never, SqlClient.SqlClient> = Layer.effect(
    RunIndex,
    Effect.gen(function*() {
      // Without the client's name transforms: the queries name their columns as the tables do.
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* sql`CREATE TABLE IF NOT EXISTS effect_agent_runs (
        run_id TEXT PRIMARY KEY,
        started_at BIGINT NOT NULL,
        title TEXT NOT NULL
      )`.pipe(Effect.orDie)
      return {
        record: (entry) =>
          sql`INSERT INTO effect_agent_runs (run_id, started_at, title)
            VALUES (${entry.runId}, ${entry.startedAt}, ${entry.title}) ON CONFLICT (run_id) DO NOTHING`.pipe(
            Effect.asVoid,
            Effect.orDie
          ),
        list: sql<{ run_id: string; started_at: number; title: string }>`SELECT run_id, started_at, title
          FROM effect_agent_runs ORDER BY started_at DESC, run_id`.pipe(
          Effect.map((rows) => rows.map((r) => ({ runId: r.run_id, startedAt: Number(r.started_at), title: r.title }))),
          Effect.orDie
        )
      }
    })
  )
}
