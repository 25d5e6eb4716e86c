/**
 * `edit`: replaces one exact occurrence of a text in a file.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Schema } from "effect"
import * as Tool from "../Tool.ts"
import { BinaryFile, EditMatchError, EditNoChange, fromPlatformError, WrongFileType } from "./errors.ts"
import { looksBinary } from "./internal.ts"
import { ToolLimits } from "./limits.ts"
import { Workspace } from "./Workspace.ts"

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
  /** True when the file uses CRLF line endings and the texts were matched with LF converted to CRLF. */
  readonly crlf: boolean
}

/** The `edit` tool definition. */
export const edit = Tool.make<"edit", typeof EditParameters, EditDetails>("edit", {
  label: "Edit file",
  description: "Edit a file in the workspace by replacing an exact text with a new text. oldText must match " +
    "the file exactly (whitespace and line breaks included) and occur exactly once; otherwise nothing is " +
    "changed and the error says how many times it was found.",
  parameters: EditParameters,
  executionMode: "sequential"
})

/** Non-overlapping occurrences of `needle` in `haystack` (stops counting at `max`). */
const occurrences = (haystack: string, needle: string, max = Infinity): Array<number> => {
  const found: Array<number> = []
  let i = haystack.indexOf(needle)
  while (i !== -1 && found.length < max) {
    found.push(i)
    i = haystack.indexOf(needle, i + needle.length)
  }
  return found
}

const lineCount = (s: string): number => s.split("\n").length

/** The handler of {@link edit}. */
export const editLayer = edit.toLayer(Effect.gen(function*() {
  const workspace = yield* Workspace
  const fs = yield* FileSystem.FileSystem
  const limits = yield* ToolLimits

  return Effect.fnUntraced(function*(args) {
    const absolute = yield* workspace.resolve(args.path)
    const shown = workspace.display(absolute)
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
    const content = new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes)
    let oldText = args.oldText
    let newText = args.newText
    let found = occurrences(content, oldText, 2)
    let crlf = false
    if (found.length === 0 && content.includes("\r\n") && !oldText.includes("\r")) {
      // read shows CRLF files with LF line ends; match the way the model saw the text.
      const oldCrlf = oldText.replace(/\n/g, "\r\n")
      const again = occurrences(content, oldCrlf, 2)
      if (again.length > 0) {
        crlf = true
        oldText = oldCrlf
        newText = newText.replace(/\r?\n/g, "\r\n")
        found = again
      }
    }
    if (found.length === 0) {
      return yield* new EditMatchError({
        path: shown,
        count: 0,
        message: `oldText was not found in ${shown} (0 occurrences). It must match the file exactly, ` +
          `including whitespace, indentation and line breaks; read the file again and copy the text to replace.`
      })
    }
    if (found.length > 1) {
      const count = occurrences(content, oldText).length
      return yield* new EditMatchError({
        path: shown,
        count,
        message: `oldText occurs ${count} times in ${shown}; it must occur exactly once. ` +
          `Include more surrounding lines in oldText to pick one occurrence.`
      })
    }
    if (oldText === newText) {
      return yield* new EditNoChange({
        path: shown,
        message: `oldText and newText are identical, so ${shown} was not changed.`
      })
    }
    const at = found[0]
    const updated = content.slice(0, at) + newText + content.slice(at + oldText.length)
    yield* fs.writeFileString(absolute, updated).pipe(Effect.mapError(fromPlatformError(args.path, "write")))
    const line = lineCount(content.slice(0, at))
    const linesRemoved = lineCount(oldText)
    const linesAdded = lineCount(newText)
    return {
      content: [{
        type: "text" as const,
        text: `Edited ${shown}: replaced ${linesRemoved} line(s) at line ${line} with ${linesAdded} line(s).`
      }],
      details: { path: shown, line, linesRemoved, linesAdded, crlf }
    }
  })
}))
