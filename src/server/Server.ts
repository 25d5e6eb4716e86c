/**
 * `effect-agent serve`: durable agent runs behind an HTTP API (effect/http), on one runner or on every
 * runner of a cluster. Any runner answers for any run: runs, their events and abort requests are in the
 * shared store, and the engine sends each run to the runner owning its shard.
 *
 * Routes (JSON bodies, Schemas in `Api.ts`); all but `/health` need `Authorization: Bearer <token>`:
 * - `POST /runs` → 201 `{ runId }`; `GET /runs/:id` → the run's status and messages;
 * - `GET /runs/:id/events` → server-sent events numbered from 1 (the SSE id), from the start or after
 *   `Last-Event-ID` (or `?after=`); the stream ends with a `run_end` event once the run has ended;
 * - `POST /runs/:id/messages` `{ kind, text }` → 202; `POST /runs/:id/abort` → 202;
 * - `GET /health` → 200.
 * Errors: 400 (bad body, bad workspace, bad event id), 401 (no or wrong token), 404 (unknown run or route),
 * 409 (the run has already ended), each with `{ error }`.
 *
 * @since 0.1.0
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import * as Exit from "effect/Exit"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import { timingSafeEqual } from "node:crypto"
import { existsSync, mkdirSync, realpathSync, statSync } from "node:fs"
import { createServer } from "node:http"
import { dirname, isAbsolute, relative, resolve, sep } from "node:path"
import type { AgentEvent } from "../AgentEvent.ts"
import * as DurableAgent from "../durable/DurableAgent.ts"
import { RunIndex } from "../durable/RunState.ts"
import type * as EventSink from "../EventSink.ts"
import { resourcesOf } from "../internal/schedule.ts"
import type { Message } from "../Message.ts"
import type { Model } from "../Model.ts"
import type { RunLimits } from "../RunLimits.ts"
import { type Tool, withResources } from "../Tool.ts"
import type { BeforeToolCallContext, BeforeToolCallResult } from "../ToolExecution.ts"
import { type RegisteredTool, ToolRegistry, type ToolRegistryShape } from "../ToolRegistry.ts"
import {
  CreateRun,
  type ErrorBody,
  type ExecutionStart,
  type RunCreated,
  type RunStatus,
  type RunView,
  SendMessage
} from "./Api.ts"
import type { EngineServices } from "./Engine.ts"
import { type ServerRun, ServerStore, type StoredEvent } from "./ServerStore.ts"
import { cannotListen } from "./StartError.ts"

/** How a run may treat tools that need approval; chosen per run by `POST /runs`. */
export type ApproveMode = "all" | "none"

/** What a runner of `serve` is made of. */
export interface ServeOptions {
  /** The HTTP port (0: any free port; read it from the `HttpServer` service). */
  readonly port: number
  readonly host?: string | undefined
  /** The bearer token every route but `/health` needs. */
  readonly token: string
  /** The folder under which every run's workspace must lie. It must exist. */
  readonly workspaces: string
  /** This runner's name in logs and in `execution_start` events. */
  readonly runnerName: string
  readonly systemPrompt: string
  readonly model: Layer.Layer<Model, unknown>
  /** The tools of a run working in `workspace` (an absolute path under the root). */
  readonly tools: (workspace: string) => Layer.Layer<ToolRegistry, unknown>
  /** The approval hook of a run with the given mode (default: none: every call is allowed). */
  readonly approval?:
    | ((mode: ApproveMode) => (context: BeforeToolCallContext) => Effect.Effect<BeforeToolCallResult | undefined>)
    | undefined
  readonly toolExecution?: "sequential" | "parallel" | undefined
  readonly timeout?: Duration.Input | undefined
  /** What each run may use (AL 5); its counts survive a runner's death like the run does. */
  readonly limits?: RunLimits | undefined
  /** The engine: `Engine.cluster(…)` or `Engine.single(…)`. */
  readonly engine: Layer.Layer<EngineServices, unknown>
  /**
   * Read steering and follow-up messages (`POST /runs/:id/messages`): two more steps per turn, so off saves
   * store work; with it off, messages are refused with 409. Default true.
   */
  readonly inbox?: boolean | undefined
  /** Log every HTTP response (default true). */
  readonly httpLog?: boolean | undefined
  /** How often an event stream looks for new events, and a running run for its abort (default 100 ms). */
  readonly pollInterval?: Duration.Input | undefined
}

/** The settings the routes need, as a service. */
class ServeSettings extends Context.Service<ServeSettings, {
  readonly token: Buffer
  readonly root: string
  readonly runnerName: string
  readonly systemPrompt: string
  readonly pollInterval: Duration.Duration
  readonly inbox: boolean
}>()("effect-agent/server/ServeSettings") {}

const executionIdOf = (runId: string) =>
  DurableAgent.AgentRun.executionId({ runId, systemPrompt: "", history: [], prompts: [] })

// ---------------------------------------------------------------------------------------------------------
// Per-run tools, approvals and events
// ---------------------------------------------------------------------------------------------------------

/** The server's run behind the workflow execution running this effect (tools and hooks run inside one). */
const currentRun = Effect.gen(function*() {
  const instance = yield* Effect.serviceOption(WorkflowEngine.WorkflowInstance)
  if (Option.isNone(instance)) return Option.none<ServerRun>()
  return yield* (yield* ServerStore).runOfExecution(instance.value.executionId)
})

/**
 * One registry whose handlers run each call with the tools of the call's run workspace. The tool list is
 * the one the factory gives for the root (tools do not depend on where they work, only their handlers do);
 * each workspace's registry is built once and kept for the server's life.
 */
const workspaceRegistry = (options: ServeOptions, root: string) =>
  Layer.effect(
    ToolRegistry,
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      const store = yield* ServerStore
      const build = (workspace: string) =>
        Effect.map(
          Layer.buildWithScope(options.tools(workspace), scope),
          (context) => Context.get(context, ToolRegistry)
        )
      const base = yield* build(root)
      const byWorkspace = new Map<string, Effect.Effect<ToolRegistryShape, unknown>>([[root, Effect.succeed(base)]])
      const registryFor = (workspace: string) => {
        let cached = byWorkspace.get(workspace)
        if (cached === undefined) {
          cached = memoized(build(workspace))
          byWorkspace.set(workspace, cached)
        }
        return cached
      }
      /** The call's tool as its run's workspace has it. */
      const entryOf = Effect.fnUntraced(function*(tool: Tool.Any) {
        const run = yield* Effect.provideService(currentRun, ServerStore, store)
        const workspace = Option.isSome(run) ? resolve(root, run.value.workspace) : root
        const registry = yield* Effect.orDie(registryFor(workspace))
        const entry = registry.get(tool.name)
        if (entry === undefined) return yield* Effect.die(new Error(`Tool ${tool.name} is missing in ${workspace}`))
        return entry
      })
      const tools = base.tools.map(({ handler: { resources }, tool }): RegisteredTool => ({
        tool,
        handler: withResources<unknown, unknown>(
          (args, context) => Effect.flatMap(entryOf(tool), (entry) => entry.handler(args, context)),
          // TE 11: what a call touches, in its run's workspace.
          resources === undefined
            ? undefined
            : (args) => Effect.flatMap(entryOf(tool), (entry) => resourcesOf(entry.handler.resources?.(args)))
        )
      }))
      const byName = new Map(tools.map((entry) => [entry.tool.name, entry]))
      return { tools, get: (name: string) => byName.get(name) } satisfies ToolRegistryShape
    })
  )

/** Builds once, on first use, and shares the result (a failed build is retried next time). */
const memoized = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> => {
  let done: Exit.Exit<A, E> | undefined
  const lock = Semaphore.makeUnsafe(1)
  return lock.withPermits(1)(Effect.suspend(() => {
    if (done !== undefined && Exit.isSuccess(done)) return done
    return Effect.tap(Effect.exit(effect), (exit) => Effect.sync(() => (done = exit))).pipe(Effect.flatten)
  }))
}

/**
 * The events of one execution of a run, stored under consecutive numbers after those already stored,
 * preceded by an `execution_start` event naming this runner. Streaming updates are written in batches (at
 * most 100 ms late); every other event is stored, with the updates before it, before the loop goes on, so
 * all of a run's events are stored before it completes.
 */
const storingSink = (store: ServerStore["Service"], runnerName: string, runId: string): EventSink.EventSinkShape => {
  const lock = Semaphore.makeUnsafe(1)
  let seq: number | undefined
  let buffer: Array<StoredEvent> = []
  let flushScheduled = false
  const flush = lock.withPermits(1)(Effect.suspend(() => {
    const rows = buffer
    buffer = []
    return rows.length === 0 ? Effect.void : store.appendEvents(runId, rows)
  }))
  const start = Effect.gen(function*() {
    const last = yield* store.lastSeq(runId)
    const event: ExecutionStart = { type: "execution_start", runner: runnerName, at: yield* Clock.currentTimeMillis }
    buffer.push({ seq: last + 1, event })
    seq = last + 1
    yield* Effect.logInfo("run executing").pipe(Effect.annotateLogs({ runId, runner: runnerName }))
  })
  return {
    emit: (event: AgentEvent) =>
      Effect.gen(function*() {
        yield* lock.withPermits(1)(Effect.gen(function*() {
          if (seq === undefined) yield* start
          seq! += 1
          buffer.push({ seq: seq!, event })
        }))
        if (event.type !== "message_update") return yield* flush
        if (flushScheduled) return
        flushScheduled = true
        yield* Effect.forkDetach(
          Effect.sleep("100 millis").pipe(
            Effect.andThen(Effect.sync(() => (flushScheduled = false))),
            Effect.andThen(flush)
          )
        )
      })
  }
}

// ---------------------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------------------

class HttpFailure {
  readonly status: number
  readonly message: string
  constructor(status: number, message: string) {
    this.status = status
    this.message = message
  }
}

const fail = (status: number, message: string) => Effect.fail(new HttpFailure(status, message))

const errorResponse = (status: number, message: string) =>
  HttpServerResponse.jsonUnsafe({ error: message } satisfies typeof ErrorBody.Type, { status })

/** Runs a route: `HttpFailure`s become their status, defects 500 (logged). */
const respond = <R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, HttpFailure, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  effect.pipe(
    Effect.catchCause((cause) => {
      const failure = Cause.findErrorOption(cause)
      if (Option.isSome(failure)) return Effect.succeed(errorResponse(failure.value.status, failure.value.message))
      return Effect.as(Effect.logError("request failed", cause), errorResponse(500, "Internal error"))
    })
  )

/** The bearer token check of every route but `/health`. */
const authorized = <R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, HttpFailure, R>
) =>
  respond(Effect.gen(function*() {
    const { token } = yield* ServeSettings
    const request = yield* HttpServerRequest.HttpServerRequest
    const header = request.headers["authorization"] ?? ""
    const match = /^Bearer (.+)$/.exec(header)
    const given = Buffer.from(match?.[1] ?? "")
    if (given.length !== token.length || !timingSafeEqual(given, token)) {
      return yield* fail(401, "Missing or wrong bearer token: send Authorization: Bearer <token>.")
    }
    return yield* effect
  }))

/** The JSON body decoded with `schema`; anything else is a 400 saying what was wrong. */
const body = <A>(schema: { readonly Type: A } & Parameters<typeof HttpServerRequest.schemaBodyJson>[0]) =>
  HttpServerRequest.schemaBodyJson(schema as any).pipe(
    Effect.mapError((error) => new HttpFailure(400, `Bad request body: ${error.message}`))
  ) as Effect.Effect<A, HttpFailure, HttpServerRequest.HttpServerRequest>

const runParam = Effect.gen(function*() {
  const params = yield* HttpRouter.params
  const runId = params.id ?? ""
  const run = yield* (yield* ServerStore).getRun(runId)
  if (Option.isNone(run)) return yield* fail(404, `No run ${JSON.stringify(runId.slice(0, 100))}.`)
  return run.value
})

/** The workspace of a new run, checked to lie under the root (also through symlinks); made when missing. */
const workspaceOf = (root: string, given: string | undefined) =>
  Effect.gen(function*() {
    const text = given ?? ""
    if (isAbsolute(text)) {
      return yield* fail(400, `The workspace must be relative to the workspaces root, not ${JSON.stringify(text)}.`)
    }
    const target = resolve(root, text)
    const outside = (path: string) => {
      const rel = relative(root, path)
      return rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)
    }
    if (outside(target)) {
      return yield* fail(400, `The workspace ${JSON.stringify(text)} is outside the workspaces root.`)
    }
    // The deepest folder that exists must already lie under the root (a symlink may lead out), before any
    // folder is made.
    let existing = target
    while (!existsSync(existing)) {
      existing = dirname(existing)
    }
    const existingReal = yield* Effect.try({
      try: () => realpathSync(existing),
      catch: (error) => new HttpFailure(400, `The workspace ${JSON.stringify(text)} cannot be used: ${String(error)}`)
    })
    if (outside(existingReal)) {
      return yield* fail(400, `The workspace ${JSON.stringify(text)} leads outside the workspaces root.`)
    }
    const real = yield* Effect.try({
      try: () => {
        mkdirSync(target, { recursive: true })
        if (!statSync(target).isDirectory()) throw new Error("not a folder")
        return realpathSync(target)
      },
      catch: (error) => new HttpFailure(400, `The workspace ${JSON.stringify(text)} cannot be used: ${String(error)}`)
    })
    if (outside(real)) {
      return yield* fail(
        400,
        `The workspace ${JSON.stringify(text)} leads outside the workspaces root.`
      )
    }
    return relative(root, real)
  })

/** Where a run stands, and its messages (the result when it has ended, else what the events say so far). */
const viewOf = (run: ServerRun) =>
  Effect.gen(function*() {
    const store = yield* ServerStore
    const result = yield* DurableAgent.AgentRun.poll(run.executionId)
    const events = yield* store.events(run.runId, 0, 1_000_000)
    const runners: Array<string> = []
    let current: Array<Message> = []
    for (const { event } of events) {
      const e = event as { type?: string; runner?: string; message?: Message }
      if (e.type === "execution_start") {
        runners.push(String(e.runner))
        current = []
      } else if (e.type === "message_end" && e.message !== undefined) current.push(e.message)
    }
    let status: RunStatus = "running"
    let messages: ReadonlyArray<Message> = current
    if (Option.isSome(result) && result.value._tag === "Complete") {
      const exit = result.value.exit
      if (Exit.isSuccess(exit)) {
        messages = exit.value as ReadonlyArray<Message>
        const last = messages.findLast((m) => m.role === "assistant")
        const aborted = (last?.role === "assistant" && last.stopReason === "aborted") ||
          (yield* store.abortRequested(run.runId))
        status = aborted ? "aborted" : "completed"
      } else status = "failed"
    }
    return { runId: run.runId, status, workspace: run.workspace, messages, runners } satisfies RunView
  })

const createRun = authorized(Effect.gen(function*() {
  const settings = yield* ServeSettings
  const input = yield* body(CreateRun)
  const workspace = yield* workspaceOf(settings.root, input.workspace)
  const runId = DurableAgent.newRunId()
  const executionId = yield* executionIdOf(runId)
  const now = yield* Clock.currentTimeMillis
  yield* (yield* ServerStore).createRun({
    runId,
    executionId,
    workspace,
    approve: input.approve ?? "none",
    createdAt: now
  })
  yield* (yield* RunIndex).record({ runId, startedAt: now, title: input.prompt.slice(0, 200) })
  yield* DurableAgent.AgentRun.execute({
    runId,
    systemPrompt: settings.systemPrompt,
    history: [],
    prompts: [{ role: "user", content: input.prompt, timestamp: now }]
  }, { discard: true })
  yield* Effect.logInfo("run accepted").pipe(Effect.annotateLogs({ runId, workspace }))
  return HttpServerResponse.jsonUnsafe({ runId } satisfies typeof RunCreated.Type, { status: 201 })
}))

const getRun = authorized(
  Effect.flatMap(runParam, (run) => Effect.map(viewOf(run), (view) => HttpServerResponse.jsonUnsafe(view)))
)

const sseText = (event: Sse.Event) => new TextEncoder().encode(Sse.encoder.write(event))

/** The run's events after `after`, live: polled from the store, ending once the run has ended. */
const eventStream = (run: ServerRun, after: number) =>
  Stream.callback<Uint8Array, never, ServerStore | ServeSettings | WorkflowEngine.WorkflowEngine>((queue) =>
    Effect.gen(function*() {
      const store = yield* ServerStore
      const { pollInterval } = yield* ServeSettings
      let last = after
      const drain = Effect.gen(function*() {
        while (true) {
          const batch = yield* store.events(run.runId, last, 500)
          for (const { seq, event } of batch) {
            const type = (event as { type?: unknown }).type
            Queue.offerUnsafe(
              queue,
              sseText({
                _tag: "Event",
                event: typeof type === "string" ? type : "event",
                id: String(seq),
                data: JSON.stringify(event)
              })
            )
            last = seq
          }
          if (batch.length < 500) return
        }
      })
      while (true) {
        yield* drain
        const view = yield* DurableAgent.AgentRun.poll(run.executionId)
        if (Option.isSome(view) && view.value._tag === "Complete") {
          // The run's events are all stored before it completes: one more read gets the last of them.
          yield* drain
          const status = (yield* viewOf(run)).status
          Queue.offerUnsafe(
            queue,
            sseText({ _tag: "Event", event: "run_end", id: undefined, data: JSON.stringify({ status }) })
          )
          return yield* Queue.end(queue)
        }
        yield* Effect.sleep(pollInterval)
      }
    })
  )

const getEvents = authorized(Effect.gen(function*() {
  const run = yield* runParam
  const request = yield* HttpServerRequest.HttpServerRequest
  const url = new URL(request.url, "http://localhost")
  const given = request.headers["last-event-id"] ?? url.searchParams.get("after") ?? "0"
  if (!/^\d{1,15}$/.test(given.trim())) {
    return yield* fail(
      400,
      `Last-Event-ID (or ?after=) must be an event number, not ${JSON.stringify(given.slice(0, 50))}.`
    )
  }
  const services = yield* Effect.context<ServerStore | ServeSettings | WorkflowEngine.WorkflowEngine>()
  return HttpServerResponse.stream(Stream.provideContext(eventStream(run, Number(given.trim())), services), {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })
}))

const ended = (run: ServerRun) =>
  Effect.map(
    DurableAgent.AgentRun.poll(run.executionId),
    (result) => Option.isSome(result) && result.value._tag === "Complete"
  )

const sendMessage = authorized(Effect.gen(function*() {
  const run = yield* runParam
  const input = yield* body(SendMessage)
  if (!(yield* ServeSettings).inbox) {
    return yield* fail(409, "This server reads no messages (started without the inbox).")
  }
  if (yield* ended(run)) return yield* fail(409, `Run ${run.runId} has already ended.`)
  const message: Message = { role: "user", content: input.text, timestamp: yield* Clock.currentTimeMillis }
  yield* (input.kind === "steer" ? DurableAgent.steer(run.runId, message) : DurableAgent.followUp(run.runId, message))
  return HttpServerResponse.jsonUnsafe({ runId: run.runId, queued: input.kind }, { status: 202 })
}))

const abortRun = authorized(Effect.gen(function*() {
  const run = yield* runParam
  if (yield* ended(run)) return yield* fail(409, `Run ${run.runId} has already ended.`)
  // Marked here for the run's status ("aborted" even when the abort came between two steps); the abort itself
  // is the run's durable deferred: the runner executing it (this one or another) reads it on its next poll.
  yield* (yield* ServerStore).requestAbort(run.runId, yield* Clock.currentTimeMillis)
  yield* DurableAgent.abort(run.runId)
  return HttpServerResponse.jsonUnsafe({ runId: run.runId, aborting: true }, { status: 202 })
}))

const health = Effect.gen(function*() {
  const settings = yield* ServeSettings
  return HttpServerResponse.jsonUnsafe({ status: "ok", runner: settings.runnerName })
})

/** The routes of the API. */
export const routes = Layer.mergeAll(
  HttpRouter.add("GET", "/health", health),
  HttpRouter.add("POST", "/runs", createRun),
  HttpRouter.add("GET", "/runs/:id", getRun),
  HttpRouter.add("GET", "/runs/:id/events", getEvents),
  HttpRouter.add("POST", "/runs/:id/messages", sendMessage),
  HttpRouter.add("POST", "/runs/:id/abort", abortRun),
  HttpRouter.add("*", "*", respond(fail(404, "No such route.")))
)

// ---------------------------------------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------------------------------------

/** Node's HTTP server on `host:port`; a port it cannot listen on is a {@link StartError} (SV 5.3). */
const httpServer = (host: string, port: number) =>
  Layer.merge(
    Layer.effect(
      HttpServer.HttpServer,
      NodeHttpServer.make(createServer, { port, host }).pipe(
        Effect.mapError(cannotListen("--port", "for HTTP", host, port))
      )
    ),
    NodeHttpServer.layerHttpServices
  )

/**
 * A runner of `serve`: the engine, the durable run workflow (with per-run workspaces and approvals, events
 * stored for every runner to serve, aborts read from the store every poll interval) and the HTTP server. Closing its scope stops
 * taking requests first, then lets the engine hand its shards over.
 */
export const layer = (options: ServeOptions): Layer.Layer<HttpServer.HttpServer, unknown> => {
  const root = realpathSync(options.workspaces)
  const settings = Layer.succeed(ServeSettings, {
    token: Buffer.from(options.token),
    root,
    runnerName: options.runnerName,
    systemPrompt: options.systemPrompt,
    pollInterval: Duration.fromInputUnsafe(options.pollInterval ?? "100 millis"),
    inbox: options.inbox !== false
  })
  const workflow = Layer.unwrap(Effect.gen(function*() {
    const store = yield* ServerStore
    const approval = options.approval
    return DurableAgent.layer({
      inbox: options.inbox !== false,
      abortPollInterval: options.pollInterval ?? "100 millis",
      toolExecution: options.toolExecution,
      timeout: options.timeout,
      limits: options.limits,
      eventSink: (runId) => storingSink(store, options.runnerName, runId),
      beforeToolCall: approval === undefined ?
        undefined :
        (context) =>
          Effect.flatMap(
            Effect.provideService(currentRun, ServerStore, store),
            (run) => approval(Option.isSome(run) ? run.value.approve : "none")(context)
          )
    }).pipe(Layer.provide([options.model, workspaceRegistry(options, root)]))
  }))
  const runtime = workflow.pipe(
    Layer.provideMerge(ServerStore.layer),
    Layer.provideMerge(settings),
    Layer.provideMerge(options.engine)
  )
  const http = HttpRouter.serve(routes, { disableListenLog: true, disableLogger: options.httpLog === false }).pipe(
    Layer.provideMerge(httpServer(options.host ?? "127.0.0.1", options.port))
  )
  return Layer.provide(http, runtime) as Layer.Layer<HttpServer.HttpServer, unknown>
}
