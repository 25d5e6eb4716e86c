/**
 * `ls`: the entries of a directory, sorted, directories marked with a trailing `/`.
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
import { fromPlatformError } from "./errors.ts"
import { rulesFor } from "./gitignore.ts"
import { GIT_DIR } from "./internal.ts"
import { pathAccess } from "./internal/touches.ts"
import { ToolLimits } from "./limits.ts"
import { locateDirectory, Workspace } from "./Workspace.ts"

/** The parameters of `ls`. */
export const LsParameters = Schema.Struct({
  path: Schema.optionalKey(
    Schema.String.annotate({
      description: "Directory to list, relative to the workspace root. Default: the workspace root"
    })
  ),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 5000 })).annotate({
      description: "Maximum number of entries to return. Default 500"
    })
  )
})

/** The structured part of an `ls` result. */
export interface LsDetails {
  readonly path: string
  /** The entries returned, directories ending in `/`. */
  readonly entries: ReadonlyArray<string>
  /** How many entries the directory has, not counting those left out (`.git` and `.gitignore`d ones). */
  readonly total: number
  readonly truncated: boolean
  /** How many entries were left out because a `.gitignore` ignores them. */
  readonly ignored: number
}

/** The `ls` tool definition. */
export const ls = Tool.make<"ls", typeof LsParameters, LsDetails>("ls", {
  label: "List directory",
  description: "List the entries of a directory in the workspace, sorted alphabetically, directories with a " +
    "trailing '/'. Hidden entries are included; .git and entries ignored by .gitignore are left out (the " +
    "result says how many). At most 500 entries by default (see limit).",
  parameters: LsParameters
})

const byName = (a: string, b: string): number => {
  const x = a.toLowerCase()
  const y = b.toLowerCase()
  return x < y ? -1 : x > y ? 1 : a < b ? -1 : a > b ? 1 : 0
}

/** The handler of {@link ls}. */
export const lsLayer = ls.toLayer(Effect.gen(function*() {
  const workspace = yield* Workspace
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const limits = yield* ToolLimits

  return Tool.withResources(
    Effect.fnUntraced(function*(args) {
      const given = args.path ?? "."
      const { absolute, shown } = yield* locateDirectory(
        workspace,
        fs,
        given,
        "list",
        (isFile) => isFile ? "; use read to see a file" : ""
      )
      const listed = yield* fs.readDirectoryEntries(absolute).pipe(Effect.mapError(fromPlatformError(given, "list")))
      const rules = yield* rulesFor(fs, path, workspace.root, absolute)
      const names: Array<string> = []
      let ignored = 0
      for (const entry of listed) {
        if (entry.name === GIT_DIR) continue
        let type = entry.type
        if (type === "SymbolicLink" || type === "Unknown") {
          // Only says whether the link leads to a directory; nothing is read through it.
          const target = yield* Effect.option(fs.stat(path.join(absolute, entry.name)))
          type = Option.isSome(target) ? target.value.type : type
        }
        if (!rules.isEmpty && rules.ignores(path.join(absolute, entry.name), type === "Directory")) {
          ignored++
          continue
        }
        names.push(type === "Directory" ? `${entry.name}/` : entry.name)
      }
      names.sort(byName)
      const limit = Math.min(args.limit ?? limits.lsDefaultEntries, limits.lsMaxEntries)
      const entries = names.slice(0, limit)
      const truncated = names.length > entries.length
      let text = entries.length === 0 ? "(empty directory)" : entries.join("\n")
      const notes: Array<string> = []
      if (truncated) {
        notes.push(
          `Showing ${entries.length} of ${names.length} entries.${
            limit < limits.lsMaxEntries ? ` Use limit=${Math.min(names.length, limits.lsMaxEntries)} to see more.` : ""
          }`
        )
      }
      if (ignored > 0) notes.push(`${ignored} ${ignored === 1 ? "entry" : "entries"} ignored by .gitignore not shown.`)
      if (notes.length > 0) text += `\n\n[${notes.join(" ")}]`
      return {
        content: [{ type: "text" as const, text }],
        details: { path: shown, entries, total: names.length, truncated, ignored }
      }
    }),
    (args) => pathAccess(workspace, ResourceAccess.read, args.path ?? ".")
  )
}))
