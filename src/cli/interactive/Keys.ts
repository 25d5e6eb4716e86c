/**
 * The keyboard of an interactive session: the terminal in raw mode for the whole session (so Ctrl-C is a
 * key, not a signal that would end the program), every key pressed queued in order, and pasted text marked
 * as such through the terminal's bracketed-paste mode, so a pasted newline is text, not Enter (CLI 1.3).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { emitKeypressEvents } from "node:readline"

/** One key press, as Node's readline decodes it; `paste` is true between the paste brackets. */
export interface Key {
  readonly sequence: string
  readonly name: string | undefined
  readonly ctrl: boolean
  readonly meta: boolean
  readonly shift: boolean
  readonly paste: boolean
}

/** The keys of the session, one at a time. */
export interface Keys {
  readonly take: Effect.Effect<Key>
  /** The next key if one is already waiting (a paste arrives as many keys at once). */
  readonly poll: Effect.Effect<Key | undefined>
  /** Drops keys typed ahead (before a question is on screen, so a stray key answers nothing). */
  readonly discard: Effect.Effect<void>
}

const BRACKETED_PASTE_ON = "\x1b[?2004h"
const BRACKETED_PASTE_OFF = "\x1b[?2004l"

/** Whether a key is Esc or Ctrl-C: what stops an answer. */
export const isStop = (key: Key): boolean => !key.paste && (key.name === "escape" || (key.ctrl && key.name === "c"))

/**
 * Takes the terminal for the scope: raw mode and bracketed paste on, each key queued; on close both are
 * turned off again and stdin is released, however the session ended.
 */
export const make = (
  input: NodeJS.ReadStream = process.stdin,
  output: NodeJS.WriteStream = process.stdout
): Effect.Effect<Keys, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Key>()
    let paste = false
    const onKey = (sequence: string | undefined, key: Partial<Key> | undefined) => {
      const name = key?.name
      if (name === "paste-start") return void (paste = true)
      if (name === "paste-end") return void (paste = false)
      Queue.offerUnsafe(queue, {
        sequence: sequence ?? key?.sequence ?? "",
        name,
        ctrl: key?.ctrl === true,
        meta: key?.meta === true,
        shift: key?.shift === true,
        paste
      })
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        emitKeypressEvents(input)
        if (input.isTTY) input.setRawMode(true)
        input.on("keypress", onKey)
        input.resume()
        output.write(BRACKETED_PASTE_ON)
      }),
      () =>
        Effect.sync(() => {
          input.off("keypress", onKey)
          if (input.isTTY) input.setRawMode(false)
          input.pause()
          output.write(BRACKETED_PASTE_OFF)
        })
    )
    return {
      take: Queue.take(queue),
      poll: Effect.map(Queue.poll(queue), Option.getOrUndefined),
      discard: Effect.asVoid(Queue.clear(queue))
    }
  })
