/**
 * The argument coercions models need, compiled once per parameter Schema: numeric strings where numbers are
 * expected, `"true"`/`"false"` where booleans are, numbers where strings are, and `null` on an optional
 * property that cannot be null read as the property left out (models write `null` for "not given"). The
 * input is never mutated; an object or array is copied only when something inside it changed.
 */
import * as SchemaAST from "effect/SchemaAST"

type Coerce = (value: unknown) => unknown

const identity: Coerce = (value) => value

const NUMERIC = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/

const toNumber = (value: unknown): unknown => typeof value === "string" && NUMERIC.test(value) ? Number(value) : value

const toBoolean = (value: unknown): unknown => value === "true" ? true : value === "false" ? false : value

const toString = (value: unknown): unknown =>
  typeof value === "number" && Number.isFinite(value) ? String(value) : value

const copyStructured: Coerce = (value) => {
  if (typeof value !== "object" || value === null) return value
  try {
    return structuredClone(value)
  } catch {
    return value
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** What a value of each JavaScript kind can be matched against without coercion. */
const accepts = (ast: SchemaAST.AST, value: unknown): boolean => {
  switch (ast._tag) {
    case "String":
    case "TemplateLiteral":
      return typeof value === "string"
    case "Number":
      return typeof value === "number"
    case "Boolean":
      return typeof value === "boolean"
    case "Literal":
      return ast.literal === value
    case "Null":
      return value === null
    case "Objects":
      return isPlainObject(value)
    case "Arrays":
      return Array.isArray(value)
    case "Unknown":
    case "Any":
      return true
    case "Union":
      return ast.types.some((member) => accepts(member, value))
    default:
      return false
  }
}

/**
 * Whether a value of this type can never be `null`. Unsure cases (declarations, recursive types) say no, so
 * that a `null` the schema might accept is never dropped.
 */
const rejectsNull = (ast: SchemaAST.AST): boolean => {
  switch (ast._tag) {
    case "String":
    case "TemplateLiteral":
    case "Number":
    case "Boolean":
    case "BigInt":
    case "Symbol":
    case "UniqueSymbol":
    case "Enum":
    case "Objects":
    case "Arrays":
    case "ObjectKeyword":
    case "Undefined":
    case "Void":
    case "Never":
      return true
    case "Literal":
      return ast.literal !== null
    case "Union":
      return ast.types.every(rejectsNull)
    default:
      return false
  }
}

const compileObjects = (ast: SchemaAST.Objects, seen: Map<SchemaAST.AST, Coerce>): Coerce => {
  const properties = ast.propertySignatures.map((p) => [p.name, compile(p.type, seen)] as const)
    .filter(([, coerce]) => coerce !== identity)
  const named = new Set(ast.propertySignatures.map((p) => p.name))
  const indexes = ast.indexSignatures.map((i) => compile(i.type, seen)).filter((c) => c !== identity)
  const nullMeansAbsent = ast.propertySignatures
    .filter((p) => typeof p.name === "string" && SchemaAST.isOptional(p.type) && rejectsNull(p.type))
    .map((p) => p.name as string)
  if (properties.length === 0 && indexes.length === 0 && nullMeansAbsent.length === 0) return identity
  return (value) => {
    if (!isPlainObject(value)) return value
    let out: Record<string, unknown> | undefined
    for (const name of nullMeansAbsent) {
      if (value[name] === null && Object.hasOwn(value, name)) {
        out ??= { ...value }
        delete out[name]
      }
    }
    const set = (key: string, next: unknown) => {
      if (next === value[key]) return
      out ??= { ...value }
      out[key] = next
    }
    for (const [name, coerce] of properties) {
      if (typeof name === "string" && Object.hasOwn(out ?? value, name)) set(name, coerce(value[name]))
    }
    if (indexes.length > 0) {
      for (const key of Object.keys(value)) {
        if (named.has(key)) continue
        let next = value[key]
        for (const coerce of indexes) next = coerce(next)
        set(key, next)
      }
    }
    return out ?? value
  }
}

const compileArrays = (ast: SchemaAST.Arrays, seen: Map<SchemaAST.AST, Coerce>): Coerce => {
  const elements = ast.elements.map((e) => compile(e, seen))
  const rest = ast.rest.length > 0 ? compile(ast.rest[0], seen) : identity
  if (elements.every((e) => e === identity) && rest === identity) return identity
  return (value) => {
    if (!Array.isArray(value)) return value
    let out: Array<unknown> | undefined
    for (let i = 0; i < value.length; i++) {
      const next = (i < elements.length ? elements[i] : rest)(value[i])
      if (next !== value[i]) {
        out ??= value.slice()
        out[i] = next
      }
    }
    return out ?? value
  }
}

const compileUnion = (ast: SchemaAST.Union, seen: Map<SchemaAST.AST, Coerce>): Coerce => {
  const members = ast.types.map((t) => [t, compile(t, seen)] as const)
  if (members.every(([, c]) => c === identity)) return identity
  return (value) => {
    // A value that already fits a member is only coerced inside that member (e.g. a nested object);
    // otherwise the first member whose coercion makes it fit wins.
    const fitting = members.filter(([t]) => accepts(t, value))
    if (fitting.length === 1) return fitting[0][1](value)
    if (fitting.length > 1) return value
    for (const [t, coerce] of members) {
      const next = coerce(value)
      if (next !== value && accepts(t, next)) return next
    }
    return value
  }
}

const compile = (ast: SchemaAST.AST, seen: Map<SchemaAST.AST, Coerce>): Coerce => {
  const cached = seen.get(ast)
  if (cached !== undefined) return cached
  switch (ast._tag) {
    case "Number":
      return toNumber
    case "Boolean":
      return toBoolean
    case "String":
      return toString
    case "Literal": {
      const literal = ast.literal
      if (typeof literal === "number") return (v) => toNumber(v) === literal ? literal : v
      if (typeof literal === "boolean") return (v) => toBoolean(v) === literal ? literal : v
      if (typeof literal === "string") return (v) => toString(v) === literal ? literal : v
      return identity
    }
    case "Unknown":
    case "Any":
    case "ObjectKeyword":
      // Schema passes these through by reference: copy them so a tool can never mutate the transcript.
      return copyStructured
    case "Objects":
      return compileObjects(ast, seen)
    case "Arrays":
      return compileArrays(ast, seen)
    case "Union":
      return compileUnion(ast, seen)
    case "Suspend": {
      // Recursive schemas: resolve lazily so the compilation terminates.
      let inner: Coerce | undefined
      const lazy: Coerce = (value) => (inner ??= compile(ast.thunk(), seen))(value)
      seen.set(ast, lazy)
      return lazy
    }
    default:
      return identity
  }
}

/** Compiles the coercion for a parameter Schema's AST (its encoded side, which is what the model writes). */
export const compileCoercion = (ast: SchemaAST.AST): Coerce => compile(SchemaAST.toEncoded(ast), new Map())
