/**
 * Transcripts on disk as JSON lines, one message per line, encoded with the message Schemas. Lines are
 * appended as each message completes, so a crash loses at most the message in flight. Reading validates
 * every line and names the first bad one, except a last line cut short by a crash (no newline after it, not
 * a message), which is left out and reported. A writer holds a lock on its file, so two agents never
 * interleave lines in one session.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import { hostname } from "node:os"
import { type AgentMessage, isMessage, Message } from "./Message.ts"

/** A session file could not be read, parsed or written. `line` is 1-based where a line is at fault. */
export class SessionFileError extends Schema.TaggedError<SessionFileError>()("SessionFileError", {
  path: Schema.String,
  line: Schema.optionalKey(Schema.Number),
  message: Schema.String
}) {}

/** Another live process (`pid` on `host`) is writing this session file; it was not touched. */
export class SessionInUse extends Schema.TaggedError<SessionInUse>()("SessionInUse", {
  path: Schema.String,
  pid: Schema.Number,
  host: Schema.String,
  message: Schema.String
}) {}

const MessageFromJson = Schema.fromJsonString(Message)
const decodeLine = Schema.decodeUnknownExit(MessageFromJson)
const encodeLine = Schema.encodeSync(MessageFromJson)

/** One message as a session line (without the newline). @internal */
export const encodeMessage = (message: Message): string => encodeLine(message)

/** What a session file holds. */
interface SessionContents {
  readonly messages: ReadonlyArray<Message>
  /**
   * The last line when it was cut short (a crash while it was being written): it has no newline after it
   * and is not a message, so it was left out. `line` is 1-based; `text` is what was there.
   */
  readonly cutLine: { readonly line: number; readonly text: string } | undefined
}

/** The messages of a session text; a bad line other than a cut last line fails naming it. */
const parse = Effect.fnUntraced(function*(path: string, text: string) {
  const messages: Array<Message> = []
  const lines = text.split("\n")
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index].trim()
    if (line === "") continue
    const decoded = decodeLine(line)
    if (decoded._tag === "Success") {
      messages.push(decoded.value)
      continue
    }
    // Only the very last line can have been cut by a crash: every complete line ends with a newline.
    if (index === lines.length - 1) return { messages, cutLine: { line: index + 1, text: lines[index] } }
    const detail = decoded.cause.reasons.map((reason) => reason._tag === "Fail" ? reason.error.message : String(reason))
      .join("; ")
    return yield* new SessionFileError({
      path,
      line: index + 1,
      message: `Session file ${path}, line ${index + 1}: not a valid message: ${detail}`
    })
  }
  return { messages, cutLine: undefined }
})

/**
 * Reads a session file. Blank lines are skipped; a last line cut short by a crash is left out and named in
 * `cutLine`; any other line that is not a valid message fails with the line number and what is wrong.
 */
export const read = Effect.fn("Session.read")(function*(
  path: string
): Effect.fn.Return<SessionContents, SessionFileError, FileSystem.FileSystem> {
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs.readFileString(path).pipe(
    Effect.mapError((error) => new SessionFileError({ path, message: `Cannot read session file: ${error.message}` }))
  )
  return yield* parse(path, text)
})

/** A warning for a cut last line, one line, naming the file and the line. @internal */
export const cutLineWarning = (path: string, cut: NonNullable<SessionContents["cutLine"]>): string =>
  `Session file ${path}, line ${cut.line}: the last line was cut short (a crash while it was written) ` +
  `and was dropped (${cut.text.length} characters).`

/**
 * The messages of a session file (see {@link read}). A cut last line is left out with a logged warning.
 */
export const load = Effect.fn("Session.load")(function*(
  path: string
): Effect.fn.Return<ReadonlyArray<Message>, SessionFileError, FileSystem.FileSystem> {
  const contents = yield* read(path)
  if (contents.cutLine !== undefined) yield* Effect.logWarning(cutLineWarning(path, contents.cutLine))
  return contents.messages
})

/** Appends messages to a session file as they complete. Application messages are not persisted. */
interface SessionWriter {
  readonly path: string
  readonly append: (message: AgentMessage) => Effect.Effect<void, SessionFileError>
}

/** How long a lock file that names no holder is taken to be in the middle of being written. */
const FRESH_LOCK_MILLIS = 2_000

/** Whether process `pid` is alive on this machine (a process of another user counts as alive). */
const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Holds `<path>.lock` until the scope closes. The lock file names the holder's pid and host: one left by a
 * process that has died on this host (a crash, `kill -9`) is taken over; one held by a live process, or by a
 * process on another host (which cannot be checked), fails with {@link SessionInUse}.
 */
const lockFile = Effect.fnUntraced(function*(path: string) {
  const fs = yield* FileSystem.FileSystem
  const lock = `${path}.lock`
  const host = hostname()
  const mine = JSON.stringify({ pid: process.pid, host }) + "\n"
  const fail = (error: { readonly message: string }) =>
    new SessionFileError({ path, message: `Cannot lock session file: ${error.message}` })
  const take = fs.writeFileString(lock, mine, { flag: "wx" })
  for (let attempt = 0;; attempt++) {
    const taken = yield* Effect.result(take)
    if (taken._tag === "Success") break
    const error = taken.failure
    if (error.reason._tag !== "AlreadyExists") return yield* fail(error)
    const text = yield* fs.readFileString(lock).pipe(Effect.orElseSucceed(() => ""))
    let holder: { readonly pid?: unknown; readonly host?: unknown } = {}
    try {
      holder = JSON.parse(text)
    } catch {
      // Unreadable (e.g. written half by a crash): treated as stale below.
    }
    const pid = typeof holder.pid === "number" ? holder.pid : undefined
    const holderHost = typeof holder.host === "string" ? holder.host : host
    // A lock without a pid may be one another process has just created and not yet written: only an old
    // one is stale.
    const age = yield* fs.stat(lock).pipe(
      Effect.map((info) =>
        Option.match(info.mtime, { onNone: () => Infinity, onSome: (at) => Date.now() - at.getTime() })
      ),
      Effect.orElseSucceed(() => Infinity)
    )
    const live = pid !== undefined ? holderHost !== host || isAlive(pid) : age < FRESH_LOCK_MILLIS
    if (live || attempt > 0) {
      return yield* new SessionInUse({
        path,
        pid: pid ?? -1,
        host: holderHost,
        message: `Session file ${path} is in use by another agent (pid ${pid ?? "unknown"}` +
          `${holderHost === host ? "" : ` on ${holderHost}`}); wait for it to finish, or use another session file. ` +
          `If no agent is running, remove ${lock}.`
      })
    }
    // The holder is gone: the lock is stale. Remove it and try once more (another process may win).
    yield* fs.remove(lock).pipe(Effect.catch(() => Effect.void))
  }
  yield* Effect.addFinalizer(() => fs.remove(lock).pipe(Effect.catch(() => Effect.void)))
})

/**
 * A writer for `path`, creating its folder if needed (the file is created by the first append, so a run that
 * ends before any message leaves none), and holding the file's lock
 * until the scope closes: a second writer on the same file, in this process or another, fails with
 * {@link SessionInUse} while the first is open. A last line cut short by a crash is removed (it could never
 * be read) and a last line without its newline gets one, so every appended line stands on its own.
 */
export const writer = Effect.fn("Session.writer")(function*(path: string) {
  const fs = yield* FileSystem.FileSystem
  const pathService = yield* Path.Path
  const fail = (what: string) => (error: { readonly message: string }) =>
    new SessionFileError({ path, message: `Cannot ${what} session file: ${error.message}` })
  yield* fs.makeDirectory(pathService.dirname(path), { recursive: true }).pipe(
    Effect.mapError(fail("create the folder of the"))
  )
  yield* lockFile(path)
  // The file itself is made by the first append: a run that fails before its first message leaves no empty
  // session behind. Bytes, not text: the cut is found by byte offset, whatever encoding errors it holds.
  const existing = yield* fs.readFile(path).pipe(
    Effect.catchIf((error) => error.reason._tag === "NotFound", () => Effect.succeed(new Uint8Array(0))),
    Effect.mapError(fail("read the"))
  )
  if (existing.length > 0 && existing[existing.length - 1] !== 0x0a) {
    const keep = existing.lastIndexOf(0x0a) + 1
    const last = new TextDecoder().decode(existing.subarray(keep)).trim()
    if (last !== "" && decodeLine(last)._tag === "Failure") {
      // Cut short by a crash: drop it, so the next line does not land after garbage.
      yield* fs.truncate(path, keep).pipe(Effect.mapError(fail("repair the")))
    } else {
      // A file edited by hand may lack its final newline: add it, or the first new line would be glued on.
      yield* fs.writeFileString(path, "\n", { flag: "a" }).pipe(Effect.mapError(fail("append to the")))
    }
  }
  const writerOf: SessionWriter = {
    path,
    append: (message) =>
      isMessage(message)
        ? fs.writeFileString(path, encodeMessage(message) + "\n", { flag: "a" }).pipe(
          Effect.mapError(fail("append to the"))
        )
        : Effect.void
  }
  return writerOf
})

/** A new session file name under a folder, ordered by time. @internal */
export const newSessionPath = Effect.fn("Session.newSessionPath")(function*(folder: string) {
  const pathService = yield* Path.Path
  const now = new Date(yield* Effect.clockWith((clock) => clock.currentTimeMillis))
  const stamp = now.toISOString().replace(/[:.]/g, "-")
  return pathService.join(folder, `${stamp}.jsonl`)
})
