/**
 * `bash`: runs a command with `bash -c` in the workspace root, streaming its output as partial results.
 *
 * Where bubblewrap works ({@link BashSandbox}), the command runs in a sandbox: the file system is read-only
 * except the workspace and a private, empty `/tmp`; there is no network unless allowed; and it has its own
 * PID namespace, so no process it starts outlives it, not even one that left with `setsid`. Where
 * bubblewrap is missing or cannot create namespaces, the layer says so once (a warning in the log) and runs
 * commands unconfined, as a plain `bash -c` in the workspace root, unless the sandbox is required, when the
 * layer fails with {@link SandboxUnavailable}.
 *
 * Either way the shell is started in a process group of its own (`detached`), so that every process it
 * starts can be stopped together: when the call is interrupted (abort), or runs past its timeout, the whole
 * group gets SIGTERM, then SIGKILL after a grace period, and the call waits until the group is gone. The
 * same happens when the shell exits while children it put in the background are still running. Unconfined,
 * a process that leaves the group on purpose (`setsid`) escapes this, but it cannot keep the call, or the
 * program, waiting: the command writes through relays that belong to the group, so its output pipes close
 * when the group is stopped, a short drain after the shell exits. (The relays outlive the shell by a moment
 * and are reaped by the host's init; where init is slow to do so, each unconfined call waits for it.)
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as ChildProcess from "effect/process/ChildProcess"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ResourceAccess from "../ResourceAccess.ts"
import * as Tool from "../Tool.ts"
import { CommandFailed, CommandSpawnFailed, CommandTimedOut } from "./errors.ts"
import { formatBytes, TailBuffer } from "./internal.ts"
import { probe, sandboxArgs } from "./internal/bwrap.ts"
import { ToolLimits } from "./limits.ts"
import { Workspace } from "./Workspace.ts"

/** How `bash` is confined. */
export interface BashSandboxSettings {
  /**
   * `auto`: the sandbox when bubblewrap works, else unconfined with a warning. `require`: the sandbox or
   * nothing (the layer fails). `off`: unconfined, without a warning.
   */
  readonly mode: "auto" | "require" | "off"
  /** Whether sandboxed commands may use the network (they share the host's network namespace). */
  readonly allowNetwork: boolean
  /** The bubblewrap program, a name looked up on PATH or a path. */
  readonly bwrap: string
}

/** The default: the sandbox when it works, no network, `bwrap` from PATH. */
export const defaultSandboxSettings: BashSandboxSettings = { mode: "auto", allowNetwork: false, bwrap: "bwrap" }

/**
 * The sandbox settings of `bash`, read once when its handler layer is built; change them by providing the
 * reference to the layer (`Layer.provide(Layer.succeed(BashSandbox)({ ...defaultSandboxSettings, ... }))`).
 */
export const BashSandbox = Context.Reference<BashSandboxSettings>("effect-agent/tools/BashSandbox", {
  defaultValue: () => defaultSandboxSettings
})

/**
 * What a `bash` call touches, from its command (docs/tool-execution.md, TE 11). The default says everything:
 * a command may read or write any file of the workspace, so it runs alone in its batch. A policy that knows
 * better (commands it recognises as read-only, say) can provide another, e.g.
 * `Layer.succeed(BashResources)(() => [ResourceAccess.read(root)])` for a workspace mounted read-only.
 */
export const BashResources = Context.Reference<(command: string) => ReadonlyArray<ResourceAccess.ResourceAccess>>(
  "effect-agent/tools/BashResources",
  { defaultValue: () => () => [ResourceAccess.exclusive] }
)

/** The sandbox was required (`mode: "require"`) but bubblewrap is missing or does not work here. */
export class SandboxUnavailable extends Schema.TaggedError<SandboxUnavailable>()("SandboxUnavailable", {
  reason: Schema.String,
  message: Schema.String
}) {}

/** How `bash` will run commands: in the sandbox, or unconfined and why. */
export const SandboxStatus = Schema.Union([
  Schema.TaggedStruct("Sandboxed", { bwrap: Schema.String, allowNetwork: Schema.Boolean }),
  Schema.TaggedStruct("Unconfined", { reason: Schema.String })
])

/** A {@link SandboxStatus} value. */
export type SandboxStatus = typeof SandboxStatus.Type

/**
 * Decides how `bash` runs commands in `root` under `settings`, trying bubblewrap once unless the mode is
 * `off`. Fails only when the sandbox is required and does not work.
 */
export const resolveSandbox = Effect.fn("resolveSandbox")(function*(settings: BashSandboxSettings, root: string) {
  const unconfined = (reason: string): SandboxStatus => ({ _tag: "Unconfined", reason })
  if (settings.mode === "off") return unconfined("the sandbox is turned off")
  const failure = yield* probe(settings.bwrap, root, settings.allowNetwork)
  if (failure === undefined) {
    const sandboxed: SandboxStatus = { _tag: "Sandboxed", bwrap: settings.bwrap, allowNetwork: settings.allowNetwork }
    return sandboxed
  }
  if (settings.mode === "require") {
    return yield* new SandboxUnavailable({
      reason: failure,
      message: `The bash sandbox is required but bubblewrap does not work here: ${failure}`
    })
  }
  return unconfined(failure)
})

/**
 * Put before an unconfined command: its stdout and stderr go through `cat` relays in the shell's process
 * group, so a `setsid` child inherits the relays' pipes, not ours, and ours close when the group is stopped.
 * On the same line as the command, so bash's line numbers in messages stay the command's own.
 */
const RELAY = "exec > >(exec cat) 2> >(exec cat >&2); "

/** After the shell exits, most drain periods waited for while output keeps arriving. */
const MAX_DRAIN_WINDOWS = 10

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
  /**
   * The process id of what was started (bubblewrap when sandboxed, else the shell), which is also the
   * process-group id of the command.
   */
  readonly pid: number | undefined
  /** Whether the command ran in the sandbox. */
  readonly sandboxed: boolean
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
    "for input: stdin is closed. Background processes are killed when the command finishes. It usually runs " +
    "in a sandbox: only the workspace and a private /tmp are writable, and there is no network.",
  parameters: BashParameters
})

/** The handler of {@link bash}. */
export const bashLayer = bash.toLayer(Effect.gen(function*() {
  const workspace = yield* Workspace
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  const limits = yield* ToolLimits
  const settings = yield* BashSandbox
  const sandbox = yield* resolveSandbox(settings, workspace.root)
  if (sandbox._tag === "Unconfined" && settings.mode === "auto") {
    yield* Effect.logWarning(`effect-agent: bash runs unconfined, without a sandbox: ${sandbox.reason}`)
  }
  const sandboxed = sandbox._tag === "Sandboxed"

  const touches = yield* BashResources

  return Tool.withResources(
    Effect.fnUntraced(function*(args, context) {
      const timeoutSeconds = Math.min(args.timeout ?? limits.bashDefaultTimeoutSeconds, limits.bashMaxTimeoutSeconds)
      const buffer = new TailBuffer(limits.bashMaxLines, limits.bashMaxBytes)
      let pid: number | undefined

      const details = (state: Pick<BashDetails, "exitCode" | "running" | "timedOut">): BashDetails => ({
        command: args.command,
        pid,
        sandboxed,
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

      const [file, argv] = sandbox._tag === "Sandboxed"
        ? [sandbox.bwrap, [...sandboxArgs(workspace.root, sandbox.allowNetwork), "bash", "-c", args.command]]
        : ["bash", ["-c", RELAY + args.command]]
      const command = ChildProcess.make(file, argv, {
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
        let chunks = 0
        const decoder = new TextDecoder("utf-8")
        const reader = yield* handle.all.pipe(
          Stream.runForEach((chunk) =>
            Effect.suspend(() => {
              chunks++
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
        // Output still on its way (in the pipes, or in the relays) is read while it keeps coming; a child
        // holding the pipes open without writing is not waited for, and one that keeps writing not forever.
        for (let window = 0; window < MAX_DRAIN_WINDOWS; window++) {
          const before = chunks
          const done = yield* Fiber.await(reader).pipe(Effect.timeoutOption(Duration.millis(limits.bashDrainMillis)))
          if (Option.isSome(done) || chunks === before) break
        }
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
    }),
    (args) => touches(args.command)
  )
}))
