/**
 * The workspace: the one directory the built-in tools may touch. Every path a tool receives goes through
 * {@link WorkspaceShape.resolve} before anything is read or written, which confines it to the root:
 *
 * - relative paths are resolved against the root;
 * - a path that climbs out with `..`, or an absolute path elsewhere, is refused;
 * - symbolic links are followed wherever they are on the path: the canonical location is computed from the
 *   real path of the longest existing prefix (dangling links are followed by hand), so a link that points
 *   outside is refused even when the file below it does not exist yet.
 *
 * What this does not stop: a link swapped in between the check and the use (a race with another process),
 * and hard links to outside files made beforehand. The `bash` tool is confined by its own sandbox
 * (bubblewrap), not by this service.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import type * as PlatformError from "effect/PlatformError"
import { fromPlatformError, PathOutsideWorkspace, PathTooLong, WrongFileType } from "./errors.ts"
import { clip } from "./internal.ts"

/** The workspace service. */
export interface WorkspaceShape {
  /** The canonical absolute root (symbolic links resolved). */
  readonly root: string
  /**
   * The canonical absolute location of `path` (relative to the root, or absolute inside it), or
   * {@link PathOutsideWorkspace} when it leads outside. Only the file system's metadata is consulted.
   */
  readonly resolve: (path: string) => Effect.Effect<string, PathOutsideWorkspace | PathTooLong>
  /**
   * How a resolved absolute path is shown to the model: relative to the root, `.` for the root itself. Not
   * cut: a path argument echoed back goes through {@link shownPath}.
   */
  readonly display: (absolute: string) => string
}

/**
 * Longest path argument accepted, in UTF-16 units (Linux's PATH_MAX is 4096 bytes). A longer one is
 * refused at once: walking up its missing components one system call at a time could take seconds.
 */
const MAX_PATH_CHARS = 4096

/** Most symbolic links followed by hand along one path before it counts as a loop (Linux uses 40). */
const MAX_LINK_HOPS = 40

class LinkLoop {
  readonly _tag = "LinkLoop"
}

/** Builds the workspace service for `root`, which must be an existing directory. */
export const make = (
  root: string
): Effect.Effect<WorkspaceShape, PlatformError.PlatformError, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const givenRoot = path.resolve(root)
    const realRoot = yield* fs.realPath(givenRoot)

    /** The path of `p` relative to `base`, or undefined when `p` is not inside `base`. */
    const within = (base: string, p: string): string | undefined => {
      const rel = path.relative(base, p)
      if (rel === "..") return undefined
      if (rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return undefined
      return rel
    }

    /**
     * The canonical form of an absolute path whose tail may not exist: the real path of the longest
     * existing prefix, plus the rest. Dangling symbolic links are followed by hand, so a link to a place that
     * does not exist yet still resolves to that place.
     */
    const canonical = (p: string, hops: number): Effect.Effect<string, LinkLoop> =>
      fs.realPath(p).pipe(
        Effect.catch(() =>
          fs.lstat(p).pipe(
            Effect.matchEffect({
              onFailure: () => parentThen(p, hops),
              onSuccess: (info) =>
                info.type !== "SymbolicLink"
                  // It exists but cannot be canonicalised (e.g. no permission): canonicalise the parent.
                  ? parentThen(p, hops)
                  : hops >= MAX_LINK_HOPS
                  ? Effect.fail(new LinkLoop())
                  : fs.readLink(p).pipe(
                    Effect.matchEffect({
                      onFailure: () => parentThen(p, hops),
                      onSuccess: (target) => canonical(path.resolve(path.dirname(p), target), hops + 1)
                    })
                  )
            })
          )
        )
      )

    const parentThen = (p: string, hops: number): Effect.Effect<string, LinkLoop> => {
      const parent = path.dirname(p)
      if (parent === p) return Effect.succeed(p)
      return Effect.map(canonical(parent, hops), (real) => path.join(real, path.basename(p)))
    }

    const refuse = (input: string, reason: PathOutsideWorkspace["reason"], detail: string) =>
      new PathOutsideWorkspace({
        path: clip(input),
        root: realRoot,
        reason,
        message: `Path "${clip(input)}" is outside the workspace ${realRoot}: ${detail}. ` +
          `Only files inside the workspace can be used; give a path relative to it.`
      })

    const resolve = (input: string): Effect.Effect<string, PathOutsideWorkspace | PathTooLong> =>
      Effect.suspend((): Effect.Effect<string, PathOutsideWorkspace | PathTooLong> => {
        if (input.length > MAX_PATH_CHARS) {
          return Effect.fail(
            new PathTooLong({
              path: clip(input),
              length: input.length,
              maxLength: MAX_PATH_CHARS,
              message: `Path "${clip(input)}" is ${input.length} characters long; paths of more than ` +
                `${MAX_PATH_CHARS} characters are refused. Give a shorter path.`
            })
          )
        }
        const absolute = path.resolve(realRoot, input === "" ? "." : input)
        // Lexical check first: accept absolute paths spelled through either form of the root.
        const rel = within(realRoot, absolute) ?? within(givenRoot, absolute)
        if (rel === undefined) {
          return Effect.fail(
            path.isAbsolute(input)
              ? refuse(input, "absolute", "it is an absolute path that is not under the workspace root")
              : refuse(input, "parent-escape", `".." climbs out of the workspace`)
          )
        }
        const lexical = rel === "" ? realRoot : path.join(realRoot, rel)
        return canonical(lexical, 0).pipe(
          Effect.catch(() =>
            Effect.fail(refuse(input, "symlink-loop", "it goes through too many symbolic links (a link loop?)"))
          ),
          Effect.flatMap((real) =>
            within(realRoot, real) === undefined
              ? Effect.fail(refuse(input, "symlink", `it goes through a symbolic link that leads to ${clip(real)}`))
              : Effect.succeed(real)
          )
        )
      })

    const display = (absolute: string): string => {
      const rel = within(realRoot, absolute)
      if (rel === undefined) return absolute
      return rel === "" ? "." : rel.split(path.sep).join("/")
    }

    return { root: realRoot, resolve, display }
  })

/** The workspace the built-in tools work in. */
export class Workspace extends Context.Service<Workspace, WorkspaceShape>()("effect-agent/tools/Workspace") {
  /** The workspace rooted at `root` (an existing directory; relative to the current directory if relative). */
  static layer(root: string): Layer.Layer<Workspace, PlatformError.PlatformError, FileSystem.FileSystem | Path.Path> {
    return Layer.effect(Workspace, make(root))
  }
}

/**
 * How a path argument, once resolved, is echoed in messages and results: as {@link WorkspaceShape.display}
 * shows it, cut to its start and end when long (it may name no file, so nothing else bounds it).
 */
export const shownPath = (workspace: WorkspaceShape, absolute: string): string => clip(workspace.display(absolute))

/** A path argument resolved inside the workspace, with what the file system says it is. */
interface Located {
  readonly absolute: string
  /** The path as shown to the model (relative to the root, cut when long: {@link shownPath}). */
  readonly shown: string
  readonly info: FileSystem.File.Info
}

/**
 * Resolves a path argument inside the workspace and stats it; `operation` names what the tool was doing
 * in the error ("list", "search").
 */
export const locate = Effect.fnUntraced(function*(
  workspace: WorkspaceShape,
  fs: FileSystem.FileSystem,
  given: string,
  operation: string
) {
  const absolute = yield* workspace.resolve(given)
  const shown = shownPath(workspace, absolute)
  const info = yield* fs.stat(absolute).pipe(Effect.mapError(fromPlatformError(given, operation)))
  return { absolute, shown, info } satisfies Located
})

/** Like {@link locate}, for an argument that must be a directory; `hint` completes the error message. */
export const locateDirectory = Effect.fnUntraced(function*(
  workspace: WorkspaceShape,
  fs: FileSystem.FileSystem,
  given: string,
  operation: string,
  hint: (isFile: boolean) => string
) {
  const located = yield* locate(workspace, fs, given, operation)
  const { info, shown } = located
  if (info.type !== "Directory") {
    return yield* new WrongFileType({
      path: shown,
      expected: "directory",
      actual: info.type === "File" ? "file" : info.type,
      message: `${shown} is not a directory${hint(info.type === "File")}.`
    })
  }
  return located
})
