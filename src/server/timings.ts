/**
 * The failover timings of a `serve` cluster, in a module of their own so the command line can show their
 * defaults without loading the cluster.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"

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
  /** Shards per group (the same on every runner): fewer shards, fewer lock operations per rebalance. */
  readonly shardsPerGroup: number
}

/** The timings `serve` uses unless told otherwise. */
export const defaultTimings: ClusterTimings = {
  // Lock operations must finish within the refresh interval (at most a third of the expiry). On this loaded
  // 2-core machine 1 s timed out during rebalances, and 2 s under 100 concurrent runs: a lock operation that
  // times out makes the runner force-release its shards (see the README on what that can cost).
  shardLockRefreshInterval: Duration.millis(2500),
  shardLockExpiration: Duration.millis(7500),
  refreshAssignmentsInterval: Duration.seconds(1),
  runnerHealthCheckInterval: Duration.seconds(2),
  entityMessagePollInterval: Duration.seconds(1),
  entityTerminationTimeout: Duration.seconds(1),
  shardsPerGroup: 64
}
