/**
 * The typed errors of the built-in tools. Every error carries a `message` written for the model: it names
 * the path (or command) involved and says what to do next. The pipeline turns a tool's failure into an
 * error result whose text is that message.
 *
 * @since 0.1.0
 */
import type * as PlatformError from "effect/PlatformError"
import * as Schema from "effect/Schema"
import { clip } from "./internal.ts"

/**
 * A path that leads outside the workspace: a `..` escape, an absolute path elsewhere, or a symbolic link
 * (anywhere along the path) that points outside. Raised before anything is read or written.
 */
export class PathOutsideWorkspace extends Schema.TaggedError<PathOutsideWorkspace>()("PathOutsideWorkspace", {
  path: Schema.String,
  root: Schema.String,
  reason: Schema.Literals(["parent-escape", "absolute", "symlink", "symlink-loop"]),
  message: Schema.String
}) {}

/**
 * A path argument longer than any path the file system accepts; refused before the file system is asked.
 * `path` holds only its start and end.
 */
export class PathTooLong extends Schema.TaggedError<PathTooLong>()("PathTooLong", {
  path: Schema.String,
  length: Schema.Number,
  maxLength: Schema.Number,
  message: Schema.String
}) {}

/** A file-system operation failed (not found, permission denied, ...). */
export class FileSystemError extends Schema.TaggedError<FileSystemError>()("FileSystemError", {
  path: Schema.String,
  operation: Schema.String,
  kind: Schema.String,
  message: Schema.String
}) {}

/** The path is not of the kind the tool needs (a directory given to `read`, a file given to `ls`, ...). */
export class WrongFileType extends Schema.TaggedError<WrongFileType>()("WrongFileType", {
  path: Schema.String,
  expected: Schema.Literals(["file", "directory"]),
  actual: Schema.String,
  message: Schema.String
}) {}

/** The file looks binary (it has NUL bytes near its start), so it is not shown as text. */
export class BinaryFile extends Schema.TaggedError<BinaryFile>()("BinaryFile", {
  path: Schema.String,
  sizeBytes: Schema.Number,
  message: Schema.String
}) {}

/** `read` was asked for a line past the end of the file. */
export class OffsetBeyondEnd extends Schema.TaggedError<OffsetBeyondEnd>()("OffsetBeyondEnd", {
  path: Schema.String,
  offset: Schema.Number,
  totalLines: Schema.Number,
  message: Schema.String
}) {}

/** A `grep` pattern that is not a valid regular expression. */
export class InvalidPattern extends Schema.TaggedError<InvalidPattern>()("InvalidPattern", {
  pattern: Schema.String,
  message: Schema.String
}) {}

/** `edit` found `oldText` zero times, or more than once; `count` says how many. */
export class EditMatchError extends Schema.TaggedError<EditMatchError>()("EditMatchError", {
  path: Schema.String,
  count: Schema.Number,
  message: Schema.String
}) {}

/** `edit` was asked to replace a text with itself. */
export class EditNoChange extends Schema.TaggedError<EditNoChange>()("EditNoChange", {
  path: Schema.String,
  message: Schema.String
}) {}

/** A `bash` command exited with a non-zero code or was killed by a signal. The message holds its output. */
export class CommandFailed extends Schema.TaggedError<CommandFailed>()("CommandFailed", {
  command: Schema.String,
  exitCode: Schema.NullOr(Schema.Number),
  output: Schema.String,
  message: Schema.String
}) {}

/** A `bash` command ran past its timeout; its whole process group was killed. The message holds its output. */
export class CommandTimedOut extends Schema.TaggedError<CommandTimedOut>()("CommandTimedOut", {
  command: Schema.String,
  timeoutSeconds: Schema.Number,
  output: Schema.String,
  message: Schema.String
}) {}

/** `bash` could not start the shell at all. */
export class CommandSpawnFailed extends Schema.TaggedError<CommandSpawnFailed>()("CommandSpawnFailed", {
  command: Schema.String,
  message: Schema.String
}) {}

/** Any error of a built-in tool. */
export type BuiltinToolError =
  | PathOutsideWorkspace
  | PathTooLong
  | FileSystemError
  | WrongFileType
  | BinaryFile
  | OffsetBeyondEnd
  | InvalidPattern
  | EditMatchError
  | EditNoChange
  | CommandFailed
  | CommandTimedOut
  | CommandSpawnFailed

const detailOf = (error: PlatformError.PlatformError): string => {
  const reason = error.reason
  if (reason.description !== undefined) return reason.description
  const cause = reason.cause as { readonly code?: unknown; readonly message?: unknown } | undefined
  if (typeof cause?.message === "string") return cause.message.replace(/, \w+ '.*'$/, "")
  return reason._tag
}

/**
 * A `PlatformError` as a {@link FileSystemError} naming the path as the model gave it (`given`, cut to its
 * start and end when long), with a message saying what went wrong.
 *
 * @internal
 */
export const fromPlatformError =
  (given: string, operation: string) => (error: PlatformError.PlatformError): FileSystemError => {
    const shown = clip(given)
    const kind = error.reason._tag
    const message = kind === "NotFound"
      ? `No such file or directory: ${shown}`
      : kind === "PermissionDenied"
      ? `Permission denied: cannot ${operation} ${shown}`
      : kind === "AlreadyExists"
      ? `Cannot ${operation} ${shown}: it already exists`
      : `Cannot ${operation} ${shown}: ${clip(detailOf(error))}`
    return new FileSystemError({ path: shown, operation, kind, message })
  }
