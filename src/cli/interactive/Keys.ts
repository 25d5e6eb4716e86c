/**
 * The keyboard of an interactive session, read through the `Terminal` service (`readInput`): the terminal
 * in raw mode for the whole session (so Ctrl-C is a key, not a signal that would end the program), every key
 * pressed queued in order, and pasted text marked as such through the terminal's bracketed-paste mode, so a
 * pasted newline is text, not Enter (CLI 1.3). Node's `Terminal` (`NodeTerminal`) decodes keys with readline,
 * which names the paste brackets `paste-start` and `paste-end`; a test terminal gives the same events.
 */
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Terminal from "effect/Terminal"

/** One key press, as the terminal decodes it; `paste` is true between the paste brackets. */
export interface Key {
  /** The characters of the key (empty for a key the terminal names without them, such as Alt-Enter). */
  readonly sequence: string
  readonly name: string | undefined
  readonly ctrl: boolean
  readonly meta: boolean
  readonly shift: boolean
  readonly paste: boolean
}

/** The keys of the session, one at a time. Once the terminal's input has ended, every read is {@link isEnd}. */
export interface Keys {
  readonly take: Effect.Effect<Key>
  /** The next key if one is already waiting (a paste arrives as many keys at once). */
  readonly poll: Effect.Effect<Key | undefined>
  /** Drops keys typed ahead (before a question is on screen, so a stray key answers nothing). */
  readonly discard: Effect.Effect<void>
}

const BRACKETED_PASTE_ON = "\x1b[?2004h"
const BRACKETED_PASTE_OFF = "\x1b[?2004l"

const END_OF_INPUT = "end-of-input"

/** What the keys read once the terminal's input has ended (the terminal closed): no person is there any more. */
const endOfInput: Key = { sequence: "", name: END_OF_INPUT, ctrl: false, meta: false, shift: false, paste: false }

/** Whether the terminal's input has ended (CLI 1.9): the session ends as `/quit` ends it. */
export const isEnd = (key: Key): boolean => key.name === END_OF_INPUT

/** Whether a key is Esc or Ctrl-C, or the end of input: what stops an answer. */
export const isStop = (key: Key): boolean =>
  isEnd(key) || (!key.paste && (key.name === "escape" || (key.ctrl && key.name === "c")))

/**
 * The keys a `Terminal` may end its input at (`NodeTerminal.layer` ends it at Esc, Ctrl-C and Ctrl-D, for
 * its prompts): after one of them the input is read again, since the session goes on.
 */
const endsPromptInput = ({ key }: Terminal.UserInput): boolean =>
  key.name === "escape" || (key.ctrl && (key.name === "c" || key.name === "d"))

/**
 * Takes the terminal for the scope: raw mode (held by the terminal while its input is read) and bracketed
 * paste on, each key queued; on close the input is released and bracketed paste turned off again, however
 * the session ended.
 */
export const make: Effect.Effect<Keys, never, Scope.Scope | Terminal.Terminal> = Effect.gen(function*() {
  const terminal = yield* Terminal.Terminal
  const queue = yield* Queue.unbounded<Key>()
  let paste = false
  let ended = false
  const keyOf = (input: Terminal.UserInput): Key | undefined => {
    const name = input.key.name === "" ? undefined : input.key.name
    if (name === "paste-start") return void (paste = true)
    if (name === "paste-end") return void (paste = false)
    return {
      sequence: Option.getOrElse(input.input, () => ""),
      name,
      ctrl: input.key.ctrl,
      meta: input.key.meta,
      shift: input.key.shift,
      paste
    }
  }

  // One subscription to the terminal's input at a time, each in its own scope. A new one is opened before
  // the old one is closed, so the terminal never leaves raw mode in between.
  let subscription: Scope.Closeable | undefined
  const subscribe = Effect.gen(function*() {
    const scope = yield* Scope.make()
    const input = yield* terminal.readInput.pipe(Effect.provideService(Scope.Scope, scope))
    const previous = subscription
    subscription = scope
    if (previous !== undefined) yield* Scope.close(previous, Exit.void)
    return input
  })
  const pump = (first: Queue.Dequeue<Terminal.UserInput, Cause.Done>): Effect.Effect<void> =>
    Effect.gen(function*() {
      let input = first
      while (true) {
        let last: Terminal.UserInput | undefined
        while (true) {
          const next = yield* Effect.option(Queue.take(input))
          if (Option.isNone(next)) break
          last = next.value
          const key = keyOf(next.value)
          if (key !== undefined) yield* Queue.offer(queue, key)
        }
        // Ended at a key that ends a prompt's input: the session's input goes on. Ended otherwise (or again
        // at once, with no key): the terminal's input is over.
        if (last === undefined || !endsPromptInput(last)) break
        input = yield* subscribe
      }
      ended = true
      yield* Queue.offer(queue, endOfInput)
    })

  yield* Effect.addFinalizer(() =>
    Effect.andThen(
      Effect.suspend(() => subscription === undefined ? Effect.void : Scope.close(subscription, Exit.void)),
      terminal.display(BRACKETED_PASTE_OFF).pipe(Effect.ignore)
    )
  )
  const first = yield* subscribe
  yield* terminal.display(BRACKETED_PASTE_ON).pipe(Effect.ignore)
  yield* Effect.forkScoped(pump(first))

  // After the end, the end is read for ever: a reader waiting for a key learns that none will come.
  const afterEnd = (key: Option.Option<Key>): Key | undefined =>
    Option.isSome(key) ? key.value : ended ? endOfInput : undefined
  return {
    take: Effect.flatMap(Queue.poll(queue), (key) => {
      const now = afterEnd(key)
      return now !== undefined ? Effect.succeed(now) : Queue.take(queue)
    }),
    poll: Effect.map(Queue.poll(queue), afterEnd),
    discard: Effect.asVoid(Queue.clear(queue))
  }
})
