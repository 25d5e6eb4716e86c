/**
 * Tools from MCP servers: connect to a server over stdio or streamable HTTP and use its tools as ours
 * (`effect-agent/mcp`). The contract is docs/mcp.md (rules MCP n.m).
 *
 * @since 0.1.0
 */
export {
  connect,
  http,
  McpConnectError,
  type McpServer,
  registry,
  stdio,
  withServers,
  withTools
} from "./McpServers.ts"
export { McpToolError, toolsFromClient } from "./McpTools.ts"
