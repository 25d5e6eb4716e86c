/**
 * A list that only grows (a transcript), handing out immutable snapshots without copying it per item.
 *
 * The owner appends to one buffer. A snapshot is the buffer itself: once one has been handed out the buffer
 * is frozen in the sense that it is never pushed to again, and the next append moves to a copy
 * (copy-on-write). So a reader's array never changes under it, and a run that hands out no snapshot between
 * appends never copies. A deferred snapshot (`later`) records only the current length and costs nothing
 * unless someone reads it; read late (after more appends) it is a slice of the items it stood for.
 *
 * Internal: no entry point exports it.
 */
export class Growing<A> {
  private buffer: Array<A>
  /** The buffer has been handed out: the next append must move to a copy. */
  private shared = false
  /** Slots the buffer was allocated with (at least; V8 may have grown it since). */
  private capacity: number

  /** Starts from a copy of `initial`, so the caller's array is never touched. */
  constructor(initial: ReadonlyArray<A> = []) {
    this.buffer = copyWithRoom(initial, 0)
    this.capacity = roomFor(initial.length, 0)
  }

  get length(): number {
    return this.buffer.length
  }

  append(item: A): void {
    if (this.shared) this.moveToCopy(0)
    this.buffer.push(item)
  }

  /**
   * Appends every item of `items`, with room for them made at once: a batch of many tool results otherwise
   * grows the buffer step by step, each step a new backing store (for a long transcript, large-object
   * allocations).
   */
  appendAll(items: ReadonlyArray<A>): void {
    if (items.length === 0) return
    if (this.shared || this.buffer.length + items.length > this.capacity) this.moveToCopy(items.length)
    for (let i = 0; i < items.length; i++) this.buffer.push(items[i]!)
  }

  private moveToCopy(extra: number): void {
    this.capacity = roomFor(this.buffer.length, extra)
    this.buffer = copyWithRoom(this.buffer, extra)
    this.shared = false
  }

  /**
   * The items for the owner's own synchronous reading (a filter, a lookup). It must not be kept or handed out:
   * the next append may change it.
   */
  peek(): ReadonlyArray<A> {
    return this.buffer
  }

  /** The items now, as an array that will never change. O(1); the next append pays one copy. */
  snapshot(): ReadonlyArray<A> {
    this.shared = true
    return this.buffer
  }

  /**
   * The items now, read when needed: O(1) to take, and reading it gives the same array every time, equal to
   * what `snapshot()` would have returned when it was taken.
   */
  later(): () => ReadonlyArray<A> {
    const buffer = this.buffer
    const length = buffer.length
    let read: ReadonlyArray<A> | undefined
    return () => {
      if (read !== undefined) return read
      if (buffer === this.buffer && buffer.length === length) read = this.snapshot()
      // A buffer left behind by copy-on-write is never pushed to again.
      else read = buffer.length === length ? buffer : buffer.slice(0, length)
      return read
    }
  }
}

/**
 * A copy with room to grow: the appends that follow a copy-on-write then fill spare capacity instead of
 * reallocating the whole array again (for a long transcript each reallocation is a large-object allocation,
 * far more costly than its size suggests).
 */
const copyWithRoom = <A>(items: ReadonlyArray<A>, extra: number): Array<A> => {
  const length = items.length
  // V8 keeps the backing store when an array is shortened by less than half of it.
  const copy = new Array<A>(roomFor(length, extra))
  for (let i = 0; i < length; i++) copy[i] = items[i]!
  copy.length = length
  return copy
}

/** The slots of a copy of `length` items that must take `extra` more: a quarter more again, and a few. */
const roomFor = (length: number, extra: number): number => {
  const needed = length + extra
  return needed + (needed >> 2) + 16
}
