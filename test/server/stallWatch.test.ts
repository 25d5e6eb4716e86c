/**
 * The stall bound of a cluster runner (docs/server.md, SV 4.5): the logger that watches effect's warning
 * about a pending forced shard release calls `onStall` once the same release has been reported pending for
 * the bound, not before, not for other messages, and only once. Time is the TestClock's (log dates come
 * from the clock).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Logger } from "effect"
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
