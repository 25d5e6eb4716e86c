import { assert, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Redacted, Schema, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import type { AssistantMessageEvent } from "../../src/AssistantMessageEvent.ts"
import type { AssistantMessage, Message } from "../../src/Message.ts"
import { Model, ModelError, type ModelRequest } from "../../src/Model.ts"
import * as Gemini from "../../src/providers/Gemini.ts"
import * as Tool from "../../src/Tool.ts"
import { executeToolCalls } from "../../src/ToolExecution.ts"
import { ToolRegistry } from "../../src/ToolRegistry.ts"
import { addTool, assistant, PNG, request, toolResult, user } from "./support/fixtures.ts"
import {
  geminiChunk,
  geminiFullChunks,
  geminiSse,
  geminiText,
  MODEL_VERSION,
  SIGNATURE
} from "./support/geminiFixtures.ts"
import { checkProtocol, eventShape } from "./support/protocol.ts"
import { bytesIn, memoryClient, type Reply, startServer, type TestServer } from "./support/server.ts"

const KEY = "AIzaSy-test-SECRET-key-0123456789"
const MODEL = "gemini-2.5-flash"
const INFO = { api: "google-generative-ai", provider: "google", model: MODEL }

const layerFor = (server: TestServer, overrides: Partial<Gemini.Options> = {}) =>
  Gemini.layer({
    model: MODEL,
    baseUrl: `${server.url}/v1beta`,
    apiKey: Redacted.make(KEY),
    retry: { times: 2, baseDelay: 5 },
    idleTimeout: "3 seconds",
    ...overrides
  }).pipe(Layer.provide(FetchHttpClient.layer))

const collect = (req: ModelRequest) => Model.use((model) => Stream.runCollect(model.stream(req)))

const runWith = (
  replies: Array<Reply>,
  req: ModelRequest = request([user("hi")]),
  overrides: Partial<Gemini.Options> = {}
) =>
  Effect.gen(function*() {
    const server = yield* startServer
    server.replies = replies
    const exit = yield* Effect.exit(collect(req).pipe(Effect.provide(layerFor(server, overrides))))
    return { server, exit }
  })

const inMemory = (body: string, size: number, model = MODEL) =>
  Gemini.layer({ model, baseUrl: "http://memory/v1beta", apiKey: Redacted.make(KEY) }).pipe(
    Layer.provide(memoryClient(() => ({ chunks: bytesIn(body, size) })))
  )

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
  { type: "thinking", thinking: "I need to add… 🤔 then echo" },
  { type: "text", text: "Héllo wörld 🌍!" },
  { type: "toolCall", id: "call_resp_g1_0", name: "add", arguments: { a: 2, b: 40 }, thoughtSignature: SIGNATURE },
  { type: "toolCall", id: "call_resp_g1_1", name: "echo", arguments: { text: "naïve ✓ 日本" } }
]

const fullBody = geminiSse(geminiFullChunks)

const checkFull = (events: ReadonlyArray<AssistantMessageEvent>) => {
  const message = checkProtocol(events)
  expect(message.content).toEqual(expectedFullContent)
  expect(message.stopReason).toBe("toolUse")
  // Thought tokens count as output; cached tokens are not fresh input.
  expect(message.usage).toMatchObject({ input: 70, output: 32, cacheRead: 30, cacheWrite: 0, totalTokens: 132 })
  expect(message.responseId).toBe("resp_g1")
  expect(message.responseModel).toBe(MODEL_VERSION)
  expect(message).toMatchObject(INFO)
  return message
}

describe("Gemini: streaming", () => {
  it.live("streams thoughts, text and function calls, with usage, cut at awkward byte boundaries", () =>
    Effect.gen(function*() {
      const { exit } = yield* runWith([{ body: fullBody, chunkSize: 13 }])
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
        "toolcall_delta:2",
        "toolcall_end:2",
        "toolcall_start:3",
        "toolcall_delta:3",
        "toolcall_end:3",
        "done"
      ])
    }))

  it.effect.each([1, 2, 3, 5, 64])(
    "decodes the stream whatever the chunk size (%s bytes, in memory, CRLF and LF)",
    (size) =>
      Effect.gen(function*() {
        checkFull(yield* collect(request([user("hi")])).pipe(Effect.provide(inMemory(fullBody, size))))
        checkFull(
          yield* collect(request([user("hi")])).pipe(Effect.provide(inMemory(geminiSse(geminiFullChunks, "\n"), size)))
        )
      })
  )

  it.effect.prop(
    "any split of the bytes decodes to the same message",
    { sizes: Schema.NonEmptyArray(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 200 }))) },
    ({ sizes }) =>
      Effect.gen(function*() {
        const bytes = new TextEncoder().encode(fullBody)
        const chunks: Array<Uint8Array> = []
        for (let offset = 0, i = 0; offset < bytes.length; i++) {
          const size = sizes[i % sizes.length]!
          chunks.push(bytes.subarray(offset, offset + size))
          offset += size
        }
        const layer = Gemini.layer({ model: MODEL, baseUrl: "http://memory/v1", apiKey: Redacted.make(KEY) }).pipe(
          Layer.provide(memoryClient(() => ({ chunks })))
        )
        checkFull(yield* collect(request([user("hi")])).pipe(Effect.provide(layer)))
      }),
    { arbitrary: { runs: 25 } }
  )

  it.effect("a catalogued model's message carries its cost", () =>
    Effect.gen(function*() {
      const message = checkFull(yield* collect(request([user("hi")])).pipe(Effect.provide(inMemory(fullBody, 64))))
      // gemini-2.5-flash: $0.30 in, $0.03 cached, $2.50 out per million.
      expect(message.usage.cost.total).toBeCloseTo((70 * 0.3 + 30 * 0.03 + 32 * 2.5) / 1_000_000, 12)
    }))

  it.effect("a signature sent in a part of its own lands on the text before it; the API's call ids are kept", () =>
    Effect.gen(function*() {
      const text = checkProtocol(
        yield* collect(request([user("hi")])).pipe(Effect.provide(inMemory(geminiSse(geminiText("Hey")), 7)))
      )
      expect(text.content).toEqual([{ type: "text", text: "Hey", textSignature: SIGNATURE }])
      expect(text.stopReason).toBe("stop")
      const withIds = geminiSse([
        geminiChunk([{ functionCall: { id: "fc-1", name: "add", args: { a: 1, b: 2 } } }], { finishReason: "STOP" })
      ])
      const call = checkProtocol(yield* collect(request([user("hi")])).pipe(Effect.provide(inMemory(withIds, 9))))
      expect(call.content).toEqual([{ type: "toolCall", id: "fc-1", name: "add", arguments: { a: 1, b: 2 } }])
    }))

  it.live("maps finish reasons, and a blocked prompt", () =>
    Effect.gen(function*() {
      const length = successOf((yield* runWith([{ body: geminiSse(geminiText("a", "MAX_TOKENS")) }])).exit)
      const lengthEnd = length[length.length - 1]!
      expect(lengthEnd.type === "done" && lengthEnd.reason).toBe("length")
      const safety = successOf((yield* runWith([{ body: geminiSse(geminiText("a", "SAFETY")) }])).exit)
      const safetyEnd = safety[safety.length - 1]!
      assert.strictEqual(safetyEnd.type, "error")
      if (safetyEnd.type === "error") {
        expect(safetyEnd.error.errorMessage).toMatch(/content filter \(SAFETY\)/)
        expect(safetyEnd.error.content).toEqual([{ type: "text", text: "a", textSignature: SIGNATURE }])
      }
      const malformed = geminiSse([
        geminiChunk([], { finishReason: "MALFORMED_FUNCTION_CALL", finishMessage: "Malformed function call: add(" })
      ])
      const malformedEnd = successOf((yield* runWith([{ body: malformed }])).exit).at(-1)!
      expect(malformedEnd.type === "error" && malformedEnd.error.errorMessage).toMatch(/MALFORMED_FUNCTION_CALL.*add\(/)
      const blocked = geminiSse([{
        promptFeedback: { blockReason: "PROHIBITED_CONTENT" },
        usageMetadata: { promptTokenCount: 9 }
      }])
      const blockedEvents = successOf((yield* runWith([{ body: blocked }])).exit)
      const blockedEnd = blockedEvents.at(-1)!
      expect(blockedEnd.type === "error" && blockedEnd.error.errorMessage).toMatch(/blocked.*PROHIBITED_CONTENT/)
      checkProtocol(blockedEvents)
    }))
})

describe("Gemini: the request", () => {
  it.live("posts to models/{model}:streamGenerateContent?alt=sse with the key header, tools and options", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith(
        [{ body: geminiSse(geminiText()) }],
        request([user("hi")], {
          systemPrompt: "Be brief.",
          tools: [addTool],
          options: { maxTokens: 300, temperature: 0.2, thinkingLevel: "medium" }
        })
      )
      successOf(exit)
      const [recorded] = server.requests
      expect(recorded!.method).toBe("POST")
      expect(recorded!.url).toBe(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`)
      expect(recorded!.headers["x-goog-api-key"]).toBe(KEY)
      expect(recorded!.headers.authorization).toBeUndefined()
      expect(recorded!.headers.accept).toBe("text/event-stream")
      expect(recorded!.body).toEqual({
        contents: [{ role: "user", parts: [{ text: "hi" }] }],
        systemInstruction: { parts: [{ text: "Be brief." }] },
        tools: [{
          functionDeclarations: [{
            name: "add",
            description: addTool.description,
            parametersJsonSchema: addTool.parameters
          }]
        }],
        generationConfig: {
          maxOutputTokens: 300,
          temperature: 0.2,
          thinkingConfig: { includeThoughts: true, thinkingBudget: 8192 }
        }
      })
      Schema.decodeUnknownSync(Gemini.GenerateContentRequest)(recorded!.body)
    }))

  it.effect("Gemini 3 takes a thinking level; a bare request sends no generationConfig; models/ prefixes are dropped", () =>
    Effect.gen(function*() {
      const seen: Array<{ url: string; body: any }> = []
      const layerOf = (model: string) =>
        Gemini.layer({ model, apiKey: Redacted.make(KEY) }).pipe(
          Layer.provide(memoryClient((req) => {
            seen.push(req)
            return { chunks: bytesIn(geminiSse(geminiText()), 50) }
          }))
        )
      yield* collect(request([user("x")], { options: { thinkingLevel: "low" } })).pipe(
        Effect.provide(layerOf("models/gemini-3-pro-preview"))
      )
      expect(seen[0]!.url).toBe(`${Gemini.DEFAULT_BASE_URL}/models/gemini-3-pro-preview:streamGenerateContent?alt=sse`)
      expect(seen[0]!.body.generationConfig).toEqual({
        thinkingConfig: { includeThoughts: true, thinkingLevel: "low" }
      })
      yield* collect(request([user("x")])).pipe(Effect.provide(layerOf(MODEL)))
      expect(seen[1]!.body.generationConfig).toBeUndefined()
    }))

  it("converts every message kind to Gemini contents", () => {
    const messages: Array<Message> = [
      user("What is in this picture?"),
      user([{ type: "text", text: "Look:" }, { type: "image", data: PNG, mimeType: "image/png" }]),
      // This model's own turn: thoughts and parts go back with their signatures.
      assistant([
        { type: "thinking", thinking: "Hmm.", thinkingSignature: "sig-think" },
        { type: "text", text: "Let me check.", textSignature: "sig-text" },
        { type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.png" }, thoughtSignature: SIGNATURE },
        { type: "toolCall", id: "call_2", name: "add", arguments: { a: 1, b: 2 } }
      ], INFO),
      toolResult("call_1", "read", [{ type: "text", text: "an image:" }, {
        type: "image",
        data: PNG,
        mimeType: "image/png"
      }]),
      toolResult("call_2", "add", [{ type: "text", text: "failed: bad input" }], true),
      // An errored turn and its result never reach the provider, nor does an aborted one.
      assistant([{ type: "toolCall", id: "call_bad", name: "add", arguments: {} }], {
        ...INFO,
        stopReason: "error",
        errorMessage: "boom"
      }),
      toolResult("call_bad", "add", [{ type: "text", text: "not run" }], true),
      assistant([{ type: "text", text: "partial" }], { ...INFO, stopReason: "aborted", errorMessage: "aborted" }),
      user("And now?"),
      // Another model's turn: reasoning becomes text, signatures are not sent, redacted reasoning is dropped.
      assistant([
        { type: "thinking", thinking: "Other model thoughts", thinkingSignature: "sig" },
        { type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque", redacted: true },
        { type: "text", text: "Answer.", textSignature: "other-sig" },
        { type: "toolCall", id: "toolu_3", name: "add", arguments: { a: 5, b: 5 }, thoughtSignature: "other" }
      ], { api: "anthropic-messages", provider: "anthropic", model: "claude" }),
      // toolu_3 has no result: one is made up before the next user message.
      user("Stop.")
    ]
    const wire = Gemini.toContents(messages, INFO)
    const image = { inlineData: { mimeType: "image/png", data: PNG } }
    expect(wire).toEqual([
      { role: "user", parts: [{ text: "What is in this picture?" }] },
      { role: "user", parts: [{ text: "Look:" }, image] },
      {
        role: "model",
        parts: [
          { text: "Hmm.", thought: true, thoughtSignature: "sig-think" },
          { text: "Let me check.", thoughtSignature: "sig-text" },
          { functionCall: { name: "read", args: { path: "a.png" } }, thoughtSignature: SIGNATURE },
          { functionCall: { name: "add", args: { a: 1, b: 2 } } }
        ]
      },
      {
        role: "user",
        parts: [
          { functionResponse: { name: "read", response: { output: "an image:" } } },
          { functionResponse: { name: "add", response: { error: "failed: bad input" } } }
        ]
      },
      { role: "user", parts: [{ text: "Attached image(s) from tool result:" }, image] },
      { role: "user", parts: [{ text: "And now?" }] },
      {
        role: "model",
        parts: [{ text: "Other model thoughts" }, { text: "Answer." }, {
          functionCall: { name: "add", args: { a: 5, b: 5 } }
        }]
      },
      { role: "user", parts: [{ functionResponse: { name: "add", response: { error: "No result provided" } } }] },
      { role: "user", parts: [{ text: "Stop." }] }
    ])
    for (const content of wire) Schema.decodeUnknownSync(Gemini.Content)(content)
    // Every call sent is answered in the next turn, in order.
    const calls = wire.flatMap((c) => c.parts.flatMap((p) => "functionCall" in p ? [p.functionCall.name] : []))
    const answers = wire.flatMap((c) =>
      c.parts.flatMap((p) => "functionResponse" in p ? [p.functionResponse.name] : [])
    )
    expect(answers).toEqual(calls)
  })

  it("on Gemini 3, a turn whose first call has no signature of its own gets the documented skip value there only", () => {
    const info = { ...INFO, model: "gemini-3-pro-preview" }
    const wire = Gemini.toContents([
      user("go"),
      // Another model's parallel calls: none is signed.
      assistant([
        { type: "toolCall", id: "toolu_1", name: "add", arguments: {} },
        { type: "toolCall", id: "toolu_2", name: "add", arguments: { a: 1 } }
      ], { api: "anthropic-messages", provider: "anthropic", model: "claude" }),
      toolResult("toolu_1", "add", [{ type: "text", text: "0" }]),
      toolResult("toolu_2", "add", [{ type: "text", text: "1" }]),
      // Gemini's own parallel calls: only the first is signed, and the rest stay unsigned.
      assistant([
        { type: "toolCall", id: "c1", name: "add", arguments: {}, thoughtSignature: SIGNATURE },
        { type: "toolCall", id: "c2", name: "add", arguments: {} }
      ], info),
      toolResult("c1", "add", [{ type: "text", text: "0" }]),
      toolResult("c2", "add", [{ type: "text", text: "0" }])
    ], info)
    expect(wire[1]).toEqual({
      role: "model",
      parts: [
        { functionCall: { name: "add", args: {} }, thoughtSignature: Gemini.SKIP_SIGNATURE },
        { functionCall: { name: "add", args: { a: 1 } } }
      ]
    })
    expect(wire[3]).toEqual({
      role: "model",
      parts: [{ functionCall: { name: "add", args: {} }, thoughtSignature: SIGNATURE }, {
        functionCall: { name: "add", args: {} }
      }]
    })
    // Gemini 2.5 gets no made-up signature.
    const older = Gemini.toContents([
      user("go"),
      assistant([{ type: "toolCall", id: "toolu_1", name: "add", arguments: {} }], {
        api: "anthropic-messages",
        provider: "anthropic",
        model: "claude"
      })
    ], INFO)
    expect(older[1]).toEqual({ role: "model", parts: [{ functionCall: { name: "add", args: {} } }] })
  })
})

describe("Gemini: faults", () => {
  it.live("a rejected key (HTTP 400, API_KEY_INVALID) is an auth error that never shows the key", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([{
        status: 400,
        body: JSON.stringify({
          error: {
            code: 400,
            message: `API key not valid. Please pass a valid API key. (${KEY})`,
            status: "INVALID_ARGUMENT",
            details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID" }]
          }
        })
      }])
      const error = failureOf(exit)
      expect(error.reason).toBe("auth")
      expect(error.status).toBe(400)
      expect(error.message).toContain("API key not valid")
      expect(JSON.stringify(error)).not.toContain(KEY)
      expect(server.requests).toHaveLength(1)
    }))

  it.live("another HTTP 400 stays an http error with the server's message", () =>
    Effect.gen(function*() {
      const { exit } = yield* runWith([{
        status: 400,
        body: JSON.stringify({
          error: { code: 400, message: "Invalid JSON payload received.", status: "INVALID_ARGUMENT" }
        })
      }])
      const error = failureOf(exit)
      expect(error.reason).toBe("http")
      expect(error.message).toContain("Invalid JSON payload received.")
    }))

  it.live("an HTTP 429 (RESOURCE_EXHAUSTED) is a rate-limit error, retried", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([
        {
          status: 429,
          body: JSON.stringify({
            error: { code: 429, message: "Resource has been exhausted", status: "RESOURCE_EXHAUSTED" }
          })
        },
        { body: geminiSse(geminiText("after")) }
      ])
      expect(checkProtocol(successOf(exit)).content).toEqual([{
        type: "text",
        text: "after",
        textSignature: SIGNATURE
      }])
      expect(server.requests).toHaveLength(2)
    }))

  it.live("an error in the stream, a stream cut before its finish reason, and malformed JSON are typed errors", () =>
    Effect.gen(function*() {
      const streamed = geminiSse([geminiChunk([{ text: "x" }]), {
        error: { code: 500, message: "Internal error", status: "INTERNAL" }
      }])
      const streamError = failureOf((yield* runWith([{ body: streamed }])).exit)
      expect(streamError.reason).toBe("stream")
      expect(streamError.message).toContain("Internal error (INTERNAL)")
      const cut = failureOf((yield* runWith([{ body: geminiSse([geminiChunk([{ text: "cut sh" }])]) }])).exit)
      expect(cut.reason).toBe("stream")
      expect(cut.message).toMatch(/ended before the response was complete/)
      const malformed = failureOf(
        (yield* runWith([{ body: `${geminiSse([geminiChunk([{ text: "x" }])])}data: {"candidates": [\r\n\r\n` }])).exit
      )
      expect(malformed.reason).toBe("decode")
      const wrongShape = failureOf(
        (yield* runWith([{ body: geminiSse([{ candidates: [{ content: { parts: [{ text: 42 }] } }] }]) }])).exit
      )
      expect(wrongShape.reason).toBe("decode")
    }))
})

describe("Gemini: configuration", () => {
  it.live("layerConfig reads GEMINI_API_KEY, GEMINI_MODEL and GEMINI_BASE_URL", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: geminiSse(geminiText()) }]
      const layer = Gemini.layerConfig().pipe(
        Layer.provide(FetchHttpClient.layer),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({
          env: { GEMINI_BASE_URL: `${server.url}/v1beta`, GEMINI_API_KEY: KEY, GEMINI_MODEL: "gemini-env" }
        })))
      )
      const info = yield* Model.use((model) => Effect.succeed(model.info)).pipe(Effect.provide(layer))
      expect(info).toEqual({ api: "google-generative-ai", provider: "google", model: "gemini-env" })
      yield* collect(request([user("hi")])).pipe(Effect.provide(layer))
      expect(server.requests[0]!.url).toBe("/v1beta/models/gemini-env:streamGenerateContent?alt=sse")
      expect(server.requests[0]!.headers["x-goog-api-key"]).toBe(KEY)
    }))

  it.effect("the key is read as Redacted; a missing key or model is a ConfigError", () =>
    Effect.gen(function*() {
      const options = yield* Gemini.config.pipe(
        Effect.provide(
          ConfigProvider.layer(ConfigProvider.fromEnv({ env: { GEMINI_API_KEY: KEY, GEMINI_MODEL: "m" } }))
        )
      )
      expect(options.baseUrl).toBe(Gemini.DEFAULT_BASE_URL)
      assert.isTrue(Redacted.isRedacted(options.apiKey))
      expect(JSON.stringify(options)).not.toContain(KEY)
      for (const env of [{ GEMINI_MODEL: "m" }, { GEMINI_API_KEY: KEY }]) {
        const missing = yield* Effect.flip(
          Gemini.config.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))
        )
        expect(missing._tag).toBe("ConfigError")
      }
    }))
})

describe("Gemini: end to end", () => {
  const Add = Tool.make("add", {
    description: "Add two numbers",
    parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number })
  })
  const Echo = Tool.make("echo", { description: "Echo a text", parameters: Schema.Struct({ text: Schema.String }) })
  const tools = ToolRegistry.layer(Add, Echo).pipe(Layer.provide([
    Add.toLayer(({ a, b }) => Effect.succeed(Tool.textResult(String(a + b)))),
    Echo.toLayer(({ text }) => Effect.succeed(Tool.textResult(text.toUpperCase())))
  ]))

  it.live("the calls run through executeToolCalls and the next request sends the signed turn and the results", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: fullBody, chunkSize: 97 }, { body: geminiSse(geminiText("The sum is 42.")) }]
      const layer = layerFor(server)
      const first = yield* collect(request([user("add 2 and 40, echo naïve")])).pipe(Effect.provide(layer))
      const done = first[first.length - 1]!
      assert.strictEqual(done.type, "done")
      if (done.type !== "done") return
      const batch = yield* executeToolCalls(done.message).pipe(Effect.provide(tools))
      expect(batch.messages.map((m) => [m.toolCallId, m.isError, m.content])).toEqual([
        ["call_resp_g1_0", false, [{ type: "text", text: "42" }]],
        ["call_resp_g1_1", false, [{ type: "text", text: "NAÏVE ✓ 日本" }]]
      ])
      const second = yield* collect(request([user("add 2 and 40, echo naïve"), done.message, ...batch.messages])).pipe(
        Effect.provide(layer)
      )
      expect(checkProtocol(second).content).toEqual([{
        type: "text",
        text: "The sum is 42.",
        textSignature: SIGNATURE
      }])
      expect(server.requests[1]!.body.contents.slice(1)).toEqual([
        {
          role: "model",
          parts: [
            { text: "I need to add… 🤔 then echo", thought: true },
            { text: "Héllo wörld 🌍!" },
            { functionCall: { name: "add", args: { a: 2, b: 40 } }, thoughtSignature: SIGNATURE },
            { functionCall: { name: "echo", args: { text: "naïve ✓ 日本" } } }
          ]
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "add", response: { output: "42" } } },
            { functionResponse: { name: "echo", response: { output: "NAÏVE ✓ 日本" } } }
          ]
        }
      ])
    }))
})

describe("Gemini: live", () => {
  const env = process.env
  it.live.skipIf(!env.GEMINI_API_KEY)(
    "answers a prompt against Gemini (GEMINI_API_KEY, GEMINI_MODEL, GEMINI_BASE_URL)",
    () =>
      Effect.gen(function*() {
        const events = yield* collect(
          request([user("Reply with the single word: pong")], { options: { maxTokens: 400 } })
        ).pipe(
          Effect.provide(
            Gemini.layer({
              baseUrl: env.GEMINI_BASE_URL ?? Gemini.DEFAULT_BASE_URL,
              apiKey: Redacted.make(env.GEMINI_API_KEY!),
              model: env.GEMINI_MODEL ?? "gemini-2.5-flash"
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
