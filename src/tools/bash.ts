/**
 * `bash`: runs a command with `bash -c` in the workspace root, streaming its output as partial results.
 *
 * The shell is started in a process group of its own (`detached`), so that every process it starts can be
 * stopped together: when the call is interrupted (abort), or runs past its timeout, the whole group gets
 * SIGTERM, then SIGKILL after a grace period, and the call waits until the group is gone. The same happens
 * when the shell exits while children it put in the background are still running. (A process that leaves
 * the group on purpose, with `setsid`, escapes this.) The command is not sandboxed: the workspace only sets
 * its working directory.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Fiber, Option, Result, Schema, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as Tool from "../Tool.ts"
import { CommandFailed, CommandSpawnFailed, CommandTimedOut } from "./errors.ts"
import { formatBytes, TailBuffer } from "./internal.ts"
import { ToolLimits } from "./limits.ts"
import { Workspace } from "./Workspace.ts"

/** The parameters of `bash`. */
export const BashParameters = Schema.Struct({
  command: Schema.NonEmptyString.annotate({
    description: "The bash command to run. It runs with bash -c in the workspace root, stdin closed"
  }),
  timeout: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 3600 })).annotate({
      description: "Timeout in seconds; the command and all its child processes are killed when it expires. " +
        "Default 120"
    })
  )
})

/** The structured part of a `bash` result (final or partial). */
export interface BashDetails {
  readonly command: string
  /** The process id of the shell, which is also its process-group id. */
  readonly pid: number | undefined
  /** The exit code, or null while running or when killed by a signal. */
  readonly exitCode: number | null
  readonly running: boolean
  readonly timedOut: boolean
  /** True when output was dropped: only the tail within the limits is kept. */
  readonly truncated: boolean
  readonly totalLines: number
  readonly totalBytes: number
}

/** The `bash` tool definition. */
export const bash = Tool.make<"bash", typeof BashParameters, BashDetails>("bash", {
  label: "Run command",
  description: "Run a bash command in the workspace root and return its combined stdout and stderr. Output is " +
    "limited to the last 2000 lines or 50 KB; a note says when it was cut. A non-zero exit code is reported " +
    "as an error together with the output. Default timeout 120 seconds (see timeout). Commands must not wait " +
    "for input: stdin is closed. Background processes are killed when the command finishes.",
  parameters: BashParameters,
  executionMode: "sequential"
})

/** The handler of {@link bash}. */
export const bashLayer = bash.toLayer(Effect.gen(function*() {
  const workspace = yield* Workspace
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  const limits = yield* ToolLimits

  return Effect.fnUntraced(function*(args, context) {
    const timeoutSeconds = Math.min(args.timeout ?? limits.bashDefaultTimeoutSeconds, limits.bashMaxTimeoutSeconds)
    const buffer = new TailBuffer(limits.bashMaxLines, limits.bashMaxBytes)
    let pid: number | undefined

    const details = (state: Pick<BashDetails, "exitCode" | "running" | "timedOut">): BashDetails => ({
      command: args.command,
      pid,
      ...state,
      truncated: buffer.truncated,
      totalLines: buffer.lineCount,
      totalBytes: buffer.totalBytes
    })

    /** The kept output with a note when some was dropped. */
    const output = (): string => {
      const text = buffer.text()
      if (!buffer.truncated) return text
      const kept = text === "" ? 0 : text.split("\n").length
      return `${text}\n\n[Output truncated: showing the last ${kept} of ${buffer.lineCount} lines ` +
        `(${formatBytes(buffer.totalBytes)} in total).]`
    }

    const command = ChildProcess.make("bash", ["-c", args.command], {
      cwd: workspace.root,
      stdin: "ignore",
      detached: true,
      killSignal: "SIGTERM",
      forceKillAfter: Duration.millis(limits.bashKillGraceMillis)
    })

    const run = Effect.scoped(Effect.gen(function*() {
      const handle = yield* spawner.spawn(command).pipe(
        Effect.mapError((error) =>
          new CommandSpawnFailed({ command: args.command, message: `Could not start bash: ${error.message}` })
        )
      )
      pid = handle.pid
      const decoder = new TextDecoder("utf-8")
      const reader = yield* handle.all.pipe(
        Stream.runForEach((chunk) =>
          Effect.suspend(() => {
            buffer.push(decoder.decode(chunk, { stream: true }))
            return context.update({
              content: [{ type: "text", text: output() }],
              details: details({ exitCode: null, running: true, timedOut: false })
            })
          })
        ),
        Effect.forkScoped
      )
      const exit = yield* Effect.result(handle.exitCode)
      // Output still in the pipes; a background child holding them open is not waited for.
      yield* Fiber.await(reader).pipe(Effect.timeoutOption(Duration.millis(limits.bashDrainMillis)))
      buffer.push(decoder.decode())
      return exit
      // Closing the scope kills whatever is left of the process group.
    }))

    const outcome = yield* run.pipe(Effect.timeoutOption(Duration.seconds(timeoutSeconds)))
    if (Option.isNone(outcome)) {
      const text = output()
      return yield* new CommandTimedOut({
        command: args.command,
        timeoutSeconds,
        output: text,
        message: `${text === "" ? "(no output)" : text}\n\nCommand timed out after ${timeoutSeconds} seconds; ` +
          `it and all its child processes were killed.`
      })
    }
    const text = output()
    const exit = outcome.value
    if (Result.isFailure(exit)) {
      return yield* new CommandFailed({
        command: args.command,
        exitCode: null,
        output: text,
        message: `${text === "" ? "(no output)" : text}\n\nCommand was terminated: ${exit.failure.message}`
      })
    }
    const exitCode = exit.success as number
    if (exitCode !== 0) {
      return yield* new CommandFailed({
        command: args.command,
        exitCode,
        output: text,
        message: `${text === "" ? "(no output)" : text}\n\nCommand exited with code ${exitCode}`
      })
    }
    return {
      content: [{ type: "text" as const, text: text === "" ? "(no output)" : text }],
      details: details({ exitCode, running: false, timedOut: false })
    }
  })
}))
