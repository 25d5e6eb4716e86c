/**
 * The codec step results are stored with (src/durable/internal/stored.ts, docs/durability.md DR 4.1): what
 * comes back from the store is what went in, where JSON would change it, and a value it cannot hold is a
 * typed `SchemaError` naming it, never a silent change.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import { Stored } from "../../src/durable/internal/stored.ts"

const codec = Schema.toCodecJson(Stored)
/** Through the codec and a JSON string, as the engine stores it. */
const throughStore = (value: unknown) =>
  Effect.gen(function*() {
    const encoded = yield* Schema.encodeUnknownEffect(codec)(value)
    return yield* Schema.decodeUnknownEffect(codec)(JSON.parse(JSON.stringify(encoded)))
  })

describe("the stored codec (DR 4.1)", () => {
  it.effect("keeps keys holding undefined, at any depth, and array holes as undefined", () =>
    Effect.gen(function*() {
      const value = {
        content: [{ type: "text", text: "x" }],
        details: undefined,
        nested: { a: undefined, b: [undefined, 1] }
      }
      const back = yield* throughStore(value)
      assert.deepStrictEqual(back, value)
      assert.isTrue(Object.hasOwn(back as object, "details"))
      assert.isTrue(Object.hasOwn((back as { nested: object }).nested, "a"))
      assert.isUndefined(yield* throughStore(undefined))
    }))

  it.effect("keeps numbers JSON cannot hold, bigints, dates, null and strings", () =>
    Effect.gen(function*() {
      const value = {
        nan: NaN,
        inf: Infinity,
        ninf: -Infinity,
        negZero: -0,
        big: 12345678901234567890n,
        none: null,
        s: "~u",
        when: new Date(1234567890123),
        invalid: new Date(NaN)
      }
      const back = (yield* throughStore(value)) as typeof value
      assert.isTrue(Number.isNaN(back.nan))
      assert.strictEqual(back.inf, Infinity)
      assert.strictEqual(back.ninf, -Infinity)
      assert.isTrue(Object.is(back.negZero, -0))
      assert.strictEqual(back.big, 12345678901234567890n)
      assert.isNull(back.none)
      assert.strictEqual(back.s, "~u")
      assert.instanceOf(back.when, Date)
      assert.strictEqual(back.when.getTime(), 1234567890123)
      assert.isTrue(Number.isNaN(back.invalid.getTime()))
    }))

  it.effect("an object whose keys look like the codec's markers, or `__proto__`, comes back as that object", () =>
    Effect.gen(function*() {
      const proto = JSON.parse(`{"__proto__": {"polluted": true}}`)
      const back = (yield* throughStore(proto)) as object
      assert.deepStrictEqual(Object.keys(back), ["__proto__"])
      assert.strictEqual(Object.getPrototypeOf(back), Object.prototype)
      for (
        const value of [{ "~u": 1 }, { "~n": "NaN" }, { "~b": "1" }, { "~d": "0" }, { "~o": { x: 1 } }, {
          "~u": 1,
          other: 2
        }]
      ) {
        assert.deepStrictEqual(yield* throughStore(value), value)
      }
    }))

  it.effect("a value it cannot hold fails to encode with a SchemaError saying what", () =>
    Effect.gen(function*() {
      const cyclic: Record<string, unknown> = {}
      cyclic.self = cyclic
      for (
        const [value, what] of [
          [cyclic, "contains itself"],
          [{ seen: new Map() }, "instance of Map"],
          [{ f: () => 1 }, "function"],
          [{ s: Symbol("x") }, "symbol"]
        ] as const
      ) {
        const exit = yield* Effect.exit(Schema.encodeUnknownEffect(codec)(value))
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail"
          ? exit.cause.reasons[0].error
          : undefined
        assert.isTrue(Schema.isSchemaError(error), String(error))
        assert.include(String(error), what)
      }
    }))

  // Any plain data value: nested arrays and records of undefined, null, booleans, numbers, strings, bigints.
  interface Plain {
    readonly [key: string]: unknown
  }
  const Value: Schema.Codec<unknown> = Schema.Union([
    Schema.Undefined,
    Schema.Null,
    Schema.Boolean,
    Schema.Number,
    Schema.String,
    Schema.BigInt,
    Schema.Array(Schema.suspend((): Schema.Codec<unknown> => Value)).check(Schema.isMaxLength(4)),
    Schema.Record(Schema.String, Schema.suspend((): Schema.Codec<unknown> => Value)) as Schema.Codec<Plain>
  ])

  it.effect.prop(
    "any plain data value comes back as it went in",
    { value: Value },
    ({ value }) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* throughStore(value), value)
      }),
    { arbitrary: { runs: 200 } }
  )
})
