/**
 * `!command` of the interactive mode: `sh -c command` in the workspace, for the person (CLI 2.9). The
 * command runs in its own process group. Asked to stop (Esc or Ctrl-C), the group gets SIGTERM and, if
 * anything of it is still there after a grace period, SIGKILL; when the session itself ends mid-command
 * the group gets SIGKILL at once, so no process of it outlives the command line (CLI 12.8). After a stop,
 * whatever of the group outlived the shell is killed too.
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { spawn } from "node:child_process"

/** How a `!command` runs. */
export interface ShellOptions {
  readonly cwd: string
  /** Each chunk of its standard output and error, as it comes. */
  readonly output: (chunk: Buffer) => void
  /** Completes when the person asks to stop the command. */
  readonly stopRequested: Effect.Effect<void>
  /** Between SIGTERM and SIGKILL after a stop (default 2 s). */
  readonly grace?: Duration.Input | undefined
  /** Told the process group's id once started (tests). */
  readonly onStart?: ((pid: number) => void) | undefined
}

const signalGroup = (pid: number | undefined, signal: NodeJS.Signals): void => {
  try {
    if (pid !== undefined) process.kill(-pid, signal)
  } catch {
    // the group is gone
  }
}

/**
 * Runs the command; succeeds with its exit code, the signal that ended it, or the spawn error's message.
 * It returns when the shell has exited and its output pipes are closed, or, after a stop, once the group is
 * ended even if a process that left the group still holds the pipes.
 */
export const run = (command: string, options: ShellOptions): Effect.Effect<number | string> =>
  Effect.gen(function*() {
    const child = spawn("sh", ["-c", command], { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"], detached: true })
    if (child.pid !== undefined) options.onStart?.(child.pid)
    child.stdout.on("data", options.output)
    child.stderr.on("data", options.output)
    const ended = Effect.callback<number | string>((resume) => {
      child.on("close", (code, signal) => resume(Effect.succeed(code ?? signal ?? "?")))
      child.on("error", (error) => resume(Effect.succeed(error.message)))
    })
    let stopping = false
    const stopper = yield* Effect.forkChild(Effect.gen(function*() {
      yield* options.stopRequested
      stopping = true
      signalGroup(child.pid, "SIGTERM")
      yield* Effect.sleep(options.grace ?? "2 seconds")
      // Still there (it ignores SIGTERM, or a background job holds the pipes): no more asking.
      signalGroup(child.pid, "SIGKILL")
      child.stdout.destroy()
      child.stderr.destroy()
    }))
    return yield* ended.pipe(
      Effect.ensuring(Fiber.interrupt(stopper)),
      // The shell is gone, but after a stop nothing of its group may go on (a background job ignoring SIGTERM).
      Effect.ensuring(Effect.sync(() => {
        if (stopping) signalGroup(child.pid, "SIGKILL")
      })),
      Effect.onInterrupt(() => Effect.sync(() => signalGroup(child.pid, "SIGKILL")))
    )
  })
