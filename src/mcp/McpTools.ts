/**
 * The tools of a connected MCP server as our tools. `effect/ai`'s `McpClient.toolkit` gives a
 * `Toolkit.WithHandler` whose results are text only and whose parameters are not checked locally; this
 * bridge instead takes the client itself and makes each listed tool a {@link RegisteredTool}: the server's
 * JSON Schema is what the model sees and what the arguments are validated against before the call (MCP 2),
 * results become our content blocks, images included, and every failure of the server, the connection or
 * the tool itself becomes an error result of that one call (MCP 3).
 *
 * @since 0.1.0
 */
import type * as McpClient from "effect/ai/McpClient"
import type * as McpClientError from "effect/ai/McpClientError"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Effect from "effect/Effect"
import * as Base64 from "effect/encoding/Base64"
import * as JsonSchema from "effect/JsonSchema"
import * as Schema from "effect/Schema"
import * as SchemaRepresentation from "effect/SchemaRepresentation"
import { clip } from "../internal/clip.ts"
import type { ToolResultContent } from "../Message.ts"
import * as Tool from "../Tool.ts"
import type { RegisteredTool } from "../ToolRegistry.ts"

/** Options of {@link toolsFromClient}. */
export interface ToolsOptions {
  /** The server's name in error texts and result details. */
  readonly server: string
  /** Put before every model-facing tool name, e.g. `"docs_"`. Default: none. */
  readonly prefix?: string | undefined
  /** Most characters of text one result may carry (MCP 3.6). Default 50 KiB. */
  readonly maxTextChars?: number | undefined
}

/** What an MCP tool's result carries besides its content. */
export interface McpDetails {
  /** The server's name. */
  readonly server: string
  /** The tool's name on the server (the model-facing name may differ, MCP 2.1). */
  readonly tool: string
  /** The result's `structuredContent`, when the server sent one. */
  readonly structuredContent?: unknown
}

/**
 * A call to an MCP tool did not give a result: the tool reported an error (`isError`), or the server or the
 * connection failed. Its message is the text of the error result the model reads.
 */
export class McpToolError extends Schema.TaggedError<McpToolError>()("McpToolError", {
  server: Schema.String,
  tool: Schema.String,
  message: Schema.String
}) {}

/** The default of {@link ToolsOptions.maxTextChars}: as much as the built-in tools return (50 KiB). */
export const DEFAULT_MAX_TEXT_CHARS = 50 * 1024

const MAX_NAME_LENGTH = 64

/**
 * The model-facing name of an MCP tool (MCP 2.1): the prefix and the server's name with every character
 * outside `[A-Za-z0-9_-]` (what model APIs accept) replaced by `_`, cut to 64 characters.
 */
export const modelToolName = (name: string, prefix = ""): string =>
  `${prefix}${name}`.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, MAX_NAME_LENGTH)

/**
 * A server's input schema as a draft 2020-12 document. MCP defaults to 2020-12 when `$schema` is absent;
 * older drafts (many servers still emit draft-07) are rewritten.
 */
const documentOf = (inputSchema: McpSchema.ToolJson): JsonSchema.Document<"draft-2020-12"> => {
  const raw = inputSchema as JsonSchema.JsonSchema
  const dialect = typeof raw.$schema === "string" ? raw.$schema : ""
  return /draft-0[4-7]/.test(dialect) ? JsonSchema.fromSchemaDraft07(raw) : JsonSchema.fromSchemaDraft2020_12(raw)
}

/** The schema the model is sent: the server's own, in the form of our tools' (2020-12, `$defs` at the top). */
const modelSchemaOf = (document: JsonSchema.Document<"draft-2020-12">): Tool.JsonSchema => {
  const { $schema: _dialect, ...schema } = document.schema
  return Object.keys(document.definitions).length === 0 ? schema : { ...schema, $defs: document.definitions }
}

/** Anything that is a JSON object: what is checked when the server's schema cannot be imported (MCP 2.4). */
const AnyObject: Tool.Parameters = Schema.Record(Schema.String, Schema.Unknown)

/**
 * The local validator of a tool's arguments (MCP 2.3), imported from the server's JSON Schema. Patterns are
 * applied: the server is a program the user chose to run, so its regular expressions are no new risk.
 */
export const parametersOf = (inputSchema: McpSchema.ToolJson): {
  readonly parameters: Tool.Parameters
  readonly jsonSchema: Tool.JsonSchema
  readonly imported: boolean
} => {
  const document = documentOf(inputSchema)
  const jsonSchema = modelSchemaOf(document)
  try {
    const parameters = SchemaRepresentation.fromJsonSchemaDocument(document, { patterns: "apply" }) as Tool.Parameters
    return { parameters, jsonSchema, imported: true }
  } catch {
    return { parameters: AnyObject, jsonSchema, imported: false }
  }
}

const byteCount = (bytes: Uint8Array): string => `${bytes.length} bytes`

/**
 * An MCP result's content as our content blocks (MCP 3.1): text stays text, images (and image resources)
 * become image blocks, text resources their text, links a line naming them, and what we cannot show (audio,
 * other binary resources) a short note saying what it was. Text beyond `maxTextChars` in all is cut in
 * the middle with a note (MCP 3.6).
 */
export const contentOf = (
  result: McpSchema.CallToolResult,
  maxTextChars: number = DEFAULT_MAX_TEXT_CHARS
): ReadonlyArray<ToolResultContent> => {
  const blocks: Array<ToolResultContent> = []
  const text = (value: string) => blocks.push({ type: "text", text: value })
  for (const block of result.content) {
    switch (block.type) {
      case "text":
        text(block.text)
        break
      case "image":
        blocks.push({ type: "image", data: Base64.encode(block.data), mimeType: block.mimeType })
        break
      case "audio":
        text(`[audio ${block.mimeType}, ${byteCount(block.data)}: not shown]`)
        break
      case "resource": {
        const resource = block.resource
        if ("text" in resource) text(resource.text)
        else if (resource.mimeType?.startsWith("image/") === true) {
          blocks.push({ type: "image", data: Base64.encode(resource.blob), mimeType: resource.mimeType })
        } else {
          text(`[resource ${resource.uri} (${resource.mimeType ?? "binary"}, ${byteCount(resource.blob)}): not shown]`)
        }
        break
      }
      case "resource_link":
        text(
          `${block.title ?? block.name}: ${block.uri}${block.description === undefined ? "" : `\n${block.description}`}`
        )
        break
    }
  }
  if (blocks.length === 0 && result.structuredContent !== undefined) text(JSON.stringify(result.structuredContent))
  return boundText(blocks, maxTextChars)
}

/** Cuts the text blocks so that together they hold at most `max` characters. */
const boundText = (blocks: ReadonlyArray<ToolResultContent>, max: number): ReadonlyArray<ToolResultContent> => {
  let total = 0
  for (const block of blocks) if (block.type === "text") total += block.text.length
  if (total <= max) return blocks
  // Each block keeps a share of the budget in proportion to its length, so no block vanishes entirely.
  return blocks.map((block) =>
    block.type === "text"
      ? { type: "text", text: clip(block.text, Math.max(64, Math.floor(max * block.text.length / total))) }
      : block
  )
}

/** The text of an error result: the server's text blocks, or a plain statement when it sent none. */
const errorTextOf = (result: McpSchema.CallToolResult, maxTextChars: number): string => {
  const texts = contentOf(result, maxTextChars).flatMap((block) => block.type === "text" ? [block.text] : [])
  return texts.length > 0 ? texts.join("\n") : "The MCP tool reported an error without saying what it was"
}

/** A failed call (server, connection or protocol) as the error the model reads (MCP 3.3, 3.4). */
const callFailure = (server: string, tool: string, error: McpClientError.McpClientError): McpToolError =>
  new McpToolError({
    server,
    tool,
    message: `MCP server "${server}" could not run ${tool}: ${clip(error.message, 1024)}`
  })

/** One MCP tool as one of our tools, calling it through `client`. */
const toolOf = (
  client: McpClient.McpClient,
  descriptor: McpSchema.Tool,
  options: ToolsOptions
): RegisteredTool => {
  const { server } = options
  const maxTextChars = options.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS
  const { jsonSchema, parameters } = parametersOf(descriptor.inputSchema)
  const made = Tool.make(modelToolName(descriptor.name, options.prefix), {
    description: descriptor.description ?? descriptor.title ?? descriptor.name,
    label: descriptor.title ?? descriptor.annotations?.title ?? descriptor.name,
    parameters
  })
  // The model sees the server's schema, not a re-export of the imported one (which may differ in form).
  const tool: Tool.Tool.Any = Object.create(Object.getPrototypeOf(made), {
    ...Object.getOwnPropertyDescriptors(made),
    jsonSchema: { value: jsonSchema, enumerable: true }
  })
  const handler: Tool.Handler<unknown, McpDetails> = (args) =>
    client.callTool({ tool: descriptor, arguments: args as Readonly<Record<string, unknown>> }).pipe(
      Effect.mapError((error) => callFailure(server, descriptor.name, error)),
      Effect.flatMap((result) => {
        if (result.isError === true) {
          return Effect.fail(
            new McpToolError({ server, tool: descriptor.name, message: errorTextOf(result, maxTextChars) })
          )
        }
        const details: McpDetails = result.structuredContent === undefined
          ? { server, tool: descriptor.name }
          : { server, tool: descriptor.name, structuredContent: result.structuredContent }
        return Effect.succeed({ content: contentOf(result, maxTextChars), details })
      })
    )
  return { tool, handler }
}

/**
 * Lists the tools of a connected MCP server once (MCP 1.5) and makes each one of our tools (MCP 2). Tools
 * that need MCP tasks are left out by the client. Fails only when the listing fails.
 */
export const toolsFromClient: (
  client: McpClient.McpClient,
  options: ToolsOptions
) => Effect.Effect<ReadonlyArray<RegisteredTool>, McpClientError.McpClientError> = Effect.fn(
  "McpTools.toolsFromClient"
)(
  function*(client: McpClient.McpClient, options: ToolsOptions) {
    const descriptors = yield* client.listTools()
    return descriptors.map((descriptor) => toolOf(client, descriptor, options))
  }
)
