/**
 * The bubblewrap (`bwrap`) command lines of the `bash` sandbox, and the probe that tells whether bubblewrap
 * works here. Not API: `bash.ts` decides when to use them.
 */
import * as Effect from "effect/Effect"
import * as ChildProcess from "effect/process/ChildProcess"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as Stream from "effect/Stream"

/**
 * The arguments that put a command in the sandbox, up to and including `--`:
 *
 * - every namespace of its own (`--unshare-all`), the network too unless `allowNetwork`: a new network
 *   namespace has only a loopback device of its own, so nothing outside is reachable, not even the host's
 *   127.0.0.1;
 * - the whole file system read-only, then a fresh `/dev`, a `/proc` of the new PID namespace, an empty
 *   private `/tmp`, and the workspace bound writable at its own path (after `/tmp`, so a workspace under
 *   `/tmp` stays visible);
 * - a PID namespace whose first process is the shell itself (`--as-pid-1`): when the shell exits, or
 *   bubblewrap dies (`--die-with-parent` ties it to us), the kernel kills every process left in it, `setsid`
 *   or not. Without bubblewrap's own reaper in between, the shell is bubblewrap's child and is reaped by it,
 *   instead of being left to the host's init, which may take its time (and the call waits for the group);
 * - no capabilities, even when we run as root (bubblewrap would otherwise keep them inside its user
 *   namespace, where root is still mapped to root).
 *
 * The process group is not changed (no `--new-session`), so a signal to the group still reaches every
 * process of the command; the shell, as PID 1 of its namespace, ignores it unless it set a handler, but dies
 * with bubblewrap, which does not.
 */
export const sandboxArgs = (root: string, allowNetwork: boolean): ReadonlyArray<string> => [
  "--unshare-all",
  ...(allowNetwork ? ["--share-net"] : []),
  "--as-pid-1",
  "--die-with-parent",
  "--cap-drop",
  "ALL",
  "--ro-bind",
  "/",
  "/",
  "--dev",
  "/dev",
  "--proc",
  "/proc",
  "--tmpfs",
  "/tmp",
  "--bind",
  root,
  root,
  "--chdir",
  root,
  "--"
]

/** The longest a probe may take before bubblewrap counts as not working. */
const PROBE_TIMEOUT = "10 seconds"

/**
 * Runs `true` in the sandbox once: `undefined` when it worked, else why not (bubblewrap missing, or it
 * cannot create namespaces here), in one line.
 */
export const probe = (
  bwrap: string,
  root: string,
  allowNetwork: boolean
): Effect.Effect<string | undefined, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*() {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const command = ChildProcess.make(bwrap, [...sandboxArgs(root, allowNetwork), "true"], {
      cwd: root,
      stdin: "ignore"
    })
    const handle = yield* spawner.spawn(command)
    const [code, stderr] = yield* Effect.all([
      handle.exitCode,
      handle.stderr.pipe(Stream.decodeText(), Stream.mkString)
    ], { concurrency: 2 })
    if (code === 0) return undefined
    const said = stderr.trim().split("\n").filter((line) => line.trim() !== "").at(-1)
    return `${bwrap} exited with code ${code}${said === undefined ? "" : `: ${said}`}`
  }).pipe(
    Effect.scoped,
    Effect.timeoutOrElse({
      duration: PROBE_TIMEOUT,
      orElse: () => Effect.succeed(`${bwrap} did not finish a trial run in ${PROBE_TIMEOUT}`)
    }),
    Effect.catch((error) =>
      Effect.succeed(
        error.reason._tag === "NotFound"
          ? `${bwrap} was not found (it comes with the bubblewrap package)`
          : `${bwrap} could not be started: ${error.reason.description ?? error.reason._tag}`
      )
    )
  )
