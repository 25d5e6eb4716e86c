/**
 * Reading files the command line did not make (the workspace's, the state folder's) without trusting them:
 * a bounded read of a regular file that cannot block on a FIFO or a device and cannot be made to read more
 * than asked (CLI 12.2), and the check that a path's real location, links followed, is inside a folder.
 */
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync } from "node:fs"
import { isAbsolute, relative, sep } from "node:path"

/** What a bounded read found. */
export type BoundedRead =
  /** A regular file: its first bytes (at most the bound), its size when opened, and whether there was more than them. */
  | { readonly _tag: "File"; readonly bytes: Uint8Array; readonly size: number; readonly truncated: boolean }
  /** A folder, FIFO, socket or device: nothing was read from it. */
  | { readonly _tag: "NotAFile" }
  /** Missing, not permitted, a link loop, an I/O error. */
  | { readonly _tag: "Unreadable"; readonly message: string }

/**
 * The first `maxBytes` bytes of the regular file at `path`. The file is opened without blocking (`O_NONBLOCK`:
 * opening a FIFO does not wait for a writer) and its type is checked on the opened descriptor, so a file
 * swapped for a FIFO between a check and the read is refused too. At most `maxBytes + 1` bytes are read,
 * whatever the file's size says or however it grows while it is read.
 */
export const readBounded = (path: string, maxBytes: number): BoundedRead => {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY)
  } catch (error) {
    return { _tag: "Unreadable", message: (error as Error).message }
  }
  try {
    const info = fstatSync(fd)
    if (!info.isFile()) return { _tag: "NotAFile" }
    const buffer = Buffer.alloc(Math.min(maxBytes, Math.max(0, info.size)) + 1)
    let filled = 0
    while (filled < buffer.length) {
      const count = readSync(fd, buffer, filled, buffer.length - filled, null)
      if (count === 0) break
      filled += count
    }
    const truncated = filled > maxBytes
    return {
      _tag: "File",
      bytes: new Uint8Array(buffer.buffer, buffer.byteOffset, Math.min(filled, maxBytes)),
      size: info.size,
      truncated
    }
  } catch (error) {
    return { _tag: "Unreadable", message: (error as Error).message }
  } finally {
    closeSync(fd)
  }
}

/**
 * The real location of `path` (every link followed) when it lies inside the real location of `root`;
 * `undefined` when it is outside, or does not exist, or cannot be resolved (a link loop).
 */
export const realInside = (root: string, path: string): string | undefined => {
  try {
    const realRoot = realpathSync(root)
    const real = realpathSync(path)
    const rel = relative(realRoot, real)
    if (rel === "" || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined
    return real
  } catch {
    return undefined
  }
}

/** Whether bytes look like binary data rather than text: a NUL byte in the first 8 KB (as git decides). */
export const looksBinary = (bytes: Uint8Array): boolean => bytes.subarray(0, 8192).includes(0)

/**
 * The last `maxBytes` bytes of the regular file at `path` as text, starting at a line (a line cut by the
 * start of the window is dropped); read as {@link readBounded} reads, so a FIFO gives `undefined` at once.
 */
export const readTailLines = (path: string, maxBytes: number): string | undefined => {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY)
  } catch {
    return undefined
  }
  try {
    const info = fstatSync(fd)
    if (!info.isFile()) return undefined
    const start = Math.max(0, info.size - maxBytes)
    const buffer = Buffer.alloc(Math.min(maxBytes, info.size))
    let filled = 0
    while (filled < buffer.length) {
      const count = readSync(fd, buffer, filled, buffer.length - filled, start + filled)
      if (count === 0) break
      filled += count
    }
    const text = buffer.subarray(0, filled).toString("utf8")
    return start === 0 ? text : text.slice(text.indexOf("\n") + 1)
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}
