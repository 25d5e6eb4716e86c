/** Shared set-up of the built-in tool tests: a temporary workspace beside an "outside" directory. */
import { NodeServices } from "@effect/platform-node"
import { Context, Effect, Exit, FileSystem, Layer, Path, Schema, type Scope } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { execFileSync } from "node:child_process"
import type * as Tool from "../../src/Tool.ts"
import * as BuiltinTools from "../../src/tools/index.ts"
import type { ToolLimitsShape } from "../../src/tools/limits.ts"

export interface Sandbox {
  /** The workspace root as created (tests may spell paths through it). */
  readonly root: string
  /** A sibling directory outside the workspace. */
  readonly outside: string
  readonly fs: FileSystem.FileSystem
  readonly path: Path.Path
  /** Writes a file relative to the root (creating parents). */
  readonly put: (relative: string, content: string | Uint8Array) => Effect.Effect<string, unknown>
  /** Reads a file relative to the root. */
  readonly get: (relative: string) => Effect.Effect<string, unknown>
  /** Validates raw arguments with the tool's Schema and runs its handler; collects partial results. */
  readonly run: <Name extends string, P extends Tool.Parameters, D>(
    tool: Tool.Tool<Name, P, D>,
    args: unknown,
    updates?: Array<Tool.ToolResult<D>>
  ) => Effect.Effect<Tool.ToolResult<D>, unknown>
  /** Like {@link run}, returning the typed failure (fails the test if the tool succeeds). */
  readonly fail: <Name extends string, P extends Tool.Parameters, D>(
    tool: Tool.Tool<Name, P, D>,
    args: unknown
  ) => Effect.Effect<any, unknown>
  /** The handler services (for running tools through the pipeline). */
  readonly context: Context.Context<BuiltinTools.Handlers | BuiltinTools.Workspace>
}

/** The text of a result's first content block. */
export const textOf = (result: Tool.ToolResult<unknown>): string => {
  const first = result.content[0]
  return first !== undefined && first.type === "text" ? first.text : ""
}

/**
 * A temporary workspace `<tmp>/ws` next to `<tmp>/outside`, removed when the test's scope closes, with the
 * built-in handlers built on it. `limits` overrides some tool limits; `directFileReads` sets
 * {@link BuiltinTools.DirectFileReads} (its default when absent).
 */
export const sandbox = (
  limits: Partial<ToolLimitsShape> = {},
  options: { readonly directFileReads?: boolean } = {}
): Effect.Effect<
  Sandbox,
  unknown,
  Scope.Scope | FileSystem.FileSystem | Path.Path | ChildProcessSpawner.ChildProcessSpawner
> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const base = yield* fs.makeTempDirectoryScoped({ prefix: "effect-agent-tools-" })
    const root = path.join(base, "ws")
    const outside = path.join(base, "outside")
    yield* fs.makeDirectory(root)
    yield* fs.makeDirectory(outside)
    const layer = BuiltinTools.layerAt(root).pipe(
      Layer.provide(Layer.succeed(BuiltinTools.ToolLimits)({ ...BuiltinTools.defaultLimits, ...limits })),
      Layer.provide(
        options.directFileReads === undefined
          ? Layer.empty
          : Layer.succeed(BuiltinTools.DirectFileReads)(options.directFileReads)
      )
    )
    const context = yield* Layer.build(layer)
    const put = (relative: string, content: string | Uint8Array) =>
      Effect.gen(function*() {
        const file = path.join(root, relative)
        yield* fs.makeDirectory(path.dirname(file), { recursive: true })
        if (typeof content === "string") yield* fs.writeFileString(file, content)
        else yield* fs.writeFile(file, content)
        return file
      })
    const get = (relative: string) => fs.readFileString(path.join(root, relative))
    const run = <Name extends string, P extends Tool.Parameters, D>(
      tool: Tool.Tool<Name, P, D>,
      raw: unknown,
      updates: Array<Tool.ToolResult<D>> = []
    ): Effect.Effect<Tool.ToolResult<D>, unknown> =>
      Effect.gen(function*() {
        const args = yield* Schema.decodeUnknownEffect(tool.parameters)(raw)
        const handler = Context.get(context as Context.Context<any>, tool.Handler)
        const controller = new AbortController()
        return yield* handler(args, {
          toolCallId: "test-call",
          signal: controller.signal,
          update: (partial) => Effect.sync(() => void updates.push(partial))
        })
      })
    const fail = <Name extends string, P extends Tool.Parameters, D>(tool: Tool.Tool<Name, P, D>, raw: unknown) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(run(tool, raw))
        if (Exit.isSuccess(exit)) {
          return yield* Effect.die(new Error(`expected ${tool.name} to fail, got ${JSON.stringify(exit.value)}`))
        }
        return yield* Effect.flip(Effect.failCause(exit.cause))
      })
    return { root, outside, fs, path, put, get, run, fail, context }
  })

/** The platform services for the tests. */
export const platform = NodeServices.layer

/** Processes of a process group that are still alive (zombies do not count). */
export const aliveInGroup = (pgid: number): Array<string> => {
  const out = execFileSync("ps", ["-eo", "pid=,pgid=,stat=,args="], { encoding: "utf8" })
  return out.split("\n").map((l) => l.trim()).filter((l) => {
    const [, group, stat] = l.split(/\s+/)
    return group === String(pgid) && stat !== undefined && !stat.startsWith("Z")
  })
}

/** Whether a process exists and is not a zombie. */
export const isAlive = (pid: number): boolean => {
  try {
    const stat = execFileSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" }).trim()
    return stat !== "" && !stat.startsWith("Z")
  } catch {
    return false // ps exits 1 when there is no such process
  }
}
