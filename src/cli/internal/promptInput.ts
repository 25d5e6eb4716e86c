/**
 * Effect's prompts (`effect/cli` `Prompt`) quit when the terminal's key input ends, and count on the
 * terminal to end it at Esc, Ctrl-C or Ctrl-D (`NodeTerminal.layer` does). The command line runs on a
 * terminal whose key input does not end at any key (the interactive mode reads Esc and Ctrl-C as keys and
 * goes on, CLI 9.4), so its prompts end their own input there: {@link run}.
 */
import type * as Cause from "effect/Cause"
import * as Prompt from "effect/cli/Prompt"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Terminal from "effect/Terminal"

/** The keys a prompt quits at: Esc, Ctrl-C, Ctrl-D. */
const quits = ({ key }: Terminal.UserInput): boolean =>
  key.name === "escape" || (key.ctrl && (key.name === "c" || key.name === "d"))

/** The terminal with its key input ending just after a key a prompt quits at (that key given first). */
const quittingAtKeys = (terminal: Terminal.Terminal): Terminal.Terminal =>
  Terminal.make({
    columns: terminal.columns,
    rows: terminal.rows,
    size: terminal.size,
    readLine: terminal.readLine,
    display: terminal.display,
    readInput: Effect.gen(function*() {
      const input = yield* terminal.readInput
      const output = yield* Queue.unbounded<Terminal.UserInput, Cause.Done>()
      yield* Effect.forkScoped(Effect.gen(function*() {
        while (true) {
          const next = yield* Effect.option(Queue.take(input))
          if (Option.isSome(next)) yield* Queue.offer(output, next.value)
          if (Option.isNone(next) || quits(next.value)) return yield* Queue.end(output)
        }
      }))
      return output
    })
  })

/**
 * Runs a prompt as `Prompt.run` does, quitting (`QuitError`) at Esc, Ctrl-C or Ctrl-D whether or not the
 * terminal in context ends its input there itself.
 */
export const run = <A>(prompt: Prompt.Prompt<A>): Effect.Effect<A, Terminal.QuitError, Prompt.Environment> =>
  Effect.flatMap(
    Terminal.Terminal,
    (terminal) => Prompt.run(prompt).pipe(Effect.provideService(Terminal.Terminal, quittingAtKeys(terminal)))
  )
