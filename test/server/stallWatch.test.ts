/**
 * The stall bounds of a cluster runner (docs/server.md, SV 4.5, SV 4.6): the logger that watches effect's
 * warning about a pending forced shard release calls `onStall` once the same release has been reported
 * pending for the bound, not before, not for other messages, and only once; the watch of effect's
 * `effect_cluster_shards_releasing` gauge calls it once shards have been in release without a pause for
 * longer than its bound, and not for releases that end in time. Time is the TestClock's (log dates come from
 * the clock).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, type Fiber, Logger, Metric } from "effect"
import * as ClusterMetrics from "effect/cluster/ClusterMetrics"
import { TestClock } from "effect/testing"
import * as StallWatch from "../../src/server/internal/stallWatch.ts"

const pending = Effect.logWarning(`${StallWatch.pendingMessage}; reacquisition is blocked until release completes`)

const watched = (bound: Duration.Input) => {
  const stalls: Array<number> = []
  const layer = Logger.layer([StallWatch.logger(bound, (pendingFor) => stalls.push(Duration.toMillis(pendingFor)))])
  return { stalls, layer }
}

describe("serve: the stall bound", () => {
  it.effect("SV 4.5: onStall once the same forced release is reported pending for the bound", () => {
    const { layer, stalls } = watched("60 seconds")
    return Effect.gen(function*() {
      yield* pending
      yield* TestClock.adjust("30 seconds")
      yield* pending
      yield* Effect.logWarning("Shard lock storage is unhealthy")
      assert.deepStrictEqual(stalls, [])
      yield* TestClock.adjust("30 seconds")
      yield* pending
      assert.deepStrictEqual(stalls, [60_000])
      yield* TestClock.adjust("30 seconds")
      yield* pending
      assert.deepStrictEqual(stalls, [60_000], "called once")
    }).pipe(Effect.provide(layer))
  })

  it.effect("SV 4.5: a release that completed and a later one are not added up; other messages never count", () => {
    const { layer, stalls } = watched("60 seconds")
    return Effect.gen(function*() {
      yield* pending
      yield* TestClock.adjust("30 seconds")
      yield* pending
      // The first release completed (no warning for longer than the warnings' spacing), a new one began.
      yield* TestClock.adjust("100 seconds")
      yield* pending
      yield* TestClock.adjust("30 seconds")
      yield* pending
      for (let i = 0; i < 5; i++) {
        yield* Effect.logWarning("Could not release shards, retrying")
        yield* TestClock.adjust("30 seconds")
      }
      assert.deepStrictEqual(stalls, [])
    }).pipe(Effect.provide(layer))
  })
})

describe("serve: the release bound", () => {
  const releasing = (shards: number) => Metric.update(ClusterMetrics.shardsReleasing, BigInt(shards))
  /**
   * The watch forked with a bound of 8.5 s, `initially` shards in release, on a registry of its own (the
   * gauge as `Sharding` updates it, in the same context).
   */
  const watching = <A, E>(
    initially: number,
    body: (stalls: Array<number>, watch: Fiber.Fiber<void>) => Effect.Effect<A, E>
  ) =>
    Effect.gen(function*() {
      const stalls: Array<number> = []
      yield* releasing(initially)
      const watch = yield* Effect.forkChild(StallWatch.releaseWatch({
        bound: "8500 millis",
        onStall: (pendingFor) => stalls.push(Duration.toMillis(pendingFor))
      }))
      return yield* body(stalls, watch)
    }).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))

  it.effect("SV 4.6: shards in release for longer than the bound: onStall once, then the watch ends", () =>
    watching(3, (stalls, watch) =>
      Effect.gen(function*() {
        yield* TestClock.adjust("8 seconds")
        assert.deepStrictEqual(stalls, [], "not before the bound")
        // Fewer shards, still some: the same release.
        yield* releasing(1)
        yield* TestClock.adjust("1 second")
        assert.deepStrictEqual(stalls, [9000])
        yield* TestClock.adjust("30 seconds")
        assert.deepStrictEqual(stalls, [9000], "called once")
        assert.isDefined(watch.pollUnsafe(), "the watch has ended")
      })))

  it.effect("SV 4.6: releases that end within the bound, one after another, never call onStall", () =>
    watching(0, (stalls) =>
      Effect.gen(function*() {
        for (let i = 0; i < 10; i++) {
          yield* releasing(32)
          yield* TestClock.adjust("8 seconds")
          yield* releasing(0)
          yield* TestClock.adjust("1 second")
        }
        yield* TestClock.adjust("60 seconds")
        assert.deepStrictEqual(stalls, [])
      })))
})
