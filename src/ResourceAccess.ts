/**
 * What a tool call touches and how, so that a parallel batch can run together the calls that cannot get in
 * each other's way and in source order the ones that can (docs/tool-execution.md, TE 11).
 *
 * A resource is named by a key, a path of `/`-separated segments: a key covers every key below it
 * (`/work/src` covers `/work/src/math.ts`), so listing a folder and writing a file in it are accesses to the
 * same resource. Empty segments do not count (`a//b/` is `a/b`), and the empty key covers everything.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** Reads the resource: any number of reads of it may run at once. */
export interface Read {
  readonly _tag: "Read"
  readonly key: string
}

/** Changes the resource: nothing else that touches it may run at the same time. */
export interface Write {
  readonly _tag: "Write"
  readonly key: string
}

/** Touches everything, known or not: no other call of the batch runs at the same time. */
export interface Exclusive {
  readonly _tag: "Exclusive"
}

/** One access of a call to a resource. */
export type ResourceAccess = Read | Write | Exclusive

/** The Schema of {@link ResourceAccess}, e.g. to log or persist what a call declared. */
export const ResourceAccess: Schema.Codec<ResourceAccess> = Schema.Union([
  Schema.TaggedStruct("Read", { key: Schema.String }),
  Schema.TaggedStruct("Write", { key: Schema.String }),
  Schema.TaggedStruct("Exclusive", {})
]).annotate({ identifier: "ResourceAccess" })

/** A read of `key`. */
export const read = (key: string): ResourceAccess => ({ _tag: "Read", key })

/** A write of `key`. */
export const write = (key: string): ResourceAccess => ({ _tag: "Write", key })

/** An access to everything (a shell command, say, that may touch any file). */
export const exclusive: ResourceAccess = { _tag: "Exclusive" }

/** The segments of a key: `/`-separated, empty ones dropped. */
export const segments = (key: string): ReadonlyArray<string> => key.split("/").filter((segment) => segment !== "")

/** Whether one key covers the other (equal, or one below the other). */
const overlap = (a: string, b: string): boolean => {
  const left = segments(a)
  const right = segments(b)
  const shared = Math.min(left.length, right.length)
  for (let i = 0; i < shared; i++) if (left[i] !== right[i]) return false
  return true
}

/**
 * Whether two accesses may not run at the same time: an exclusive access against anything, a write against
 * any access to a key it overlaps. Two reads never conflict.
 */
export const conflicts = (a: ResourceAccess, b: ResourceAccess): boolean => {
  if (a._tag === "Exclusive" || b._tag === "Exclusive") return true
  if (a._tag === "Read" && b._tag === "Read") return false
  return overlap(a.key, b.key)
}
