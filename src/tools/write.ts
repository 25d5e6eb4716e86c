/**
 * `write`: creates or overwrites a file, creating its parent directories.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as ResourceAccess from "../ResourceAccess.ts"
import * as Tool from "../Tool.ts"
import { fromPlatformError, WrongFileType } from "./errors.ts"
import { utf8Length } from "./internal.ts"
import { pathAccess } from "./internal/touches.ts"
import { shownPath, Workspace } from "./Workspace.ts"

/** The parameters of `write`. */
export const WriteParameters = Schema.Struct({
  path: Schema.NonEmptyString.annotate({
    description: "Path of the file to write, relative to the workspace root (or absolute inside it)"
  }),
  content: Schema.String.annotate({ description: "The complete new content of the file" })
})

/** The structured part of a `write` result. */
export interface WriteDetails {
  readonly path: string
  readonly bytes: number
  /** False when an existing file was overwritten. */
  readonly created: boolean
}

/** The `write` tool definition. */
export const write = Tool.make<"write", typeof WriteParameters, WriteDetails>("write", {
  label: "Write file",
  description: "Write a file in the workspace, replacing it if it exists. Missing parent directories are " +
    "created. Use edit to change part of an existing file.",
  parameters: WriteParameters
})

/** The handler of {@link write}. */
export const writeLayer = write.toLayer(Effect.gen(function*() {
  const workspace = yield* Workspace
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path

  return Tool.withResources(
    Effect.fnUntraced(function*(args) {
      const absolute = yield* workspace.resolve(args.path)
      const shown = shownPath(workspace, absolute)
      const existing = yield* Effect.option(fs.stat(absolute))
      if (Option.isSome(existing) && existing.value.type !== "File") {
        return yield* new WrongFileType({
          path: shown,
          expected: "file",
          actual: existing.value.type === "Directory" ? "directory" : existing.value.type,
          message: `${shown} is ${
            existing.value.type === "Directory" ? "a directory" : `not a regular file (${existing.value.type})`
          }; write only writes regular files.`
        })
      }
      yield* fs.makeDirectory(path.dirname(absolute), { recursive: true }).pipe(
        Effect.mapError(fromPlatformError(path.dirname(args.path), "create directory"))
      )
      yield* fs.writeFileString(absolute, args.content).pipe(Effect.mapError(fromPlatformError(args.path, "write")))
      const bytes = utf8Length(args.content)
      const created = Option.isNone(existing)
      return {
        content: [{
          type: "text" as const,
          text: `${created ? "Created" : "Overwrote"} ${shown} (${bytes} bytes).`
        }],
        details: { path: shown, bytes, created }
      }
    }),
    (args) => pathAccess(workspace, ResourceAccess.write, args.path)
  )
}))
