/**
 * The workflow engine under `serve`: a cluster runner on PostgreSQL (`--store postgres://…`), or one runner
 * on the embedded SQLite store. Both are `DurableStore.engine` (the one composition of the durable runs'
 * engine and state); the cluster adds a PostgreSQL client, socket transport between runners and its own
 * timings. Both give the SQL client the server's own tables live in.
 *
 * @since 0.1.0
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import { PgClient } from "@effect/sql-pg"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as RunnerServer from "effect/cluster/RunnerServer"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as RpcSerialization from "effect/rpc/RpcSerialization"
import * as RpcServer from "effect/rpc/RpcServer"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import type * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import { createServer } from "node:net"
import { engine } from "../durable/internal/engine.ts"
import type { RunIndex, StartLedger } from "../durable/RunState.ts"
import { createTables } from "./internal/ddl.ts"
import * as StallWatch from "./internal/stallWatch.ts"
import { cannotListen, cannotUseStore, explainedBy, type StartError } from "./StartError.ts"
import { type ClusterTimings, defaultTimings } from "./timings.ts"

export { type ClusterTimings, defaultTimings } from "./timings.ts"

/** What every engine layer of `serve` provides. */
export type EngineServices =
  | WorkflowEngine.WorkflowEngine
  | StartLedger
  | RunIndex
  | SqlClient.SqlClient

/** Where a cluster runner listens for the other runners, and what it tells them its address is. */
export interface ClusterOptions {
  /** `postgres://user:password@host:port/database`. */
  readonly url: string
  /** The host other runners reach this one at (default 127.0.0.1). */
  readonly runnerHost?: string | undefined
  /**
   * The port this runner's socket server listens on for the other runners. 0: a free port, chosen when the
   * layer is built (asked of the system and released again just before the runner listens on it).
   */
  readonly runnerPort: number
  readonly timings?: Partial<ClusterTimings> | undefined
  /** The PostgreSQL connection pool's size (default 20). */
  readonly maxConnections?: number | undefined
  /**
   * Called (once) when a forced shard release has been pending for `stallBound` (SV 4.5), or this runner has
   * had shards in release for longer than `releaseBound` (SV 4.6; see `internal/stallWatch.ts`): this runner
   * cannot recover its shards by itself; the caller should end the process so its locks go and the runs
   * continue elsewhere. Default: none (a forced release's stall is only logged by effect).
   */
  readonly onStall?: ((pendingFor: Duration.Duration) => void) | undefined
  /** How long a forced shard release may be reported pending before `onStall` (default 60 s). */
  readonly stallBound?: Duration.Input | undefined
  /**
   * How long this runner may have shards in release without a pause before `onStall` (SV 4.6). Default: the
   * lock expiration plus the entity termination timeout (8.5 s with the default timings): a release that
   * completes drains its entities within the termination timeout, and by the lock expiration another runner
   * would have taken the shard from a dead one.
   */
  readonly releaseBound?: Duration.Input | undefined
}

/**
 * A runner of the cluster whose runner and message storage are in PostgreSQL: runs are spread over the
 * runners by shard, and a dead runner's shards (with their runs) move to the others. Runners send each
 * other messages over sockets (effect's `RunnerServer` with binary RPC serialization).
 */
export const cluster = (options: ClusterOptions): Layer.Layer<EngineServices, StartError | SqlError.SqlError> => {
  if (options.runnerPort === 0) {
    const host = options.runnerHost ?? "127.0.0.1"
    return Layer.unwrap(Effect.map(
      Effect.mapError(freePort(host), cannotListen("--runner-port", "for the other runners", host, 0)),
      (runnerPort) => cluster({ ...options, runnerPort })
    ))
  }
  const { runnerHealthCheckInterval, ...timings } = { ...defaultTimings, ...options.timings }
  const address = RunnerAddress.make(options.runnerHost ?? "127.0.0.1", options.runnerPort)
  const serialization = RpcSerialization.layerSchemaBinary()
  const clientProtocol = NodeClusterSocket.layerClientProtocol.pipe(Layer.provide(serialization))
  const runners = Layer.merge(Runners.layerRpc, RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc))).pipe(
    Layer.provide(clientProtocol)
  )
  const runnerServer = RunnerServer.layer.pipe(
    Layer.provide(RpcServer.layerProtocolSocketServer),
    Layer.provide(NodeClusterSocket.layerSocketServer),
    Layer.provide(serialization),
    // A port in use or not allowed: the runner cannot start (SV 5.3).
    explainedBy(cannotListen("--runner-port", "for the other runners", address.host, address.port))
  )
  // Runners starting together race to create the durable runs' own tables (PostgreSQL can fail one of two
  // concurrent CREATE TABLE IF NOT EXISTS with a unique violation on its catalog): created here first, under
  // an advisory lock, with the definitions of RunState.ts, whose own CREATE ... IF NOT EXISTS then finds them.
  const tables = Layer.effectDiscard(Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* createTables(sql, [
      sql`CREATE TABLE IF NOT EXISTS effect_agent_step_starts (
        run_id TEXT NOT NULL, step_id TEXT NOT NULL, attempts INTEGER NOT NULL, PRIMARY KEY (run_id, step_id))`,
      sql`CREATE TABLE IF NOT EXISTS effect_agent_runs (
        run_id TEXT PRIMARY KEY, started_at BIGINT NOT NULL, title TEXT NOT NULL)`
    ])
  })).pipe(
    // The runner's first statement: where an unreachable server, an unknown role or database shows (SV 5.3).
    explainedBy(cannotUseStore(options.url))
  )
  const onStall = options.onStall
  // In the engine's layer graph, so that it reads the metric registry `Sharding` reports to.
  const releaseWatch = onStall === undefined ? Layer.empty : Layer.effectDiscard(Effect.forkScoped(
    StallWatch.releaseWatch({
      bound: options.releaseBound ?? Duration.sum(timings.shardLockExpiration, timings.entityTerminationTimeout),
      onStall
    })
  ))
  return Layer.merge(
    engine({
      runnerAddress: address,
      timings,
      runners,
      runnerServer,
      shardingConfig: { runnerListenAddress: Option.some(address), runnerHealthCheckInterval }
    }),
    releaseWatch
  ).pipe(
    Layer.provide(tables),
    Layer.provide(
      options.onStall === undefined
        ? Layer.empty
        : Logger.layer([StallWatch.logger(options.stallBound ?? "60 seconds", options.onStall)], {
          mergeWithExisting: true
        })
    ),
    Layer.provideMerge(
      PgClient.layer({ url: Redacted.make(options.url), maxConnections: options.maxConnections ?? 20 })
    )
  )
}

/** A port no process listens on at `host` now: the system picks one for a server that is closed at once. */
const freePort = (host: string): Effect.Effect<number, Error> =>
  Effect.callback<number, Error>((resume) => {
    const server = createServer()
    server.once("error", (error) => resume(Effect.fail(error)))
    server.listen(0, host, () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resume(Effect.succeed(port)))
    })
  })

/**
 * One runner on the embedded SQLite store in `filename` (`:memory:` for nothing on disk). The store's module
 * is loaded when the layer is built (`node:sqlite` warns on stderr when loaded, which a cluster runner need not).
 */
export const single = (filename: string): Layer.Layer<EngineServices, SqlError.SqlError> =>
  Layer.unwrap(
    Effect.map(Effect.promise(() => import("../durable/DurableStore.ts")), (DurableStore) =>
      DurableStore.layer({ filename }))
  )
