/**
 * The built-in tools (`read`, `ls`, `find`, `grep`, `write`, `edit`, `bash`), working inside a
 * {@link Workspace} on the platform services (`FileSystem`, `Path`, `ChildProcessSpawner`; on Node they come
 * from `NodeServices.layer`).
 *
 * ```ts
 * import { NodeServices } from "@effect/platform-node"
 * import * as BuiltinTools from "./tools/index.ts"
 *
 * const registry = ToolRegistry.layer(...BuiltinTools.builtinTools).pipe(
 *   Layer.provide(BuiltinTools.layerAt(process.cwd())),
 *   Layer.provide(NodeServices.layer)
 * )
 * ```
 *
 * A tool's handler can be swapped by providing another layer for it (`BuiltinTools.read.toLayer(...)`); a
 * subset is registered by passing only those definitions (e.g. `readOnlyTools`) with the same `layer`: the
 * handlers of tools that are not registered are never called.
 *
 * @since 0.1.0
 */
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import type * as Path from "effect/Path"
import type * as PlatformError from "effect/PlatformError"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import type * as Tool from "../Tool.ts"
import { bash, bashLayer, type SandboxUnavailable } from "./bash.ts"
import { edit, editLayer } from "./edit.ts"
import { find, findLayer } from "./find.ts"
import { grep, grepLayer } from "./grep.ts"
import { ls, lsLayer } from "./ls.ts"
import { read, readLayer } from "./read.ts"
import { Workspace } from "./Workspace.ts"
import { write, writeLayer } from "./write.ts"

export { bash, BashResources, BashSandbox, defaultSandboxSettings, SandboxUnavailable } from "./bash.ts"
export { edit } from "./edit.ts"
export type { BuiltinToolError } from "./errors.ts"
export { find } from "./find.ts"
export { grep } from "./grep.ts"
export { ImageReading } from "./image.ts"
export { defaultLimits, DirectFileReads, ToolLimits } from "./limits.ts"
export { ls } from "./ls.ts"
export { read } from "./read.ts"
export { Workspace } from "./Workspace.ts"
export { write } from "./write.ts"

/** Every built-in tool definition, for `ToolRegistry.layer(...builtinTools)`. */
export const builtinTools = [read, ls, find, grep, write, edit, bash] as const

/** The read-only subset (no `write`, `edit`, `bash`). */
export const readOnlyTools = [read, ls, find, grep] as const

/** The handler services of the built-in tools. */
export type Handlers = (typeof builtinTools)[number] extends infer T
  ? T extends Tool.Tool<infer Name, any, any> ? Tool.HandlerOf<Name> : never
  : never

/** The services the built-in handlers run on. */
type Requirements = Workspace | FileSystem.FileSystem | Path.Path | ChildProcessSpawner.ChildProcessSpawner

/** The handlers of all built-in tools; fails only when the `bash` sandbox is required and unavailable. */
export const layer: Layer.Layer<Handlers, SandboxUnavailable, Requirements> = Layer.mergeAll(
  readLayer,
  lsLayer,
  findLayer,
  grepLayer,
  writeLayer,
  editLayer,
  bashLayer
)

/** The handlers of all built-in tools, working in `root`; the {@link Workspace} is provided too. */
export const layerAt = (
  root: string
): Layer.Layer<
  Handlers | Workspace,
  PlatformError.PlatformError | SandboxUnavailable,
  FileSystem.FileSystem | Path.Path | ChildProcessSpawner.ChildProcessSpawner
> => layer.pipe(Layer.provideMerge(Workspace.layer(root)))
