/**
 * Bounds on a cluster runner stalled in a shard release (SV 4.5, SV 4.6).
 *
 * When a shard-lock operation outlasts the lock refresh interval, effect's `Sharding` marks its locks
 * unhealthy and force-releases every shard: it interrupts the shards' entities and waits for them to stop.
 * A workflow whose (uninterruptible) run waits for the reply of an activity it has just sent to itself never
 * stops then: the forced drain of the entity skips handing back requests not yet delivered (effect 4.1,
 * `entityManager`: the drain that calls `abandonUndelivered` loses the race against the force latch), so
 * the activity never runs and the release waits forever, logging "Forced shard release is still pending"
 * every 30 s. Nothing in this process can unblock it; another runner can take the shards only once this
 * one's locks are gone. So a runner that sees the same forced release pending for longer than the bound
 * reports it (the caller exits the process: its PostgreSQL sessions end, their advisory locks with them,
 * and the runs continue on the other runners or on this one restarted, durably).
 *
 * The only signal effect gives is that warning (module `effect/cluster/Sharding`), logged first once the
 * release has been pending for the lock expiration, then every 30 s while it still is.
 */
import * as Clock from "effect/Clock"
import * as ClusterMetrics from "effect/cluster/ClusterMetrics"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"

/** The warning effect's `Sharding` logs while a forced shard release is pending. */
export const pendingMessage = "Forced shard release is still pending"

/** Two warnings less than this apart belong to the same pending release (they come every 30 s). */
const sameRelease = Duration.seconds(45)

/**
 * A logger that calls `onStall` once a forced shard release has been reported pending for `bound` (from
 * its first warning), i.e. about `shardLockExpiration + bound` after it began. Called at most once.
 */
export const logger = (bound: Duration.Input, onStall: (pendingFor: Duration.Duration) => void) => {
  const boundMillis = Duration.toMillis(Duration.fromInputUnsafe(bound))
  let first: number | undefined
  let last: number | undefined
  let reported = false
  return Logger.make<unknown, void>(({ date, message }) => {
    if (reported) return
    const parts = Array.isArray(message) ? message : [message]
    if (!parts.some((part) => typeof part === "string" && part.startsWith(pendingMessage))) return
    const now = date.getTime()
    if (first === undefined || last === undefined || now - last > Duration.toMillis(sameRelease)) first = now
    last = now
    if (now - first >= boundMillis) {
      reported = true
      onStall(Duration.millis(now - first))
    }
  })
}

/**
 * Calls `onStall` (once) when this runner has had shards in release for longer than `bound` without a pause
 * (SV 4.6), as effect's gauge `effect_cluster_shards_releasing` reports them, read every `interval`; a
 * release that ends, even for one reading, starts the count again. Returns once it has called `onStall`;
 * runs forever otherwise (fork it in the runner's scope).
 *
 * Why a second watch: a rebalance (a runner joining or leaving) releases shards without forcing, and
 * effect 4.1 can wait forever there with no warning at all, so {@link logger} never fires. The release
 * waits for the shard's entities to close; a workflow's `run` request is uninterruptible, so the entity
 * waits for it; `run` waits for the reply of an activity it sent to its own entity on the same shard; and
 * that activity is served by nobody, since a shard in release is skipped by the storage read loop and
 * refused by local delivery. The lock is still refreshed meanwhile, so no other runner takes the shard.
 * The gauge counts a shard from the moment it stops being acquired until its lock is released, so it
 * stays above 0 for as long as that cycle lasts.
 *
 * The gauge is read from the metric registry of the context this runs in, which must be the one the
 * cluster's `Sharding` was built in (the same layer graph).
 */
export const releaseWatch = Effect.fn("StallWatch.releaseWatch")(function*(options: {
  readonly bound: Duration.Input
  readonly interval?: Duration.Input | undefined
  readonly onStall: (pendingFor: Duration.Duration) => void
}) {
  const boundMillis = Duration.toMillis(Duration.fromInputUnsafe(options.bound))
  let since: number | undefined
  const stalled = Effect.gen(function*() {
    const releasing = (yield* Metric.value(ClusterMetrics.shardsReleasing)).value
    const now = yield* Clock.currentTimeMillis
    if (releasing <= 0n) {
      since = undefined
      return false
    }
    since ??= now
    if (now - since <= boundMillis) return false
    yield* Effect.logWarning("shards in release for longer than the bound").pipe(
      Effect.annotateLogs({ shardsReleasing: Number(releasing), pendingForMs: now - since })
    )
    options.onStall(Duration.millis(now - since))
    return true
  })
  yield* Effect.repeat(stalled, {
    schedule: Schedule.spaced(options.interval ?? "1 second"),
    until: (done) => done
  })
})
