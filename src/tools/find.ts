/**
 * `find`: files and directories whose name (or path) matches a glob pattern.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as ResourceAccess from "../ResourceAccess.ts"
import * as Tool from "../Tool.ts"
import { directLister } from "./directRead.ts"
import { rulesFor } from "./gitignore.ts"
import { clip, globMatcher, walk } from "./internal.ts"
import { pathAccess } from "./internal/touches.ts"
import { DirectFileReads, ToolLimits } from "./limits.ts"
import { invalidPattern } from "./patternError.ts"
import { locateDirectory, Workspace } from "./Workspace.ts"

/** The parameters of `find`. */
export const FindParameters = Schema.Struct({
  pattern: Schema.NonEmptyString.annotate({
    description: "Glob pattern. Without '/', it is matched against names at any depth ('*.ts', 'README*'); " +
      "with '/', against the path relative to the search directory ('src/**/*.test.ts'). " +
      "Supports *, ?, [abc], {a,b} and **"
  }),
  path: Schema.optionalKey(
    Schema.String.annotate({ description: "Directory to search in. Default: the workspace root" })
  ),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000 })).annotate({
      description: "Maximum number of results. Default 1000"
    })
  )
})

/** The structured part of a `find` result. */
export interface FindDetails {
  readonly pattern: string
  readonly path: string
  /** Matching paths relative to the workspace root, directories ending in `/`. */
  readonly matches: ReadonlyArray<string>
  /** True when the limit stopped the search; more matches may exist. */
  readonly truncated: boolean
  /** Directories that could not be read. */
  readonly unreadableDirectories: number
}

/** The `find` tool definition. */
export const find = Tool.make<"find", typeof FindParameters, FindDetails>("find", {
  label: "Find files",
  description: "Find files and directories in the workspace by glob pattern. Paths are returned relative to " +
    "the workspace root, directories with a trailing '/'. Files and directories ignored by .gitignore, .git and " +
    "node_modules are skipped, symbolic links are not followed. At most 1000 results by default (see limit).",
  parameters: FindParameters
})

/** The handler of {@link find}. */
export const findLayer = find.toLayer(Effect.gen(function*() {
  const workspace = yield* Workspace
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const limits = yield* ToolLimits
  const list = (yield* DirectFileReads) ? directLister() : undefined

  return Tool.withResources(
    Effect.fnUntraced(function*(args) {
      const given = args.path ?? "."
      const { absolute, shown } = yield* locateDirectory(
        workspace,
        fs,
        given,
        "search",
        () => "; find searches directories"
      )
      const limit = Math.min(args.limit ?? limits.findDefaultResults, limits.findMaxResults)
      let matches: (relative: string, name: string) => boolean
      try {
        matches = globMatcher(args.pattern)
      } catch (error) {
        return yield* invalidPattern("glob pattern", args.pattern, error)
      }
      const found: Array<string> = []
      let truncated = false
      const rules = yield* rulesFor(fs, path, workspace.root, absolute)
      const result = yield* walk(fs, path, absolute, (entry) =>
        Effect.sync(() => {
          const isDirectory = entry.type === "Directory"
          const relative = isDirectory ? `${entry.relative}/` : entry.relative
          if (!matches(relative, entry.name)) return true
          if (found.length >= limit) {
            truncated = true
            return false
          }
          const display = workspace.display(entry.absolute)
          found.push(isDirectory ? `${display}/` : display)
          return true
        }), { rules, list })
      let text = found.length === 0 ? `No files found matching ${clip(args.pattern)}` : found.join("\n")
      if (truncated) {
        text += `\n\n[Stopped at ${limit} results; there are more. Narrow the pattern or path${
          limit < limits.findMaxResults ? `, or raise limit (up to ${limits.findMaxResults})` : ""
        }.]`
      }
      return {
        content: [{ type: "text" as const, text }],
        details: {
          pattern: clip(args.pattern),
          path: shown,
          matches: found,
          truncated,
          unreadableDirectories: result.unreadable
        }
      }
    }),
    (args) => pathAccess(workspace, ResourceAccess.read, args.path ?? ".")
  )
}))
