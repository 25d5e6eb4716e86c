/**
 * A `serve` runner in a process of its own for the cluster test and the benchmark: the server of
 * `src/server` with the scripted model and `append` tool of support.ts (the CLI's `serve` takes a real
 * provider). Usage: node runner.ts <store: postgres://… or a SQLite file> <http port> <runner port> <name>
 * <workspaces root> <token>. Prints `READY <port>` once it serves; SIGTERM stops it gracefully.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Logger } from "effect"
import { HttpServer } from "effect/http"
import * as Engine from "../../src/server/Engine.ts"
import * as Server from "../../src/server/Server.ts"
import { modelLayer, tools } from "./support.ts"

const [store, port, runnerPort, name, root, token] = process.argv.slice(2) as [string, string, string, string, string, string]

const engine = store.startsWith("postgres")
  ? Engine.cluster({ url: store, runnerPort: Number(runnerPort) })
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
