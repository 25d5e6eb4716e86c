/**
 * The one composition of the durable runs' engine (effect's `ClusterWorkflowEngine` on `Sharding`, with SQL
 * message and runner storage), over whatever `SqlClient` is in context. Public as `DurableStore.engine`; kept
 * here, away from the SQLite client, so that a PostgreSQL runner does not load `node:sqlite`.
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as ClusterWorkflowEngine from "effect/cluster/ClusterWorkflowEngine"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import type * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as Sharding from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import type * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import type * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import { RunIndex, StartLedger } from "../RunState.ts"

/**
 * How the engine keeps shard leases and polls its storage (DR 5.1). Every field is a `ShardingConfig` field
 * of `effect/cluster`; what is not given here keeps effect's default.
 */
export interface Timings {
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

/** What {@link engine} is built with; `E`: how its runner server can fail to start. */
export interface EngineOptions<E = never> {
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
      E,
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
export const engine = <E = never>(
  options: EngineOptions<E>
): Layer.Layer<
  WorkflowEngine.WorkflowEngine | Sharding.Sharding | StartLedger | RunIndex,
  SqlError.SqlError | E,
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
