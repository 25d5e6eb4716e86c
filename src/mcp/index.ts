/**
 * Tools from MCP servers: connect to a server over stdio or streamable HTTP and use its tools as ours
 * (`effect-agent/mcp`). The contract is docs/mcp.md (rules MCP n.m).
 *
 * @since 0.1.0
 */
export * from "./McpServers.ts"
export {
  contentOf,
  DEFAULT_MAX_TEXT_CHARS,
  type McpDetails,
  McpToolError,
  modelToolName,
  parametersOf,
  toolOf,
  toolsFromClient,
  type ToolsOptions
} from "./McpTools.ts"
