/**
 * TE 11: the waits `waitsOf` computes against the rule itself, pairwise (`ResourceAccess.conflicts`), on
 * random declarations: a call waits only for earlier calls it conflicts with, and what it waits for covers,
 * directly or through the waits of those, every earlier call it conflicts with.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { waitsOf } from "../../src/internal/schedule.ts"
import * as ResourceAccess from "../../src/ResourceAccess.ts"

type Declared = ReadonlyArray<ResourceAccess.ResourceAccess> | undefined

/** The rule, call by call: a call that declared nothing writes a key of its own that only the empty key covers. */
const callsConflict = (a: Declared, ai: number, b: Declared, bi: number): boolean => {
  const left = a ?? [ResourceAccess.write(`\u0000${ai}`)]
  const right = b ?? [ResourceAccess.write(`\u0000${bi}`)]
  return left.some((x) => right.some((y) => ResourceAccess.conflicts(x, y)))
}

const Key = Schema.Literals(["", "a", "a/x", "/a/x/", "a/y", "a/x/1", "b", "b/z"])
const Access = Schema.Union([
  Schema.TaggedStruct("Read", { key: Key }),
  Schema.TaggedStruct("Write", { key: Key }),
  Schema.TaggedStruct("Exclusive", {})
])
const Batch = Schema.Array(Schema.UndefinedOr(Schema.Array(Access).check(Schema.isMaxLength(3)))).check(
  Schema.isMaxLength(24)
)

describe("TE 11 waits", () => {
  it("keys: a key covers the keys below it, segment by segment; reads never conflict", () => {
    const { conflicts, exclusive, read, write } = ResourceAccess
    assert.isTrue(conflicts(write("/w/src"), read("/w/src/math.ts")))
    assert.isTrue(conflicts(read("/w/src/math.ts"), write("/w/src")))
    assert.isTrue(conflicts(write("a//b/"), write("a/b")))
    assert.isFalse(conflicts(write("/w/src"), read("/w/srcs")), "a segment, not a prefix of characters")
    assert.isFalse(conflicts(write("a/x"), write("a/y")))
    assert.isFalse(conflicts(read("a"), read("a")))
    assert.isTrue(conflicts(read(""), write("b")), "the empty key covers everything")
    assert.isTrue(conflicts(exclusive, read("anything")))
  })

  it("an exclusive call waits for everything before it, and everything after waits for it", () => {
    const { exclusive, read, write } = ResourceAccess
    assert.deepStrictEqual(waitsOf([[read("a")], undefined, [write("b")], [exclusive], [read("a")], undefined]), [
      [],
      [],
      [],
      [0, 1, 2],
      [3],
      [3]
    ])
  })

  it.effect.prop(
    "waits are conflicts, and cover every earlier conflict directly or through the waits of a wait",
    [Batch],
    ([batch]) =>
      Effect.sync(() => {
        const declared = batch as ReadonlyArray<Declared>
        const waits = waitsOf(declared)
        assert.strictEqual(waits.length, declared.length)
        const covered: Array<Set<number>> = []
        declared.forEach((mine, i) => {
          const reach = new Set<number>()
          for (const w of waits[i]!) {
            assert.isBelow(w, i, `call ${i} waits for a later call ${w}`)
            assert.isTrue(
              callsConflict(mine, i, declared[w], w),
              `call ${i} waits for ${w}, which it does not conflict with`
            )
            reach.add(w)
            for (const r of covered[w]!) reach.add(r)
          }
          covered.push(reach)
          for (let e = 0; e < i; e++) {
            if (callsConflict(mine, i, declared[e], e)) {
              assert.isTrue(
                reach.has(e),
                `call ${i} conflicts with ${e} but does not wait for it: ${JSON.stringify(declared)}`
              )
            }
          }
        })
      }),
    { arbitrary: { runs: 500 } }
  )
})
