/**
 * `grep`: lines matching a regular expression (or a literal string) in a file or a directory tree, as
 * `path:line: text`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import type * as PlatformError from "effect/PlatformError"
import * as Schema from "effect/Schema"
import * as ResourceAccess from "../ResourceAccess.ts"
import * as Tool from "../Tool.ts"
import { directLister, directReader, type Read } from "./directRead.ts"
import { fromPlatformError, WrongFileType } from "./errors.ts"
import { rulesFor } from "./gitignore.ts"
import { clip, globMatcher, looksBinary, walk } from "./internal.ts"
import { pathAccess } from "./internal/touches.ts"
import { DirectFileReads, ToolLimits } from "./limits.ts"
import { invalidPattern } from "./patternError.ts"
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
    "matching lines as 'path:line: text' with paths relative to the workspace root. Files ignored by " +
    ".gitignore, .git and node_modules are skipped, and so are binary files, files over 10 MB and symbolic " +
    "links. At most 100 matches by default (see limit); long lines are cut to 500 characters.",
  parameters: GrepParameters
})

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Files read at once while searching a tree. */
const READ_CONCURRENCY = 16
/** Files gathered by the walk before they are read (in parallel) and searched (in walk order). */
const BATCH = 64

/**
 * Whether a match of `source` on one line, alone, implies a match of it with the `m` flag somewhere in the
 * whole text: true unless it has a lookaround, which could see past the line's ends. Then a file where the
 * whole-text search finds nothing has no matching line, and its lines need not be looked at one by one.
 */
const wholeTextPrefilterIsSafe = (source: string): boolean => !/\(\?<?[=!]/.test(source)

/** The handler of {@link grep}. */
export const grepLayer = grep.toLayer(Effect.gen(function*() {
  const workspace = yield* Workspace
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const limits = yield* ToolLimits
  const directReads = yield* DirectFileReads
  const list = directReads ? directLister() : undefined

  /** A file's bytes, unless it is over the size limit (checked before reading) or cannot be read. */
  const readBounded = (file: string): Effect.Effect<Read> =>
    Effect.flatMap(
      fs.stat(file),
      (info): Effect.Effect<Read, PlatformError.PlatformError> =>
        Number(info.size) > limits.grepMaxFileBytes ? Effect.succeed("large") : fs.readFile(file)
    ).pipe(
      // A file that vanished or cannot be read is skipped, as grep -s would.
      Effect.orElseSucceed(() => "unreadable" as const)
    )

  return Tool.withResources(
    Effect.fnUntraced(function*(args) {
      const source = args.literal === true ? escapeRegExp(args.pattern) : args.pattern
      const flags = args.ignoreCase ? "i" : ""
      let regex: RegExp
      let wholeText: RegExp | undefined
      try {
        regex = new RegExp(source, flags)
        // V8 compiles on first use, and only then refuses a pattern that is too large: make that happen here.
        regex.test("")
        wholeText = wholeTextPrefilterIsSafe(source) ? new RegExp(source, flags + "m") : undefined
      } catch (error) {
        return yield* invalidPattern("regular expression", args.pattern, error)
      }
      let matchesGlob: ((relative: string, name: string) => boolean) | undefined
      try {
        matchesGlob = args.glob === undefined || args.glob === "" ? undefined : globMatcher(args.glob)
      } catch (error) {
        return yield* invalidPattern("glob pattern", args.glob!, error)
      }
      const given = args.path ?? "."
      const { absolute, info, shown } = yield* locate(workspace, fs, given, "search")
      const limit = Math.min(args.limit ?? limits.grepDefaultMatches, limits.grepMaxMatches)
      // Per call: its buffer is let go with the call.
      const direct = directReads ? directReader() : undefined

      const out: Array<string> = []
      let matches = 0
      let filesWithMatches = 0
      let filesSearched = 0
      let truncated = false
      let linesCut = 0
      let skippedBinary = 0
      let skippedLarge = 0
      const decoder = new TextDecoder("utf-8")

      /** Searches one file's bytes; false once the limit is reached. */
      const searchBytes = (file: string, bytes: Uint8Array): boolean => {
        if (looksBinary(bytes, limits.binarySniffBytes)) {
          skippedBinary++
          return true
        }
        filesSearched++
        const text = decoder.decode(bytes)
        if (wholeText !== undefined && !wholeText.test(text)) return true
        let display: string | undefined
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
            display ??= workspace.display(file)
            out.push(`${display}:${lineNo}: ${line}`)
          }
          if (end === text.length) break
          start = end + 1
        }
        if (any) filesWithMatches++
        return true
      }

      if (info.type === "Directory") {
        // The walk gathers files; each batch is read in parallel and searched in walk order, so the output
        // and the place where the limit stops it are the same as a one-by-one search.
        let pending: Array<string> = []
        let more = true
        // A file that vanished or cannot be read is skipped, as grep -s would.
        const take = (file: string, read: Read): boolean => {
          if (read === "unreadable") return true
          if (read === "large") {
            skippedLarge++
            return true
          }
          return searchBytes(file, read)
        }
        const flush = Effect.suspend(() => {
          const batch = pending
          pending = []
          return Effect.map(Effect.forEach(batch, readBounded, { concurrency: READ_CONCURRENCY }), (reads) => {
            for (let i = 0; i < batch.length && more; i++) more = take(batch[i], reads[i])
            return more
          })
        })
        const rules = yield* rulesFor(fs, path, workspace.root, absolute)
        yield* walk(fs, path, absolute, (entry) => {
          if (entry.type !== "File") return Effect.succeed(true)
          if (matchesGlob !== undefined && !matchesGlob(entry.relative, entry.name)) return Effect.succeed(true)
          if (direct !== undefined) {
            more = take(entry.absolute, direct(entry.absolute, limits.grepMaxFileBytes))
            return Effect.succeed(more)
          }
          pending.push(entry.absolute)
          return pending.length >= BATCH ? flush : Effect.succeed(true)
        }, { rules, list })
        if (more && pending.length > 0) yield* flush
      } else if (info.type !== "File") {
        return yield* new WrongFileType({
          path: shown,
          expected: "file",
          actual: info.type,
          message: `${shown} is neither a regular file nor a directory (${info.type}).`
        })
      } else if (Number(info.size) > limits.grepMaxFileBytes) {
        skippedLarge++
      } else {
        const bytes = yield* fs.readFile(absolute).pipe(Effect.mapError(fromPlatformError(given, "read")))
        searchBytes(absolute, bytes)
      }

      let text = out.length === 0 ? "No matches found" : out.join("\n")
      const notes: Array<string> = []
      if (truncated) {
        notes.push(
          `Stopped at ${limit} matches; there are more. Narrow the pattern, path or glob${
            limit < limits.grepMaxMatches ? `, or raise limit (up to ${limits.grepMaxMatches})` : ""
          }.`
        )
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
    }),
    (args) => pathAccess(workspace, ResourceAccess.read, args.path ?? ".")
  )
}))
