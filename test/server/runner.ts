/**
 * A `serve` runner in a process of its own for the cluster test and the benchmark: the server of
 * `src/server` with the scripted model and `append` tool of support.ts (the CLI's `serve` takes a real
 * provider). Usage: node runner.ts <store: postgres://… or a SQLite file> <http port> <runner port> <name>
 * <workspaces root> <token>. Prints `READY <port>` once it serves; SIGTERM stops it gracefully.
 * Environment: SERVE_INBOX=0 turns the inbox off; SERVE_LOCK_REFRESH_MS / SERVE_LOCK_EXPIRATION_MS set
 * shorter leases (to provoke lock timeouts, SV 4.5); SERVE_STALL_EXIT_MS makes a stalled runner exit 75.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Duration, Effect, Logger } from "effect"
import { HttpServer } from "effect/http"
import * as Engine from "../../src/server/Engine.ts"
import * as Server from "../../src/server/Server.ts"
import { modelLayer, tools } from "./support.ts"

const [store, port, runnerPort, name, root, token] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string
]

// Shorter leases than serve's defaults, to provoke lock timeouts under load (see bench/serve.ts).
const millis = (
  name: string
) => (process.env[name] === undefined ? undefined : Duration.millis(Number(process.env[name])))
const timings = {
  ...(millis("SERVE_LOCK_REFRESH_MS") && { shardLockRefreshInterval: millis("SERVE_LOCK_REFRESH_MS")! }),
  ...(millis("SERVE_LOCK_EXPIRATION_MS") && { shardLockExpiration: millis("SERVE_LOCK_EXPIRATION_MS")! })
}

const engine = store.startsWith("postgres")
  ? Engine.cluster({
    url: store,
    runnerPort: Number(runnerPort),
    timings,
    // As `serve` does (exit code 75): the stall bound of SV 4.5.
    ...(millis("SERVE_STALL_EXIT_MS") && {
      stallBound: millis("SERVE_STALL_EXIT_MS")!,
      onStall: () => {
        process.stderr.write("STALLED\n")
        process.exit(75)
      }
    })
  })
  : Engine.single(store)

const server = Server.layer({
  port: Number(port),
  token,
  workspaces: root,
  runnerName: name,
  systemPrompt: "test",
  model: modelLayer,
  tools,
  engine,
  inbox: process.env.SERVE_INBOX !== "0"
})

const program = Effect.gen(function*() {
  const http = yield* HttpServer.HttpServer
  const address = http.address
  process.stdout.write(`READY ${"port" in address ? address.port : 0}\n`)
  return yield* Effect.never
})

NodeRuntime.runMain(
  program.pipe(
    Effect.provide(server),
    Effect.provide(Logger.layer([Logger.consoleJson]))
  ) as Effect.Effect<never, unknown>
)
