/**
 * The command line's MCP servers (MCP 4): `--mcp "<command> <args>"` starts a server as a child process
 * (stdio) and `--mcp-url URL` reaches one over streamable HTTP, each as often as wanted. Their tools join the
 * workspace tools, and every call to one of them needs the same approval as `write`, `edit` and `bash`.
 */
import { NodeServices } from "@effect/platform-node"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import type * as Layer from "effect/Layer"
import { parse, type ParseEntry } from "shell-quote"
import * as McpServers from "../mcp/McpServers.ts"
import type { DuplicateToolName, RegisteredTool, ToolRegistry } from "../ToolRegistry.ts"
import * as BuiltinTools from "../tools/index.ts"
import { NEEDS_APPROVAL } from "./Approval.ts"
import { UsageError } from "./startup.ts"

/** The flags, to spread into the command's. */
export const mcpFlags = {
  mcp: Flag.String("mcp").pipe(
    Flag.withDescription(
      "Use the tools of an MCP server started with this command line, e.g. --mcp \"npx -y @modelcontextprotocol/server-filesystem .\". Repeatable."
    ),
    Flag.atLeast(0)
  ),
  mcpUrl: Flag.String("mcp-url").pipe(
    Flag.withDescription("Use the tools of the MCP server at this streamable HTTP URL. Repeatable."),
    Flag.atLeast(0)
  )
}

/** What the flags said. */
export interface McpOptions {
  readonly mcp: ReadonlyArray<string>
  readonly mcpUrl: ReadonlyArray<string>
}

/**
 * A `--mcp` value as a server (MCP 4.1): the words as a shell would split them (quotes group, backslashes
 * escape), the first the program. Variables are kept as written (the shell that ran us has already expanded
 * what it meant to); pipes, redirections, globs and the like are refused, since no shell runs the line.
 */
export const stdioServer = (line: string): Effect.Effect<McpServers.StdioServer, UsageError> => {
  const refuse = (why: string) =>
    Effect.fail(new UsageError({ flag: "--mcp", message: `--mcp ${JSON.stringify(line)}: ${why}` }))
  let entries: Array<ParseEntry>
  try {
    entries = parse(line, (name) => `$${name}`) as Array<ParseEntry>
  } catch (error) {
    return refuse(`cannot be split into words (${error instanceof Error ? error.message : String(error)}).`)
  }
  const words: Array<string> = []
  for (const entry of entries) {
    if (typeof entry !== "string") {
      const shown = "op" in entry ? entry.op === "glob" ? entry.pattern : entry.op : `#${entry.comment}`
      return refuse(`${shown} is shell syntax; give one command and its arguments (quote the word if it is one).`)
    }
    words.push(entry)
  }
  if (words.length === 0) return refuse("no command; give the command that starts the server and its arguments.")
  const [command, ...args] = words
  return Effect.succeed(McpServers.stdio(command, args))
}

/** A `--mcp-url` value as a server (MCP 4.2): an `http:` or `https:` URL. */
export const httpServer = (url: string): Effect.Effect<McpServers.HttpServer, UsageError> => {
  const parsed = URL.parse(url)
  return parsed !== null && (parsed.protocol === "http:" || parsed.protocol === "https:")
    ? Effect.succeed(McpServers.http(parsed.href))
    : Effect.fail(
      new UsageError({ flag: "--mcp-url", message: `--mcp-url ${JSON.stringify(url)}: not an http or https URL.` })
    )
}

/** Every server the flags name, checked; none is started yet. */
export const mcpServers = (options: McpOptions): Effect.Effect<ReadonlyArray<McpServers.McpServer>, UsageError> =>
  Effect.all([Effect.forEach(options.mcp, stdioServer), Effect.forEach(options.mcpUrl, httpServer)]).pipe(
    Effect.map(([stdio, http]): ReadonlyArray<McpServers.McpServer> => [...stdio, ...http])
  )

/** The connected servers' tools and the names of the tools that need approval (MCP 4.4). */
export interface McpTools {
  readonly tools: ReadonlyArray<RegisteredTool>
  /** The built-in tools that need approval, and every MCP tool. */
  readonly needsApproval: ReadonlySet<string>
}

const flagOf = (server: McpServers.McpServer) =>
  server._tag === "Stdio" ? `--mcp ${JSON.stringify(McpServers.describe(server))}` : `--mcp-url ${server.url}`

/**
 * Starts the servers in the caller's scope, which stops them (MCP 4.5), and lists their tools. A tool name
 * that is already taken, by a built-in tool or another server's tool, is refused naming both (MCP 4.3).
 */
export const connectMcp = Effect.fn("connectMcp")(function*(servers: ReadonlyArray<McpServers.McpServer>) {
  const owners = new Map<string, string>(BuiltinTools.builtinTools.map((tool) => [tool.name, "the built-in tool"]))
  const tools: Array<RegisteredTool> = []
  for (const server of servers) {
    const connection = yield* McpServers.connect(server).pipe(
      Effect.provide([NodeServices.layer, FetchHttpClient.layer])
    )
    for (const entry of connection.tools) {
      const owner = owners.get(entry.tool.name)
      if (owner !== undefined) {
        return yield* new UsageError({
          flag: server._tag === "Stdio" ? "--mcp" : "--mcp-url",
          message: `${
            flagOf(server)
          }: its tool ${entry.tool.name} has the name of ${owner}; only one tool can have a name.`
        })
      }
      owners.set(entry.tool.name, `a tool of ${flagOf(server)}`)
      tools.push(entry)
    }
  }
  return {
    tools,
    needsApproval: new Set([...NEEDS_APPROVAL, ...tools.map(({ tool }) => tool.name)])
  } satisfies McpTools
})

/** The workspace's tools followed by the MCP servers' (MCP 4.3). */
export const withMcpTools = <E>(
  workspace: Layer.Layer<ToolRegistry, E>,
  mcp: McpTools
): Layer.Layer<ToolRegistry, E | DuplicateToolName> =>
  mcp.tools.length === 0 ? workspace : McpServers.withTools(workspace, mcp.tools)
