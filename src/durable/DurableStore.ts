/**
 * Where durable runs are stored: effect's cluster workflow engine (`ClusterWorkflowEngine` on `Sharding`,
 * with `SqlMessageStorage` for the runs' history and `SqlRunnerStorage` for runners and shard leases) over
 * any `effect/sql` `SqlClient`.
 *
 * - {@link engine} is the one composition, parameterised by the `SqlClient` in context (its dialect picks
 *   the SQL: SQLite, PostgreSQL, MySQL, ...) and the {@link Timings} of the shard leases (DR 5.1). The
 *   embedded store and a multi-runner PostgreSQL cluster both build on it.
 * - {@link layer} is the embedded default: one SQLite file, no server (DR 5.2).
 * - {@link layerClient} opens the same file without running anything, for a process that only lists runs
 *   or sends messages and aborts to a run another process executes (DR 3.1).
 *
 * @since 0.1.0
 */
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import type * as Sharding from "effect/cluster/Sharding"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import type * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import * as path from "node:path"
import * as StateFolder from "../internal/stateFolder.ts"
import { engine, type Timings } from "./internal/engine.ts"
import { holdOwnerLock } from "./internal/sqlite.ts"
import type { RunIndex, StartLedger } from "./RunState.ts"
import { SqliteClient, type SqliteClientConfig } from "./SqliteClient.ts"

/**
 * The state folder: `EFFECT_AGENT_HOME` read through `Config` (made absolute; unset or blank means
 * `~/.effect-agent`). The `ConfigProvider` in context decides it, never `process.env` directly.
 *
 * @internal
 */
export const stateFolder: Effect.Effect<string> = StateFolder.stateFolder

/** The default store file: `runs.db` in the {@link stateFolder}. */
export const defaultStoreFile: Effect.Effect<string> = Effect.map(stateFolder, (folder) => path.join(folder, "runs.db"))

/**
 * The timings of the embedded store (DR 5.2). Its runner keeps the same address across processes, so a
 * resume after a crash takes its shards back at once whatever the lease; the lease is kept short anyway
 * (5 s, refreshed every 500 ms over 16 shards: one small write each time; the refresh interval also bounds
 * how long shutdown waits to hand the shards off), so a run left by a runner under another address waits
 * at most that long. Messages from other processes are read within half a second; shutdown gives running
 * steps one second.
 */
export const embeddedTimings: Required<Timings> = {
  shardsPerGroup: 16,
  shardLockExpiration: Duration.seconds(5),
  shardLockRefreshInterval: Duration.millis(500),
  refreshAssignmentsInterval: Duration.seconds(1),
  entityMessagePollInterval: Duration.millis(500),
  entityReplyPollInterval: Duration.millis(50),
  entityTerminationTimeout: Duration.seconds(1)
}

// The composition itself lives apart from the SQLite client: a PostgreSQL runner of `serve` builds it without
// loading `node:sqlite`, which warns on stderr when it is loaded at all.
export { engine }

/**
 * The address of the embedded store's runner, the same in every process: a process resuming after a crash
 * is that runner again and takes its shards back at once (the leases name the address). Two processes never
 * hold it together: the runner holds the store's owner lock (DR 5.3).
 */
const embeddedRunnerAddress: RunnerAddress.RunnerAddress = RunnerAddress.make("embedded", 1)

/** How the embedded store is opened: the SQLite file and, optionally, other timings. */
interface StoreConfig extends SqliteClientConfig {
  readonly timings?: Timings | undefined
}

/**
 * The embedded store: {@link engine} over one SQLite file, this process its only runner. Fails with a
 * typed `SqlError` when the file cannot be opened (locked past the busy timeout, corrupted, no permission)
 * or another process runs the store (reason `LockTimeoutError`, "in use by another process"). Unfinished
 * runs in the file are taken up again as soon as the layer is built and the workflow is registered.
 */
export const layer = (
  config: StoreConfig
): Layer.Layer<
  WorkflowEngine.WorkflowEngine | Sharding.Sharding | StartLedger | RunIndex | SqlClient.SqlClient | SqliteClient,
  SqlError.SqlError
> =>
  engine({ runnerAddress: embeddedRunnerAddress, timings: { ...embeddedTimings, ...config.timings } }).pipe(
    Layer.provideMerge(SqliteClient.layer(config)),
    Layer.provide(
      config.filename === ":memory:" ? Layer.empty : Layer.effectDiscard(holdOwnerLock(config.filename))
    )
  )

/**
 * The embedded store as a client: the same file, no runner and no owner lock, so it opens while another
 * process runs the store. Lists runs and their status, and sends steering, follow-ups and aborts, which the
 * running process reads from the store (DR 3.1).
 */
export const layerClient = (
  config: StoreConfig
): Layer.Layer<
  WorkflowEngine.WorkflowEngine | Sharding.Sharding | StartLedger | RunIndex | SqlClient.SqlClient | SqliteClient,
  SqlError.SqlError
> =>
  engine({ runnerAddress: undefined, timings: { ...embeddedTimings, ...config.timings } }).pipe(
    Layer.provideMerge(SqliteClient.layer(config))
  )
