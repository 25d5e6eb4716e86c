/**
 * What a built-in tool's call touches (docs/tool-execution.md, TE 11): the path it was given, resolved in
 * the workspace as its handler will resolve it, so that two spellings of one file (`src/a.ts`,
 * `./src/../src/a.ts`, a link to it) are one key.
 */
import * as Effect from "effect/Effect"
import * as ResourceAccess from "../../ResourceAccess.ts"
import type { WorkspaceShape } from "../Workspace.ts"

/**
 * The access of a call on `path`. A path that does not resolve (outside the workspace, too long) makes the
 * call exclusive: its handler will refuse it, and nothing may race a call whose target is unknown.
 */
export const pathAccess = (
  workspace: WorkspaceShape,
  access: (key: string) => ResourceAccess.ResourceAccess,
  path: string
): Effect.Effect<ReadonlyArray<ResourceAccess.ResourceAccess>> =>
  workspace.resolve(path).pipe(
    Effect.map((absolute) => [access(absolute)]),
    Effect.orElseSucceed(() => [ResourceAccess.exclusive])
  )
