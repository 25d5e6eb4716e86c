/**
 * Where the command's task comes from and what it carries: the words after the flags, `--prompt`, or
 * standard input when it is piped (rules CLI 8.x), and the files the task names with `@path`, attached to
 * the prompt (CLI 10.1-10.3).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Base64 from "effect/encoding/Base64"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import type { ImageContent } from "../Message.ts"
import { detectImage, ImageReading } from "../tools/image.ts"
import { looksBinary, readBounded, realInside } from "./internal/files.ts"
import { UsageError } from "./startup.ts"

/** The most of standard input read as a task (CLI 8.2); more is refused rather than cut silently. */
export const STDIN_MAX_BYTES = 10 * 1024 * 1024

/**
 * All of standard input as text, once it ends. More than {@link STDIN_MAX_BYTES} is a {@link UsageError};
 * an input that cannot be read counts as empty.
 */
const readStdin: Effect.Effect<string, UsageError, Stdio.Stdio> = Effect.gen(function*() {
  const stdio = yield* Stdio.Stdio
  const chunks: Array<Uint8Array> = []
  let size = 0
  let tooBig = false
  yield* stdio.stdin.pipe(
    Stream.runForEachWhile((chunk) =>
      Effect.sync(() => {
        size += chunk.length
        if (size > STDIN_MAX_BYTES) {
          tooBig = true
          return false
        }
        chunks.push(chunk)
        return true
      })
    ),
    Effect.catch(() => Effect.void)
  )
  if (tooBig) {
    return yield* new UsageError({
      flag: "stdin",
      message: `The task on standard input is larger than ${
        STDIN_MAX_BYTES / 1024 / 1024
      } MB: pass a file with @path instead.`
    })
  }
  const all = new Uint8Array(size)
  let at = 0
  for (const chunk of chunks) {
    all.set(chunk, at)
    at += chunk.length
  }
  return new TextDecoder().decode(all)
})

/**
 * What standard input is: a terminal; `piped` (a shell pipe or a redirected file: `git diff | effect-agent`,
 * `effect-agent < task.md`), which ends when its writer is done; or `other` (e.g. a socket a parent program
 * holds open), which may never end. Found by the type of `/dev/stdin`.
 */
export type StdinKind = "terminal" | "piped" | "other"

/** The kind of standard input (see {@link StdinKind}). */
export const stdinKind: Effect.Effect<StdinKind, never, Stdio.Stdio | FileSystem.FileSystem> = Effect.gen(function*() {
  const stdio = yield* Stdio.Stdio
  if (yield* stdio.stdinIsTerminal) return "terminal"
  const fs = yield* FileSystem.FileSystem
  const info = yield* Effect.option(fs.stat("/dev/stdin"))
  return Option.isSome(info) && (info.value.type === "FIFO" || info.value.type === "File") ? "piped" : "other"
})

/**
 * The task (CLI 8.1, 8.2): the words after the flags joined by spaces, or `--prompt`; giving both is a
 * {@link UsageError}, so is a task of only spaces. With neither, standard input is the task whenever it is
 * not a terminal (`echo task | effect-agent …`); empty input means no task. With a task and input from a
 * pipe or a file, the input is added after the task in a `<stdin>` block (`git diff | effect-agent "review
 * this"`); input of any other kind is then not read, so a parent holding it open cannot stall the run.
 * `undefined`: no task was given.
 */
export const resolveTask = Effect.fn("resolveTask")(function*(
  words: ReadonlyArray<string>,
  flag: Option.Option<string>,
  stdin: StdinKind
) {
  const positional = words.length > 0 ? words.join(" ") : undefined
  if (positional !== undefined && Option.isSome(flag)) {
    return yield* new UsageError({
      flag: "--prompt",
      message: "The task was given twice (as words and with --prompt): give it once."
    })
  }
  const given = positional ?? Option.getOrUndefined(flag)
  if (given !== undefined) {
    if (given.trim() === "") {
      return yield* new UsageError({ flag: "--prompt", message: "The task is empty: give the task, or leave it out." })
    }
    if (stdin !== "piped") return given
    const input = yield* readStdin
    return input.trim() === "" ? given : `${given}\n\n<stdin>\n${input.endsWith("\n") ? input : input + "\n"}</stdin>`
  }
  if (stdin === "terminal") return undefined
  const piped = yield* readStdin
  return piped.trim() === "" ? undefined : piped.trim()
})

/** A prompt with its attachments expanded. */
export interface AttachedPrompt {
  /** The prompt text, each attached text file added after it in a `<file path="…">` block. */
  readonly text: string
  /** Attached images, in the order they were named. */
  readonly images: ReadonlyArray<ImageContent>
  /** The workspace-relative paths attached. */
  readonly attached: ReadonlyArray<string>
}

/** A size for a person: `9 B`, `12.0 KB`, `6.0 MB`, `3.0 GB`. */
const formatSize = (bytes: number): string =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 ** 2
    ? `${(bytes / 1024).toFixed(1)} KB`
    : bytes < 1024 ** 3
    ? `${(bytes / 1024 ** 2).toFixed(1)} MB`
    : `${(bytes / 1024 ** 3).toFixed(1)} GB`

/** The most bytes of one attached text file; a longer file is cut with a note (CLI 10.2). */
export const ATTACHMENT_MAX_BYTES = 256 * 1024

// `@` at the start or after white space, then a path without spaces; a trailing comma, full stop, colon,
// semicolon, question or exclamation mark or closing bracket ends the sentence, not the path.
const MENTION = /(^|\s)@([^\s@]+?)(?=[,.;:!?)\]]*(?:\s|$))/g

/**
 * The prompt with every `@path` that names a file in the workspace attached (CLI 10.1): a text file as a
 * `<file path="…">` block after the prompt, an image (PNG, JPEG, GIF, WebP by content) as an image. The
 * `@path` stays in the text so the model sees what was meant. A mention that is not a file inside the
 * workspace (an e-mail address, `@types/node`, a folder, a path outside) is left as it is (CLI 10.3); each
 * file is attached once.
 */
export const attachFiles = Effect.fn("attachFiles")(function*(text: string, root: string) {
  const path = yield* Path.Path
  const imageReading = yield* ImageReading
  const blocks: Array<string> = []
  const images: Array<ImageContent> = []
  const attached: Array<string> = []
  const named = new Set<string>()
  for (const match of text.matchAll(MENTION)) {
    const mention = match[2]
    const absolute = path.resolve(root, mention)
    const relative = path.relative(root, absolute)
    if (relative === "" || relative.startsWith("..") || path.isAbsolute(relative)) continue
    if (named.has(relative)) continue
    // The real location, links followed, must be inside the workspace too: a link in a cloned project
    // must not attach `~/.ssh/id_rsa` (CLI 12.2).
    const real = realInside(root, absolute)
    if (real === undefined) continue
    // Read without blocking and only as much as can be used: a FIFO attaches nothing, a 3 GB log is not
    // loaded to keep its first 256 KB.
    const read = readBounded(real, Math.max(ATTACHMENT_MAX_BYTES, imageReading.maxBytes))
    if (read._tag !== "File") continue
    named.add(relative)
    const note = (why: string) => blocks.push(`<file path="${relative}">\n[not attached: ${why}]\n</file>`)
    const mimeType = detectImage(read.bytes)
    if (mimeType !== undefined) {
      if (read.truncated || read.bytes.length > imageReading.maxBytes) {
        note(`an ${mimeType} image of ${formatSize(read.size)}, larger than ${formatSize(imageReading.maxBytes)}`)
        continue
      }
      images.push({ type: "image", data: Base64.encode(read.bytes), mimeType })
    } else if (looksBinary(read.bytes)) {
      note(`a binary file of ${formatSize(read.size)}`)
      continue
    } else {
      const cut = read.bytes.length > ATTACHMENT_MAX_BYTES || read.truncated
      const body = new TextDecoder().decode(read.bytes.subarray(0, ATTACHMENT_MAX_BYTES))
      blocks.push(
        `<file path="${relative}">\n${body}${body.endsWith("\n") ? "" : "\n"}${
          cut ? `[cut at ${ATTACHMENT_MAX_BYTES / 1024} KB: read the file for the rest]\n` : ""
        }</file>`
      )
    }
    attached.push(relative)
  }
  return {
    text: blocks.length === 0 ? text : `${text}\n\n${blocks.join("\n\n")}`,
    images,
    attached
  } satisfies AttachedPrompt
})
