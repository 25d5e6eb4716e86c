/**
 * How the command stops on a signal. SIGINT (Ctrl-C), SIGTERM (`kill`) and SIGHUP (the terminal was
 * closed) all interrupt the main fiber, so each gets the same clean shutdown: the agent aborts the run,
 * every started tool call gets its result, the session keeps every completed message and no child process
 * is left. Node's own default for SIGHUP is to exit on the spot, leaving a running `bash` behind.
 */
import * as Effect from "effect/Effect"

/** The signals that stop the command, with their numbers (the exit code is 128 + the number). */
const STOP_SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const

/** One of {@link STOP_SIGNALS}. */
export type StopSignal = keyof typeof STOP_SIGNALS

let received: StopSignal | undefined

/** The first stop signal this process received, if any. */
export const receivedSignal = (): StopSignal | undefined => received

/**
 * The exit code of an interrupted run: 128 + the signal's number, as a shell reports a process a signal
 * stopped (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP); 130 when no signal came (an interrupt asked
 * for another way).
 */
export const interruptedExitCode = (): number => 128 + STOP_SIGNALS[received ?? "SIGINT"]

/**
 * Runs `effect` (the program's main effect) so that each stop signal interrupts it. After SIGHUP the
 * terminal is gone: writing to it fails, and those write errors are swallowed so they cannot crash the
 * shutdown.
 */
export const interruptOnStopSignals = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber<A, E, R>((fiber) => {
    const listeners = (Object.keys(STOP_SIGNALS) as Array<StopSignal>).map((signal) => {
      const listener = () => {
        received ??= signal
        if (signal === "SIGHUP") {
          for (const stream of [process.stdout, process.stderr]) stream.on("error", () => {})
        }
        fiber.interruptUnsafe(fiber.id)
      }
      process.on(signal, listener)
      return [signal, listener] as const
    })
    return Effect.ensuring(
      effect,
      Effect.sync(() => {
        for (const [signal, listener] of listeners) process.off(signal, listener)
      })
    )
  })

/**
 * Stops the command as Ctrl-C does, from inside it: for a Ctrl-C read as a key (a prompt has the terminal
 * in raw mode, so the terminal does not send SIGINT itself). Never completes; the run is interrupted. With
 * no SIGINT listener (the command run in-process, not as the program) signalling would kill the whole
 * process, so only the calling fiber is interrupted then.
 */
export const stopAsCtrlC: Effect.Effect<never> = Effect.suspend(() =>
  process.listenerCount("SIGINT") === 0
    ? Effect.interrupt
    : Effect.andThen(Effect.sync(() => process.kill(process.pid, "SIGINT")), Effect.never)
)
