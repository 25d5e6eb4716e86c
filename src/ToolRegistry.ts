/**
 * The tools of a run, each paired with its handler, looked up by name in constant time.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Handler, HandlerOf, Tool } from "./Tool.ts"

/** The handler services a set of tools needs. */
type HandlersFor<T extends Tool.Any> = T extends Tool<infer Name, any, any> ? HandlerOf<Name> : never

/** A tool together with the handler that runs it. */
export interface RegisteredTool {
  readonly tool: Tool.Any
  /** Runs a call; what a call touches (TE 11) is its `resources` (`Tool.withResources`). */
  readonly handler: Handler<any, any>
}

/** Two tools of a registry share a name. */
export class DuplicateToolName extends Schema.TaggedError<DuplicateToolName>()("DuplicateToolName", {
  toolName: Schema.String,
  message: Schema.String
}) {}

/** The shape of the registry service. */
export interface ToolRegistryShape {
  /** The registered tools in registration order. */
  readonly tools: ReadonlyArray<RegisteredTool>
  /** The tool of that name, if any. */
  readonly get: (name: string) => RegisteredTool | undefined
}

const build = (entries: ReadonlyArray<RegisteredTool>): Effect.Effect<ToolRegistryShape, DuplicateToolName> =>
  Effect.suspend(() => {
    const byName = new Map<string, RegisteredTool>()
    for (const entry of entries) {
      if (byName.has(entry.tool.name)) {
        return Effect.fail(
          new DuplicateToolName({
            toolName: entry.tool.name,
            message: `Tool name "${entry.tool.name}" is registered twice`
          })
        )
      }
      byName.set(entry.tool.name, entry)
    }
    return Effect.succeed({ tools: entries, get: (name: string) => byName.get(name) })
  })

/** The registry of the tools a run may call. */
export class ToolRegistry extends Context.Service<ToolRegistry, ToolRegistryShape>()("effect-agent/ToolRegistry") {
  /**
   * A registry of the given tools whose handlers come from the context (each tool's `toLayer`). Swapping a
   * tool's implementation is providing a different handler layer.
   */
  static layer<const Tools extends ReadonlyArray<Tool.Any>>(
    ...tools: Tools
  ): Layer.Layer<ToolRegistry, DuplicateToolName, HandlersFor<Tools[number]>> {
    return Layer.effect(
      ToolRegistry,
      Effect.gen(function*() {
        const entries: Array<RegisteredTool> = []
        for (const tool of tools) entries.push({ tool, handler: yield* tool.Handler })
        return yield* build(entries)
      })
    ) as Layer.Layer<ToolRegistry, DuplicateToolName, HandlersFor<Tools[number]>>
  }

  /** A registry from tools paired with handlers directly (for dynamic tools). */
  static fromEntries(entries: ReadonlyArray<RegisteredTool>): Layer.Layer<ToolRegistry, DuplicateToolName> {
    return Layer.effect(ToolRegistry, build(entries))
  }

  /** A registry with no tools: every call ends as "not found". */
  static readonly empty: Layer.Layer<ToolRegistry> = Layer.succeed(ToolRegistry, {
    tools: [],
    get: () => undefined
  })
}

/** Pairs a tool with a handler, for {@link ToolRegistry.fromEntries}. */
export const entry = <Params extends Tool.Any>(
  tool: Params,
  handler: Handler<Params["parameters"]["Type"], any>
): RegisteredTool => ({ tool, handler })
