/**
 * MCP servers as sources of tools: a server started as a child process (stdio) or reached at a URL
 * (streamable HTTP) is connected through `effect/ai`'s `McpClient`, its tools are listed once and become our
 * tools ({@link McpTools}), and it lives exactly as long as the scope that connected it (MCP 1).
 *
 * ```ts
 * import { NodeServices } from "@effect/platform-node"
 * import * as Layer from "effect/Layer"
 * import * as FetchHttpClient from "effect/http/FetchHttpClient"
 * import * as McpServers from "effect-agent/mcp"
 *
 * const Tools = McpServers.registry([
 *   McpServers.stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]),
 *   McpServers.http("http://127.0.0.1:3001/mcp")
 * ]).pipe(Layer.provide([NodeServices.layer, FetchHttpClient.layer]))
 * ```
 *
 * @since 0.1.0
 */
import * as McpClient from "effect/ai/McpClient"
import type * as McpClientError from "effect/ai/McpClientError"
import * as McpProtocol from "effect/ai/McpProtocol"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as ChildProcess from "effect/process/ChildProcess"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { errorMessage } from "../internal/errorText.ts"
import { type DuplicateToolName, type RegisteredTool, ToolRegistry } from "../ToolRegistry.ts"
import { toolsFromClient } from "./McpTools.ts"

/** A server started as a child process, speaking MCP on its stdin and stdout (MCP 1.1). */
export interface StdioServer {
  readonly _tag: "Stdio"
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** Added to this process's environment. */
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly cwd?: string | undefined
  /** The name in error texts and result details. Default: the name the server gives, else the command line. */
  readonly name?: string | undefined
  /** Put before each of its tools' names. Default: none. */
  readonly prefix?: string | undefined
}

/** A server reached over streamable HTTP at a URL (MCP 1.2). */
export interface HttpServer {
  readonly _tag: "Http"
  readonly url: string
  /** Sent with every request, e.g. `authorization`. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** The name in error texts and result details. Default: the name the server gives, else the URL. */
  readonly name?: string | undefined
  /** Put before each of its tools' names. Default: none. */
  readonly prefix?: string | undefined
}

/** Where an MCP server is. */
export type McpServer = StdioServer | HttpServer

/** The services connecting to a server needs: a process spawner for stdio, an HTTP client for HTTP. */
export type Requirements<S extends McpServer> = S extends StdioServer ? ChildProcessSpawner.ChildProcessSpawner
  : S extends HttpServer ? HttpClient.HttpClient
  : never

/** A server to start with `command` and `args`. */
export const stdio = (
  command: string,
  args: ReadonlyArray<string> = [],
  options: Omit<StdioServer, "_tag" | "command" | "args"> = {}
): StdioServer => ({ _tag: "Stdio", command, args, ...options })

/** A server at `url`. */
export const http = (url: string, options: Omit<HttpServer, "_tag" | "url"> = {}): HttpServer => ({
  _tag: "Http",
  url,
  ...options
})

/** How a server is shown before it has said its own name: its command line or its URL. */
export const describe = (server: McpServer): string =>
  server._tag === "Http" ? server.url : [server.command, ...server.args].join(" ")

/** A server could not be connected or its tools could not be listed (MCP 1.3). Nothing of it is left running. */
export class McpConnectError extends Schema.TaggedError<McpConnectError>()("McpConnectError", {
  server: Schema.String,
  message: Schema.String
}) {}

/** Options of {@link connect}. */
export interface ConnectOptions {
  /** Bounds the start (initialization) and the listing of tools. Default 30 seconds. */
  readonly timeout?: Duration.Input | undefined
  /** The protocol revision asked for. Default `2025-11-25`, the one today's servers speak. */
  readonly protocol?: McpClient.ProtocolVersion | undefined
  /** Most characters of text one tool result may carry. Default 50 KiB. */
  readonly maxTextChars?: number | undefined
}

/** A connected server and its tools. */
export interface Connection {
  /** Its name in error texts and result details. */
  readonly name: string
  /** What the server said it is, if it did. */
  readonly serverInfo: McpSchema.Implementation | undefined
  readonly tools: ReadonlyArray<RegisteredTool>
}

const DEFAULT_TIMEOUT = Duration.seconds(30)
const CLIENT_INFO = { name: "effect-agent", version: "0.1.0" } as const

const protocolOf = (version: McpClient.ProtocolVersion | undefined) =>
  version === "2026-07-28" ? McpProtocol.v2026_07_28 : McpProtocol.v2025_11_25

/** An MCP client error with the cause it carries (e.g. why a process could not be spawned). */
const connectMessage = (error: McpClientError.McpClientError): string => {
  const cause = (error.reason as { readonly cause?: unknown }).cause
  return cause === undefined ? error.message : `${error.message}: ${errorMessage(cause)}`
}

const transportOf = (server: McpServer, protocol: McpProtocol.ProtocolAdapter<McpClient.ProtocolVersion>) =>
  server._tag === "Stdio"
    ? McpClient.stdio({
      command: ChildProcess.make(server.command, [...server.args], {
        ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
        ...(server.env === undefined ? {} : { env: server.env, extendEnv: true }),
        // The server's diagnostics are drained by the client; none of them reach our terminal.
        stderr: "pipe"
      }),
      protocol
    })
    : McpClient.http({
      url: server.url,
      protocol,
      ...(server.headers === undefined ? {} : { headers: server.headers })
    })

/**
 * Connects to one server and lists its tools (MCP 1). The server lives as long as the caller's scope: when
 * it closes, a child process gets its stdin closed, then SIGTERM, then SIGKILL, and an HTTP session is
 * ended (MCP 1.4). When connecting fails, whatever was started is stopped before the error is returned.
 */
export const connect: <S extends McpServer>(
  server: S,
  options?: ConnectOptions
) => Effect.Effect<Connection, McpConnectError, Scope.Scope | Requirements<S>> = Effect.fn("McpServers.connect")(
  function*(server: McpServer, options: ConnectOptions = {}): Effect.fn.Return<
    Connection,
    McpConnectError,
    Scope.Scope | Requirements<McpServer>
  > {
    const outer = yield* Scope.Scope
    // Its own scope, so that a failed start leaves nothing running even while the caller's scope stays open.
    const scope = yield* Scope.fork(outer)
    const shown = server.name ?? describe(server)
    const connected = yield* Effect.gen(function*() {
      const transport = yield* transportOf(server, protocolOf(options.protocol))
      const client = yield* McpClient.make({ ...CLIENT_INFO, timeout: options.timeout ?? DEFAULT_TIMEOUT }).pipe(
        Effect.provideService(McpClient.Transport, transport)
      )
      const name = server.name ?? client.serverInfo?.name ?? shown
      const tools = yield* toolsFromClient(client, {
        server: name,
        prefix: server.prefix,
        maxTextChars: options.maxTextChars
      })
      return { name, serverInfo: client.serverInfo, tools } satisfies Connection
    }).pipe(
      Scope.provide(scope),
      Effect.mapError((error) =>
        new McpConnectError({
          server: shown,
          message: `MCP server "${shown}" could not be started: ${connectMessage(error)}`
        })
      ),
      Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : Scope.close(scope, exit))
    )
    return connected
  }
  // A stdio server needs only the spawner, an HTTP server only the HTTP client.
) as <S extends McpServer>(
  server: S,
  options?: ConnectOptions
) => Effect.Effect<Connection, McpConnectError, Scope.Scope | Requirements<S>>

/** Connects to every server, one after another (a failure stops every server already started). */
export const connectAll = <S extends McpServer>(
  servers: ReadonlyArray<S>,
  options: ConnectOptions = {}
): Effect.Effect<ReadonlyArray<Connection>, McpConnectError, Scope.Scope | Requirements<S>> =>
  Effect.forEach(servers, (server) => connect(server, options))

/**
 * A registry of the tools of `servers`, started when the layer is built and stopped when its scope closes.
 * Two tools with one name fail it with `DuplicateToolName` (MCP 2.2).
 */
export const registry = <S extends McpServer>(
  servers: ReadonlyArray<S>,
  options: ConnectOptions = {}
): Layer.Layer<ToolRegistry, McpConnectError | DuplicateToolName, Requirements<S>> =>
  Layer.unwrap(
    Effect.map(connectAll(servers, options), (connections) =>
      ToolRegistry.fromEntries(connections.flatMap((connection) => connection.tools)))
  )

/**
 * The tools of `base` followed by `tools` (e.g. the built-in tools, then some servers' tools from
 * {@link connect}). A name taken twice fails it with `DuplicateToolName` (MCP 2.2).
 */
export const withTools = <E, R>(
  base: Layer.Layer<ToolRegistry, E, R>,
  tools: ReadonlyArray<RegisteredTool>
): Layer.Layer<ToolRegistry, E | DuplicateToolName, R> =>
  Layer.unwrap(
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      return ToolRegistry.fromEntries([...registry.tools, ...tools])
    })
  ).pipe(Layer.provide(base))

/**
 * The tools of `base` followed by the tools of `servers`, which are started when the layer is built and
 * stopped when its scope closes. A name taken twice fails it with `DuplicateToolName` (MCP 2.2).
 */
export const withServers = <E, R, S extends McpServer>(
  base: Layer.Layer<ToolRegistry, E, R>,
  servers: ReadonlyArray<S>,
  options: ConnectOptions = {}
): Layer.Layer<ToolRegistry, E | McpConnectError | DuplicateToolName, R | Requirements<S>> =>
  Layer.unwrap(
    Effect.map(connectAll(servers, options), (connections) =>
      withTools(base, connections.flatMap((connection) => connection.tools)))
  )
