/** The built-in tools, confined to a workspace folder, as the command line's registry. */
import { NodeServices } from "@effect/platform-node"
import { Layer, type PlatformError } from "effect"
import * as BuiltinTools from "../tools/index.ts"
import { type DuplicateToolName, ToolRegistry } from "../ToolRegistry.ts"

/** The registry of the built-in tools working in `root`, on Node's file system and processes. */
export const workspaceTools = (
  root: string
): Layer.Layer<ToolRegistry, DuplicateToolName | PlatformError.PlatformError> =>
  ToolRegistry.layer(...BuiltinTools.builtinTools).pipe(
    Layer.provide(BuiltinTools.layerAt(root)),
    Layer.provide(NodeServices.layer)
  )
