import { NodeServices } from "@effect/platform-node"
import { Effect } from "effect"
import { McpClient, McpProtocol } from "effect/ai"
import { ChildProcess } from "effect/process"

const program = Effect.gen(function*() {
  const transport = yield* McpClient.stdio({
    command: ChildProcess.make("node_modules/.bin/node", ["node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]),
    protocol: McpProtocol.v2025_11_25
  })
  const client = yield* McpClient.make({ name: "effect-agent", version: "0.1.0" }).pipe(Effect.provideService(McpClient.Transport, transport))
  const tools = yield* client.listTools()
  for (const t of tools) console.log(t.name, JSON.stringify(t.inputSchema).slice(0, 300))
  const sum = tools.find((t) => t.name === "get-sum")!
  console.log(JSON.stringify(yield* client.callTool({ tool: sum, arguments: { a: 1, b: 2 } })))
  const img = tools.find((t) => t.name === "get-tiny-image")!
  console.log(JSON.stringify(yield* client.callTool({ tool: img, arguments: {} })).slice(0, 300))
  console.log(JSON.stringify(yield* Effect.result(client.callTool({ tool: sum, arguments: { a: "x" } }))).slice(0, 600))
}).pipe(Effect.scoped, Effect.provide(NodeServices.layer))
Effect.runPromise(program).then(() => console.log("done"), (e) => console.error("ERR", e))
