import { NodeServices } from "@effect/platform-node"
import { Effect, JsonSchema, Schema, SchemaRepresentation } from "effect"
import { McpClient, McpProtocol } from "effect/ai"
import { ChildProcess } from "effect/process"

const list = (args: string[]) => Effect.gen(function*() {
  const transport = yield* McpClient.stdio({ command: ChildProcess.make("node_modules/.bin/node", args), protocol: McpProtocol.v2025_11_25 })
  const client = yield* McpClient.make({ name: "effect-agent", version: "0.1.0" }).pipe(Effect.provideService(McpClient.Transport, transport))
  const tools = yield* client.listTools()
  for (const t of tools) {
    const js = t.inputSchema as any
    const doc = js.$schema?.includes("draft-07") ? JsonSchema.fromSchemaDraft07(js) : JsonSchema.fromSchemaDraft2020_12(js)
    try {
      const s = SchemaRepresentation.fromJsonSchemaDocument(doc, { patterns: "apply" })
      const r = Schema.decodeUnknownExit(s as any)({})
      console.log("OK", t.name, r._tag, JSON.stringify(Schema.toJsonSchemaDocument(s).schema).slice(0, 150))
    } catch (e) { console.log("FAIL", t.name, String(e).slice(0, 200)) }
  }
}).pipe(Effect.scoped)
Effect.runPromise(Effect.gen(function*() {
  yield* list(["node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"])
  yield* list(["node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/tmp"])
}).pipe(Effect.provide(NodeServices.layer))).then(() => console.log("done"), (e) => console.error("ERR", e))
