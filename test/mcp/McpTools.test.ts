/**
 * The parts of the MCP bridge that need no server: content mapping, names and parameter schemas. Results
 * are decoded from their wire form with `effect/ai`'s own `McpSchema`, as the client does. Rules: docs/mcp.md.
 */
import { assert, describe, it } from "@effect/vitest"
import { Exit, Schema } from "effect"
import { McpSchema } from "effect/ai"
import { contentOf, DEFAULT_MAX_TEXT_CHARS, modelToolName, parametersOf } from "../../src/mcp/McpTools.ts"

const result = (wire: unknown) => Schema.decodeUnknownSync(McpSchema.CallToolResult)(wire)
const tool = (inputSchema: unknown) => Schema.decodeUnknownSync(McpSchema.Tool)({ name: "t", inputSchema }).inputSchema
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

describe("MCP results as content blocks", () => {
  it("MCP 3.1: text, images, resources and links become our blocks; what cannot be shown is named", () => {
    const blocks = contentOf(result({
      content: [
        { type: "text", text: "hello" },
        { type: "image", data: PNG, mimeType: "image/png" },
        { type: "audio", data: "AAECAw==", mimeType: "audio/wav" },
        { type: "resource", resource: { uri: "file:///a.txt", mimeType: "text/plain", text: "inside a" } },
        { type: "resource", resource: { uri: "file:///p.png", mimeType: "image/png", blob: PNG } },
        { type: "resource", resource: { uri: "file:///b.bin", blob: "AAEC" } },
        { type: "resource_link", uri: "file:///c.md", name: "c.md", description: "The c file" }
      ]
    }))
    assert.deepStrictEqual(blocks, [
      { type: "text", text: "hello" },
      { type: "image", data: PNG, mimeType: "image/png" },
      { type: "text", text: "[audio audio/wav, 4 bytes: not shown]" },
      { type: "text", text: "inside a" },
      { type: "image", data: PNG, mimeType: "image/png" },
      { type: "text", text: "[resource file:///b.bin (binary, 3 bytes): not shown]" },
      { type: "text", text: "c.md: file:///c.md\nThe c file" }
    ])
  })

  it("MCP 3.1: a result with only structured content reads as its JSON", () => {
    assert.deepStrictEqual(contentOf(result({ content: [], structuredContent: { temperature: 21 } })), [
      { type: "text", text: "{\"temperature\":21}" }
    ])
  })

  it("MCP 3.6: text beyond the bound is cut in the middle with a note, images are kept", () => {
    const long = "x".repeat(DEFAULT_MAX_TEXT_CHARS * 3)
    const blocks = contentOf(result({
      content: [{ type: "text", text: long }, { type: "image", data: PNG, mimeType: "image/png" }]
    }))
    const text = blocks[0].type === "text" ? blocks[0].text : ""
    assert.isAtMost(text.length, DEFAULT_MAX_TEXT_CHARS + 64)
    assert.match(text, /…\[\d+ characters left out\]…/)
    assert.deepStrictEqual(blocks[1], { type: "image", data: PNG, mimeType: "image/png" })
    const small = contentOf(result({ content: [{ type: "text", text: "a".repeat(500) }] }), 100)
    assert.isAtMost(small[0].type === "text" ? small[0].text.length : Infinity, 140)
  })
})

describe("MCP tool names and parameters", () => {
  it("MCP 2.1: names keep what model APIs accept, get the prefix, and are at most 64 characters", () => {
    assert.strictEqual(modelToolName("get-sum"), "get-sum")
    assert.strictEqual(modelToolName("files.read/all", "fs_"), "fs_files_read_all")
    assert.strictEqual(modelToolName("n".repeat(100)).length, 64)
  })

  it("MCP 2.3: the model gets the server's schema in draft 2020-12 form, and arguments are checked against it", () => {
    const { imported, jsonSchema, parameters } = parametersOf(tool({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        path: { type: "string", pattern: "^/" },
        mode: { $ref: "#/definitions/Mode" },
        count: { type: "integer", minimum: 1 }
      },
      required: ["path"],
      additionalProperties: false,
      definitions: { Mode: { type: "string", enum: ["r", "w"] } }
    }))
    assert.isTrue(imported)
    assert.deepStrictEqual(jsonSchema, {
      type: "object",
      properties: {
        path: { type: "string", pattern: "^/" },
        mode: { $ref: "#/$defs/Mode" },
        count: { type: "integer", minimum: 1 }
      },
      required: ["path"],
      additionalProperties: false,
      $defs: { Mode: { type: "string", enum: ["r", "w"] } }
    })
    const decode = Schema.decodeUnknownExit(parameters)
    assert.deepStrictEqual(
      decode({ path: "/a", mode: "r", count: 2 }),
      Exit.succeed({ path: "/a", mode: "r", count: 2 })
    )
    for (
      const bad of [{}, { path: "a" }, { path: "/a", mode: "x" }, { path: "/a", count: 0 }, { path: "/a", count: 1.5 }]
    ) {
      assert.isTrue(Exit.isFailure(decode(bad)), JSON.stringify(bad))
    }
  })

  it("MCP 2.4: a schema the importer cannot translate is sent as it is, and only an object is required locally", () => {
    const schema = {
      type: "object",
      properties: { items: { type: "array", contains: { type: "number" } } }
    }
    const { imported, jsonSchema, parameters } = parametersOf(tool(schema))
    assert.isFalse(imported)
    assert.deepStrictEqual(jsonSchema, schema)
    const decode = Schema.decodeUnknownExit(parameters)
    assert.isTrue(Exit.isSuccess(decode({ items: ["no number"] })))
    assert.isTrue(Exit.isFailure(decode("not an object")))
  })
})
