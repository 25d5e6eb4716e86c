/**
 * `grep`: lines matching a regular expression (or a literal string) in a file or a directory tree, as
 * `path:line: text`.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Path, Schema } from "effect"
import * as Tool from "../Tool.ts"
import { fromPlatformError, invalidPattern, WrongFileType } from "./errors.ts"
import { clip, globMatcher, looksBinary, walk } from "./internal.ts"
import { ToolLimits } from "./limits.ts"
import { locate, Workspace } from "./Workspace.ts"

/** The parameters of `grep`. */
export const GrepParameters = Schema.Struct({
  pattern: Schema.NonEmptyString.annotate({
    description: "Regular expression (JavaScript syntax) to search for, or a plain string when literal is true"
  }),
  path: Schema.optionalKey(
    Schema.String.annotate({ description: "File or directory to search. Default: the workspace root" })
  ),
  glob: Schema.optionalKey(
    Schema.String.annotate({
      description: "Only search files matching this glob: matched against the file name without '/' ('*.ts'), " +
        "against the path relative to the search directory with '/' ('src/**/*.ts')"
    })
  ),
  ignoreCase: Schema.optionalKey(Schema.Boolean.annotate({ description: "Case-insensitive search. Default false" })),
  literal: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "Treat pattern as a plain string, not a regular expression. Default false" })
  ),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 })).annotate({
      description: "Maximum number of matching lines. Default 100"
    })
  )
})

/** The structured part of a `grep` result. */
export interface GrepDetails {
  readonly pattern: string
  readonly path: string
  readonly matches: number
  readonly filesWithMatches: number
  readonly filesSearched: number
  /** True when the limit stopped the search; more matches may exist. */
  readonly truncated: boolean
  /** Matching lines that were cut to the maximum line length. */
  readonly linesCut: number
  readonly skippedBinary: number
  readonly skippedLarge: number
}

/** The `grep` tool definition. */
export const grep = Tool.make<"grep", typeof GrepParameters, GrepDetails>("grep", {
  label: "Search file contents",
  description: "Search file contents in the workspace for a regular expression or a literal string. Prints " +
    "matching lines as 'path:line: text' with paths relative to the workspace root. .git and node_modules are " +
    "skipped, and so are binary files, files over 10 MB and symbolic links. At most 100 matches by default " +
    "(see limit); long lines are cut to 500 characters.",
  parameters: GrepParameters,
  executionMode: "parallel"
})

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The handler of {@link grep}. */
export const grepLayer = grep.toLayer(Effect.gen(function*() {
  const workspace = yield* Workspace
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const limits = yield* ToolLimits

  return Effect.fnUntraced(function*(args) {
    let regex: RegExp
    try {
      regex = new RegExp(args.literal === true ? escapeRegExp(args.pattern) : args.pattern, args.ignoreCase ? "i" : "")
      // V8 compiles on first use, and only then refuses a pattern that is too large: make that happen here.
      regex.test("")
    } catch (error) {
      return yield* invalidPattern("regular expression", args.pattern, error)
    }
    const given = args.path ?? "."
    const { absolute, info, shown } = yield* locate(workspace, fs, given, "search")
    const limit = Math.min(args.limit ?? limits.grepDefaultMatches, limits.grepMaxMatches)
    let matchesGlob: ((relative: string, name: string) => boolean) | undefined
    try {
      matchesGlob = args.glob === undefined || args.glob === "" ? undefined : globMatcher(args.glob)
    } catch (error) {
      return yield* invalidPattern("glob pattern", args.glob!, error)
    }

    const out: Array<string> = []
    let matches = 0
    let filesWithMatches = 0
    let filesSearched = 0
    let truncated = false
    let linesCut = 0
    let skippedBinary = 0
    let skippedLarge = 0

    /** Searches one file; false once the limit is reached. */
    const searchFile = (file: string, sizeBytes: number | undefined) =>
      Effect.gen(function*() {
        if (sizeBytes !== undefined && sizeBytes > limits.grepMaxFileBytes) {
          skippedLarge++
          return true
        }
        const bytes = yield* fs.readFile(file)
        if (bytes.length > limits.grepMaxFileBytes) {
          skippedLarge++
          return true
        }
        if (looksBinary(bytes, limits.binarySniffBytes)) {
          skippedBinary++
          return true
        }
        filesSearched++
        const text = new TextDecoder("utf-8").decode(bytes)
        const display = workspace.display(file)
        let any = false
        let lineNo = 0
        let start = 0
        while (start <= text.length) {
          let end = text.indexOf("\n", start)
          if (end === -1) end = text.length
          lineNo++
          let line = text.slice(start, end)
          if (line.endsWith("\r")) line = line.slice(0, -1)
          if (regex.test(line)) {
            if (matches >= limit) {
              truncated = true
              return false
            }
            matches++
            any = true
            if (line.length > limits.grepMaxLineLength) {
              line = `${line.slice(0, limits.grepMaxLineLength)}... [line cut]`
              linesCut++
            }
            out.push(`${display}:${lineNo}: ${line}`)
          }
          if (end === text.length) break
          start = end + 1
        }
        if (any) filesWithMatches++
        return true
      })

    if (info.type === "Directory") {
      yield* walk(fs, path, absolute, (entry) => {
        if (entry.type !== "File") return Effect.succeed(true)
        if (matchesGlob !== undefined && !matchesGlob(entry.relative, entry.name)) return Effect.succeed(true)
        // A file that vanished or cannot be read is skipped, as grep -s would.
        return searchFile(entry.absolute, undefined).pipe(Effect.orElseSucceed(() => true))
      })
    } else if (info.type !== "File") {
      return yield* new WrongFileType({
        path: shown,
        expected: "file",
        actual: info.type,
        message: `${shown} is neither a regular file nor a directory (${info.type}).`
      })
    } else {
      yield* searchFile(absolute, Number(info.size)).pipe(Effect.mapError(fromPlatformError(given, "read")))
    }

    let text = out.length === 0 ? "No matches found" : out.join("\n")
    const notes: Array<string> = []
    if (truncated) {
      notes.push(`Stopped at ${limit} matches; there are more. Narrow the pattern, path or glob${
        limit < limits.grepMaxMatches ? `, or raise limit (up to ${limits.grepMaxMatches})` : ""
      }.`)
    }
    if (linesCut > 0) notes.push(`${linesCut} long line(s) were cut to ${limits.grepMaxLineLength} characters.`)
    if (skippedLarge > 0) notes.push(`${skippedLarge} file(s) over the size limit were not searched.`)
    if (notes.length > 0) text += `\n\n[${notes.join(" ")}]`
    return {
      content: [{ type: "text" as const, text }],
      details: {
        pattern: clip(args.pattern),
        path: shown,
        matches,
        filesWithMatches,
        filesSearched,
        truncated,
        linesCut,
        skippedBinary,
        skippedLarge
      }
    }
  })
}))
