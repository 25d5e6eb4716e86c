/**
 * `edit`: replaces one exact occurrence of a text in a file.
 *
 * The file is edited as bytes: every byte outside the replaced text is written back as it was, so a file
 * that is not valid UTF-8 (Latin-1, say), a BOM, CRLF line ends and a missing final newline survive an
 * edit; the file is rewritten in place, keeping its mode. Line ends: in a file that has CRLF, an oldText
 * with LF line breaks that is not found as is, is looked for with CRLF (that is how `read` shows the file),
 * and in a file whose every line ends in CRLF, newText's line breaks are written as CRLF.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Schema from "effect/Schema"
import * as ResourceAccess from "../ResourceAccess.ts"
import * as Tool from "../Tool.ts"
import { BinaryFile, EditMatchError, EditNoChange, fromPlatformError, WrongFileType } from "./errors.ts"
import { allLineEndsCrlf, byteOccurrences, countByte, isValidUtf8, looksBinary } from "./internal.ts"
import { pathAccess } from "./internal/touches.ts"
import { ToolLimits } from "./limits.ts"
import { shownPath, Workspace } from "./Workspace.ts"

/** The parameters of `edit`. */
export const EditParameters = Schema.Struct({
  path: Schema.NonEmptyString.annotate({
    description: "Path of the file to edit, relative to the workspace root (or absolute inside it)"
  }),
  oldText: Schema.NonEmptyString.annotate({
    description: "The exact text to replace, including whitespace and line breaks. It must occur exactly once " +
      "in the file: include enough surrounding lines to make it unique"
  }),
  newText: Schema.String.annotate({ description: "The text to put in its place" })
})

/** The structured part of an `edit` result. */
export interface EditDetails {
  readonly path: string
  /** The line (1-indexed) where the replaced text started. */
  readonly line: number
  readonly linesRemoved: number
  readonly linesAdded: number
  /**
   * True when line breaks of the texts were converted to CRLF: oldText was matched with its LF line breaks
   * as CRLF (the way `read` shows a CRLF file), or newText's LF line breaks were written as CRLF because
   * every line of the file ends in CRLF.
   */
  readonly crlf: boolean
}

/** The `edit` tool definition. */
export const edit = Tool.make<"edit", typeof EditParameters, EditDetails>("edit", {
  label: "Edit file",
  description: "Edit a file in the workspace by replacing an exact text with a new text. oldText must match " +
    "the file exactly (whitespace and line breaks included) and occur exactly once; otherwise nothing is " +
    "changed and the error says how many times it was found. Bytes outside oldText are kept as they are; in " +
    "a file with CRLF line ends, LF line breaks in oldText and newText are taken as CRLF.",
  parameters: EditParameters
})

const encoder = new TextEncoder()

/** Line breaks without a CR before them, as CRLF. */
const toCrlf = (text: string): string => text.replace(/\r?\n/g, "\r\n")

const countNewlines = (text: string): number => {
  let n = 0
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++
  return n
}

/** The handler of {@link edit}. */
export const editLayer = edit.toLayer(Effect.gen(function*() {
  const workspace = yield* Workspace
  const fs = yield* FileSystem.FileSystem
  const limits = yield* ToolLimits

  return Tool.withResources(
    Effect.fnUntraced(function*(args) {
      const absolute = yield* workspace.resolve(args.path)
      const shown = shownPath(workspace, absolute)
      const info = yield* fs.stat(absolute).pipe(Effect.mapError(fromPlatformError(args.path, "edit")))
      if (info.type !== "File") {
        return yield* new WrongFileType({
          path: shown,
          expected: "file",
          actual: info.type === "Directory" ? "directory" : info.type,
          message: `${shown} is not a regular file; edit only changes files.`
        })
      }
      const bytes = yield* fs.readFile(absolute).pipe(Effect.mapError(fromPlatformError(args.path, "read")))
      if (looksBinary(bytes, limits.binarySniffBytes)) {
        return yield* new BinaryFile({
          path: shown,
          sizeBytes: bytes.length,
          message: `${shown} looks like a binary file (it contains NUL bytes); edit only changes text files.`
        })
      }
      // Everything below works on the file's bytes: the bytes around the match are written back untouched,
      // whatever their encoding, BOM or line ends.
      let oldText = args.oldText
      let newText = args.newText
      let crlf = false
      let found = byteOccurrences(bytes, encoder.encode(oldText), 2)
      if (found.length === 0 && !oldText.includes("\r") && oldText.includes("\n") && bytes.includes(13)) {
        // read shows CRLF files with LF line ends; match the way the model saw the text.
        const again = byteOccurrences(bytes, encoder.encode(toCrlf(oldText)), 2)
        if (again.length > 0) {
          crlf = true
          oldText = toCrlf(oldText)
          found = again
        }
      }
      if (found.length === 0) {
        const notUtf8 = isValidUtf8(bytes)
          ? ""
          : ` Note: ${shown} is not valid UTF-8; read shows each byte that is not UTF-8 as U+FFFD (\uFFFD), which ` +
            `is not in the file. Choose an oldText that avoids those characters, or rewrite the file with write.`
        return yield* new EditMatchError({
          path: shown,
          count: 0,
          message: `oldText was not found in ${shown} (0 occurrences). It must match the file exactly, ` +
            `including whitespace, indentation and line breaks; read the file again and copy the text to replace.` +
            notUtf8
        })
      }
      if (found.length > 1) {
        const count = byteOccurrences(bytes, encoder.encode(oldText)).length
        return yield* new EditMatchError({
          path: shown,
          count,
          message: `oldText occurs ${count} times in ${shown}; it must occur exactly once. ` +
            `Include more surrounding lines in oldText to pick one occurrence.`
        })
      }
      // Keep one line-end style: a CRLF file gets CRLF line breaks in the new text too.
      if (crlf || (newText.includes("\n") && allLineEndsCrlf(bytes))) {
        const converted = toCrlf(newText)
        if (converted !== newText) crlf = true
        newText = converted
      }
      if (oldText === newText) {
        return yield* new EditNoChange({
          path: shown,
          message: `oldText and newText are identical, so ${shown} was not changed.`
        })
      }
      const at = found[0]
      const oldBytes = encoder.encode(oldText)
      const newBytes = encoder.encode(newText)
      const updated = new Uint8Array(bytes.length - oldBytes.length + newBytes.length)
      updated.set(bytes.subarray(0, at), 0)
      updated.set(newBytes, at)
      updated.set(bytes.subarray(at + oldBytes.length), at + newBytes.length)
      // Written in place (not replaced by a new file), so the file keeps its mode, owner and hard links.
      yield* fs.writeFile(absolute, updated).pipe(Effect.mapError(fromPlatformError(args.path, "write")))
      const line = countByte(bytes, 10, 0, at) + 1
      const linesRemoved = countNewlines(oldText) + 1
      const linesAdded = countNewlines(newText) + 1
      return {
        content: [{
          type: "text" as const,
          text: `Edited ${shown}: replaced ${linesRemoved} line(s) at line ${line} with ${linesAdded} line(s).`
        }],
        details: { path: shown, line, linesRemoved, linesAdded, crlf }
      }
    }),
    (args) => pathAccess(workspace, ResourceAccess.write, args.path)
  )
}))
