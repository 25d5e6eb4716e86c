/**
 * `.gitignore` rules for `ls`, `find` and `grep`, matched with the npm package `ignore` (the matcher eslint
 * and many others use).
 *
 * What is followed, as git does: every `.gitignore` from the workspace root down to a directory applies in
 * it; a pattern is relative to the directory of its file; a deeper file wins over a shallower one, and within
 * a file the last matching pattern wins (so `!keep.log` re-includes); nothing under an ignored directory is
 * looked at. What is not: `.git/info/exclude`, `core.excludesFile`, `.gitignore` files above the workspace
 * root, and a `.gitignore` that is a symbolic link (it could point out of the workspace). A directory given
 * explicitly as the place to search or list is entered even if it is ignored; the rules of the `.gitignore`
 * files in and below it still apply.
 *
 * Internal: no entry point exports it.
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Path from "effect/Path"
import ignore, { type Ignore } from "ignore"

interface Level {
  /** The absolute directory holding the `.gitignore`, which its patterns are relative to. */
  readonly base: string
  readonly rules: Ignore
}

/** The `.gitignore` rules in force in one directory. Immutable: {@link IgnoreRules.enter} makes new ones. */
export class IgnoreRules {
  /** Deepest level first, so the first level with an opinion decides. */
  private readonly levels: ReadonlyArray<Level>
  private readonly sep: string

  constructor(levels: ReadonlyArray<Level>, sep: string) {
    this.levels = levels
    this.sep = sep
  }

  /** No rules at all. */
  static none(sep: string): IgnoreRules {
    return new IgnoreRules([], sep)
  }

  /** Whether no `.gitignore` applies. */
  get isEmpty(): boolean {
    return this.levels.length === 0
  }

  /** The rules inside `directory` (absolute), whose own `.gitignore` has `content`. */
  enter(directory: string, content: string): IgnoreRules {
    const rules = ignore({ ignorecase: false }).add(content)
    return new IgnoreRules([{ base: directory, rules }, ...this.levels], this.sep)
  }

  /**
   * Whether the entry at `absolute` (inside the directory these rules are for, or below it) is ignored.
   * Directories are matched with a trailing `/`, so `build/` patterns match them only.
   */
  ignores(absolute: string, isDirectory: boolean): boolean {
    for (const level of this.levels) {
      let relative = absolute.slice(level.base.length + 1)
      if (this.sep !== "/") relative = relative.split(this.sep).join("/")
      if (isDirectory) relative += "/"
      let result: ReturnType<Ignore["test"]>
      try {
        result = level.rules.test(relative)
      } catch {
        continue // a name the matcher cannot take as a relative path: no rule is about it
      }
      if (result.ignored) return true
      if (result.unignored) return false
    }
    return false
  }
}

/** A directory's `.gitignore`, if it is a regular file: one that is a symbolic link is not read. */
const readGitignore = (fs: FileSystem.FileSystem, path: Path.Path, directory: string) => {
  const file = path.join(directory, ".gitignore")
  return Effect.option(
    Effect.flatMap(
      fs.lstat(file),
      (info) => info.type === "File" ? fs.readFileString(file) : Effect.fail(undefined)
    )
  )
}

/**
 * The rules in force in `directory` (absolute, inside `root`): those of every `.gitignore` from `root` down to
 * it. When `directory` itself is ignored by the files above it, only its own `.gitignore` and those below it
 * apply (it was named on purpose). Unreadable `.gitignore` files are passed over.
 */
export const rulesFor = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  root: string,
  directory: string
): Effect.Effect<IgnoreRules> =>
  Effect.gen(function*() {
    const chain: Array<string> = []
    for (let dir = directory;; dir = path.dirname(dir)) {
      chain.unshift(dir)
      if (dir === root || path.dirname(dir) === dir) break
    }
    let rules = IgnoreRules.none(path.sep)
    for (const dir of chain) {
      if (dir !== root && rules.ignores(dir, true)) rules = IgnoreRules.none(path.sep)
      const content = yield* readGitignore(fs, path, dir)
      if (content._tag === "Some") rules = rules.enter(dir, content.value)
    }
    return rules
  })

/** The rules inside a subdirectory met during a walk: `rules` plus its own `.gitignore`, if it has one. */
export const rulesInside = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  rules: IgnoreRules,
  directory: string
): Effect.Effect<IgnoreRules> =>
  Effect.map(
    readGitignore(fs, path, directory),
    (content) => content._tag === "Some" ? rules.enter(directory, content.value) : rules
  )
