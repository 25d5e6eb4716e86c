/**
 * `read`: the text of a file, or a line range of it, within a line and byte budget; an image file (PNG,
 * JPEG, GIF, WebP, told by its content) as an image the model can see.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Base64 from "effect/encoding/Base64"
import * as FileSystem from "effect/FileSystem"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ResourceAccess from "../ResourceAccess.ts"
import * as Tool from "../Tool.ts"
import { BinaryFile, fromPlatformError, OffsetBeyondEnd, WrongFileType } from "./errors.ts"
import { detectImage, ImageReading } from "./image.ts"
import { formatBytes, looksBinary, truncateToBytes, utf8Length } from "./internal.ts"
import { pathAccess } from "./internal/touches.ts"
import { ToolLimits } from "./limits.ts"
import { shownPath, Workspace } from "./Workspace.ts"

/**
 * At most `size` bytes from the start of the file at `path`, read on one opened descriptor. A module
 * function, not a generator made per read: one made per call would keep what it read alive in the old
 * generation until the next major collection (the lint rule in tools/lint/eslint.config.mjs says why).
 */
const readAtMost = Effect.fnUntraced(
  function*(fs: FileSystem.FileSystem, path: string, size: number) {
    const file = yield* fs.open(path, { flag: "r" })
    const parts: Array<Uint8Array> = []
    let total = 0
    while (total < size) {
      const chunk = yield* file.readAlloc(size - total)
      if (chunk._tag === "None" || chunk.value.length === 0) break
      parts.push(chunk.value)
      total += chunk.value.length
    }
    const all = new Uint8Array(total)
    let at = 0
    for (const part of parts) {
      all.set(part, at)
      at += part.length
    }
    return all
  },
  Effect.scoped
)

/** The parameters of `read`. */
export const ReadParameters = Schema.Struct({
  path: Schema.NonEmptyString.annotate({
    description: "Path of the file to read, relative to the workspace root (or absolute inside it)"
  }),
  offset: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({
      description: "Line number to start reading from (1-indexed). Default 1"
    })
  ),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({ description: "Maximum number of lines to read" })
  )
})

/** What stopped the reading before the end of the file. */
export type ReadStop = "limit" | "lines" | "bytes" | "long-line"

/** The structured part of a `read` result. */
export interface ReadDetails {
  readonly path: string
  readonly sizeBytes: number
  /** The first and last line returned (1-indexed); `endLine < startLine` when nothing was returned. */
  readonly startLine: number
  readonly endLine: number
  /** The number of lines of the file, when it was counted (files up to {@link COUNT_LIMIT_BYTES}). */
  readonly totalLines: number | undefined
  readonly truncated: boolean
  readonly truncatedBy: ReadStop | undefined
  /** Set when the file is an image and was returned as one (then no lines were read). */
  readonly image?: { readonly mimeType: string } | undefined
}

/** Past what has been returned, newlines are still counted up to this many bytes, to report the total. */
const COUNT_LIMIT_BYTES = 64 * 1024 * 1024

/** The `read` tool definition. */
export const read = Tool.make<"read", typeof ReadParameters, ReadDetails>("read", {
  label: "Read file",
  description:
    "Read the contents of a text file in the workspace. Output is limited to 2000 lines or 50 KB, whichever " +
    "comes first; when it is cut, a note at the end says which offset to use to continue. Use offset and limit " +
    "to read a range of lines. Images (PNG, JPEG, GIF, WebP) are returned as images. Other binary files are refused.",
  parameters: ReadParameters
})

/** Collects the requested lines from decoded text pushed in pieces. */
class LineCollector {
  /** The line being read (1-indexed). */
  private lineNo = 1
  private started = false
  private current = ""
  readonly out: Array<string> = []
  private outBytes = 0
  stop: ReadStop | undefined = undefined
  readonly offset: number
  readonly limit: number | undefined
  readonly maxLines: number
  readonly maxBytes: number

  constructor(offset: number, limit: number | undefined, maxLines: number, maxBytes: number) {
    this.offset = offset
    this.limit = limit
    this.maxLines = maxLines
    this.maxBytes = maxBytes
  }

  /** Feeds text; false once enough has been collected. */
  push(text: string): boolean {
    let start = 0
    while (this.stop === undefined) {
      const nl = text.indexOf("\n", start)
      const segment = nl === -1 ? text.slice(start) : text.slice(start, nl)
      if (this.lineNo >= this.offset && (segment !== "" || nl !== -1)) {
        if (!this.started) {
          this.started = true
          if (this.limit !== undefined && this.out.length >= this.limit) this.stop = "limit"
          else if (this.out.length >= this.maxLines) this.stop = "lines"
          if (this.stop !== undefined) return false
        }
        this.current += segment
        // A single line bigger than the whole budget: stop before it grows without bound.
        if (this.current.length > this.maxBytes && utf8Length(this.current) > this.maxBytes) {
          this.overflow()
          return false
        }
      }
      if (nl === -1) return true
      this.finishLine()
      start = nl + 1
    }
    return false
  }

  /** The end of the file: the last line may have no newline. */
  end(): void {
    if (this.stop === undefined && this.started) this.finishLine()
  }

  private overflow(): void {
    if (this.out.length === 0) {
      this.out.push(truncateToBytes(this.current, this.maxBytes))
      this.stop = "long-line"
    } else {
      this.stop = "bytes"
    }
  }

  private finishLine(): void {
    if (this.lineNo >= this.offset) {
      const line = this.current.endsWith("\r") ? this.current.slice(0, -1) : this.current
      const size = utf8Length(line) + (this.out.length > 0 ? 1 : 0)
      if (this.outBytes + size > this.maxBytes) {
        this.current = line
        this.overflow()
        return
      }
      this.out.push(line)
      this.outBytes += size
    }
    this.current = ""
    this.started = false
    this.lineNo++
  }
}

/** The handler of {@link read}, on the workspace and file system. */
export const readLayer = read.toLayer(Effect.gen(function*() {
  const workspace = yield* Workspace
  const fs = yield* FileSystem.FileSystem
  const limits = yield* ToolLimits
  const images = yield* ImageReading

  return Tool.withResources(
    Effect.fnUntraced(function*(args) {
      const absolute = yield* workspace.resolve(args.path)
      const shown = shownPath(workspace, absolute)
      const info = yield* fs.stat(absolute).pipe(Effect.mapError(fromPlatformError(args.path, "read")))
      if (info.type !== "File") {
        const actual = info.type === "Directory" ? "directory" : info.type
        return yield* new WrongFileType({
          path: shown,
          expected: "file",
          actual,
          message: info.type === "Directory"
            ? `${shown} is a directory, not a file. Use ls to list it.`
            : `${shown} is not a regular file (${info.type}).`
        })
      }
      const sizeBytes = Number(info.size)
      const offset = args.offset ?? 1
      const collector = new LineCollector(offset, args.limit, limits.readMaxLines, limits.readMaxBytes)
      const decoder = new TextDecoder("utf-8")
      let first = true
      let scanned = 0
      let newlines = 0
      let lastByte = -1
      let counted = true
      let imageType: string | undefined = undefined

      yield* fs.stream(absolute, { chunkSize: 64 * 1024 }).pipe(
        Stream.mapError(fromPlatformError(args.path, "read")),
        Stream.runForEachWhile((chunk) =>
          Effect.suspend(() => {
            if (first) {
              first = false
              // Told by the first bytes, not the name: the rest of the file is then read whole, below.
              imageType = detectImage(chunk)
              if (imageType !== undefined) return Effect.succeed(false)
              if (looksBinary(chunk, limits.binarySniffBytes)) {
                return Effect.fail(
                  new BinaryFile({
                    path: shown,
                    sizeBytes,
                    message: `${shown} looks like a binary file (${formatBytes(sizeBytes)}, contains NUL bytes); ` +
                      `read only shows text. Use bash (e.g. file, xxd | head) to inspect it.`
                  })
                )
              }
            }
            scanned += chunk.length
            for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) newlines++
            if (chunk.length > 0) lastByte = chunk[chunk.length - 1]
            if (collector.stop === undefined) collector.push(decoder.decode(chunk, { stream: true }))
            if (collector.stop !== undefined && scanned > COUNT_LIMIT_BYTES) {
              counted = false
              return Effect.succeed(false)
            }
            return Effect.succeed(true)
          })
        )
      )
      if (imageType !== undefined) {
        const details: ReadDetails = {
          path: shown,
          sizeBytes,
          startLine: 1,
          endLine: 0,
          totalLines: undefined,
          truncated: false,
          truncatedBy: undefined,
          image: { mimeType: imageType }
        }
        const described = `${shown} is a ${imageType} image (${formatBytes(sizeBytes)})`
        if (!images.enabled) {
          return {
            content: [{
              type: "text" as const,
              text: `${described}; the model in use does not take images, so it is not shown.`
            }],
            details: { ...details, image: undefined }
          }
        }
        if (sizeBytes > images.maxBytes) {
          return yield* new BinaryFile({
            path: shown,
            sizeBytes,
            message: `${described}, larger than the ${formatBytes(images.maxBytes)} an image may have here. ` +
              `Use bash to make a smaller copy (e.g. convert -resize) and read that.`
          })
        }
        // Read once more, bounded on the opened file: a file that grew (or was swapped) since the stat above
        // must not be loaded whole, nor sent past the limit (docs/cli.md CLI 12.12).
        const bytes = yield* readAtMost(fs, absolute, images.maxBytes + 1).pipe(
          Effect.mapError(fromPlatformError(args.path, "read"))
        )
        if (bytes.length > images.maxBytes || detectImage(bytes) !== imageType) {
          return yield* new BinaryFile({
            path: shown,
            sizeBytes: bytes.length,
            message:
              `${shown} changed while it was read (now over ${
                formatBytes(images.maxBytes)
              }, or no longer a ${imageType} image). ` +
              `Read it again once it is no longer being written.`
          })
        }
        return {
          content: [
            { type: "text" as const, text: `${described}:` },
            { type: "image" as const, data: Base64.encode(bytes), mimeType: imageType }
          ],
          details
        }
      }
      if (collector.stop === undefined) {
        collector.push(decoder.decode())
        collector.end()
      }
      const totalLines = counted ? newlines + (lastByte !== -1 && lastByte !== 10 ? 1 : 0) : undefined

      if (collector.stop === undefined && totalLines !== undefined && offset > Math.max(totalLines, 1)) {
        return yield* new OffsetBeyondEnd({
          path: shown,
          offset,
          totalLines,
          message: `Offset ${offset} is beyond the end of ${shown}, which has ${totalLines} line${
            totalLines === 1 ? "" : "s"
          }.`
        })
      }

      const lines = collector.out
      const endLine = offset + lines.length - 1
      const stop = collector.stop
      const of = totalLines === undefined ? "" : ` of ${totalLines}`
      let text = lines.join("\n")
      if (stop === "long-line") {
        text += `\n\n[Line ${offset} is longer than the ${formatBytes(limits.readMaxBytes)} output limit; ` +
          `showing only its start. Use bash (e.g. cut -c or head -c) to see the rest.]`
      } else if (stop !== undefined) {
        const reason = stop === "limit"
          ? ""
          : ` (output limit: ${limits.readMaxLines} lines or ${formatBytes(limits.readMaxBytes)})`
        text += `\n\n[Showing lines ${offset}-${endLine}${of}${reason}. Use offset=${endLine + 1} to continue.]`
      } else if (sizeBytes === 0) {
        text = "(empty file)"
      }
      return {
        content: [{ type: "text" as const, text }],
        details: {
          path: shown,
          sizeBytes,
          startLine: offset,
          endLine,
          totalLines,
          truncated: stop !== undefined,
          truncatedBy: stop
        }
      }
    }),
    (args) => pathAccess(workspace, ResourceAccess.read, args.path)
  )
}))
