import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Redacted, Schema, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import type { AssistantMessageEvent } from "../../src/AssistantMessageEvent.ts"
import type { AssistantMessage, Message } from "../../src/Message.ts"
import { Model, ModelError, type ModelRequest } from "../../src/Model.ts"
import * as Anthropic from "../../src/providers/Anthropic.ts"
import * as Tool from "../../src/Tool.ts"
import { executeToolCalls } from "../../src/ToolExecution.ts"
import { ToolRegistry } from "../../src/ToolRegistry.ts"
import {
  addTool,
  anthropicFullEvents,
  anthropicSse,
  anthropicText,
  assistant,
  blockDelta,
  blockStart,
  blockStop,
  messageDelta,
  messageStart,
  messageStop,
  PNG,
  request,
  toolResult,
  user
} from "./support/fixtures.ts"
import { checkProtocol, eventShape } from "./support/protocol.ts"
import { bytesIn, memoryClient, type Reply, startServer, type TestServer } from "./support/server.ts"

const KEY = "sk-ant-api03-SECRET-0123456789"

const INFO = { api: "anthropic-messages", provider: "anthropic", model: "claude-test" }

const layerFor = (server: TestServer, overrides: Partial<Anthropic.Options> = {}) =>
  Anthropic.layer({
    model: "claude-test",
    baseUrl: server.url,
    apiKey: Redacted.make(KEY),
    retry: { times: 2, baseDelay: 5 },
    idleTimeout: "3 seconds",
    ...overrides
  }).pipe(Layer.provide(FetchHttpClient.layer))

const collect = (req: ModelRequest) => Model.use((model) => Stream.runCollect(model.stream(req)))

const runWith = (
  replies: Array<Reply>,
  req: ModelRequest = request([user("hi")]),
  overrides: Partial<Anthropic.Options> = {}
) =>
  Effect.gen(function*() {
    const server = yield* startServer
    server.replies = replies
    const exit = yield* Effect.exit(collect(req).pipe(Effect.provide(layerFor(server, overrides))))
    return { server, exit }
  })

const failureOf = <A>(exit: Exit.Exit<A, ModelError>): ModelError => {
  if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${JSON.stringify(exit.value).slice(0, 300)}`)
  const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  if (error === undefined || error._tag !== "Fail") throw new Error(`expected a typed failure: ${String(exit.cause)}`)
  assert.instanceOf(error.error, ModelError)
  return error.error
}

const successOf = <A>(exit: Exit.Exit<A, ModelError>): A => {
  if (Exit.isFailure(exit)) throw new Error(`expected success: ${String(exit.cause)}`)
  return exit.value
}

const expectedFullContent: AssistantMessage["content"] = [
  { type: "thinking", thinking: "I need to add… 🤔 then echo", thinkingSignature: "EqQBCgIYAhIM1gbcDa9GJwZA==" },
  {
    type: "thinking",
    thinking: "[Reasoning redacted]",
    thinkingSignature: "EmwKAhgBEgy3va3pzix/LafPsn4a",
    redacted: true
  },
  { type: "text", text: "Héllo wörld 🌍!" },
  { type: "toolCall", id: "toolu_01", name: "add", arguments: { a: 2, b: 40 } },
  { type: "toolCall", id: "toolu_02", name: "echo", arguments: { text: "naïve ✓ 日本" } }
]

const checkFull = (events: ReadonlyArray<AssistantMessageEvent>) => {
  const message = checkProtocol(events)
  expect(message.content).toEqual(expectedFullContent)
  expect(message.stopReason).toBe("toolUse")
  expect(message.usage).toMatchObject({ input: 25, output: 89, cacheRead: 10, cacheWrite: 5, totalTokens: 129 })
  expect(message.responseId).toBe("msg_01")
  expect(message.responseModel).toBe("claude-test-20250101")
  expect(message).toMatchObject(INFO)
  return message
}

describe("Anthropic: streaming", () => {
  it.live("streams thinking with its signature, redacted thinking, text and tool uses, cut at awkward boundaries", () =>
    Effect.gen(function*() {
      const { exit } = yield* runWith([{ body: anthropicSse(anthropicFullEvents), chunkSize: 9 }])
      const events = successOf(exit)
      checkFull(events)
      expect(eventShape(events)).toEqual([
        "start",
        "thinking_start:0",
        "thinking_delta:0",
        "thinking_delta:0",
        "thinking_end:0",
        "thinking_start:1",
        "thinking_end:1",
        "text_start:2",
        "text_delta:2",
        "text_delta:2",
        "text_end:2",
        "toolcall_start:3",
        "toolcall_delta:3",
        "toolcall_delta:3",
        "toolcall_end:3",
        "toolcall_start:4",
        "toolcall_delta:4",
        "toolcall_delta:4",
        "toolcall_end:4",
        "done"
      ])
      // Usage from message_start is there from the start; message_delta completes it.
      expect(events[0]!.type === "start" && events[0]!.partial.usage.input).toBe(25)
      const partialArgs = events.filter((e) => e.type === "toolcall_delta" && e.contentIndex === 3)[0]!
      expect("partial" in partialArgs && partialArgs.partial.content[3]).toMatchObject({ arguments: { a: 2 } })
    }))

  it.effect.each([1, 2, 3, 7, 128])(
    "decodes the stream whatever the chunk size (%s bytes, in memory, CRLF)",
    (size) =>
      Effect.gen(function*() {
        const events = yield* collect(request([user("hi")])).pipe(
          Effect.provide(
            Anthropic.layer({ model: "claude-test", apiKey: Redacted.make(KEY), baseUrl: "http://memory" }).pipe(
              Layer.provide(memoryClient(() => ({ chunks: bytesIn(anthropicSse(anthropicFullEvents, "\r\n"), size) })))
            )
          )
        )
        checkFull(events)
      })
  )

  it.live("maps stop reasons", () =>
    Effect.gen(function*() {
      const reasonOf = (events: ReadonlyArray<AssistantMessageEvent>) => {
        const last = events[events.length - 1]!
        if (last.type === "done") return last.reason
        if (last.type === "error") return `error:${last.reason}:${last.error.errorMessage}`
        return `unexpected ${last.type}`
      }
      expect(reasonOf(successOf((yield* runWith([{ body: anthropicSse(anthropicText("a", "end_turn")) }])).exit))).toBe(
        "stop"
      )
      expect(reasonOf(successOf((yield* runWith([{ body: anthropicSse(anthropicText("a", "max_tokens")) }])).exit)))
        .toBe(
          "length"
        )
      expect(reasonOf(successOf((yield* runWith([{ body: anthropicSse(anthropicText("a", "stop_sequence")) }])).exit)))
        .toBe("stop")
      expect(reasonOf(successOf((yield* runWith([{ body: anthropicSse(anthropicText("a", "refusal")) }])).exit)))
        .toMatch(/^error:error:.*refusal/)
    }))

  it.live("skips block and event types it does not know (server tools, citations)", () =>
    Effect.gen(function*() {
      const body = anthropicSse([
        messageStart(),
        blockStart(0, { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }),
        blockDelta(0, { type: "input_json_delta", partial_json: "{\"query\":\"x\"}" }),
        blockStop(0),
        blockStart(1, { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] }),
        blockStop(1),
        blockStart(2, { type: "text", text: "" }),
        blockDelta(2, { type: "citations_delta", citation: { type: "web_search_result_location" } }),
        blockDelta(2, { type: "text_delta", text: "Found it." }),
        blockStop(2),
        { type: "some_future_event", payload: 1 } as { type: string },
        messageDelta("end_turn"),
        messageStop
      ])
      const message = checkProtocol(successOf((yield* runWith([{ body }])).exit))
      expect(message.content).toEqual([{ type: "text", text: "Found it." }])
    }))

  it.live("a text block that starts without its text key still streams", () =>
    Effect.gen(function*() {
      const body = anthropicSse([
        messageStart(),
        blockStart(0, { type: "text" }),
        blockDelta(0, { type: "text_delta", text: "ok" }),
        blockStop(0),
        messageDelta("end_turn"),
        messageStop
      ])
      expect(checkProtocol(successOf((yield* runWith([{ body }])).exit)).content).toEqual([{
        type: "text",
        text: "ok"
      }])
    }))

  it.live("a known block or delta of the wrong shape is a decode error, not skipped", () =>
    Effect.gen(function*() {
      const badBlock = anthropicSse([messageStart(), blockStart(0, { type: "tool_use", name: "add" })])
      expect(failureOf((yield* runWith([{ body: badBlock }])).exit).reason).toBe("decode")
      const badDelta = anthropicSse([
        messageStart(),
        blockStart(0, { type: "text", text: "" }),
        blockDelta(0, { type: "text_delta", text: 42 })
      ])
      expect(failureOf((yield* runWith([{ body: badDelta }])).exit).reason).toBe("decode")
    }))
})

describe("Anthropic: the request", () => {
  it.live("posts to /v1/messages with x-api-key, anthropic-version, system, tools and thinking", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith(
        [{ body: anthropicSse(anthropicText()) }],
        request([user("hi")], {
          systemPrompt: "Be brief.",
          tools: [addTool],
          options: { maxTokens: 1000, temperature: 0.5, thinkingLevel: "low" }
        }),
        { betas: ["interleaved-thinking-2025-05-14"] }
      )
      successOf(exit)
      const [recorded] = server.requests
      expect(recorded!.method).toBe("POST")
      expect(recorded!.url).toBe("/v1/messages")
      expect(recorded!.headers["x-api-key"]).toBe(KEY)
      expect(recorded!.headers["anthropic-version"]).toBe("2023-06-01")
      expect(recorded!.headers["anthropic-beta"]).toBe("interleaved-thinking-2025-05-14")
      expect(recorded!.headers.authorization).toBeUndefined()
      expect(recorded!.body).toEqual({
        model: "claude-test",
        // max_tokens must exceed the thinking budget: the answer keeps its 1000 on top of it
        max_tokens: 1000 + 2048,
        // prompt caching is on by default: breakpoints on the newest user turn, the system prompt, the tools
        messages: [{ role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] }],
        system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
        tools: [{
          name: "add",
          description: addTool.description,
          input_schema: addTool.parameters,
          cache_control: { type: "ephemeral" }
        }],
        stream: true,
        // thinking on: no temperature
        thinking: { type: "enabled", budget_tokens: 2048 }
      })
      Schema.decodeUnknownSync(Anthropic.MessagesRequest)(recorded!.body)
    }))

  it("raises max_tokens above the thinking budget and sends temperature without thinking", () => {
    const settings = { info: INFO, url: "", maxTokens: 4096, temperature: undefined, pricing: undefined }
    const withThinking = Anthropic.toRequestBody(request([user("x")], { options: { thinkingLevel: "high" } }), settings)
    expect(withThinking.thinking).toEqual({ type: "enabled", budget_tokens: 16384 })
    expect(withThinking.max_tokens).toBeGreaterThan(16384)
    const plain = Anthropic.toRequestBody(
      request([user("x")], { options: { temperature: 0.1, thinkingLevel: "off" } }),
      settings
    )
    expect(plain.thinking).toBeUndefined()
    expect(plain.temperature).toBe(0.1)
    expect(plain.max_tokens).toBe(4096)
  })

  it("converts every message kind to the Messages form", () => {
    const messages: Array<Message> = [
      user("What is in this picture?"),
      user([{ type: "text", text: "Look:" }, { type: "image", data: PNG, mimeType: "image/png" }, {
        type: "text",
        text: " "
      }]),
      assistant([
        { type: "thinking", thinking: "Hmm.", thinkingSignature: "sig-1" },
        { type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque==", redacted: true },
        { type: "text", text: "Let me check." },
        { type: "toolCall", id: "toolu_1", name: "read", arguments: { path: "a.png" } },
        { type: "toolCall", id: "call|weird/id", name: "add", arguments: { a: 1, b: 2 } }
      ], INFO),
      toolResult("toolu_1", "read", [{ type: "text", text: "an image:" }, {
        type: "image",
        data: PNG,
        mimeType: "image/png"
      }]),
      toolResult("call|weird/id", "add", [{ type: "text", text: "boom" }], true),
      // An errored turn and the results of its calls never reach the provider.
      assistant([{ type: "toolCall", id: "toolu_bad", name: "add", arguments: {} }], {
        ...INFO,
        stopReason: "error",
        errorMessage: "x"
      }),
      toolResult("toolu_bad", "add", [{ type: "text", text: "not run" }], true),
      assistant([{ type: "text", text: "half" }], { ...INFO, stopReason: "aborted" }),
      user("And now?"),
      // Another model's thinking is context: text. Its redacted thinking cannot be sent.
      assistant([
        { type: "thinking", thinking: "Other thoughts", thinkingSignature: "reasoning_content" },
        { type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "x", redacted: true },
        { type: "text", text: "   " },
        { type: "toolCall", id: "call_3", name: "add", arguments: { a: 5, b: 5 } }
      ]),
      // call_3 gets no result: one is made up before the next user message.
      user("Stop.")
    ]
    const wire = Anthropic.toMessageParams(messages, INFO)
    expect(wire).toEqual([
      { role: "user", content: "What is in this picture?" },
      {
        role: "user",
        content: [{ type: "text", text: "Look:" }, {
          type: "image",
          source: { type: "base64", media_type: "image/png", data: PNG }
        }]
      },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Hmm.", signature: "sig-1" },
          { type: "redacted_thinking", data: "opaque==" },
          { type: "text", text: "Let me check." },
          { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a.png" } },
          { type: "tool_use", id: "call_weird_id", name: "add", input: { a: 1, b: 2 } }
        ]
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: [
              { type: "text", text: "an image:" },
              { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }
            ]
          },
          {
            type: "tool_result",
            tool_use_id: "call_weird_id",
            content: [{ type: "text", text: "boom" }],
            is_error: true
          }
        ]
      },
      { role: "user", content: "And now?" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Other thoughts" },
          { type: "tool_use", id: "call_3", name: "add", input: { a: 5, b: 5 } }
        ]
      },
      {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "call_3",
          content: [{ type: "text", text: "No result provided" }],
          is_error: true
        }]
      },
      { role: "user", content: "Stop." }
    ])
    for (const message of wire) Schema.decodeUnknownSync(Anthropic.MessageParam)(message)
    // Every tool_use is answered in the next message, and every tool_result answers the message before.
    wire.forEach((message, i) => {
      if (typeof message.content === "string") return
      for (const block of message.content) {
        if (block.type === "tool_use") {
          const next = wire[i + 1]!
          assert.isTrue(
            Array.isArray(next.content) &&
              next.content.some((b) => b.type === "tool_result" && b.tool_use_id === block.id),
            `tool_use ${block.id} is not answered`
          )
        }
        if (block.type === "tool_result") {
          const previous = wire[i - 1]!
          assert.isTrue(
            Array.isArray(previous.content) &&
              previous.content.some((b) => b.type === "tool_use" && b.id === block.tool_use_id),
            `tool_result ${block.tool_use_id} answers nothing`
          )
        }
      }
    })
  })
})

describe("Anthropic: faults", () => {
  it.live("an HTTP 400 carries the body's error message", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([{
        status: 400,
        body: JSON.stringify({
          type: "error",
          error: { type: "invalid_request_error", message: "messages: roles must alternate" },
          request_id: "req_1"
        })
      }])
      const error = failureOf(exit)
      expect(error.reason).toBe("http")
      expect(error.status).toBe(400)
      expect(error.message).toContain("messages: roles must alternate")
      expect(server.requests).toHaveLength(1)
    }))

  it.live("an HTTP 401 is an auth error without the key", () =>
    Effect.gen(function*() {
      const { exit } = yield* runWith([{
        status: 401,
        body: JSON.stringify({
          type: "error",
          error: { type: "authentication_error", message: `invalid x-api-key ${KEY}` }
        })
      }])
      const error = failureOf(exit)
      expect(error.reason).toBe("auth")
      expect(error.message).toContain("invalid x-api-key")
      expect(JSON.stringify(error) + error.message + String(error)).not.toContain(KEY)
    }))

  it.live("an HTTP 429 with retry-after is retried after the wait, then succeeds", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([
        {
          status: 429,
          headers: { "retry-after": "1" },
          body: JSON.stringify({
            type: "error",
            error: { type: "rate_limit_error", message: "Number of requests exceeded" }
          })
        },
        { body: anthropicSse(anthropicText("waited")) }
      ])
      expect(checkProtocol(successOf(exit)).content).toEqual([{ type: "text", text: "waited" }])
      expect(server.requests).toHaveLength(2)
      expect(server.requests[1]!.at - server.requests[0]!.at).toBeGreaterThanOrEqual(950)
    }))

  it.live("an HTTP 529 (overloaded) and 500 are retried, then succeed", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([
        {
          status: 529,
          body: JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
        },
        { status: 500, body: JSON.stringify({ type: "error", error: { type: "api_error", message: "Internal" } }) },
        { body: anthropicSse(anthropicText("third")) }
      ])
      expect(checkProtocol(successOf(exit)).content).toEqual([{ type: "text", text: "third" }])
      expect(server.requests).toHaveLength(3)
    }))

  it.live("an error event before anything streamed is retried when it is transient", () =>
    Effect.gen(function*() {
      const overloaded = anthropicSse([
        { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } as any
      ])
      const { exit, server } = yield* runWith([{ body: overloaded }, { body: anthropicSse(anthropicText("ok")) }])
      expect(checkProtocol(successOf(exit)).content).toEqual([{ type: "text", text: "ok" }])
      expect(server.requests).toHaveLength(2)
    }))

  it.live("an error event mid-stream fails the stream with its type and message, without retrying", () =>
    Effect.gen(function*() {
      const body = anthropicSse([
        messageStart(),
        blockStart(0, { type: "text", text: "" }),
        blockDelta(0, { type: "text_delta", text: "Hel" }),
        { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } as any
      ])
      const { exit, server } = yield* runWith([{ body }])
      const error = failureOf(exit)
      expect(error.reason).toBe("http")
      expect(error.message).toContain("overloaded_error")
      expect(error.message).toContain("Overloaded")
      expect(server.requests).toHaveLength(1)
    }))

  it.live("a malformed JSON event is a decode error", () =>
    Effect.gen(function*() {
      const body = anthropicSse([messageStart()]) +
        "event: content_block_start\ndata: {\"type\": \"content_block_start\", \"index\": 0,\n\n"
      const error = failureOf((yield* runWith([{ body }])).exit)
      expect(error.reason).toBe("decode")
    }))

  it.live("an event of the wrong shape is a decode error", () =>
    Effect.gen(function*() {
      const body = anthropicSse([messageStart(), { type: "content_block_delta", index: "zero", delta: {} } as any])
      expect(failureOf((yield* runWith([{ body }])).exit).reason).toBe("decode")
    }))

  it.live("a stream that ends before message_stop is an error", () =>
    Effect.gen(function*() {
      const body = anthropicSse(anthropicFullEvents.slice(0, 12))
      const error = failureOf((yield* runWith([{ body }])).exit)
      expect(error.reason).toBe("stream")
      expect(error.message).toMatch(/message_stop/)
    }))

  it.live.each(
    [
      ["fetch", FetchHttpClient.layer],
      ["node:http", NodeHttpClient.layerNodeHttp]
    ] as const
  )("a connection dropped mid-stream is a network error (%s client)", ([_, client]) =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: anthropicSse(anthropicFullEvents.slice(0, 5)), after: "destroy" }]
      const seen: Array<string> = []
      const exit = yield* Model.use((model) =>
        Stream.runForEach(model.stream(request([user("hi")])), (e) => Effect.sync(() => seen.push(e.type)))
      ).pipe(
        Effect.provide(
          Anthropic.layer({
            model: "claude-test",
            baseUrl: server.url,
            apiKey: Redacted.make(KEY),
            retry: { baseDelay: 5 }
          })
            .pipe(Layer.provide(client))
        ),
        Effect.exit
      )
      const error = failureOf(exit)
      expect(error.reason).toBe("network")
      expect(seen[0]).toBe("start")
      expect(seen).toContain("thinking_delta")
      expect(server.requests).toHaveLength(1)
    }))

  it.live("a stream that stalls fails after the idle timeout", () =>
    Effect.gen(function*() {
      const { exit } = yield* runWith(
        [{ body: anthropicSse(anthropicFullEvents.slice(0, 3)), after: "hang" }],
        request([user("hi")]),
        { idleTimeout: "250 millis" }
      )
      const error = failureOf(exit)
      expect(error.reason).toBe("timeout")
    }))

  it.live("interrupting the stream cancels the request", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: anthropicSse(anthropicFullEvents), chunkSize: 20, delayMs: 20, after: "hang" }]
      const events = yield* Model.use((model) => Stream.runCollect(Stream.take(model.stream(request([user("hi")])), 2)))
        .pipe(Effect.provide(layerFor(server)))
      expect(events.map((e) => e.type)).toEqual(["start", "thinking_start"])
      expect((yield* Effect.promise(() => server.closed(0))).early).toBe(true)
    }))
})

describe("Anthropic: configuration", () => {
  it.live("layerConfig reads ANTHROPIC_API_KEY, ANTHROPIC_MODEL, ANTHROPIC_BASE_URL and ANTHROPIC_MAX_TOKENS", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: anthropicSse(anthropicText()) }]
      const layer = Anthropic.layerConfig().pipe(
        Layer.provide(FetchHttpClient.layer),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({
          env: {
            ANTHROPIC_API_KEY: KEY,
            ANTHROPIC_MODEL: "claude-env",
            ANTHROPIC_BASE_URL: server.url,
            ANTHROPIC_MAX_TOKENS: "1234"
          }
        })))
      )
      yield* collect(request([user("hi")])).pipe(Effect.provide(layer))
      expect(server.requests[0]!.headers["x-api-key"]).toBe(KEY)
      expect(server.requests[0]!.body).toMatchObject({ model: "claude-env", max_tokens: 1234 })
    }))

  it.effect("a missing key is a ConfigError, and the key is Redacted", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(
        Anthropic.config.pipe(
          Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { ANTHROPIC_MODEL: "m" } })))
        )
      )
      expect(missing._tag).toBe("ConfigError")
      const options = yield* Anthropic.config.pipe(
        Effect.provide(
          ConfigProvider.layer(ConfigProvider.fromEnv({ env: { ANTHROPIC_MODEL: "m", ANTHROPIC_API_KEY: KEY } }))
        )
      )
      assert.isTrue(Redacted.isRedacted(options.apiKey))
      expect(JSON.stringify(options) + String(options.apiKey)).not.toContain(KEY)
      expect(options.baseUrl).toBe(Anthropic.DEFAULT_BASE_URL)
    }))
})

describe("Anthropic: end to end", () => {
  const Add = Tool.make("add", {
    description: "Add",
    parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number })
  })
  const Echo = Tool.make("echo", { description: "Echo", parameters: Schema.Struct({ text: Schema.String }) })
  const tools = ToolRegistry.layer(Add, Echo).pipe(Layer.provide([
    Add.toLayer(({ a, b }) => Effect.succeed(Tool.textResult(String(a + b)))),
    Echo.toLayer(({ text }) =>
      Effect.succeed({
        content: [{ type: "text" as const, text }, { type: "image" as const, data: PNG, mimeType: "image/png" }],
        details: undefined
      })
    )
  ]))

  it.live("tool uses from the stream run through executeToolCalls; results, images and signed thinking go back", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: anthropicSse(anthropicFullEvents), chunkSize: 13 }, {
        body: anthropicSse(anthropicText("42."))
      }]
      const layer = layerFor(server)
      const first = yield* collect(request([user("go")])).pipe(Effect.provide(layer))
      const done = first[first.length - 1]!
      assert.strictEqual(done.type, "done")
      if (done.type !== "done") return
      const batch = yield* executeToolCalls(done.message).pipe(Effect.provide(tools))
      expect(batch.messages.map((m) => [m.toolCallId, m.isError])).toEqual([["toolu_01", false], ["toolu_02", false]])
      yield* collect(request([user("go"), done.message, ...batch.messages])).pipe(Effect.provide(layer))
      expect(server.requests[1]!.body.messages).toEqual([
        { role: "user", content: "go" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "I need to add… 🤔 then echo", signature: "EqQBCgIYAhIM1gbcDa9GJwZA==" },
            { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4a" },
            { type: "text", text: "Héllo wörld 🌍!" },
            { type: "tool_use", id: "toolu_01", name: "add", input: { a: 2, b: 40 } },
            { type: "tool_use", id: "toolu_02", name: "echo", input: { text: "naïve ✓ 日本" } }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_01", content: [{ type: "text", text: "42" }] },
            {
              type: "tool_result",
              tool_use_id: "toolu_02",
              content: [
                { type: "text", text: "naïve ✓ 日本" },
                { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }
              ],
              // the newest user turn is a cache breakpoint (prompt caching is on by default)
              cache_control: { type: "ephemeral" }
            }
          ]
        }
      ])
    }))
})

describe("Anthropic: live", () => {
  const env = process.env
  it.live.skipIf(!env.ANTHROPIC_BASE_URL || !env.ANTHROPIC_API_KEY)(
    "answers a prompt against the configured API (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_MODEL)",
    () =>
      Effect.gen(function*() {
        const events = yield* collect(
          request([user("Reply with the single word: pong")], { options: { maxTokens: 100 } })
        )
          .pipe(
            Effect.provide(
              Anthropic.layer({
                baseUrl: env.ANTHROPIC_BASE_URL!,
                apiKey: Redacted.make(env.ANTHROPIC_API_KEY!),
                model: env.ANTHROPIC_MODEL ?? "claude-haiku-4-5"
              }).pipe(Layer.provide(FetchHttpClient.layer))
            )
          )
        const message = checkProtocol(events)
        expect(message.stopReason).toBe("stop")
        expect(JSON.stringify(message.content).toLowerCase()).toContain("pong")
      }),
    60_000
  )
})
