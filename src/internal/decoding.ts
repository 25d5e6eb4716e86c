/**
 * Decoding a tool's parameter Schema when that Schema may have been built by another copy of `effect`.
 *
 * An application can end up with two copies of `effect` (one pinned by the application, one resolved for
 * this package, e.g. in a monorepo or with a library that does not declare `effect` as a peer). Effect's
 * Schema parser is not safe across copies: run by one copy on a Schema built by another, every check fails
 * (the leaf parsers answer with the other copy's sentinels), so `Schema.Finite` rejects `21` with "Expected a
 * finite number". Nothing here therefore compares classes or sentinels of the two copies: a Schema of
 * another copy is validated by that copy, through the Schema's own `makeEffect` method (the type side, checks
 * included, with `errors: "all"`), which equals decoding whenever the Schema has no transformation (its
 * encoded side is its type side). Such a Schema with a transformation cannot be decoded faithfully from here,
 * and every call says so instead of failing for a misleading reason.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import * as SchemaIssue from "effect/SchemaIssue"

/** The decoding of a parameter Schema: the decoded value or a Schema error with every issue. */
export type Decode = (input: unknown) => Exit.Exit<unknown, Schema.SchemaError>

/** The base prototype of this copy's AST nodes (every node class extends it directly). */
const ownNodeBase: object = Object.getPrototypeOf(Object.getPrototypeOf(Schema.String.ast))

/** Whether an AST node was built by the copy of `effect` this module runs on. */
const isOwnAst = (ast: SchemaAST.AST): boolean => Object.prototype.isPrototypeOf.call(ownNodeBase, ast)

/** Whether decoding an AST does anything beyond validating its type side (a transformation anywhere). */
const transforms = (ast: SchemaAST.AST, seen: Set<SchemaAST.AST>): boolean => {
  if (seen.has(ast)) return false
  seen.add(ast)
  if (ast.encoding !== undefined) return true
  switch (ast._tag) {
    case "Objects":
      return ast.propertySignatures.some((p) => transforms(p.type, seen)) ||
        ast.indexSignatures.some((i) => transforms(i.parameter, seen) || transforms(i.type, seen))
    case "Arrays":
      return ast.elements.some((e) => transforms(e, seen)) || ast.rest.some((r) => transforms(r, seen))
    case "Union":
      return ast.types.some((t) => transforms(t, seen))
    case "Declaration":
      return ast.typeParameters.some((t) => transforms(t, seen))
    case "Suspend":
      return transforms(ast.thunk(), seen)
    default:
      return false
  }
}

const foreignWithTransformation = (input: unknown): Exit.Exit<unknown, Schema.SchemaError> =>
  Exit.fail(
    new Schema.SchemaError(
      new SchemaIssue.InvalidValue({
        message: "the tool's parameter Schema was built by another copy of the effect package and has a " +
          "transformation, which effect-agent cannot decode from its own copy; install a single copy of effect " +
          "(it is a peer dependency of effect-agent)"
      }, input)
    )
  )

/**
 * The decoder of a parameter Schema with every issue reported: Effect's own decoding when the Schema was
 * built by this copy of `effect`, otherwise the Schema's own copy validating it (see the module comment).
 */
export const decodeUnknownExit = (schema: Schema.Decoder<unknown>): Decode => {
  if (isOwnAst(schema.ast)) {
    // Valid input is decoded on the parser's fast path (default options: it stops at the first issue, and
    // for a struct runs no generator per value); only input that fails is decoded again with every issue
    // reported. The result is the same: a decoding succeeds, with the same value, under either option.
    const first = Schema.decodeUnknownExit(schema) as Decode
    const all = Schema.decodeUnknownExit(schema, { errors: "all" }) as Decode
    return (input) => {
      const decoded = first(input)
      return Exit.isSuccess(decoded) ? decoded : all(input)
    }
  }
  if (transforms(schema.ast, new Set())) return foreignWithTransformation
  // Runs on this copy's runtime: Effect values of another 4.x copy are run by it (only Schema's parser compares
  // its sentinels by identity). The failure is the other copy's issue, whose fields Schema's formatter reads.
  return (input) =>
    Exit.mapError(
      Effect.runSyncExit(schema.makeEffect(input as never, { parseOptions: { errors: "all" } })),
      (issue) => new Schema.SchemaError(issue)
    )
}
