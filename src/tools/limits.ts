/**
 * The output limits of the built-in tools. Each tool reads them once, when its handler layer is built, so
 * they are changed by providing the reference to the layer:
 *
 * ```ts
 * BuiltinTools.layer.pipe(Layer.provide(Layer.succeed(ToolLimits)({ ...defaultLimits, readMaxLines: 500 })))
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"

/** The limits; sizes are UTF-8 bytes. */
export interface ToolLimitsShape {
  /** `read`: most lines returned by one call. */
  readonly readMaxLines: number
  /** `read`: most bytes returned by one call. */
  readonly readMaxBytes: number
  /** `ls`: default and maximum number of entries. */
  readonly lsDefaultEntries: number
  readonly lsMaxEntries: number
  /** `find`: default and maximum number of results. */
  readonly findDefaultResults: number
  readonly findMaxResults: number
  /** `grep`: default and maximum number of matching lines, and the longest line shown. */
  readonly grepDefaultMatches: number
  readonly grepMaxMatches: number
  readonly grepMaxLineLength: number
  /** `grep`: files larger than this are skipped. */
  readonly grepMaxFileBytes: number
  /** `bash`: most output lines and bytes kept (the tail is kept). */
  readonly bashMaxLines: number
  readonly bashMaxBytes: number
  /** `bash`: default and maximum timeout, in seconds. */
  readonly bashDefaultTimeoutSeconds: number
  readonly bashMaxTimeoutSeconds: number
  /** `bash`: after SIGTERM, how long the process group has before SIGKILL, in milliseconds. */
  readonly bashKillGraceMillis: number
  /** `bash`: after the shell exits, how long to wait for output still in flight, in milliseconds. */
  readonly bashDrainMillis: number
  /** How many leading bytes are checked for NUL bytes to tell a binary file. */
  readonly binarySniffBytes: number
}

/** The defaults (pi's: 2000 lines / 50 KB for file and command output). */
export const defaultLimits: ToolLimitsShape = {
  readMaxLines: 2000,
  readMaxBytes: 50 * 1024,
  lsDefaultEntries: 500,
  lsMaxEntries: 5000,
  findDefaultResults: 1000,
  findMaxResults: 10_000,
  grepDefaultMatches: 100,
  grepMaxMatches: 1000,
  grepMaxLineLength: 500,
  grepMaxFileBytes: 10 * 1024 * 1024,
  bashMaxLines: 2000,
  bashMaxBytes: 50 * 1024,
  bashDefaultTimeoutSeconds: 120,
  bashMaxTimeoutSeconds: 3600,
  bashKillGraceMillis: 1000,
  bashDrainMillis: 200,
  binarySniffBytes: 8192
}

/**
 * Whether `grep` may read the files of a tree with the runtime's own synchronous file API (Node's `fs`,
 * found through `process.getBuiltinModule`) instead of the `FileSystem` service; one file at a time, so the
 * event loop is held for one file's read at most. It is what makes a search of a large tree about as fast
 * as GNU grep. Default true; provide `false` when the `FileSystem` service is not the local disk (an
 * in-memory file system in tests, say), so that every read goes through it.
 */
export const DirectFileReads = Context.Reference<boolean>("effect-agent/tools/DirectFileReads", {
  defaultValue: () => true
})

/** The limits in effect; {@link defaultLimits} unless provided. */
export const ToolLimits = Context.Reference<ToolLimitsShape>("effect-agent/tools/ToolLimits", {
  defaultValue: () => defaultLimits
})
