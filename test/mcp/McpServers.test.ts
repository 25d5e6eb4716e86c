/**
 * MCP servers' tools as our tools, against real servers from npm run as subprocesses (the everything and
 * filesystem reference servers) and a fixture of ours that crashes on purpose. Rules: docs/mcp.md (MCP n.m).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Schema, Scope } from "effect"
import { FetchHttpClient } from "effect/http"
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as AgentContext from "../../src/AgentContext.ts"
import { runAgentLoop } from "../../src/AgentLoop.ts"
import * as EventSink from "../../src/EventSink.ts"
import * as McpServers from "../../src/mcp/McpServers.ts"
import type { McpDetails } from "../../src/mcp/McpTools.ts"
import type { ToolCall, ToolResultMessage } from "../../src/Message.ts"
import { Model } from "../../src/Model.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import * as Tool from "../../src/Tool.ts"
import { executeToolCalls } from "../../src/ToolExecution.ts"
import { entry, type RegisteredTool, ToolRegistry } from "../../src/ToolRegistry.ts"
import { assistantMessage, makeRecorder, toolCall } from "../support/batch.ts"
import { user } from "../support/loop.ts"
import { everything, everythingOverHttp, filesystem, isAlive, misbehaving, NODE, recordingSpawner } from "./support.ts"

/** The tiny PNG the everything server's `get-tiny-image` returns starts with the PNG signature. */
const PNG_BASE64_START = "iVBORw0KGgo"

const textsOf = (message: ToolResultMessage): string =>
  message.content.flatMap((block) => block.type === "text" ? [block.text] : []).join("\n")

const withWorkspace = <A, E, R>(use: (root: string) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-mcp-")))
      writeFileSync(join(root, "notes.txt"), "alpha\nbeta\n")
      return root
    }),
    use,
    (root) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
  )

/** Runs one batch of calls against these registered tools, in parallel mode. */
const batch = (tools: ReadonlyArray<RegisteredTool>, ...calls: ReadonlyArray<ToolCall>) =>
  Effect.gen(function*() {
    const recorder = makeRecorder()
    const result = yield* executeToolCalls(assistantMessage(...calls), { toolExecution: "parallel" }).pipe(
      Effect.provide(ToolRegistry.fromEntries(tools)),
      Effect.provideService(EventSink.EventSink, recorder.sink)
    )
    return { ...result, recorder }
  })

describe("MCP servers as tools", () => {
  it.live(
    "MCP 1.1, 2.1, 2.3: a stdio server's tools are listed with the server's JSON Schema for the model",
    () =>
      Effect.gen(function*() {
        const spawner = recordingSpawner()
        const connection = yield* McpServers.connect(everything()).pipe(Effect.provide(spawner.layer))
        assert.strictEqual(connection.serverInfo?.name, connection.name)
        const names = connection.tools.map(({ tool }) => tool.name)
        for (const name of ["echo", "get-sum", "get-tiny-image"]) assert.include(names, name)
        const sum = connection.tools.find(({ tool }) => tool.name === "get-sum")!.tool
        assert.strictEqual(sum.description, "Returns the sum of two numbers")
        assert.strictEqual(sum.label, "Get Sum Tool")
        // What the model is sent: the server's schema in our form (draft 2020-12, no `$schema` keyword).
        assert.deepStrictEqual(sum.jsonSchema, {
          type: "object",
          properties: {
            a: { type: "number", description: "First number" },
            b: { type: "number", description: "Second number" }
          },
          required: ["a", "b"]
        })
      }).pipe(Effect.scoped),
    20_000
  )

  it.live(
    "MCP 2.3, 3.1, 3.2: several calls in one parallel batch: text, an image, a server error, a validation error",
    () =>
      withWorkspace((root) =>
        Effect.gen(function*() {
          const [server, files] = yield* McpServers.connectAll([everything(), filesystem(root)])
          const tools = [...server.tools, ...files.tools]
          const { messages, recorder } = yield* batch(
            tools,
            toolCall("sum", "get-sum", { a: 2, b: 40 }),
            toolCall("echo", "echo", { message: "héllo ✓" }),
            toolCall("image", "get-tiny-image", {}),
            toolCall("read", "read_text_file", { path: join(root, "notes.txt") }),
            toolCall("outside", "read_text_file", { path: "/etc/hostname" }),
            toolCall("invalid", "get-sum", { a: 1 })
          )
          // Parallel: every call started before the first one ended (TE 6.2).
          const trace = recorder.labels("start", "end")
          assert.isBelow(trace.lastIndexOf("start:invalid"), trace.findIndex((label) => label.startsWith("end:")))

          const [sum, echo, image, read, outside, invalid] = messages
          assert.deepStrictEqual([sum.isError, textsOf(sum)], [false, "The sum of 2 and 40 is 42."])
          assert.deepStrictEqual([echo.isError, textsOf(echo)], [false, "Echo: héllo ✓"])
          assert.deepStrictEqual(sum.details, { server: server.name, tool: "get-sum" } satisfies McpDetails)

          assert.isFalse(image.isError)
          const png = image.content.find((block) => block.type === "image")
          assert.isDefined(png)
          assert.strictEqual(png!.type === "image" && png!.mimeType, "image/png")
          assert.isTrue(png!.type === "image" && png!.data.startsWith(PNG_BASE64_START))
          assert.include(textsOf(image), "MCP logo")

          assert.deepStrictEqual([read.isError, textsOf(read)], [false, "alpha\nbeta\n"])
          // The filesystem server refuses a path outside its folder with an `isError` result (MCP 3.2).
          assert.isTrue(outside.isError)
          assert.match(textsOf(outside), /access denied/i)
          // Checked here against the server's schema, so the server never sees it (MCP 2.3).
          assert.isTrue(invalid.isError)
          assert.match(textsOf(invalid), /^Validation failed for tool "get-sum"/)
          assert.include(textsOf(invalid), "b")
        }).pipe(Effect.scoped, Effect.provide(recordingSpawner().layer))
      ),
    30_000
  )

  it.live(
    "MCP 3.4: a server that crashes mid-call gives an error result and the run goes on",
    () =>
      Effect.gen(function*() {
        const spawner = recordingSpawner()
        const [crasher, server] = yield* McpServers.connectAll([misbehaving, everything()]).pipe(
          Effect.provide(spawner.layer)
        )
        const model = yield* ScriptedModel.make([
          ScriptedModel.callTools([
            ScriptedModel.toolCall("before", "echo", { message: "still here" }),
            ScriptedModel.toolCall("boom", "crash", {})
          ]),
          ScriptedModel.callTools([
            ScriptedModel.toolCall("after", "get-sum", { a: 1, b: 2 })
          ]),
          ScriptedModel.say("done")
        ])
        // The fixture's `echo` would clash with the everything server's; the run uses the fixture's `crash`.
        const tools = [...crasher.tools.filter(({ tool }) => tool.name === "crash"), ...server.tools]
        const messages = yield* runAgentLoop([user("go")], AgentContext.empty).pipe(
          Effect.provideService(Model, model),
          Effect.provide(ToolRegistry.fromEntries(tools))
        )
        const results = messages.filter((m): m is ToolResultMessage => m.role === "toolResult")
        const byId = new Map(results.map((m) => [m.toolCallId, m]))
        assert.deepStrictEqual([byId.get("before")?.isError, textsOf(byId.get("before")!)], [false, "Echo: still here"])
        assert.isTrue(byId.get("boom")!.isError)
        assert.match(
          textsOf(byId.get("boom")!),
          /^MCP server "misbehaving-server" could not run crash: MCP (process exited|server closed stdout)/
        )
        // The other server's tools keep working, and the model is called again after the failed call.
        assert.deepStrictEqual([byId.get("after")?.isError, textsOf(byId.get("after")!)], [
          false,
          "The sum of 1 and 2 is 3."
        ])
        const last = messages.at(-1)!
        assert.strictEqual(last.role, "assistant")
        assert.deepStrictEqual(last.role === "assistant" && last.content, [{ type: "text", text: "done" }])
        // A later call to the crashed server's tool is an error result too, at once (MCP 3.4).
        const again = yield* batch(crasher.tools, toolCall("again", "echo", { text: "x" }))
        assert.isTrue(again.messages[0].isError)
        assert.match(textsOf(again.messages[0]), /could not run echo/)
      }).pipe(Effect.scoped),
    20_000
  )

  it.live(
    "MCP 3.3: a JSON-RPC error answering a call is an error result naming the server and the tool",
    () =>
      Effect.gen(function*() {
        const connection = yield* McpServers.connect(misbehaving).pipe(Effect.provide(recordingSpawner().layer))
        const { messages } = yield* batch(
          connection.tools,
          toolCall("r", "reject", {}),
          toolCall("e", "echo", { text: "ok" })
        )
        assert.isTrue(messages[0].isError)
        assert.strictEqual(
          textsOf(messages[0]),
          `MCP server "misbehaving-server" could not run reject: rejected on purpose (code -32000)`
        )
        assert.deepStrictEqual([messages[1].isError, textsOf(messages[1])], [false, "ok"])
      }).pipe(Effect.scoped),
    20_000
  )

  it.live("MCP 1.4: closing the scope stops every server process, none is left behind", () =>
    Effect.gen(function*() {
      const spawner = recordingSpawner()
      const scope = yield* Scope.make()
      const connections = yield* McpServers.connectAll([everything(), misbehaving]).pipe(
        Effect.provide(spawner.layer),
        Scope.provide(scope)
      )
      assert.strictEqual(connections.length, 2)
      assert.strictEqual(spawner.pids.length, 2)
      for (const pid of spawner.pids) assert.isTrue(isAlive(pid), `process ${pid} runs while connected`)
      yield* Scope.close(scope, Exit.void)
      for (const pid of spawner.pids) assert.isFalse(isAlive(pid), `process ${pid} still runs after the scope closed`)
    }), 20_000)

  it.live(
    "MCP 1.3: a server that cannot start, or never answers, is a typed error and nothing is left running",
    () =>
      Effect.gen(function*() {
        const spawner = recordingSpawner()
        const missing = yield* McpServers.connect(McpServers.stdio("/nonexistent/mcp-server", ["--x"])).pipe(
          Effect.provide(spawner.layer),
          Effect.flip
        )
        assert.strictEqual(missing._tag, "McpConnectError")
        assert.strictEqual(missing.server, "/nonexistent/mcp-server --x")
        assert.match(
          missing.message,
          /^MCP server "\/nonexistent\/mcp-server --x" could not be started: Cannot spawn MCP server: NotFound/
        )

        // A program that is not an MCP server: it reads its stdin and never answers.
        const silent = McpServers.stdio(NODE, ["-e", "process.stdin.resume()"], { name: "silent" })
        const mute = yield* McpServers.connect(silent, { timeout: "500 millis" }).pipe(
          Effect.provide(spawner.layer),
          Effect.flip
        )
        assert.match(mute.message, /^MCP server "silent" could not be started: MCP initialization deadline exceeded/)
        // Stopped at once, although the scope of the caller is still open.
        assert.strictEqual(spawner.pids.length, 1)
        assert.isFalse(isAlive(spawner.pids[0]))
      }).pipe(Effect.scoped),
    20_000
  )

  it.live(
    "MCP 2.2: two tools with one name fail the registry; a prefix tells them apart",
    () =>
      Effect.gen(function*() {
        const layer = recordingSpawner().layer
        const clash = yield* Effect.flip(
          Effect.scoped(Layer.build(McpServers.registry([misbehaving, misbehaving]).pipe(Layer.provide(layer))))
        )
        assert.strictEqual(clash._tag, "DuplicateToolName")
        assert.strictEqual(clash.message, `Tool name "echo" is registered twice`)
        const other = McpServers.stdio(misbehaving.command, misbehaving.args, { prefix: "other_" })
        const names = yield* ToolRegistry.pipe(
          Effect.map((registry) => registry.tools.map(({ tool }) => tool.name)),
          Effect.provide(McpServers.registry([misbehaving, other]).pipe(Layer.provide(layer))),
          Effect.scoped
        )
        assert.deepStrictEqual(names, [
          "echo",
          "reject",
          "hang",
          "cancelled",
          "crash",
          "other_echo",
          "other_reject",
          "other_hang",
          "other_cancelled",
          "other_crash"
        ])
        // Next to other tools: theirs first; one of them named like a server's tool fails it too.
        const own = Tool.make("own", { description: "ours", parameters: Schema.Struct({}) })
        const base = ToolRegistry.fromEntries([entry(own, () => Effect.succeed(Tool.textResult("own")))])
        const together = yield* ToolRegistry.pipe(
          Effect.map((registry) => registry.tools.map(({ tool }) => tool.name)),
          Effect.provide(McpServers.withServers(base, [misbehaving]).pipe(Layer.provide(layer))),
          Effect.scoped
        )
        assert.deepStrictEqual(together, ["own", "echo", "reject", "hang", "cancelled", "crash"])
        const echo = Tool.make("echo", { description: "ours", parameters: Schema.Struct({}) })
        const taken = ToolRegistry.fromEntries([entry(echo, () => Effect.succeed(Tool.textResult("echo")))])
        const again = yield* Effect.flip(
          Effect.scoped(Layer.build(McpServers.withServers(taken, [misbehaving]).pipe(Layer.provide(layer))))
        )
        assert.strictEqual(again._tag, "DuplicateToolName")
      }),
    20_000
  )

  it.live("MCP 1.2: a streamable HTTP server's tools are listed and called", () =>
    Effect.gen(function*() {
      const http = yield* everythingOverHttp
      const connection = yield* McpServers.connect(McpServers.http(http.url)).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      const names = connection.tools.map(({ tool }) => tool.name)
      assert.include(names, "get-sum")
      const { messages } = yield* batch(
        connection.tools,
        toolCall("sum", "get-sum", { a: 20, b: 22 }),
        toolCall("image", "get-tiny-image", {})
      )
      assert.deepStrictEqual([messages[0].isError, textsOf(messages[0])], [false, "The sum of 20 and 22 is 42."])
      assert.isTrue(
        messages[1].content.some((block) => block.type === "image" && block.data.startsWith(PNG_BASE64_START))
      )
      assert.isTrue(isAlive(http.pid))
    }).pipe(Effect.scoped), 20_000)

  it.live(
    "MCP 3.5: a call stopped by its timeout is cancelled on the server, which goes on serving",
    () =>
      Effect.gen(function*() {
        const connection = yield* McpServers.connect(misbehaving).pipe(Effect.provide(recordingSpawner().layer))
        const recorder = makeRecorder()
        const { messages } = yield* executeToolCalls(assistantMessage(toolCall("long", "hang", {})), {
          timeout: "200 millis"
        }).pipe(
          Effect.provide(ToolRegistry.fromEntries(connection.tools)),
          Effect.provideService(EventSink.EventSink, recorder.sink)
        )
        assert.isTrue(messages[0].isError)
        assert.match(textsOf(messages[0]), /timed out/i)
        // The server got `notifications/cancelled` for that request, and answers the next call.
        const after = yield* batch(connection.tools, toolCall("list", "cancelled", {}))
        const ids = JSON.parse(textsOf(after.messages[0])) as Array<unknown>
        assert.strictEqual(ids.length, 1)
      }).pipe(Effect.scoped),
    20_000
  )
})
