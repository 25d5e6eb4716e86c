/**
 * The workflow engine under `serve`: a cluster runner on PostgreSQL (`--store postgres://…`), or one runner
 * on the embedded SQLite store. Both give the durable runs' engine and state plus the SQL client the
 * server's own tables live in.
 *
 * @since 0.1.0
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import { PgClient } from "@effect/sql-pg"
import { Duration, Layer, Option, Redacted } from "effect"
import { ClusterWorkflowEngine, RunnerAddress } from "effect/cluster"
import type { SqlClient, SqlError } from "effect/sql"
import type { WorkflowEngine } from "effect/workflow"
import * as DurableStore from "../durable/DurableStore.ts"
import type { Inbox, RunIndex, StartLedger } from "../durable/RunState.ts"
import * as PgState from "./internal/pgState.ts"

/**
 * How fast a cluster notices a dead runner and moves its shards. A dead runner's shard locks are taken
 * over once `shardLockExpiration` has passed without a refresh (PostgreSQL also drops its advisory locks
 * when its connection dies); assignments are recomputed every `refreshAssignmentsInterval` and runners are
 * pinged every `runnerHealthCheckInterval`. The engine's defaults (35 s expiry, 10 s refresh, 1 minute
 * health checks) take over half a minute; these defaults aim at failing over within 10 seconds.
 */
export interface ClusterTimings {
  readonly shardLockRefreshInterval: Duration.Duration
  readonly shardLockExpiration: Duration.Duration
  readonly refreshAssignmentsInterval: Duration.Duration
  readonly runnerHealthCheckInterval: Duration.Duration
  /** How often a runner looks for messages (new runs) it has not been told about. */
  readonly entityMessagePollInterval: Duration.Duration
  /** How long steps still running get on shutdown before the shard is released. */
  readonly entityTerminationTimeout: Duration.Duration
}

/** The timings `serve` uses unless told otherwise. */
export const defaultTimings: ClusterTimings = {
  shardLockRefreshInterval: Duration.seconds(1),
  shardLockExpiration: Duration.seconds(5),
  refreshAssignmentsInterval: Duration.seconds(1),
  runnerHealthCheckInterval: Duration.seconds(2),
  entityMessagePollInterval: Duration.seconds(1),
  entityTerminationTimeout: Duration.seconds(1)
}

/** What every engine layer of `serve` provides. */
export type EngineServices =
  | WorkflowEngine.WorkflowEngine
  | StartLedger
  | Inbox
  | RunIndex
  | SqlClient.SqlClient

/** Where a cluster runner listens for the other runners, and what it tells them its address is. */
export interface ClusterOptions {
  /** `postgres://user:password@host:port/database`. */
  readonly url: string
  /** The host other runners reach this one at (default 127.0.0.1). */
  readonly runnerHost?: string | undefined
  /** The port this runner's socket server listens on for the other runners. */
  readonly runnerPort: number
  readonly timings?: Partial<ClusterTimings> | undefined
}

/**
 * A runner of the cluster whose runner and message storage are in PostgreSQL: runs are spread over the
 * runners by shard, and a dead runner's shards (with their runs) move to the others.
 */
export const cluster = (options: ClusterOptions): Layer.Layer<EngineServices, unknown> => {
  const timings = { ...defaultTimings, ...options.timings }
  const host = options.runnerHost ?? "127.0.0.1"
  const runner = NodeClusterSocket.layer({
    storage: "sql",
    shardingConfig: {
      runnerAddress: Option.some(RunnerAddress.make(host, options.runnerPort)),
      runnerListenAddress: Option.some(RunnerAddress.make(host, options.runnerPort)),
      ...timings
    }
  })
  return ClusterWorkflowEngine.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(PgState.startLedger, PgState.inbox, PgState.runIndex)),
    Layer.provide(runner),
    Layer.provideMerge(PgClient.layer({ url: Redacted.make(options.url), maxConnections: 20 }))
  ) as Layer.Layer<EngineServices, unknown>
}

/** One runner on the embedded SQLite store in `filename` (`:memory:` for nothing on disk). */
export const single = (filename: string): Layer.Layer<EngineServices, SqlError.SqlError> =>
  DurableStore.layer({ filename })
