/**
 * Transcripts on disk as JSON lines, one message per line, encoded with the message Schemas. Lines are
 * appended as each message completes, so a crash loses at most the message in flight; loading validates
 * every line and names the first bad one.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Path, Schema } from "effect"
import { type AgentMessage, isMessage, Message } from "./Message.ts"

/** A session file could not be read, parsed or written. `line` is 1-based where a line is at fault. */
export class SessionFileError extends Schema.TaggedError<SessionFileError>()("SessionFileError", {
  path: Schema.String,
  line: Schema.optionalKey(Schema.Number),
  message: Schema.String
}) {}

const MessageFromJson = Schema.fromJsonString(Message)
const decodeLine = Schema.decodeUnknownExit(MessageFromJson)
const encodeLine = Schema.encodeSync(MessageFromJson)

/** One message as a session line (without the newline). */
export const encodeMessage = (message: Message): string => encodeLine(message)

/**
 * Reads a session file. Blank lines are skipped; any other line that is not a valid message fails with the
 * line number and what is wrong with it.
 */
export const load = Effect.fn("Session.load")(function*(path: string) {
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs.readFileString(path).pipe(
    Effect.mapError((error) => new SessionFileError({ path, message: `Cannot read session file: ${error.message}` }))
  )
  const messages: Array<Message> = []
  const lines = text.split("\n")
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index].trim()
    if (line === "") continue
    const decoded = decodeLine(line)
    if (decoded._tag === "Failure") {
      const detail = decoded.cause.reasons.map((reason) => reason._tag === "Fail" ? reason.error.message : String(reason))
        .join("; ")
      return yield* new SessionFileError({
        path,
        line: index + 1,
        message: `Session file ${path}, line ${index + 1}: not a valid message: ${detail}`
      })
    }
    messages.push(decoded.value)
  }
  return messages as ReadonlyArray<Message>
})

/** Appends messages to a session file as they complete. Application messages are not persisted. */
export interface SessionWriter {
  readonly path: string
  readonly append: (message: AgentMessage) => Effect.Effect<void, SessionFileError>
}

/** A writer for `path`, creating its folder (and the file, empty) if needed. */
export const writer = Effect.fn("Session.writer")(function*(path: string) {
  const fs = yield* FileSystem.FileSystem
  const pathService = yield* Path.Path
  const fail = (what: string) => (error: { readonly message: string }) =>
    new SessionFileError({ path, message: `Cannot ${what} session file: ${error.message}` })
  yield* fs.makeDirectory(pathService.dirname(path), { recursive: true }).pipe(Effect.mapError(fail("create the folder of the")))
  yield* fs.writeFileString(path, "", { flag: "a" }).pipe(Effect.mapError(fail("create the")))
  // A file edited by hand may lack its final newline: add it, or the first new line would be glued on.
  const existing = yield* fs.readFileString(path).pipe(Effect.mapError(fail("read the")))
  if (existing.length > 0 && !existing.endsWith("\n")) {
    yield* fs.writeFileString(path, "\n", { flag: "a" }).pipe(Effect.mapError(fail("append to the")))
  }
  const writerOf: SessionWriter = {
    path,
    append: (message) =>
      isMessage(message)
        ? fs.writeFileString(path, encodeMessage(message) + "\n", { flag: "a" }).pipe(Effect.mapError(fail("append to the")))
        : Effect.void
  }
  return writerOf
})

/** A new session file name under a folder, ordered by time. */
export const newSessionPath = Effect.fn("Session.newSessionPath")(function*(folder: string) {
  const pathService = yield* Path.Path
  const now = new Date(yield* Effect.clockWith((clock) => clock.currentTimeMillis))
  const stamp = now.toISOString().replace(/[:.]/g, "-")
  return pathService.join(folder, `${stamp}.jsonl`)
})
