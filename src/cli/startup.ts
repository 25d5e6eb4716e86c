/**
 * The checks of the command's input made before anything runs or is created: each bad value is refused
 * with one line naming the flag (and the environment variable, where one applies) and what to do.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"

/** The command line or its environment is not usable as given. `message` is one line for the person. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  flag: Schema.String,
  message: Schema.String
}) {}

/**
 * The absolute path of a `--workspace` folder that exists. A missing folder is refused rather than created
 * (a typo must not make a new folder tree for an agent to write in), and so is a path to anything that is not
 * a directory.
 */
export const existingWorkspace = Effect.fn("existingWorkspace")(function*(given: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const root = path.resolve(given)
  const info = yield* fs.stat(root).pipe(
    Effect.mapError((error) =>
      new UsageError({
        flag: "--workspace",
        message: error.reason._tag === "NotFound"
          ? `--workspace ${root}: no such folder (create it first, or pick another).`
          : `--workspace ${root}: cannot be read: ${error.message}`
      })
    )
  )
  if (info.type !== "Directory") {
    return yield* new UsageError({ flag: "--workspace", message: `--workspace ${root}: not a directory.` })
  }
  return root
})

/** `--tool-timeout` in seconds: a positive whole number. */
export const toolTimeoutSeconds = (seconds: number): Effect.Effect<number, UsageError> =>
  Number.isSafeInteger(seconds) && seconds > 0
    ? Effect.succeed(seconds)
    : Effect.fail(
      new UsageError({
        flag: "--tool-timeout",
        message: `--tool-timeout must be a positive number of seconds (got ${seconds}).`
      })
    )

/** A `--prompt` task: it must say something. */
export const promptTask = (task: string): Effect.Effect<string, UsageError> =>
  task.trim() === ""
    ? Effect.fail(
      new UsageError({ flag: "--prompt", message: "--prompt is empty: give the task, or leave --prompt out." })
    )
    : Effect.succeed(task)
