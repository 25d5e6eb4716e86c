/**
 * TE 9.1's duplicate ids, found when a batch starts (`src/internal/duplicates.ts`): every call whose id an
 * earlier call has, and no other, on both sides of the size where it stops comparing pairs.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { laterDuplicates } from "../../src/internal/duplicates.ts"

interface Item {
  readonly id: string
}

/** The reference: a set of the ids seen so far. */
const expected = (items: ReadonlyArray<Item>): Array<number> => {
  const seen = new Set<string>()
  const later: Array<number> = []
  items.forEach((item, i) => {
    if (seen.has(item.id)) later.push(i)
    seen.add(item.id)
  })
  return later
}

const found = (items: ReadonlyArray<Item>): Array<number> => {
  const set = laterDuplicates(items, (item) => item.id)
  return items.flatMap((item, i) => set?.has(item) === true ? [i] : [])
}

describe("TE 9.1 duplicate ids", () => {
  it.effect.prop(
    "TE 9.1 exactly the calls whose id an earlier call has, at any size",
    {
      // Few distinct ids, so that duplicates are common; up to 300 calls, past the pairwise threshold.
      ids: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 400 }))).check(
        Schema.isMaxLength(300)
      ),
      spread: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 400 }))
    },
    ({ ids, spread }) =>
      Effect.sync(() => {
        const items = ids.map((n) => ({ id: `call_${n % spread}` }))
        assert.deepStrictEqual(found(items), expected(items))
      }),
    { arbitrary: { runs: 300 } }
  )

  it("TE 9.1 no duplicates gives no set; unicode and empty ids are ids like any other", () => {
    const distinct = Array.from({ length: 1000 }, (_, i) => ({ id: `toolu_${i}` }))
    assert.isUndefined(laterDuplicates(distinct, (item) => item.id))
    const odd = [{ id: "" }, { id: "é" }, { id: "e\u0301" }, { id: "" }, { id: "é" }, { id: "😀" }, { id: "😀" }]
    assert.deepStrictEqual(found(odd), [3, 4, 6])
    const many = [...distinct, ...odd, { id: "toolu_999" }, { id: "toolu_0" }]
    assert.deepStrictEqual(found(many), expected(many))
  })
})
