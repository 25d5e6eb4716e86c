/**
 * TE 11: which earlier calls of a parallel batch each call must wait for, from the resources the calls
 * declared (`ResourceAccess`). A call waits for every earlier call it conflicts with, and for nothing else,
 * so a call starts as soon as the last of those has ended.
 *
 * The accesses are recorded in a tree of key segments, in source order. A node keeps the last write of its
 * key, the reads since, and the writes and reads below it since; a write of a key supersedes everything
 * below it (a later access there meets the write on its way down, and the write waited for what it
 * replaced), so each access costs the depth of its key plus what it must wait for. The waits it records may
 * repeat what another wait already implies; that changes nothing about when a call starts.
 */
import * as Effect from "effect/Effect"
import * as Latch from "effect/Latch"
import * as Schema from "effect/Schema"
import { ResourceAccess, segments } from "../ResourceAccess.ts"
import type { Declared } from "../Tool.ts"
import { clip } from "./clip.ts"

interface Node {
  readonly children: Map<string, Node>
  /** The last call that wrote this key. */
  writer: number | undefined
  /** The calls that read this key since that write. */
  readers: Array<number>
  /** The calls that wrote, or read, a key below this one since the last write of this key. */
  writersBelow: Array<number>
  readersBelow: Array<number>
}

const node = (): Node => ({
  children: new Map(),
  writer: undefined,
  readers: [],
  writersBelow: [],
  readersBelow: []
})

/** Adds to `into` the calls of `from` other than `self`. */
const collect = (into: Set<number>, from: ReadonlyArray<number>, self: number) => {
  for (const call of from) if (call !== self) into.add(call)
}

const at = (root: Node, key: ReadonlyArray<string>): { readonly target: Node; readonly above: Array<Node> } => {
  const above: Array<Node> = []
  let target = root
  for (const segment of key) {
    above.push(target)
    let child = target.children.get(segment)
    if (child === undefined) {
      child = node()
      target.children.set(segment, child)
    }
    target = child
  }
  return { target, above }
}

const access = (root: Node, call: number, key: ReadonlyArray<string>, writes: boolean, waits: Set<number>) => {
  const { above, target } = at(root, key)
  for (const ancestor of above) {
    if (ancestor.writer !== undefined && ancestor.writer !== call) waits.add(ancestor.writer)
    if (writes) collect(waits, ancestor.readers, call)
  }
  if (target.writer !== undefined && target.writer !== call) waits.add(target.writer)
  collect(waits, target.writersBelow, call)
  if (writes) {
    collect(waits, target.readers, call)
    collect(waits, target.readersBelow, call)
    target.writer = call
    target.readers = []
    target.writersBelow = []
    target.readersBelow = []
    target.children.clear()
    for (const ancestor of above) ancestor.writersBelow.push(call)
  } else {
    target.readers.push(call)
    for (const ancestor of above) ancestor.readersBelow.push(call)
  }
}

/**
 * For each call (its accesses in source order, `undefined` for a call that declared none), the earlier calls
 * it must wait for, ascending. A call that declared nothing touches nothing the batch knows of: only an
 * exclusive call, or an access to the empty key (everything), conflicts with it.
 */
export const waitsOf = (
  accesses: ReadonlyArray<ReadonlyArray<ResourceAccess> | undefined>
): Array<ReadonlyArray<number>> => {
  const root = node()
  return accesses.map((declared, call) => {
    const waits = new Set<number>()
    if (declared === undefined) {
      // A write of a key of its own, which only the empty key covers: no declared key holds a "/" segment.
      access(root, call, [`/${call}`], true, waits)
    } else {
      for (const item of declared) {
        if (item._tag === "Exclusive") access(root, call, [], true, waits)
        else access(root, call, segments(item.key), item._tag === "Write", waits)
      }
    }
    return Array.from(waits).sort((a, b) => a - b)
  })
}

/** Something that is scheduled by what it touches: `undefined` when it declared nothing. */
export interface Scheduled {
  readonly resources: ReadonlyArray<ResourceAccess> | undefined
}

/**
 * The calls run in turns (TE 11): for each call by its index, an Effect that, when earlier calls it conflicts
 * with are still running, first reports them (`onWait`) and waits for them to end, then runs it; its own end,
 * however it ends, lets the later ones go. `undefined` when no call declared what it touches: nothing waits
 * (TE 6.2).
 *
 * `run` is called only once the call's turn has come: the phases are eager, so building its Effect early
 * would already call the handler.
 */
export const inTurns = <A extends Scheduled>(
  calls: ReadonlyArray<A>,
  run: (call: A) => Effect.Effect<void>,
  onWait: (call: A, running: ReadonlyArray<A>) => Effect.Effect<void>
): ((call: A, index: number) => Effect.Effect<void>) | undefined => {
  if (!calls.some((call) => call.resources !== undefined)) return undefined
  const ended = calls.map(() => Latch.makeUnsafe(false))
  const waits = waitsOf(calls.map((call) => call.resources))
  return (call, index) => {
    const before = waits[index]!
    const running = before.filter((i) => !ended[i]!.isOpen())
    const turn = running.length === 0 ? run(call) : onWait(call, running.map((i) => calls[i]!)).pipe(
      Effect.andThen(Effect.forEach(before, (i) => Latch.await(ended[i]!), { discard: true })),
      Effect.andThen(Effect.suspend(() => run(call)))
    )
    return Effect.ensuring(turn, Latch.open(ended[index]!))
  }
}

const isDeclaration = Schema.is(Schema.Array(ResourceAccess))

/**
 * What a tool declared for a call, as an Effect whichever form it took (`Tool.withResources`): a list of
 * accesses, or `undefined` when the call declares nothing. Anything else (a key that is not a string, say,
 * from arguments a model left out) is a defect of the declaration, which ends that call alone as
 * `PrepareFailed` (TE 11.4).
 */
export const resourcesOf = (declared: Declared | Effect.Effect<Declared>): Effect.Effect<Declared> =>
  Effect.isEffect(declared) ? Effect.flatMap(declared, checked) : checked(declared)

const checked = (declared: unknown): Effect.Effect<Declared> =>
  declared === undefined || isDeclaration(declared)
    ? Effect.succeed(declared)
    : Effect.die(
      new Error(`what the call touches is not a list of accesses (read, write, exclusive): ${shown(declared)}`)
    )

const shown = (value: unknown): string => {
  try {
    return clip(JSON.stringify(value) ?? String(value))
  } catch {
    return `a value of type ${typeof value}`
  }
}
