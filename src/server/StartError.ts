/**
 * Why a runner of `serve` could not start (SV 5.3): the part that failed, named by the flag that chose it,
 * and the system's reason, in one line for the operator.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { errorChainText } from "../internal/errorText.ts"

/**
 * A runner could not start. `flag` is the option whose value could not be used (`--port`, `--runner-port`,
 * `--store`); `message` is one line saying what failed, why, and what to change.
 */
export class StartError extends Schema.TaggedError<StartError>()("StartError", {
  flag: Schema.String,
  message: Schema.String
}) {}

/**
 * A part of the runner that provides nothing (a server, a set-up step), whose failure to build (a typed
 * failure or a defect: effect's parts die on some) is the {@link StartError} `explain` makes of its error.
 * An interruption stays an interruption: nothing failed.
 */
export const explainedBy =
  (explain: (error: unknown) => StartError) =>
  <E, R>(layer: Layer.Layer<never, E, R>): Layer.Layer<never, StartError, R> =>
    Layer.catchCause(layer, (cause) =>
      Layer.effectDiscard(
        Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.fail(explain(Cause.squash(cause)))
      ))

/** `host:port`, with brackets around an IPv6 host. */
const hostPort = (host: string, port: number) => host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`

/**
 * A server socket that did not open: the HTTP API (`--port`) or the socket other runners send to
 * (`--runner-port`). A port in use is the usual reason (another runner on this machine, or one left over),
 * so that case says how to pick another.
 */
export const cannotListen = (flag: "--port" | "--runner-port", what: string, host: string, port: number) =>
(
  error: unknown
): StartError => {
  const reason = systemReason(error)
  const hint = reason.includes("EADDRINUSE")
    ? ` (another process holds the port: pass another ${flag}, or ${flag} 0 for a free one)`
    : ""
  return new StartError({ flag, message: `cannot listen ${what} on ${hostPort(host, port)}: ${reason}${hint}` })
}

/**
 * The operating system's own error in the chain (the first with a `code`, e.g. `listen EADDRINUSE: address
 * already in use 127.0.0.1:8787`): it says everything, where the wrappers around it say "Open". Else the chain.
 */
const systemReason = (error: unknown): string => {
  for (let current = error, depth = 0; typeof current === "object" && current !== null && depth < 4; depth++) {
    if ("code" in current && typeof current.code === "string") return errorChainText(current)
    current = "cause" in current ? current.cause : undefined
  }
  return errorChainText(error)
}

/** A store that could not be used: its URL without the password, and the reason (refused, unknown role, ...). */
export const cannotUseStore = (url: string) => (error: unknown): StartError => {
  const secrets = passwordsOf(url)
  // The client's own messages may quote the URL it was given.
  const scrub = (text: string) => secrets.reduce((out, secret) => out.replaceAll(secret, "***"), text)
  const shown = URL.canParse(url) ? scrub(url) : "(the --store value, not a valid URL)"
  return new StartError({ flag: "--store", message: `cannot use the store ${shown}: ${scrub(errorChainText(error))}` })
}

/** The URL's password as written (percent-encoded) and decoded. */
const passwordsOf = (url: string): ReadonlyArray<string> => {
  const password = URL.canParse(url) ? new URL(url).password : ""
  return password === "" ? [] : [...new Set([password, decodeURIComponent(password)])]
}
