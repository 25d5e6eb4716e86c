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
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as ClusterWorkflowEngine from "effect/cluster/ClusterWorkflowEngine"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as Sharding from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import type * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import * as path from "node:path"
import * as StateFolder from "../internal/stateFolder.ts"
import { holdOwnerLock } from "./internal/sqlite.ts"
import { RunIndex, StartLedger } from "./RunState.ts"
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
 * How the engine keeps shard leases and polls its storage (DR 5.1). Every field is a `ShardingConfig` field
 * of `effect/cluster`; what is not given here keeps effect's default.
 */
interface Timings {
  /**
   * How long a runner's lease on its shards lasts without a refresh. A runner that died (kill -9) keeps its
   * shards, and with them its runs, this long: another runner (another address) can take them only after
   * it. A runner with the same address takes them back at once. effect's default: 35 s.
   */
  readonly shardLockExpiration?: Duration.Input | undefined
  /** How often a runner refreshes its leases (at most a third of the expiration is used). Default 10 s. */
  readonly shardLockRefreshInterval?: Duration.Input | undefined
  /** How often a runner reads the runner table and takes or gives up shards. Default 3 s. */
  readonly refreshAssignmentsInterval?: Duration.Input | undefined
  /**
   * How often a runner reads storage for messages it was not told about, e.g. a message written by another
   * process (a durable deferred completed from outside, a run started by a client). Default 10 s.
   */
  readonly entityMessagePollInterval?: Duration.Input | undefined
  /** How often a caller waiting for a run's result polls storage for it. Default 200 ms. */
  readonly entityReplyPollInterval?: Duration.Input | undefined
  /**
   * On shutdown (Ctrl-C), how long steps still running are given to finish. What they do not finish is not
   * stored, so a resume takes them up (or settles them, for a tool that is not idempotent). Default 15 s.
   */
  readonly entityTerminationTimeout?: Duration.Input | undefined
  /**
   * How many shards the runs are spread over (must be the same for every runner of a store). Each lease
   * refresh writes one row per shard held. Default 300; the embedded store uses 16.
   */
  readonly shardsPerGroup?: number | undefined
}

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

/** What {@link engine} is built with. */
interface EngineOptions {
  /** The lease and polling timings. Default: effect's defaults (35 s lease; see {@link Timings}). */
  readonly timings?: Timings | undefined
  /**
   * This process's runner address: runners with different addresses share the shards between them.
   * `undefined` makes the process a client only: it reads and writes the store (lists runs, sends messages
   * and aborts, starts runs another runner executes) but runs nothing itself.
   */
  readonly runnerAddress: RunnerAddress.RunnerAddress | undefined
  /**
   * How runners reach each other. Default `Runners.layerNoop`: they do not; every message goes through the
   * SQL storage and is picked up by the runner owning its shard when it polls (`entityMessagePollInterval`).
   * A cluster with HTTP or socket runners passes effect's `Runners` and `RunnerHealth` layers here.
   */
  readonly runners?:
    | Layer.Layer<
      Runners.Runners | RunnerHealth.RunnerHealth,
      never,
      ShardingConfig.ShardingConfig | MessageStorage.MessageStorage
    >
    | undefined
  /**
   * The server other runners send this runner's messages to (effect's `RunnerServer` over a socket or HTTP
   * protocol), built on this engine's `Sharding`. Default: none (with `Runners.layerNoop` nobody sends).
   */
  readonly runnerServer?:
    | Layer.Layer<
      never,
      never,
      Sharding.Sharding | MessageStorage.MessageStorage | ShardingConfig.ShardingConfig
    >
    | undefined
  /** Other `ShardingConfig` fields (shard groups, shards per group, ...), applied over the timings. */
  readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
  /** Table prefix of effect's message and runner tables. Default: effect's (`cluster`). */
  readonly tablePrefix?: string | undefined
}

/**
 * The workflow engine of durable runs and the run state it does not keep (step starts, run index), on the
 * `SqlClient` in context. The tables are created when missing. Any dialect effect's SQL storage supports
 * works; our own two tables use SQL that SQLite and PostgreSQL both accept.
 *
 * This is the one composition of the engine: {@link layer} (embedded SQLite) is it plus a file, and a
 * server cluster is it plus a PostgreSQL client, a runner address per process and its own timings.
 */
export const engine = (
  options: EngineOptions
): Layer.Layer<
  WorkflowEngine.WorkflowEngine | Sharding.Sharding | StartLedger | RunIndex,
  SqlError.SqlError,
  SqlClient.SqlClient
> => {
  const prefix = options.tablePrefix === undefined ? {} : { prefix: options.tablePrefix }
  const timings = Object.fromEntries(
    Object.entries(options.timings ?? {}).filter(([, value]) => value !== undefined)
  ) as Partial<ShardingConfig.ShardingConfig["Service"]>
  const config = ShardingConfig.layer({
    ...timings,
    ...options.shardingConfig,
    runnerAddress: Option.fromUndefinedOr(options.runnerAddress)
  })
  const runners = options.runners ?? Layer.merge(Runners.layerNoop, RunnerHealth.layerNoop)
  const sharding = options.runnerServer === undefined
    ? Sharding.layer
    : Layer.provideMerge(options.runnerServer, Sharding.layer)
  return ClusterWorkflowEngine.layer.pipe(
    Layer.provideMerge(sharding),
    Layer.provide(runners),
    Layer.provideMerge(SqlMessageStorage.layerWith(prefix)),
    Layer.provide(SqlRunnerStorage.layerWith(prefix)),
    Layer.provide([config, NodeCrypto.layerDigest]),
    Layer.provideMerge(Layer.mergeAll(StartLedger.layerSql, RunIndex.layerSql))
  ) as any
}

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
