/**
 * The workflow engine under `serve`: a cluster runner on PostgreSQL (`--store postgres://…`), or one runner
 * on the embedded SQLite store. Both give the durable runs' engine and state plus the SQL client the
 * server's own tables live in.
 *
 * @since 0.1.0
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import { PgClient } from "@effect/sql-pg"
import { Layer, Option, Redacted } from "effect"
import { ClusterWorkflowEngine, RunnerAddress } from "effect/cluster"
import type { SqlClient, SqlError } from "effect/sql"
import type { WorkflowEngine } from "effect/workflow"
import * as DurableStore from "../durable/DurableStore.ts"
import type { Inbox, RunIndex, StartLedger } from "../durable/RunState.ts"
import * as PgState from "./internal/pgState.ts"
import { type ClusterTimings, defaultTimings } from "./timings.ts"

export { type ClusterTimings, defaultTimings } from "./timings.ts"

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
