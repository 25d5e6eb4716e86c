/**
 * `effect-agent serve`: a runner of durable agent runs behind the HTTP API of `src/server`. With
 * `--store postgres://…` it joins the cluster of every runner on that database; without, it runs alone on
 * the embedded SQLite store. SIGTERM (or Ctrl-C) stops it gracefully: the HTTP server stops first, then the
 * runner hands its shards (and their runs) to the others.
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Redacted from "effect/Redacted"
import { hostname } from "node:os"
import { defaultTimings } from "../server/timings.ts"
import { resolveSandbox } from "../tools/bash.ts"
import { approvalHook } from "./Approval.ts"
import * as Demo from "./Demo.ts"
import { limitsOf } from "./Limits.ts"
import { DEFAULT_INSTRUCTIONS } from "./ProjectContext.ts"
import { providerLayer, providerSettings } from "./provider.ts"
import { existingWorkspace, toolTimeoutSeconds, UsageError } from "./startup.ts"
import { workspaceTools } from "./tools.ts"

/** The flags `serve` shares with the main command (model, sandbox, tool timeout). */
export interface SharedFlags {
  readonly provider: Flag.Flag<Option.Option<"openai-compatible" | "anthropic" | "openai-responses" | "gemini">>
  readonly baseUrl: Flag.Flag<Option.Option<string>>
  readonly model: Flag.Flag<Option.Option<string>>
  readonly apiKey: Flag.Flag<Option.Option<Redacted.Redacted>>
  readonly sandbox: Flag.Flag<"auto" | "require" | "off">
  readonly allowNetwork: Flag.Flag<boolean>
  readonly bwrap: Flag.Flag<string>
  readonly toolTimeout: Flag.Flag<number>
  readonly sequential: Flag.Flag<boolean>
  readonly maxTurns: Flag.Flag<number>
  readonly maxToolCalls: Flag.Flag<number>
  readonly maxInputTokens: Flag.Flag<number>
  readonly maxOutputTokens: Flag.Flag<number>
  readonly maxCost: Flag.Flag<number>
  readonly maxMinutes: Flag.Flag<number>
  readonly maxRepeats: Flag.Flag<number>
}

const millis = (name: string, what: string, fallback: Duration.Duration) =>
  Flag.Int(name).pipe(
    Flag.withDescription(`${what} in milliseconds (default ${Duration.toMillis(fallback)}).`),
    Flag.withDefault(Duration.toMillis(fallback))
  )

const serveFlags = {
  port: Flag.Int("port").pipe(Flag.withDescription("The HTTP port (0: any free port)."), Flag.withDefault(8787)),
  host: Flag.String("host").pipe(
    Flag.withDescription("The address the HTTP server binds."),
    Flag.withDefault("127.0.0.1")
  ),
  token: Flag.Redacted("token").pipe(
    Flag.withDescription("The bearer token clients must send. Default: EFFECT_AGENT_TOKEN."),
    Flag.optional
  ),
  workspaces: Flag.String("workspaces").pipe(
    Flag.withDescription("The folder under which every run's workspace must lie (default: the current folder)."),
    Flag.optional
  ),
  store: Flag.String("store").pipe(
    Flag.withDescription(
      "postgres://… to join the cluster of runners on that database; else a SQLite file for one runner (default: $EFFECT_AGENT_HOME/runs.db)."
    ),
    Flag.optional
  ),
  runnerHost: Flag.String("runner-host").pipe(
    Flag.withDescription("The host other runners reach this one at (cluster only)."),
    Flag.withDefault("127.0.0.1")
  ),
  runnerPort: Flag.Int("runner-port").pipe(
    Flag.withDescription("The port this runner listens on for the other runners (cluster only; 0: any free port)."),
    Flag.withDefault(34431)
  ),
  name: Flag.String("name").pipe(
    Flag.withDescription("This runner's name in logs and events (default: host:port, or host:pid with --port 0)."),
    Flag.optional
  ),
  shardLockExpiration: millis(
    "shard-lock-expiration",
    "How long a dead runner's shards stay locked",
    defaultTimings.shardLockExpiration
  ),
  shardLockRefresh: millis(
    "shard-lock-refresh",
    "How often a runner renews its shard locks",
    defaultTimings.shardLockRefreshInterval
  ),
  refreshAssignments: millis(
    "refresh-assignments",
    "How often shard assignments are recomputed",
    defaultTimings.refreshAssignmentsInterval
  ),
  healthCheck: millis("health-check", "How often runners are pinged", defaultTimings.runnerHealthCheckInterval),
  stallExit: Flag.Int("stall-exit").pipe(
    Flag.withDescription(
      "Exit with code 75 once a forced shard release has been reported pending this many milliseconds (reported after the lock expiration, then every 30 s), or shards have been in release for longer than the lock expiration plus the entity termination timeout (8.5 s by default): the runner cannot recover by itself (restart it). 0: never exit. Default 60000."
    ),
    Flag.withDefault(60_000)
  )
}

/** The exit code of a runner that ended itself because it stalled (EX_TEMPFAIL: restart it). */
const stalledExitCode = 75

/** The `serve` subcommand. */
export const makeCommand = (shared: SharedFlags) =>
  Command.make("serve", { ...shared, ...serveFlags }, (options) =>
    Effect.gen(function*() {
      // The command's services (its `Console` among them), for the stall watch's last line.
      const context = yield* Effect.context<never>()
      // Loaded on use: the cluster, PostgreSQL and SQLite clients are not needed by the other commands.
      const [Engine, Server] = yield* Effect.promise(() =>
        Promise.all([import("../server/Engine.ts"), import("../server/Server.ts")])
      )
      const token = Option.isSome(options.token)
        ? Redacted.value(options.token.value)
        : yield* Config.String("EFFECT_AGENT_TOKEN").pipe(
          Config.option,
          Effect.map(Option.getOrElse(() => "")),
          Effect.orElseSucceed(() => "")
        )
      if (token === "") {
        return yield* new UsageError({
          flag: "--token",
          message: "serve needs a token: pass --token or set EFFECT_AGENT_TOKEN."
        })
      }
      yield* toolTimeoutSeconds(options.toolTimeout)
      const limits = yield* limitsOf(options)
      const path = yield* Path.Path
      const root = yield* existingWorkspace(Option.getOrElse(options.workspaces, () => path.resolve(".")))
      const settings = Option.isSome(options.provider)
        ? yield* providerSettings(options.provider.value, {
          baseUrl: Option.getOrUndefined(options.baseUrl),
          model: Option.getOrUndefined(options.model),
          apiKey: Option.getOrUndefined(options.apiKey)
        })
        : undefined
      const sandboxSettings = {
        mode: options.sandbox,
        allowNetwork: options.allowNetwork,
        bwrap: options.bwrap
      } as const
      const sandbox = yield* resolveSandbox(sandboxSettings, root)
      if (sandbox._tag === "Unconfined" && options.sandbox === "auto") {
        yield* Effect.logWarning(`bash runs without a sandbox: ${sandbox.reason}`)
      }
      const mode = sandbox._tag === "Sandboxed" ? "require" : "off"
      const store = Option.getOrUndefined(options.store)
      const cluster = store !== undefined && /^postgres(ql)?:\/\//.test(store)
      const engine = cluster
        ? Engine.cluster({
          url: store,
          runnerHost: options.runnerHost,
          runnerPort: options.runnerPort,
          timings: {
            shardLockExpiration: Duration.millis(options.shardLockExpiration),
            shardLockRefreshInterval: Duration.millis(options.shardLockRefresh),
            refreshAssignmentsInterval: Duration.millis(options.refreshAssignments),
            runnerHealthCheckInterval: Duration.millis(options.healthCheck)
          },
          stallBound: Duration.millis(options.stallExit),
          onStall: options.stallExit <= 0 ? undefined : (pendingFor) => {
            // The process's scope cannot close (the stuck release holds it), so no graceful shutdown: the
            // runs are durable and continue elsewhere once this runner's locks are gone with its sessions.
            // The line goes to stderr through the command's `Console`, run synchronously: Node's console writes
            // a file, a pipe or a terminal before returning on Linux, so the line is out before the exit. (Not
            // through the logger: `Logger.consoleJson` writes stdout whatever `LogToStderr` says.)
            Effect.runSyncWith(context)(Console.error(JSON.stringify({
              message: "runner stalled in a shard release; exiting so its shards can move",
              level: "FATAL",
              timestamp: new Date().toISOString(),
              pendingForMs: Duration.toMillis(pendingFor)
            })))
            process.exit(stalledExitCode)
          }
        })
        : Layer.unwrap(
          Effect.flatMap(
            Effect.promise(() => import("./durable.ts")),
            (durable) => Effect.map(durable.storeFile(store), Engine.single)
          )
        )
      const server = Server.layer({
        port: options.port,
        host: options.host,
        token,
        workspaces: root,
        runnerName: Option.getOrElse(
          options.name,
          () => `${hostname()}:${options.port === 0 ? process.pid : options.port}`
        ),
        systemPrompt: DEFAULT_INSTRUCTIONS,
        model: settings === undefined ? Demo.demoModel : providerLayer(settings),
        tools: (workspace) => workspaceTools(workspace, { ...sandboxSettings, mode }),
        approval: (approve) => approvalHook(approve === "all" ? { _tag: "AllowAll" } : { _tag: "NoTerminal" }),
        toolExecution: options.sequential ? "sequential" : "parallel",
        timeout: `${options.toolTimeout} seconds`,
        limits,
        engine
      })
      yield* Effect.gen(function*() {
        const address = (yield* HttpServer.HttpServer).address
        const port = "port" in address ? address.port : options.port
        yield* Effect.logInfo("serving").pipe(
          Effect.annotateLogs({ port, workspaces: root, store: cluster ? "postgres" : "sqlite" })
        )
        yield* Console.log(JSON.stringify({ listening: `http://${options.host}:${port}` }))
        return yield* Effect.never
      }).pipe(
        Effect.provide(server),
        Effect.onInterrupt(() => Effect.logInfo("stopped"))
      )
    }).pipe(Effect.provide(Logger.layer([Logger.consoleJson])))).pipe(
      Command.withDescription(
        "Serve durable agent runs over HTTP; with --store postgres://… several runners share the runs and take over a dead one's."
      )
    )
