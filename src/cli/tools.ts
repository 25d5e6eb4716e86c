/** The built-in tools, confined to a workspace folder, as the command line's registry. */
import { NodeServices } from "@effect/platform-node"
import * as Layer from "effect/Layer"
import type * as PlatformError from "effect/PlatformError"
import { type DuplicateToolName, ToolRegistry } from "../ToolRegistry.ts"
import type { BashSandboxSettings } from "../tools/bash.ts"
import * as BuiltinTools from "../tools/index.ts"

/**
 * The registry of the built-in tools working in `root`, on Node's file system and processes, with `bash`
 * confined as `sandbox` says (default: the sandbox when bubblewrap works), and images returned by `read`
 * unless `images` is false.
 */
export const workspaceTools = (
  root: string,
  sandbox: BashSandboxSettings = BuiltinTools.defaultSandboxSettings,
  options: { readonly images?: boolean | undefined } = {}
): Layer.Layer<ToolRegistry, DuplicateToolName | PlatformError.PlatformError | BuiltinTools.SandboxUnavailable> =>
  ToolRegistry.layer(...BuiltinTools.builtinTools).pipe(
    Layer.provide(BuiltinTools.layerAt(root)),
    // `--no-images`: read describes an image instead of returning it (CLI 10.5).
    Layer.provide(
      Layer.succeed(BuiltinTools.ImageReading)({
        enabled: options.images ?? true,
        maxBytes: 5 * 1024 * 1024
      })
    ),
    Layer.provide(Layer.succeed(BuiltinTools.BashSandbox)(sandbox)),
    Layer.provide(NodeServices.layer)
  )
