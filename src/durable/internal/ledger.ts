/**
 * Which durable steps have been started, and how often. The workflow engine stores a step's result once
 * it finishes, but cannot tell a step that never ran from one that was running when the process died: this
 * table can, because a start is committed before the step's side effects begin.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

/** Records the start of a step and returns its attempt number (1 the first time). */
export interface StartLedgerShape {
  readonly start: (runId: string, stepId: string) => Effect.Effect<number>
}

/** The start ledger of durable runs. */
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
      const sql = yield* SqlClient.SqlClient
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
            ON CONFLICT (run_id, step_id) DO UPDATE SET attempts = attempts + 1
            RETURNING attempts`.pipe(
            Effect.map((rows) => Number(rows[0]?.attempts ?? 1)),
            // Without a committed start the honest answer for a side-effecting step is unknown: stop the run.
            Effect.orDie
          )
      }
    })
  )
}
