/**
 * The embedded store of durable runs: effect's cluster workflow engine (`ClusterWorkflowEngine` on a
 * `SingleRunner` with SQL message and runner storage) over one SQLite file, no server.
 *
 * @since 0.1.0
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import { Layer } from "effect"
import { ClusterWorkflowEngine, SingleRunner } from "effect/cluster"
import type { SqlClient, SqlError } from "effect/sql"
import type { WorkflowEngine } from "effect/workflow"
import * as os from "node:os"
import * as path from "node:path"
import { Inbox, RunIndex, StartLedger } from "./RunState.ts"
import { holdOwnerLock } from "./internal/sqlite.ts"
import { SqliteClient, type SqliteClientConfig } from "./SqliteClient.ts"

/** The state folder: `$EFFECT_AGENT_HOME`, by default `~/.effect-agent`. */
export const stateFolder = (env: NodeJS.ProcessEnv = process.env): string =>
  env.EFFECT_AGENT_HOME !== undefined && env.EFFECT_AGENT_HOME !== ""
    ? env.EFFECT_AGENT_HOME
    : path.join(os.homedir(), ".effect-agent")

/** The default store file: `runs.db` in the state folder. */
export const defaultStoreFile = (env: NodeJS.ProcessEnv = process.env): string =>
  path.join(stateFolder(env), "runs.db")

/**
 * The workflow engine and start ledger of durable runs, persisted in the SQLite file of `config`. Fails
 * with a typed `SqlError` when the file cannot be opened (locked past the busy timeout, corrupted, no
 * permission). Unfinished runs in the file are taken up again by the engine as soon as the layer is built
 * and the workflow is registered.
 */
export const layer = (
  config: SqliteClientConfig
): Layer.Layer<
  WorkflowEngine.WorkflowEngine | StartLedger | Inbox | RunIndex | SqlClient.SqlClient | SqliteClient,
  SqlError.SqlError
> =>
  ClusterWorkflowEngine.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(StartLedger.layerSql, Inbox.layerSql, RunIndex.layerSql)),
    // Messages and replies (the runs' history) are in the file. Shard ownership is not: the owner lock below
    // already makes this process the only one, and a lease in the file would make a resume after kill -9
    // wait for it to expire (35 s by default).
    Layer.provide(Layer.orDie(SingleRunner.layer({
      runnerStorage: "memory",
      // On shutdown (Ctrl-C), steps still running are given a second, not 15: what they did not finish is
      // not stored, so a resume takes them up (or settles them, for a tool that is not idempotent).
      shardingConfig: { entityTerminationTimeout: "1 second" }
    }))),
    Layer.provide(NodeCrypto.layerDigest),
    Layer.provideMerge(SqliteClient.layer(config)),
    Layer.provide(
      config.filename === ":memory:" ? Layer.empty : Layer.effectDiscard(holdOwnerLock(config.filename))
    )
  )
