/**
 * The codec durable runs store step results with (DR 4.1): a Schema from JSON to any plain data value that
 * gives back exactly what it was given, where plain JSON would not: a key holding `undefined` stays there
 * holding `undefined`, `NaN`, infinities, `-0`, bigints and dates come back as themselves. A value it cannot
 * hold (a function, a symbol, an instance of another class, a cycle) fails to encode with a `SchemaError`
 * naming it.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import * as SchemaIssue from "effect/SchemaIssue"

const UNDEFINED = "~u"
const NUMBER = "~n"
const BIGINT = "~b"
const OBJECT = "~o"
const DATE = "~d"

class NotStorable {
  readonly what: string
  constructor(what: string) {
    this.what = what
  }
}

/** Sets an own property, also for the key `__proto__` (a plain assignment would set the prototype). */
const setOwn = (target: Record<string, unknown>, key: string, value: unknown) => {
  if (key === "__proto__") {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  } else target[key] = value
}

const isPlainObject = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

const encodeValue = (value: unknown, seen: Set<object>): Schema.Json => {
  switch (typeof value) {
    case "undefined":
      return { [UNDEFINED]: 1 }
    case "string":
    case "boolean":
      return value
    case "number":
      return Number.isFinite(value) && !Object.is(value, -0)
        ? value
        : { [NUMBER]: Object.is(value, -0) ? "-0" : String(value) }
    case "bigint":
      return { [BIGINT]: value.toString() }
    case "object": {
      if (value === null) return null
      if (seen.has(value)) throw new NotStorable("a value that contains itself")
      seen.add(value)
      try {
        if (Array.isArray(value)) return Array.from(value, (item) => encodeValue(item, seen))
        if (value instanceof Date) return { [DATE]: String(value.getTime()) }
        if (!isPlainObject(value)) {
          throw new NotStorable(`an instance of ${(value as object).constructor?.name ?? "a class"}`)
        }
        const out: { [key: string]: Schema.Json } = {}
        let marked = false
        for (const key of Object.keys(value)) {
          if (key.startsWith("~")) marked = true
          setOwn(out, key, encodeValue((value as Record<string, unknown>)[key], seen))
        }
        // An object whose own keys look like a marker is wrapped, so it is never read back as one.
        return marked ? { [OBJECT]: out } : out
      } finally {
        seen.delete(value)
      }
    }
    default:
      throw new NotStorable(`a ${typeof value}`)
  }
}

const decodeValue = (json: Schema.Json): unknown => {
  if (json === null || typeof json !== "object") return json
  if (Array.isArray(json)) return json.map(decodeValue)
  const keys = Object.keys(json)
  if (keys.length === 1) {
    const key = keys[0]!
    const inner = (json as { readonly [key: string]: Schema.Json })[key]!
    if (key === UNDEFINED) return undefined
    if (key === NUMBER) return inner === "-0" ? -0 : Number(inner)
    if (key === BIGINT) return BigInt(inner as string)
    if (key === DATE) return new Date(Number(inner))
    if (key === OBJECT) return decodeObject(inner as { readonly [key: string]: Schema.Json })
  }
  return decodeObject(json as { readonly [key: string]: Schema.Json })
}

const decodeObject = (json: { readonly [key: string]: Schema.Json }): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(json)) setOwn(out, key, decodeValue(json[key]!))
  return out
}

/** Encodes `value` for the store, or fails saying what cannot be stored. */
export const encodeStored = (value: unknown): Effect.Effect<Schema.Json, SchemaIssue.Issue> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(encodeValue(value, new Set()))
    } catch (error) {
      if (!(error instanceof NotStorable)) throw error
      return Effect.fail(
        new SchemaIssue.InvalidValue({ message: `cannot store ${error.what}` }, value)
      )
    }
  })

/**
 * Any plain data value, stored faithfully (see the module comment). Use it as an Activity's or a
 * workflow's schema where a value's shape is not known in advance (tool results, hook results).
 */
export const Stored: Schema.Codec<unknown, Schema.Json> = Schema.Json.pipe(
  Schema.decodeTo(Schema.Unknown, {
    decode: SchemaGetter.transform(decodeValue),
    encode: SchemaGetter.transformEffect((value: unknown) => encodeStored(value))
  })
)
