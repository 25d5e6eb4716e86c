/**
 * Helpers shared by the built-in tools: text measurements, binary detection, the glob rule, the directory
 * walker of `find` and `grep`, and the bounded output buffer of `bash`.
 *
 * Internal: no entry point exports it.
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Glob from "effect/Glob"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import type { DirectLister } from "./directRead.ts"
import { type IgnoreRules, rulesInside } from "./gitignore.ts"

/** The size of a string in UTF-8 bytes, without allocating. */
export const utf8Length = (s: string): number => {
  let bytes = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

/** The longest prefix of `s` that fits in `maxBytes` UTF-8 bytes (never splitting a surrogate pair). */
export const truncateToBytes = (s: string, maxBytes: number): string => {
  let bytes = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3
    if (bytes + size > maxBytes) return s.slice(0, i)
    bytes += size
    if (pair) i++
  }
  return s
}

/** The longest suffix of `s` that fits in `maxBytes` UTF-8 bytes. */
export const truncateToBytesFromEnd = (s: string, maxBytes: number): string => {
  let bytes = 0
  for (let i = s.length - 1; i >= 0; i--) {
    const c = s.charCodeAt(i)
    const pair = c >= 0xdc00 && c <= 0xdfff && i > 0
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3
    if (bytes + size > maxBytes) return s.slice(i + 1)
    bytes += size
    if (pair) i--
  }
  return s
}

export { clip } from "../internal/clip.ts"

/** Human-readable byte count. */
export const formatBytes = (n: number): string =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / (1024 * 1024)).toFixed(1)} MB`

/** A file is taken as binary when a NUL byte appears among its first `sniff` bytes. */
export const looksBinary = (bytes: Uint8Array, sniff: number): boolean =>
  (bytes.length > sniff ? bytes.subarray(0, sniff) : bytes).indexOf(0) !== -1

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** Whether the bytes are well-formed UTF-8 (a BOM is allowed). */
export const isValidUtf8 = (bytes: Uint8Array): boolean => {
  try {
    strictUtf8.decode(bytes)
    return true
  } catch {
    return false
  }
}

/**
 * Start offsets of the non-overlapping occurrences of `needle` (not empty) in `haystack`, left to right,
 * at most `max` of them. Works on bytes, so it finds text in files that are not valid UTF-8.
 */
export const byteOccurrences = (haystack: Uint8Array, needle: Uint8Array, max = Infinity): Array<number> => {
  const found: Array<number> = []
  const first = needle[0]
  const last = haystack.length - needle.length
  let i = haystack.indexOf(first)
  while (i !== -1 && i <= last && found.length < max) {
    let j = 1
    while (j < needle.length && haystack[i + j] === needle[j]) j++
    if (j === needle.length) {
      found.push(i)
      i = haystack.indexOf(first, i + needle.length)
    } else {
      i = haystack.indexOf(first, i + 1)
    }
  }
  return found
}

/** How many times `byte` occurs in `bytes[start, end)`. */
export const countByte = (bytes: Uint8Array, byte: number, start = 0, end = bytes.length): number => {
  let n = 0
  for (let i = bytes.indexOf(byte, start); i !== -1 && i < end; i = bytes.indexOf(byte, i + 1)) n++
  return n
}

/** Whether the bytes have at least one CRLF and no LF without a CR before it. */
export const allLineEndsCrlf = (bytes: Uint8Array): boolean => {
  let any = false
  for (let i = bytes.indexOf(10); i !== -1; i = bytes.indexOf(10, i + 1)) {
    if (i === 0 || bytes[i - 1] !== 13) return false
    any = true
  }
  return any
}

/** Directories that `find` and `grep` never enter, whatever `.gitignore` says. */
const SKIPPED_DIRECTORIES: ReadonlySet<string> = new Set([".git", "node_modules", ".effect-agent"])

/** The name no tool lists or searches, file (a worktree's pointer) or directory. */
export const GIT_DIR = ".git"

/**
 * The glob rule of `find` and `grep`: a pattern without `/` is matched against the entry's name (so `*.ts`
 * finds TypeScript files at any depth); a pattern with `/` is matched against the path relative to the
 * search directory (`src/**\/*.ts`). Hidden names are matched too. Syntax: `*`, `?`, `[...]`, `{a,b}`, `**`.
 * Throws the engine's error for a pattern it cannot compile (one too large, say).
 */
export const globMatcher = (pattern: string): (relative: string, name: string) => boolean => {
  const trimmed = pattern.startsWith("./") ? pattern.slice(2) : pattern
  const glob = Glob.make(trimmed, { dot: true })
  // Compiles the pattern now, so one the engine refuses throws here, where the caller catches it.
  Glob.match(glob, "x")
  return trimmed.includes("/")
    ? (relative) => Glob.match(glob, relative)
    : (_, name) => Glob.match(glob, name)
}

/** One entry met by {@link walk}. */
export interface WalkEntry {
  /** Absolute path. */
  readonly absolute: string
  /** Path relative to the walk's start, `/`-separated. */
  readonly relative: string
  readonly name: string
  readonly type: FileSystem.File.Type
}

/**
 * Walks a directory tree depth-first in pre-order, each directory's entries sorted by name (so paths come
 * out sorted), calling `visit` on every entry until it returns `false`. Never visits `.git` nor enters
 * {@link SKIPPED_DIRECTORIES}, nor follows symbolic links (so the walk stays where it started). With
 * `rules` (those in force in `start`), entries that `.gitignore` files ignore are neither visited nor
 * entered, and each `.gitignore` met on the way applies below it. With `list`, directories are listed with
 * it instead of `fs`. Unreadable directories are counted and skipped.
 */
export const walk = <E>(
  fs: FileSystem.FileSystem,
  path: Path.Path,
  start: string,
  visit: (entry: WalkEntry) => Effect.Effect<boolean, E>,
  options: { readonly rules?: IgnoreRules | undefined; readonly list?: DirectLister | undefined } = {}
): Effect.Effect<{ readonly completed: boolean; readonly unreadable: number }, E> =>
  Effect.gen(function*() {
    interface Frame {
      readonly absolute: string
      readonly relative: string
      readonly entries: ReadonlyArray<FileSystem.DirectoryEntry>
      readonly rules: IgnoreRules | undefined
      index: number
    }
    let unreadable = 0
    const { list, rules } = options
    const listing = (absolute: string) =>
      list === undefined
        ? Effect.map(Effect.option(fs.readDirectoryEntries(absolute)), Option.getOrUndefined)
        : Effect.sync(() => list(absolute))
    const open = (absolute: string, relative: string, inherited: IgnoreRules | undefined, isStart: boolean) =>
      Effect.flatMap(listing(absolute), (listed) => {
        if (listed === undefined) {
          unreadable++
          return Effect.succeed(undefined)
        }
        const entries = [...listed].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        // The start's own .gitignore is already in `rules`; below it, each directory may add one.
        const hasOwn = !isStart && inherited !== undefined &&
          entries.some((e) => e.name === ".gitignore" && e.type === "File")
        return Effect.map(
          hasOwn ? rulesInside(fs, path, inherited, absolute) : Effect.succeed(inherited),
          (frameRules): Frame => ({ absolute, relative, entries, rules: frameRules, index: 0 })
        )
      })
    const first = yield* open(start, "", rules, true)
    const stack: Array<Frame> = first === undefined ? [] : [first]
    while (stack.length > 0) {
      const frame = stack[stack.length - 1]
      if (frame.index >= frame.entries.length) {
        stack.pop()
        continue
      }
      const entry = frame.entries[frame.index++]
      const absolute = path.join(frame.absolute, entry.name)
      let type = entry.type
      if (type === "Unknown") {
        const info = yield* Effect.option(fs.lstat(absolute))
        type = Option.isSome(info) ? info.value.type : "Unknown"
      }
      if (entry.name === GIT_DIR) continue
      if (type === "Directory" && SKIPPED_DIRECTORIES.has(entry.name)) continue
      if (frame.rules !== undefined && !frame.rules.isEmpty && frame.rules.ignores(absolute, type === "Directory")) {
        continue
      }
      const relative = frame.relative === "" ? entry.name : `${frame.relative}/${entry.name}`
      if (!(yield* visit({ absolute, relative, name: entry.name, type }))) return { completed: false, unreadable }
      if (type === "Directory") {
        const child = yield* open(absolute, relative, frame.rules, false)
        if (child !== undefined) stack.push(child)
      }
    }
    return { completed: true, unreadable }
  })

/**
 * Keeps the tail of a growing output within a line and byte budget, counting everything that went by.
 * A line longer than the byte budget keeps only its end.
 */
export class TailBuffer {
  private lines: Array<string> = []
  private head = 0
  private keptBytes = 0
  private partial = ""
  private partialCut = false
  totalBytes = 0
  totalLines = 0
  droppedLines = 0
  cutLines = 0

  readonly maxLines: number
  readonly maxBytes: number

  constructor(maxLines: number, maxBytes: number) {
    this.maxLines = maxLines
    this.maxBytes = maxBytes
  }

  push(text: string): void {
    this.totalBytes += utf8Length(text)
    let start = 0
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", start)) {
      this.partial += text.slice(start, i)
      this.commit()
      start = i + 1
    }
    this.partial += text.slice(start)
    // A UTF-16 unit is at most 3 UTF-8 bytes: only a line that could exceed the budget is measured.
    if (this.partial.length * 3 > this.maxBytes && utf8Length(this.partial) > this.maxBytes) {
      this.partial = truncateToBytesFromEnd(this.partial, this.maxBytes)
      this.partialCut = true
    }
    this.fit()
  }

  private commit(): void {
    let line = this.partial.endsWith("\r") ? this.partial.slice(0, -1) : this.partial
    this.partial = ""
    if (utf8Length(line) > this.maxBytes) {
      line = truncateToBytesFromEnd(line, this.maxBytes)
      this.partialCut = true
    }
    if (this.partialCut) this.cutLines++
    this.partialCut = false
    this.lines.push(line)
    this.keptBytes += utf8Length(line) + 1
    this.totalLines++
    this.fit()
  }

  /** Drops the oldest lines until the kept lines and the unfinished one are within both budgets. */
  private fit(): void {
    const partialBytes = this.partial === "" ? 0 : utf8Length(this.partial)
    while (
      this.lines.length - this.head > this.maxLines ||
      (this.keptBytes + partialBytes > this.maxBytes && this.lines.length - this.head > 0)
    ) {
      this.keptBytes -= utf8Length(this.lines[this.head]) + 1
      this.head++
      this.droppedLines++
    }
    if (this.head > 1024 && this.head * 2 > this.lines.length) {
      this.lines = this.lines.slice(this.head)
      this.head = 0
    }
  }

  /** Whether anything was dropped or cut. */
  get truncated(): boolean {
    return this.droppedLines > 0 || this.cutLines > 0 || this.partialCut
  }

  /** The kept output. */
  text(): string {
    const kept = this.lines.slice(this.head)
    if (this.partial !== "") kept.push(this.partial)
    return kept.join("\n")
  }

  /** How many lines the output has, counting an unfinished last line. */
  get lineCount(): number {
    return this.totalLines + (this.partial === "" ? 0 : 1)
  }
}
