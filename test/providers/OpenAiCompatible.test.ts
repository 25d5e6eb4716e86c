import { assert, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Redacted, Schema, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import type { AssistantMessageEvent } from "../../src/AssistantMessageEvent.ts"
import type { AssistantMessage, Message } from "../../src/Message.ts"
import { Model, ModelError, type ModelRequest } from "../../src/Model.ts"
import * as OpenAiCompatible from "../../src/providers/OpenAiCompatible.ts"
import * as Tool from "../../src/Tool.ts"
import { executeToolCalls } from "../../src/ToolExecution.ts"
import { ToolRegistry } from "../../src/ToolRegistry.ts"
import {
  addTool,
  assistant,
  chunk,
  openAiFullStream,
  openAiSse,
  openAiTextStream,
  PNG,
  request,
  toolResult,
  user
} from "./support/fixtures.ts"
import { checkProtocol, eventShape } from "./support/protocol.ts"
import { bytesIn, memoryClient, type Reply, startServer, type TestServer } from "./support/server.ts"

const KEY = "sk-test-SECRET-key-0123456789"

const layerFor = (server: TestServer, overrides: Partial<OpenAiCompatible.Options> = {}) =>
  OpenAiCompatible.layer({
    model: "test-model",
    baseUrl: `${server.url}/v1`,
    apiKey: Redacted.make(KEY),
    retry: { times: 2, baseDelay: 5 },
    idleTimeout: "3 seconds",
    ...overrides
  }).pipe(Layer.provide(FetchHttpClient.layer))

const collect = (req: ModelRequest) => Model.use((model) => Stream.runCollect(model.stream(req)))

/** Runs a request against the server with the given replies. */
const runWith = (
  replies: Array<Reply>,
  req: ModelRequest = request([user("hi")]),
  overrides: Partial<OpenAiCompatible.Options> = {}
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
  { type: "thinking", thinking: "Let me think… 🤔 about sums", thinkingSignature: "reasoning_content" },
  { type: "text", text: "Héllo wörld 🌍! Calling tools." },
  { type: "toolCall", id: "call_a", name: "add", arguments: { a: 2, b: 40 } },
  { type: "toolCall", id: "call_b", name: "echo", arguments: { text: "naïve ✓ 日本" } }
]

const checkFull = (events: ReadonlyArray<AssistantMessageEvent>) => {
  const message = checkProtocol(events)
  expect(message.content).toEqual(expectedFullContent)
  expect(message.stopReason).toBe("toolUse")
  expect(message.usage).toMatchObject({ input: 70, output: 20, cacheRead: 30, cacheWrite: 0, totalTokens: 120 })
  expect(message.responseId).toBe("chatcmpl-123")
  expect(message.responseModel).toBe("gpt-test-2025")
  expect(message).toMatchObject({ api: "openai-completions", provider: "openai-compatible", model: "test-model" })
  const last = events[events.length - 1]!
  expect(last.type === "done" && last.reason).toBe("toolUse")
  return message
}

describe("OpenAiCompatible: streaming", () => {
  it.live("streams reasoning, text and interleaved tool calls, with usage, cut at awkward byte boundaries", () =>
    Effect.gen(function*() {
      const { exit } = yield* runWith([{ body: openAiFullStream, chunkSize: 7 }])
      const events = successOf(exit)
      checkFull(events)
      expect(eventShape(events)).toEqual([
        "start",
        "thinking_start:0",
        "thinking_delta:0",
        "thinking_delta:0",
        "thinking_end:0",
        "text_start:1",
        "text_delta:1",
        "text_delta:1",
        "text_end:1",
        "toolcall_start:2",
        "toolcall_start:3",
        "toolcall_delta:2",
        "toolcall_delta:3",
        "toolcall_delta:2",
        "toolcall_delta:3",
        "toolcall_end:2",
        "toolcall_end:3",
        "done"
      ])
      // Partial arguments parse as they stream.
      const firstArgs = events.find((e) => e.type === "toolcall_delta" && e.contentIndex === 2)!
      expect(firstArgs.type === "toolcall_delta" && firstArgs.partial.content[2]).toMatchObject({ arguments: { a: 2 } })
      const midEcho = events.filter((e) => e.type === "toolcall_delta" && e.contentIndex === 3)[0]!
      expect(midEcho.type === "toolcall_delta" && midEcho.partial.content[3]).toMatchObject({
        arguments: { text: "naïve ✓" }
      })
    }))

  it.effect.each([1, 2, 3, 5, 64])(
    "decodes the stream whatever the chunk size (%s bytes, in memory)",
    (size) =>
      Effect.gen(function*() {
        const events = yield* collect(request([user("hi")])).pipe(
          Effect.provide(
            OpenAiCompatible.layer({ model: "test-model", baseUrl: "http://memory/v1" }).pipe(
              Layer.provide(memoryClient(() => ({ chunks: bytesIn(openAiFullStream, size) })))
            )
          )
        )
        checkFull(events)
      })
  )

  it.effect("accepts CRLF line endings and comment lines", () =>
    Effect.gen(function*() {
      const body = `: keep-alive\r\n\r\n${openAiTextStream("Hey").replaceAll("\n", "\r\n")}`
      const events = yield* collect(request([user("hi")])).pipe(
        Effect.provide(
          OpenAiCompatible.layer({ model: "m", baseUrl: "http://memory/v1" }).pipe(
            Layer.provide(memoryClient(() => ({ chunks: bytesIn(body, 4) })))
          )
        )
      )
      expect(checkProtocol(events).content).toEqual([{ type: "text", text: "Hey" }])
    }))

  it.live("maps finish reasons", () =>
    Effect.gen(function*() {
      const stop = successOf((yield* runWith([{ body: openAiTextStream("a", "stop") }])).exit)
      expect(checkProtocol(stop).stopReason).toBe("stop")
      const length = successOf((yield* runWith([{ body: openAiTextStream("a", "length") }])).exit)
      const lengthEnd = length[length.length - 1]!
      expect(lengthEnd.type === "done" && lengthEnd.reason).toBe("length")
      const filtered = successOf((yield* runWith([{ body: openAiTextStream("a", "content_filter") }])).exit)
      const filteredEnd = filtered[filtered.length - 1]!
      assert.strictEqual(filteredEnd.type, "error")
      if (filteredEnd.type === "error") {
        expect(filteredEnd.reason).toBe("error")
        expect(filteredEnd.error.stopReason).toBe("error")
        expect(filteredEnd.error.errorMessage).toMatch(/content filter/)
        expect(filteredEnd.error.content).toEqual([{ type: "text", text: "a" }])
      }
      // A server that says "stop" for a message with tool calls still asked for tools.
      const toolsWithStop = openAiSse([
        chunk({ tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "add", arguments: "{}" } }] }),
        chunk({}, "stop")
      ])
      expect(checkProtocol(successOf((yield* runWith([{ body: toolsWithStop }])).exit)).stopReason).toBe("toolUse")
    }))

  it.live("fills in tool calls whose id or name arrive late, and gives ids to calls that have none", () =>
    Effect.gen(function*() {
      const body = openAiSse([
        chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"a\":" } }] }),
        chunk({ tool_calls: [{ index: 0, id: "late_id", function: { name: "add", arguments: "1,\"b\":2}" } }] }),
        chunk({ tool_calls: [{ index: 1, function: { name: "echo", arguments: { text: "obj" } } }] }),
        chunk({}, "tool_calls")
      ])
      const message = checkProtocol(successOf((yield* runWith([{ body }])).exit))
      expect(message.content).toMatchObject([
        { type: "toolCall", id: "late_id", name: "add", arguments: { a: 1, b: 2 } },
        { type: "toolCall", name: "echo", arguments: { text: "obj" } }
      ])
      const second = message.content[1]!
      expect(second.type === "toolCall" && second.id).toMatch(/^call_/)
    }))

  it.live("a finish reason without [DONE] is a complete response", () =>
    Effect.gen(function*() {
      const body = openAiSse([chunk({ content: "ok" }), chunk({}, "stop")], false)
      expect(checkProtocol(successOf((yield* runWith([{ body }])).exit)).content).toEqual([{
        type: "text",
        text: "ok"
      }])
    }))
})

describe("OpenAiCompatible: the request", () => {
  it.live("posts to /chat/completions with the key, SSE accept header, usage and tools", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith(
        [{ body: openAiTextStream() }],
        request([user("hi")], {
          systemPrompt: "Be brief.",
          tools: [addTool],
          options: { maxTokens: 300, temperature: 0.2, thinkingLevel: "medium" }
        })
      )
      successOf(exit)
      const [recorded] = server.requests
      expect(recorded!.method).toBe("POST")
      expect(recorded!.url).toBe("/v1/chat/completions")
      expect(recorded!.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(recorded!.headers.accept).toBe("text/event-stream")
      expect(recorded!.headers["content-type"]).toMatch(/application\/json/)
      expect(recorded!.body).toEqual({
        model: "test-model",
        messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
        stream: true,
        stream_options: { include_usage: true },
        tools: [{
          type: "function",
          function: { name: "add", description: addTool.description, parameters: addTool.parameters }
        }],
        max_tokens: 300,
        temperature: 0.2,
        reasoning_effort: "medium"
      })
      // The body is what the request Schema describes.
      Schema.decodeUnknownSync(OpenAiCompatible.ChatCompletionRequest)(recorded!.body)
    }))

  it.live("sends no Authorization header without a key, and uses max_completion_tokens when asked", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: openAiTextStream() }]
      yield* collect(request([user("hi")], { options: { maxTokens: 50 } })).pipe(
        Effect.provide(
          OpenAiCompatible.layer({
            model: "llama3.1",
            baseUrl: `${server.url}/v1/`,
            maxTokensField: "max_completion_tokens",
            includeUsage: false
          }).pipe(Layer.provide(FetchHttpClient.layer))
        )
      )
      const [recorded] = server.requests
      expect(recorded!.url).toBe("/v1/chat/completions")
      expect(recorded!.headers.authorization).toBeUndefined()
      expect(recorded!.body.max_completion_tokens).toBe(50)
      expect(recorded!.body.stream_options).toBeUndefined()
    }))

  it("converts every message kind to the Chat Completions form", () => {
    const settings = {
      info: { api: "openai-completions", provider: "openai-compatible", model: "test-model" },
      replayReasoning: true
    }
    const messages: Array<Message> = [
      user("What is in this picture?"),
      user([{ type: "text", text: "Look:" }, { type: "image", data: PNG, mimeType: "image/png" }]),
      assistant([
        { type: "thinking", thinking: "Hmm.", thinkingSignature: "reasoning_content" },
        { type: "text", text: "Let me check." },
        { type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.png" } },
        { type: "toolCall", id: "call_2", name: "add", arguments: { a: 1, b: 2 } }
      ]),
      toolResult("call_1", "read", [{ type: "text", text: "an image:" }, {
        type: "image",
        data: PNG,
        mimeType: "image/png"
      }]),
      toolResult("call_2", "add", [{ type: "text", text: "3" }], false),
      // An errored turn and its (synthetic) result never reach the provider.
      assistant([{ type: "toolCall", id: "call_bad", name: "add", arguments: {} }], {
        stopReason: "error",
        errorMessage: "boom"
      }),
      toolResult("call_bad", "add", [{ type: "text", text: "not run" }], true),
      assistant([{ type: "text", text: "partial" }], { stopReason: "aborted", errorMessage: "aborted" }),
      user("And now?"),
      // Another model's reasoning is context: it becomes text. Redacted reasoning is dropped.
      assistant([
        { type: "thinking", thinking: "Other model thoughts", thinkingSignature: "sig" },
        { type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque", redacted: true },
        { type: "text", text: "Answer." },
        { type: "toolCall", id: "call_3", name: "add", arguments: { a: 5, b: 5 } }
      ], { api: "anthropic-messages", provider: "anthropic", model: "claude" }),
      // call_3 has no result: one is made up before the next user message.
      user("Stop."),
      // A stray result that answers nothing is dropped.
      toolResult("call_404", "add", [{ type: "text", text: "?" }])
    ]
    const wire = OpenAiCompatible.toChatMessages("System!", messages, settings)
    expect(wire).toEqual([
      { role: "system", content: "System!" },
      { role: "user", content: "What is in this picture?" },
      {
        role: "user",
        content: [{ type: "text", text: "Look:" }, {
          type: "image_url",
          image_url: { url: `data:image/png;base64,${PNG}` }
        }]
      },
      {
        role: "assistant",
        content: "Let me check.",
        reasoning_content: "Hmm.",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "read", arguments: "{\"path\":\"a.png\"}" } },
          { id: "call_2", type: "function", function: { name: "add", arguments: "{\"a\":1,\"b\":2}" } }
        ]
      },
      { role: "tool", tool_call_id: "call_1", content: "an image:" },
      { role: "tool", tool_call_id: "call_2", content: "3" },
      {
        role: "user",
        content: [
          { type: "text", text: "Attached image(s) from tool result:" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }
        ]
      },
      { role: "user", content: "And now?" },
      {
        role: "assistant",
        content: "Other model thoughts\n\nAnswer.",
        tool_calls: [{ id: "call_3", type: "function", function: { name: "add", arguments: "{\"a\":5,\"b\":5}" } }]
      },
      { role: "tool", tool_call_id: "call_3", content: "No result provided" },
      { role: "user", content: "Stop." }
    ])
    // Every message is what the request Schema describes.
    for (const message of wire) Schema.decodeUnknownSync(OpenAiCompatible.ChatMessage)(message)
    // Every tool call sent is answered right after, and every answer follows its call.
    const calls = wire.flatMap((m) => m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : [])
    const answers = wire.flatMap((m) => m.role === "tool" ? [m.tool_call_id] : [])
    expect(answers).toEqual(calls)
  })

  it("sends an image-only tool result with a placeholder text", () => {
    const wire = OpenAiCompatible.toChatMessages("", [
      assistant([{ type: "toolCall", id: "c", name: "shot", arguments: {} }]),
      toolResult("c", "shot", [{ type: "image", data: PNG, mimeType: "image/jpeg" }])
    ], { info: { api: "x", provider: "x", model: "x" }, replayReasoning: true })
    expect(wire[1]).toEqual({ role: "tool", tool_call_id: "c", content: "(see attached image)" })
    expect(wire[2]).toMatchObject({
      role: "user",
      content: [{}, { image_url: { url: `data:image/jpeg;base64,${PNG}` } }]
    })
  })
})

describe("OpenAiCompatible: faults", () => {
  it.live("an HTTP 400 carries the body's error message and is not retried", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([{
        status: 400,
        body: JSON.stringify({
          error: { message: "Invalid 'messages[1].content'", type: "invalid_request_error", param: null, code: null }
        })
      }])
      const error = failureOf(exit)
      expect(error.reason).toBe("http")
      expect(error.status).toBe(400)
      expect(error.retryable).toBe(false)
      expect(error.message).toContain("Invalid 'messages[1].content'")
      expect(error.message).toContain("HTTP 400")
      expect(server.requests).toHaveLength(1)
    }))

  it.live("an HTTP 401 is an auth error and never shows the key, even when the server echoes it", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([{
        status: 401,
        body: JSON.stringify({
          error: { message: `Incorrect API key provided: ${KEY}.`, type: "invalid_request_error" }
        })
      }])
      const error = failureOf(exit)
      expect(error.reason).toBe("auth")
      expect(error.status).toBe(401)
      expect(error.message).toContain("Incorrect API key provided")
      expect(error.message).not.toContain(KEY)
      expect(JSON.stringify(error)).not.toContain(KEY)
      expect(String(error)).not.toContain(KEY)
      expect(server.requests).toHaveLength(1)
    }))

  it.live("an HTTP 429 is retried after the retry-after it names", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([
        {
          status: 429,
          headers: { "retry-after": "1" },
          body: JSON.stringify({ error: { message: "Rate limit reached" } })
        },
        { body: openAiTextStream("after the wait") }
      ])
      const events = successOf(exit)
      expect(checkProtocol(events).content).toEqual([{ type: "text", text: "after the wait" }])
      expect(server.requests).toHaveLength(2)
      expect(server.requests[1]!.at - server.requests[0]!.at).toBeGreaterThanOrEqual(950)
    }))

  it.live("retry-after-ms is honoured too", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([
        { status: 429, headers: { "retry-after-ms": "300" }, body: "{}" },
        { body: openAiTextStream() }
      ])
      successOf(exit)
      expect(server.requests).toHaveLength(2)
      expect(server.requests[1]!.at - server.requests[0]!.at).toBeGreaterThanOrEqual(290)
    }))

  it.live("an HTTP 500 is retried with backoff, then succeeds", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([
        { status: 500, body: JSON.stringify({ error: { message: "The server had an error" } }) },
        { body: openAiTextStream("recovered") }
      ])
      expect(checkProtocol(successOf(exit)).content).toEqual([{ type: "text", text: "recovered" }])
      expect(server.requests).toHaveLength(2)
    }))

  it.live("retries are bounded: the last error is reported", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([{ status: 503, body: "upstream unavailable" }])
      const error = failureOf(exit)
      expect(error.reason).toBe("http")
      expect(error.status).toBe(503)
      expect(error.retryable).toBe(true)
      expect(error.message).toContain("upstream unavailable")
      expect(server.requests).toHaveLength(3) // 1 + times: 2
    }))

  it.live("a retry-after longer than the longest allowed wait fails at once", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith(
        [{ status: 429, headers: { "retry-after": "3600" }, body: "{}" }, { body: openAiTextStream() }],
        request([user("hi")]),
        { retry: { times: 3, baseDelay: 5, maxDelay: "10 seconds" } }
      )
      expect(failureOf(exit).reason).toBe("rate-limit")
      expect(server.requests).toHaveLength(1)
    }))

  it.live("a malformed JSON chunk is a decode error", () =>
    Effect.gen(function*() {
      const body = openAiSse([chunk({ content: "ok" })], false) + "data: {\"id\": \"x\", \"choices\": [\n\n"
      const { exit, server } = yield* runWith([{ body }])
      const error = failureOf(exit)
      expect(error.reason).toBe("decode")
      expect(error.message).toMatch(/could not decode/)
      expect(server.requests).toHaveLength(1)
    }))

  it.live("a chunk of the wrong shape is a decode error", () =>
    Effect.gen(function*() {
      const { exit } = yield* runWith([{ body: openAiSse([{ choices: [{ delta: { content: 42 } }] }]) }])
      expect(failureOf(exit).reason).toBe("decode")
    }))

  it.live("a stream that ends without a finish reason is an error", () =>
    Effect.gen(function*() {
      const { exit } = yield* runWith([{ body: openAiSse([chunk({ content: "cut sh" })], false) }])
      const error = failureOf(exit)
      expect(error.reason).toBe("stream")
      expect(error.message).toMatch(/ended before the response was complete/)
    }))

  it.live("an error object in the stream is a stream error with its message", () =>
    Effect.gen(function*() {
      const body = openAiSse([chunk({ content: "x" }), { error: { message: "model crashed", type: "server_error" } }])
      const error = failureOf((yield* runWith([{ body }])).exit)
      expect(error.reason).toBe("stream")
      expect(error.message).toContain("model crashed")
    }))

  it.live("a connection dropped mid-stream is a network error; what streamed was delivered and nothing is retried", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{
        body: openAiSse([chunk({ content: "Hello" }), chunk({ content: " wor" })], false),
        after: "destroy"
      }]
      const seen: Array<AssistantMessageEvent> = []
      const exit = yield* Model.use((model) =>
        Stream.runForEach(model.stream(request([user("hi")])), (e) => Effect.sync(() => seen.push(e)))
      ).pipe(
        Effect.provide(layerFor(server)),
        Effect.exit
      )
      const error = failureOf(exit)
      expect(error.reason).toBe("network")
      expect(error.message).toMatch(/connection was lost/)
      expect(seen.map((e) => e.type)).toEqual(["start", "text_start", "text_delta", "text_delta"])
      expect(server.requests).toHaveLength(1)
    }))

  it.live("a connection dropped before anything streamed is retried", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([{ body: "", after: "destroy" }, {
        body: openAiTextStream("second try")
      }])
      expect(checkProtocol(successOf(exit)).content).toEqual([{ type: "text", text: "second try" }])
      expect(server.requests).toHaveLength(2)
    }))

  it.live("a refused connection is a network error", () =>
    Effect.gen(function*() {
      const exit = yield* collect(request([user("hi")])).pipe(
        Effect.provide(
          OpenAiCompatible.layer({ model: "m", baseUrl: "http://127.0.0.1:9/v1", retry: { times: 1, baseDelay: 5 } })
            .pipe(
              Layer.provide(FetchHttpClient.layer)
            )
        ),
        Effect.exit
      )
      const error = failureOf(exit)
      expect(error.reason).toBe("network")
      expect(error.retryable).toBe(true)
    }))

  it.live("a stream that stalls fails after the idle timeout", () =>
    Effect.gen(function*() {
      const started = Date.now()
      const { exit } = yield* runWith(
        [{ body: openAiSse([chunk({ content: "Hel" })], false), after: "hang" }],
        request([user("hi")]),
        { idleTimeout: "300 millis" }
      )
      const error = failureOf(exit)
      expect(error.reason).toBe("timeout")
      expect(error.message).toMatch(/stalled/)
      expect(Date.now() - started).toBeLessThan(2500)
    }))

  it.live("a server that never answers fails after the idle timeout", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ silent: true }]
      const exit = yield* collect(request([user("hi")])).pipe(
        Effect.provide(layerFor(server, { idleTimeout: "300 millis" })),
        Effect.exit
      )
      expect(failureOf(exit).reason).toBe("timeout")
    }))

  it.live("interrupting the stream cancels the request", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: openAiFullStream, chunkSize: 16, delayMs: 30, after: "hang" }]
      const events = yield* Model.use((model) => Stream.runCollect(Stream.take(model.stream(request([user("hi")])), 3)))
        .pipe(
          Effect.provide(layerFor(server))
        )
      expect(events).toHaveLength(3)
      const closed = yield* Effect.promise(() => server.closed(0))
      expect(closed.early).toBe(true)
    }))
})

describe("OpenAiCompatible: configuration", () => {
  const withEnv = (env: Record<string, string>) => Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))

  it.live("layerConfig reads OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: openAiTextStream() }]
      const layer = OpenAiCompatible.layerConfig().pipe(
        Layer.provide(FetchHttpClient.layer),
        withEnv({ OPENAI_BASE_URL: `${server.url}/api/v1`, OPENAI_API_KEY: KEY, OPENAI_MODEL: "env-model" })
      )
      const info = yield* Model.use((model) => Effect.succeed(model.info)).pipe(Effect.provide(layer))
      expect(info).toEqual({ api: "openai-completions", provider: "openai-compatible", model: "env-model" })
      yield* collect(request([user("hi")])).pipe(Effect.provide(layer))
      expect(server.requests[0]!.url).toBe("/api/v1/chat/completions")
      expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(server.requests[0]!.body.model).toBe("env-model")
    }))

  it.effect("the key is read as Redacted and a missing model is a ConfigError", () =>
    Effect.gen(function*() {
      const options = yield* OpenAiCompatible.config.pipe(
        Effect.provide(
          ConfigProvider.layer(ConfigProvider.fromEnv({ env: { OPENAI_API_KEY: KEY, OPENAI_MODEL: "m" } }))
        )
      )
      expect(options.baseUrl).toBe(OpenAiCompatible.DEFAULT_BASE_URL)
      assert.isTrue(Redacted.isRedacted(options.apiKey))
      expect(String(options.apiKey)).not.toContain(KEY)
      expect(JSON.stringify(options)).not.toContain(KEY)
      const missing = yield* Effect.flip(OpenAiCompatible.config.pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { OPENAI_API_KEY: KEY } })))
      ))
      expect(missing._tag).toBe("ConfigError")
    }))

  it.effect("OpenAI's own API: provider openai, its URL, max_completion_tokens", () =>
    Effect.gen(function*() {
      const seen: Array<{ url: string; body: any }> = []
      const layer = OpenAiCompatible.layer({ model: "gpt-x", apiKey: Redacted.make(KEY) }).pipe(
        Layer.provide(memoryClient((req) => {
          seen.push(req)
          return { chunks: bytesIn(openAiTextStream(), 50) }
        }))
      )
      const info = yield* Model.use((model) => Effect.succeed(model.info)).pipe(Effect.provide(layer))
      expect(info.provider).toBe("openai")
      yield* collect(request([user("x")], { options: { maxTokens: 10 } })).pipe(Effect.provide(layer))
      expect(seen[0]!.url).toBe("https://api.openai.com/v1/chat/completions")
      expect(seen[0]!.body.max_completion_tokens).toBe(10)
      expect(seen[0]!.body.max_tokens).toBeUndefined()
    }))
})

describe("OpenAiCompatible: end to end", () => {
  const Add = Tool.make("add", {
    description: "Add two numbers",
    parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number })
  })
  const Echo = Tool.make("echo", { description: "Echo a text", parameters: Schema.Struct({ text: Schema.String }) })
  const tools = ToolRegistry.layer(Add, Echo).pipe(Layer.provide([
    Add.toLayer(({ a, b }) => Effect.succeed(Tool.textResult(String(a + b)))),
    Echo.toLayer(({ text }) => Effect.succeed(Tool.textResult(text.toUpperCase())))
  ]))

  it.live("the tool calls a stream produced run through executeToolCalls and their results go back", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: openAiFullStream, chunkSize: 11 }, { body: openAiTextStream("The sum is 42.") }]
      const layer = layerFor(server)
      const first = yield* collect(request([user("add 2 and 40, echo naïve")], {
        tools: [Add, Echo].map((t) => ({
          name: t.name,
          description: t.description,
          parameters: t.jsonSchema
        }))
      })).pipe(Effect.provide(layer))
      const done = first[first.length - 1]!
      assert.strictEqual(done.type, "done")
      if (done.type !== "done") return
      const batch = yield* executeToolCalls(done.message).pipe(Effect.provide(tools))
      expect(batch.messages.map((m) => [m.toolCallId, m.isError, m.content])).toEqual([
        ["call_a", false, [{ type: "text", text: "42" }]],
        ["call_b", false, [{ type: "text", text: "NAÏVE ✓ 日本" }]]
      ])
      const second = yield* collect(request([user("add 2 and 40, echo naïve"), done.message, ...batch.messages])).pipe(
        Effect.provide(layer)
      )
      expect(checkProtocol(second).content).toEqual([{ type: "text", text: "The sum is 42." }])
      expect(server.requests[1]!.body.messages.slice(1)).toEqual([
        {
          role: "assistant",
          content: "Héllo wörld 🌍! Calling tools.",
          reasoning_content: "Let me think… 🤔 about sums",
          tool_calls: [
            { id: "call_a", type: "function", function: { name: "add", arguments: "{\"a\":2,\"b\":40}" } },
            { id: "call_b", type: "function", function: { name: "echo", arguments: "{\"text\":\"naïve ✓ 日本\"}" } }
          ]
        },
        { role: "tool", tool_call_id: "call_a", content: "42" },
        { role: "tool", tool_call_id: "call_b", content: "NAÏVE ✓ 日本" }
      ])
    }))
})

describe("OpenAiCompatible: live", () => {
  const env = process.env
  it.live.skipIf(!env.OPENAI_BASE_URL || !env.OPENAI_API_KEY)(
    "answers a prompt against the configured server (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL)",
    () =>
      Effect.gen(function*() {
        const events = yield* collect(
          request([user("Reply with the single word: pong")], { options: { maxTokens: 200 } })
        ).pipe(
          Effect.provide(
            OpenAiCompatible.layer({
              baseUrl: env.OPENAI_BASE_URL!,
              apiKey: Redacted.make(env.OPENAI_API_KEY!),
              model: env.OPENAI_MODEL ?? "gpt-4.1-mini"
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
