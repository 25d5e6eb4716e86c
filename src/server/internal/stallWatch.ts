/**
 * A bound on a cluster runner stalled in a forced shard release (SV 4.5).
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
import * as Duration from "effect/Duration"
import * as Logger from "effect/Logger"

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
