/**
 * Which tool calls of a batch reuse an id an earlier call of it has (TE 9.1), found once when the batch
 * starts.
 *
 * Why not a `Set` of the ids seen so far: it lives as long as the batch and holds an entry per call, which
 * for a batch of many calls is most of what the batch keeps besides the results (about half a megabyte of a
 * batch of 10 000). Finding the duplicates up front needs a table only for that one pass, and keeps nothing
 * when there are none, which is almost always.
 */

/** Below this many calls, comparing every pair is cheaper than building a table. */
const PAIRWISE_UP_TO = 8

/**
 * The items (calls) whose `id(item)` equals the id of an earlier item, in a set; `undefined` when there are
 * none. The first item with a given id is never in it.
 */
export const laterDuplicates = <A>(
  items: ReadonlyArray<A>,
  id: (item: A) => string
): ReadonlySet<A> | undefined => {
  const n = items.length
  let found: Set<A> | undefined
  if (n <= PAIRWISE_UP_TO) {
    for (let i = 1; i < n; i++) {
      const key = id(items[i]!)
      for (let j = 0; j < i; j++) {
        if (id(items[j]!) === key) {
          ;(found ??= new Set()).add(items[i]!)
          break
        }
      }
    }
    return found
  }
  // Open addressing over the items' positions (position + 1; 0 is an empty slot), at most half full.
  let size = 16
  while (size < n * 2) size *= 2
  const mask = size - 1
  const slots = new Int32Array(size)
  for (let i = 0; i < n; i++) {
    const key = id(items[i]!)
    let slot = hash(key) & mask
    while (true) {
      const taken = slots[slot]!
      if (taken === 0) {
        slots[slot] = i + 1
        break
      }
      if (id(items[taken - 1]!) === key) {
        ;(found ??= new Set()).add(items[i]!)
        break
      }
      slot = (slot + 1) & mask
    }
  }
  return found
}

/** FNV-1a over the string's UTF-16 code units, mixed at the end so that the low bits used as a slot vary. */
const hash = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  return h ^ (h >>> 13)
}
