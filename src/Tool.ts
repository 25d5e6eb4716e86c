/**
 * Tools: a definition the model sees (name, description, parameter Schema) kept apart from the
 * implementation that runs it, which is an Effect service provided by a `Layer` and may depend on other
 * services. This is the split `effect/ai` makes between `Tool` and its handlers.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { compileCoercion } from "./internal/coercion.ts"
import { ToolResultContent } from "./Message.ts"
import type { ResourceAccess } from "./ResourceAccess.ts"

/** How a tool may be scheduled relative to the other calls of its batch. */
export type ExecutionMode = "sequential" | "parallel"

/** A tool's output (final or partial). `terminate` asks the loop to stop after this batch. */
export interface ToolResult<Details = unknown> {
  readonly content: ReadonlyArray<ToolResultContent>
  readonly details: Details
  readonly terminate?: boolean
}

/**
 * The shape a tool result must have at run time. Results from untyped code are checked against it, and a
 * result that does not fit becomes an error result naming the tool.
 */
export const ToolResultSchema = Schema.Struct({
  content: Schema.Array(ToolResultContent),
  details: Schema.optionalKey(Schema.Unknown),
  terminate: Schema.optionalKey(Schema.Boolean)
})

/** What a running tool gets besides its arguments. */
export interface ToolContext<Details = unknown> {
  /** The id of the tool call being executed. */
  readonly toolCallId: string
  /**
   * Aborted when this execution is interrupted (abort, timeout): hand it to promise-based code. Created on
   * first access.
   */
  readonly signal: AbortSignal
  /**
   * Reports progress as a `tool_execution_update` event. Updates sent after the call has settled are
   * dropped silently.
   */
  readonly update: (partial: ToolResult<Details>) => Effect.Effect<void>
}

/**
 * The implementation of a tool. Any failure or defect becomes an error result whose text is the error's
 * message; a success is a result with `isError: false`. A handler made by {@link withResources} also says
 * what each call touches.
 */
export interface Handler<Args, Details = unknown> {
  (args: Args, context: ToolContext<Details>): Effect.Effect<ToolResult<Details>, unknown>
  /** What a call with these arguments touches (TE 11); without it, the call touches nothing the batch knows. */
  readonly resources?: Resources<Args> | undefined
}

/**
 * What a call touches, from the arguments it will run with (docs/tool-execution.md, TE 11): asked once per
 * call in a parallel batch, after `beforeToolCall`. It may be an Effect (to resolve a path, say), and it may
 * give `undefined` for a call that declares nothing. A defect, or anything but a list of accesses, ends the
 * call with a `PrepareFailed` outcome, and the tool never runs.
 */
export type Resources<Args> = (
  args: Args
) => Declared | Effect.Effect<Declared>

/** What one call was declared to touch: a list of accesses, or `undefined` for nothing the batch knows of. */
export type Declared = ReadonlyArray<ResourceAccess> | undefined

/**
 * A handler that declares what each call touches, so that a parallel batch runs it together with the calls it
 * cannot get in the way of, and after the earlier calls it can (TE 11). Without a declaration it is the
 * handler as given, so a registry that wraps handlers passes on whatever the wrapped one declared.
 */
export const withResources = <Args, Details>(
  handler: (args: Args, context: ToolContext<Details>) => Effect.Effect<ToolResult<Details>, unknown>,
  resources: Resources<Args> | undefined
): Handler<Args, Details> =>
  resources === undefined
    ? handler
    : Object.assign((args: Args, context: ToolContext<Details>) => handler(args, context), { resources })

/** The parameter Schema of a tool: anything that decodes without services. */
export type Parameters = Schema.Decoder<unknown>

/** The service identifier of the handler of the tool named `Name`. */
export interface HandlerOf<Name extends string> {
  readonly "~effect-agent/Tool/Handler": Name
}

/** The JSON Schema of a tool's parameters, as sent to a model. */
export type JsonSchema = { readonly [key: string]: unknown }

const TypeId = "~effect-agent/Tool" as const

/** A tool definition. The handler is looked up through {@link Tool.Handler}. */
export interface Tool<Name extends string, Params extends Parameters = Parameters, Details = unknown> {
  readonly [TypeId]: typeof TypeId
  readonly name: Name
  /** A short human-readable name for UIs. */
  readonly label: string
  readonly description: string
  readonly parameters: Params
  /**
   * `"sequential"` forces the whole batch to run one call at a time. A tool that may get in the way of
   * other calls can instead declare what each call touches ({@link withResources}).
   */
  readonly executionMode: ExecutionMode | undefined
  /** Execution time allowed per call; overrides the batch default. */
  readonly timeout: Duration.Duration | undefined
  /**
   * A compatibility shim applied to the raw arguments before validation, e.g. to accept an older argument
   * shape. Its failures and defects become the immediate outcome `PrepareFailed`.
   */
  readonly prepareArguments: ((raw: unknown) => Effect.Effect<unknown, unknown>) | undefined
  /** The parameter JSON Schema for models (draft 2020-12, `$defs` inlined at the top). Computed once. */
  readonly jsonSchema: JsonSchema
  /** The service key under which this tool's handler is provided. */
  readonly Handler: Context.Key<HandlerOf<Name>, Handler<Params["Type"], Details>>
  /**
   * A layer providing this tool's handler. Pass the handler itself, or an Effect that builds it (and may
   * use services, which then show in the layer's requirements).
   */
  toLayer<E = never, R = never>(
    handler: Handler<Params["Type"], Details> | Effect.Effect<Handler<Params["Type"], Details>, E, R>
  ): Layer.Layer<HandlerOf<Name>, E, Exclude<R, Scope.Scope>>
  /** Coerces raw model arguments (numeric strings, boolean strings, numbers for strings) without mutating them. */
  readonly coerce: (raw: unknown) => unknown
}

/** The namespace of tool types. */
export declare namespace Tool {
  /** Any tool. */
  export type Any = Tool<any, any, any>
}

/** Options of {@link make}. */
interface MakeOptions<Params extends Parameters> {
  readonly description: string
  readonly parameters: Params
  readonly label?: string
  readonly executionMode?: ExecutionMode
  readonly timeout?: Duration.Input
  readonly prepareArguments?: (raw: unknown) => Effect.Effect<unknown, unknown>
}

/**
 * Effect's JSON encoding of `Schema.Number` also admits the strings "NaN", "Infinity" and "-Infinity".
 * Models should only ever be told "number", so that alternative is removed.
 */
const NON_FINITE = ["NaN", "Infinity", "-Infinity"]
const isNonFiniteStrings = (u: unknown): boolean => {
  if (typeof u !== "object" || u === null) return false
  const e = (u as { readonly enum?: unknown }).enum
  return (u as { readonly type?: unknown }).type === "string" && Array.isArray(e) &&
    e.every((v) => NON_FINITE.includes(v as string))
}
const forModels = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(forModels)
  if (typeof node !== "object" || node === null) return node
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) out[key] = forModels(value)
  const anyOf = out.anyOf
  if (Array.isArray(anyOf) && anyOf.some(isNonFiniteStrings)) {
    const rest = anyOf.filter((member) => !isNonFiniteStrings(member))
    delete out.anyOf
    return rest.length === 1 ? { ...(rest[0] as object), ...out } : { ...out, anyOf: rest }
  }
  return out
}

const toJsonSchema = (parameters: Parameters): JsonSchema => {
  const doc = Schema.toJsonSchemaDocument(parameters)
  const schema = forModels(doc.schema) as JsonSchema
  return Object.keys(doc.definitions).length === 0
    ? schema
    : { ...schema, $defs: forModels(doc.definitions) as JsonSchema }
}

/**
 * Defines a tool. The name is the model-facing identifier and the registry key; it must be unique within a
 * registry.
 */
export const make = <const Name extends string, Params extends Parameters, Details = unknown>(
  name: Name,
  options: MakeOptions<Params>
): Tool<Name, Params, Details> => {
  const Handler = Context.Service<HandlerOf<Name>, Handler<Params["Type"], Details>>(`effect-agent/Tool/${name}`)
  let jsonSchema: JsonSchema | undefined
  return {
    [TypeId]: TypeId,
    name,
    label: options.label ?? name,
    description: options.description,
    parameters: options.parameters,
    executionMode: options.executionMode,
    timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
    prepareArguments: options.prepareArguments,
    get jsonSchema() {
      return jsonSchema ??= toJsonSchema(options.parameters)
    },
    Handler,
    toLayer: (handler) => Effect.isEffect(handler) ? Layer.effect(Handler, handler) : Layer.succeed(Handler, handler),
    coerce: compileCoercion(options.parameters.ast)
  }
}

/**
 * `Effect.tryPromise` for tools: runs promise-based code with an `AbortSignal` that is aborted when the call
 * is stopped (abort, timeout), and, unlike `Effect.tryPromise`, which stops watching the promise the moment
 * it is interrupted, waits for the promise to settle. A promise that honours its signal therefore stops within
 * the grace period like an Effect tool and its result says it was interrupted; one that ignores its signal
 * holds the call until the batch abandons it, and its result says so. A rejection (or a synchronous throw)
 * fails with the error itself, so the error result reads the error's own message.
 */
export const tryPromise = <A>(evaluate: (signal: AbortSignal) => PromiseLike<A>): Effect.Effect<A, unknown> =>
  Effect.callback<A, unknown>((resume, signal) => {
    let settled = false
    let onSettled: (() => void) | undefined
    const settle = (outcome: Effect.Effect<A, unknown>) => {
      settled = true
      onSettled?.()
      resume(outcome)
    }
    try {
      evaluate(signal).then((value) => settle(Effect.succeed(value)), (error) => settle(Effect.fail(error)))
    } catch (error) {
      settle(Effect.fail(error))
    }
    // Run on interruption, after the signal was aborted: the interruption completes when the promise settles.
    return Effect.callback<void>((done) => {
      if (settled) return done(Effect.void)
      onSettled = () => done(Effect.void)
    })
  })

/** A successful text result, the common case. */
export const textResult = <Details = undefined>(
  text: string,
  details?: Details
): ToolResult<Details | undefined> => ({ content: [{ type: "text", text }], details })
