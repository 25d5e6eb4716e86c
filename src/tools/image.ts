/**
 * Images recognised by their content: the first bytes of PNG, JPEG, GIF and WebP files, whatever the file
 * is called. What `read` returns as an image and `@path` attaches as one.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"

/** The image types recognised. */
export type ImageMimeType = "image/png" | "image/jpeg" | "image/gif" | "image/webp"

const startsWith = (bytes: Uint8Array, signature: ReadonlyArray<number>, at = 0): boolean =>
  bytes.length >= at + signature.length && signature.every((byte, i) => bytes[at + i] === byte)

/**
 * The image type of a file from its first bytes (12 are enough), or `undefined` when it is none of PNG
 * (`\x89PNG\r\n\x1a\n`), JPEG (`FF D8 FF`), GIF (`GIF87a` / `GIF89a`) or WebP (`RIFF....WEBP`). The name of
 * the file plays no part: a PNG called `notes.txt` is a PNG, a text file called `logo.png` is text.
 */
export const detectImage = (bytes: Uint8Array): ImageMimeType | undefined => {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png"
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "image/jpeg"
  if (startsWith(bytes, [0x47, 0x49, 0x46, 0x38]) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) {
    return "image/gif"
  }
  if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8)) return "image/webp"
  return undefined
}

/** How `read` treats image files. */
export interface ImageReadingShape {
  /**
   * Return images to the model. Off for a model that cannot take images: `read` then says what the file is
   * instead of refusing it as binary.
   */
  readonly enabled: boolean
  /** The largest image returned, in bytes (the providers' own limits are about 5 MB). */
  readonly maxBytes: number
}

/** The image settings of `read`: on, up to 5 MB, unless provided. */
export const ImageReading = Context.Reference<ImageReadingShape>("effect-agent/tools/ImageReading", {
  defaultValue: () => ({ enabled: true, maxBytes: 5 * 1024 * 1024 })
})
