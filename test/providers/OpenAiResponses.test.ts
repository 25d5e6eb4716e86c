import { assert, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Redacted, Schema, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import type { AssistantMessageEvent } from "../../src/AssistantMessageEvent.ts"
import type { AssistantMessage, Message } from "../../src/Message.ts"
import { Model, ModelError, type ModelRequest } from "../../src/Model.ts"
import * as OpenAiResponses from "../../src/providers/OpenAiResponses.ts"
import * as Tool from "../../src/Tool.ts"
import { executeToolCalls } from "../../src/ToolExecution.ts"
import { ToolRegistry } from "../../src/ToolRegistry.ts"
import { addTool, assistant, PNG, request, toolResult, user } from "./support/fixtures.ts"
import { checkProtocol, eventShape } from "./support/protocol.ts"
import {
  completed,
  created,
  ENCRYPTED,
  failed,
  incomplete,
  itemAdded,
  itemDone,
  MODEL_VERSION,
  responsesFullEvents,
  responsesSse,
  responsesText,
  textDelta,
  usage
} from "./support/responsesFixtures.ts"
import { bytesIn, memoryClient, type Reply, startServer, type TestServer } from "./support/server.ts"

const KEY = "sk-test-SECRET-key-0123456789"
const MODEL = "gpt-5-mini"
const INFO = { api: "openai-responses", provider: "openai", model: MODEL }

const layerFor = (server: TestServer, overrides: Partial<OpenAiResponses.Options> = {}) =>
  OpenAiResponses.layer({
    model: MODEL,
    baseUrl: `${server.url}/v1`,
    apiKey: Redacted.make(KEY),
    retry: { times: 2, baseDelay: 5 },
    idleTimeout: "3 seconds",
    ...overrides
  }).pipe(Layer.provide(FetchHttpClient.layer))

const collect = (req: ModelRequest) => Model.use((model) => Stream.runCollect(model.stream(req)))

const runWith = (
  replies: Array<Reply>,
  req: ModelRequest = request([user("hi")]),
  overrides: Partial<OpenAiResponses.Options> = {}
) =>
  Effect.gen(function*() {
    const server = yield* startServer
    server.replies = replies
    const exit = yield* Effect.exit(collect(req).pipe(Effect.provide(layerFor(server, overrides))))
    return { server, exit }
  })

const inMemory = (body: string, size: number, model = MODEL) =>
  OpenAiResponses.layer({ model, baseUrl: "http://memory/v1" }).pipe(
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

const reasoningSignature = JSON.stringify({
  type: "reasoning",
  id: "rs_01",
  summary: [{ type: "summary_text", text: "**Adding** numbers… 🤔" }, { type: "summary_text", text: "Then echo." }],
  encrypted_content: ENCRYPTED
})

const expectedFullContent: AssistantMessage["content"] = [
  { type: "thinking", thinking: "**Adding** numbers… 🤔\n\nThen echo.", thinkingSignature: reasoningSignature },
  { type: "text", text: "Héllo wörld 🌍!", textSignature: "msg_01" },
  { type: "toolCall", id: "call_a", name: "add", arguments: { a: 2, b: 40 }, thoughtSignature: "fc_01" },
  { type: "toolCall", id: "call_b", name: "echo", arguments: { text: "naïve ✓ 日本" }, thoughtSignature: "fc_02" }
]

const fullBody = responsesSse(responsesFullEvents)

const checkFull = (events: ReadonlyArray<AssistantMessageEvent>) => {
  const message = checkProtocol(events)
  expect(message.content).toEqual(expectedFullContent)
  expect(message.stopReason).toBe("toolUse")
  expect(message.usage).toMatchObject({ input: 70, output: 20, cacheRead: 30, cacheWrite: 0, totalTokens: 120 })
  expect(message.responseId).toBe("resp_01")
  expect(message.responseModel).toBe(MODEL_VERSION)
  expect(message).toMatchObject(INFO)
  return message
}

describe("OpenAiResponses: streaming", () => {
  it.live("streams reasoning, text and function calls, with usage, cut at awkward byte boundaries", () =>
    Effect.gen(function*() {
      const { exit } = yield* runWith([{ body: fullBody, chunkSize: 37 }])
      const events = successOf(exit)
      checkFull(events)
      expect(eventShape(events)).toEqual([
        "start",
        "thinking_start:0",
        "thinking_delta:0",
        "thinking_delta:0",
        "thinking_delta:0",
        "thinking_end:0",
        "text_start:1",
        "text_delta:1",
        "text_delta:1",
        "text_end:1",
        "toolcall_start:2",
        "toolcall_delta:2",
        "toolcall_delta:2",
        "toolcall_end:2",
        "toolcall_start:3",
        "toolcall_delta:3",
        "toolcall_delta:3",
        "toolcall_end:3",
        "done"
      ])
      // Partial arguments parse as they stream.
      const firstArgs = events.find((e) => e.type === "toolcall_delta" && e.contentIndex === 2)!
      expect(firstArgs.type === "toolcall_delta" && firstArgs.partial.content[2]).toMatchObject({ arguments: { a: 2 } })
    }))

  it.effect.each([1, 2, 3, 5, 64])(
    "decodes the stream whatever the chunk size (%s bytes, in memory)",
    (size) =>
      Effect.gen(function*() {
        checkFull(yield* collect(request([user("hi")])).pipe(Effect.provide(inMemory(fullBody, size))))
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
        const layer = OpenAiResponses.layer({ model: MODEL, baseUrl: "http://memory/v1", apiKey: Redacted.make(KEY) })
          .pipe(
            Layer.provide(memoryClient(() => ({ chunks })))
          )
        checkFull(yield* collect(request([user("hi")])).pipe(Effect.provide(layer)))
      }),
    { arbitrary: { runs: 25 } }
  )

  it.effect("a catalogued model's message carries its cost", () =>
    Effect.gen(function*() {
      const message = checkFull(yield* collect(request([user("hi")])).pipe(Effect.provide(inMemory(fullBody, 64))))
      // gpt-5-mini: $0.25 in, $0.025 cached, $2 out per million.
      expect(message.usage.cost.total).toBeCloseTo((70 * 0.25 + 30 * 0.025 + 20 * 2) / 1_000_000, 12)
    }))

  it.effect("skips events it does not read, and takes text and arguments that only come whole", () =>
    Effect.gen(function*() {
      const body = responsesSse([
        created,
        { type: "response.web_search_call.in_progress", output_index: 0, item_id: "ws_1" },
        itemAdded(0, { id: "msg_w", type: "message", status: "in_progress", role: "assistant", content: [] }),
        itemDone(0, {
          id: "msg_w",
          type: "message",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "whole", annotations: [] }]
        }),
        itemDone(1, {
          id: "fc_w",
          type: "function_call",
          status: "completed",
          call_id: "call_w",
          name: "add",
          arguments: "{\"a\":1,\"b\":2}"
        }),
        completed(usage(3, 4))
      ])
      const message = checkProtocol(yield* collect(request([user("hi")])).pipe(Effect.provide(inMemory(body, 9))))
      expect(message.content).toEqual([
        { type: "text", text: "whole", textSignature: "msg_w" },
        { type: "toolCall", id: "call_w", name: "add", arguments: { a: 1, b: 2 }, thoughtSignature: "fc_w" }
      ])
      expect(message.stopReason).toBe("toolUse")
    }))

  it.live("maps the end of a response: completed, incomplete for length, content filter", () =>
    Effect.gen(function*() {
      const stop = successOf((yield* runWith([{ body: responsesSse(responsesText("a")) }])).exit)
      expect(checkProtocol(stop).stopReason).toBe("stop")
      const length = successOf(
        (yield* runWith([{ body: responsesSse(responsesText("a", incomplete("max_output_tokens"))) }])).exit
      )
      const lengthEnd = length[length.length - 1]!
      expect(lengthEnd.type === "done" && lengthEnd.reason).toBe("length")
      const filtered = successOf(
        (yield* runWith([{ body: responsesSse(responsesText("a", incomplete("content_filter"))) }])).exit
      )
      const filteredEnd = filtered[filtered.length - 1]!
      assert.strictEqual(filteredEnd.type, "error")
      if (filteredEnd.type === "error") {
        expect(filteredEnd.error.stopReason).toBe("error")
        expect(filteredEnd.error.errorMessage).toMatch(/content filter/)
        expect(filteredEnd.error.content).toEqual([{ type: "text", text: "a", textSignature: "msg_t" }])
      }
    }))
})

describe("OpenAiResponses: the request", () => {
  it.live("posts to /responses with the key, stateless, asking for encrypted reasoning, with tools and options", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith(
        [{ body: responsesSse(responsesText()) }],
        request([user("hi")], {
          systemPrompt: "Be brief.",
          tools: [addTool],
          options: { maxTokens: 300, temperature: 0.2, thinkingLevel: "medium" }
        })
      )
      successOf(exit)
      const [recorded] = server.requests
      expect(recorded!.method).toBe("POST")
      expect(recorded!.url).toBe("/v1/responses")
      expect(recorded!.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(recorded!.headers.accept).toBe("text/event-stream")
      expect(recorded!.body).toEqual({
        model: MODEL,
        input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
        instructions: "Be brief.",
        stream: true,
        store: false,
        include: ["reasoning.encrypted_content"],
        tools: [{
          type: "function",
          name: "add",
          description: addTool.description,
          parameters: addTool.parameters,
          strict: false
        }],
        max_output_tokens: 300,
        temperature: 0.2,
        reasoning: { effort: "medium", summary: "auto" }
      })
      Schema.decodeUnknownSync(OpenAiResponses.ResponsesRequest)(recorded!.body)
    }))

  it.effect("a model that does not reason is not asked for encrypted reasoning; no key, no Authorization", () =>
    Effect.gen(function*() {
      const seen: Array<{ url: string; body: any }> = []
      const layer = OpenAiResponses.layer({ model: "gpt-4.1", baseUrl: "http://memory/v1/" }).pipe(
        Layer.provide(memoryClient((req) => {
          seen.push(req)
          return { chunks: bytesIn(responsesSse(responsesText()), 50) }
        }))
      )
      yield* collect(request([user("x")])).pipe(Effect.provide(layer))
      expect(seen[0]!.url).toBe("http://memory/v1/responses")
      expect(seen[0]!.body.include).toBeUndefined()
      expect(seen[0]!.body.reasoning).toBeUndefined()
      expect(seen[0]!.body.store).toBe(false)
      // Which models reason, by id.
      const includes = OpenAiResponses.isReasoningModel
      expect(
        ["o3", "o4-mini", "gpt-5", "gpt-5.1-codex", "openai/gpt-oss-120b", "codex-mini-latest"].filter((m) =>
          !includes(m)
        )
      ).toEqual([])
      expect(["gpt-4.1", "gpt-4o-mini", "gpt-5-chat-latest", "gpt-5.1-chat-latest"].filter((m) => includes(m))).toEqual(
        []
      )
    }))

  it("converts every message kind to input items", () => {
    const messages: Array<Message> = [
      user("What is in this picture?"),
      user([{ type: "text", text: "Look:" }, { type: "image", data: PNG, mimeType: "image/png" }]),
      // This model's own turn: reasoning, text and calls go back as the items they were, ids included.
      assistant([
        { type: "thinking", thinking: "Hmm.", thinkingSignature: reasoningSignature },
        { type: "text", text: "Let me check.", textSignature: "msg_01" },
        { type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.png" }, thoughtSignature: "fc_01" },
        { type: "toolCall", id: "call_2", name: "add", arguments: { a: 1, b: 2 }, thoughtSignature: "fc_02" }
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
      // Another model's turn: its reasoning is context (text), no item ids; redacted reasoning is dropped.
      assistant([
        { type: "thinking", thinking: "Other model thoughts", thinkingSignature: "sig" },
        { type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque", redacted: true },
        { type: "text", text: "Answer.", textSignature: "msg_other" },
        { type: "toolCall", id: "toolu_3", name: "add", arguments: { a: 5, b: 5 } }
      ], { api: "anthropic-messages", provider: "anthropic", model: "claude" }),
      // toolu_3 has no result: one is made up before the next user message.
      user("Stop."),
      // This model's turn whose reasoning has no encrypted content (nothing to send back): no ids either.
      assistant([
        {
          type: "thinking",
          thinking: "plain",
          thinkingSignature: JSON.stringify({ type: "reasoning", id: "rs_9", summary: [] })
        },
        { type: "text", text: "Done.", textSignature: "msg_9" },
        // A call as pi records it: `call_id|item_id`.
        { type: "toolCall", id: "call_9|fc_9", name: "add", arguments: {} }
      ], INFO),
      toolResult("call_9|fc_9", "add", []),
      // A turn as pi records it: the message id as JSON in the text's signature, the call's item id after `|`.
      assistant([
        {
          type: "thinking",
          thinking: "",
          thinkingSignature: JSON.stringify({ id: "rs_p", type: "reasoning", summary: [], encrypted_content: "enc" })
        },
        { type: "text", text: "From pi.", textSignature: JSON.stringify({ v: 1, id: "msg_p" }) },
        { type: "toolCall", id: "call_p|fc_p", name: "add", arguments: { a: 1, b: 1 } }
      ], INFO),
      toolResult("call_p|fc_p", "add", [{ type: "text", text: "2" }])
    ]
    const wire = OpenAiResponses.toInputItems(messages, INFO)
    const image = { type: "input_image", image_url: `data:image/png;base64,${PNG}`, detail: "auto" }
    expect(wire).toEqual([
      { type: "message", role: "user", content: [{ type: "input_text", text: "What is in this picture?" }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Look:" }, image] },
      {
        type: "reasoning",
        id: "rs_01",
        summary: [{ type: "summary_text", text: "**Adding** numbers… 🤔" }, {
          type: "summary_text",
          text: "Then echo."
        }],
        encrypted_content: ENCRYPTED
      },
      {
        type: "message",
        role: "assistant",
        id: "msg_01",
        status: "completed",
        content: [{ type: "output_text", text: "Let me check.", annotations: [] }]
      },
      { type: "function_call", id: "fc_01", call_id: "call_1", name: "read", arguments: "{\"path\":\"a.png\"}" },
      { type: "function_call", id: "fc_02", call_id: "call_2", name: "add", arguments: "{\"a\":1,\"b\":2}" },
      { type: "function_call_output", call_id: "call_1", output: "an image:" },
      { type: "function_call_output", call_id: "call_2", output: "failed: bad input" },
      {
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: "Attached image(s) from tool result:" }, image]
      },
      { type: "message", role: "user", content: [{ type: "input_text", text: "And now?" }] },
      { type: "message", role: "assistant", content: "Other model thoughts" },
      { type: "message", role: "assistant", content: "Answer." },
      { type: "function_call", call_id: "toolu_3", name: "add", arguments: "{\"a\":5,\"b\":5}" },
      { type: "function_call_output", call_id: "toolu_3", output: "No result provided" },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Stop." }] },
      { type: "message", role: "assistant", content: "Done." },
      { type: "function_call", call_id: "call_9", name: "add", arguments: "{}" },
      { type: "function_call_output", call_id: "call_9", output: "(no output)" },
      { type: "reasoning", id: "rs_p", summary: [], encrypted_content: "enc" },
      {
        type: "message",
        role: "assistant",
        id: "msg_p",
        status: "completed",
        content: [{ type: "output_text", text: "From pi.", annotations: [] }]
      },
      { type: "function_call", id: "fc_p", call_id: "call_p", name: "add", arguments: "{\"a\":1,\"b\":1}" },
      { type: "function_call_output", call_id: "call_p", output: "2" }
    ])
    for (const item of wire) Schema.decodeUnknownSync(OpenAiResponses.InputItem)(item)
    // Every call sent is answered, and every answer follows its call.
    const calls = wire.flatMap((item) => item.type === "function_call" ? [item.call_id] : [])
    const answers = wire.flatMap((item) => item.type === "function_call_output" ? [item.call_id] : [])
    expect(answers).toEqual(calls)
  })
})

describe("OpenAiResponses: faults", () => {
  it.live("an HTTP 401 is an auth error and never shows the key", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runWith([{
        status: 401,
        body: JSON.stringify({
          error: {
            message: `Incorrect API key provided: ${KEY}.`,
            type: "invalid_request_error",
            code: "invalid_api_key"
          }
        })
      }])
      const error = failureOf(exit)
      expect(error.reason).toBe("auth")
      expect(error.message).toContain("Incorrect API key provided")
      expect(JSON.stringify(error)).not.toContain(KEY)
      expect(server.requests).toHaveLength(1)
    }))

  it.live("response.failed is a stream error with the server's message", () =>
    Effect.gen(function*() {
      const body = responsesSse([
        created,
        itemAdded(0, { id: "m", type: "message", role: "assistant", content: [] }),
        textDelta("m", 0, "x"),
        failed("server_error", "The model crashed")
      ])
      const error = failureOf((yield* runWith([{ body }])).exit)
      expect(error.reason).toBe("stream")
      expect(error.message).toContain("The model crashed (server_error)")
    }))

  it.live("an error event is a stream error with its message", () =>
    Effect.gen(function*() {
      const body = responsesSse([created, {
        type: "error",
        code: "rate_limit_exceeded",
        message: "Slow down",
        param: null
      }])
      const error = failureOf((yield* runWith([{ body }])).exit)
      expect(error.reason).toBe("stream")
      expect(error.message).toContain("Slow down (rate_limit_exceeded)")
    }))

  it.live("a stream that ends before response.completed is an error", () =>
    Effect.gen(function*() {
      const body = responsesSse(responsesText("cut").slice(0, -1))
      const error = failureOf((yield* runWith([{ body }])).exit)
      expect(error.reason).toBe("stream")
      expect(error.message).toMatch(/ended before the response was complete/)
    }))

  it.live("malformed JSON and events of the wrong shape are decode errors", () =>
    Effect.gen(function*() {
      const malformed = responsesSse([created]) +
        "event: response.output_text.delta\ndata: {\"type\": \"response.output\n\n"
      expect(failureOf((yield* runWith([{ body: malformed }])).exit).reason).toBe("decode")
      const wrongShape = responsesSse([created, { type: "response.output_text.delta", output_index: 0, delta: 42 }])
      const error = failureOf((yield* runWith([{ body: wrongShape }])).exit)
      expect(error.reason).toBe("decode")
      expect(error.message).toMatch(/could not decode/)
    }))
})

describe("OpenAiResponses: configuration", () => {
  it.live("layerConfig reads OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: responsesSse(responsesText()) }]
      const layer = OpenAiResponses.layerConfig().pipe(
        Layer.provide(FetchHttpClient.layer),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({
          env: { OPENAI_BASE_URL: `${server.url}/api/v1`, OPENAI_API_KEY: KEY, OPENAI_MODEL: "env-model" }
        })))
      )
      const info = yield* Model.use((model) => Effect.succeed(model.info)).pipe(Effect.provide(layer))
      expect(info).toEqual({ api: "openai-responses", provider: "openai", model: "env-model" })
      yield* collect(request([user("hi")])).pipe(Effect.provide(layer))
      expect(server.requests[0]!.url).toBe("/api/v1/responses")
      expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(server.requests[0]!.body.model).toBe("env-model")
    }))

  it.effect("a missing model is a ConfigError", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(OpenAiResponses.config.pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { OPENAI_API_KEY: KEY } })))
      ))
      expect(missing._tag).toBe("ConfigError")
    }))
})

describe("OpenAiResponses: end to end", () => {
  const Add = Tool.make("add", {
    description: "Add two numbers",
    parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number })
  })
  const Echo = Tool.make("echo", { description: "Echo a text", parameters: Schema.Struct({ text: Schema.String }) })
  const tools = ToolRegistry.layer(Add, Echo).pipe(Layer.provide([
    Add.toLayer(({ a, b }) => Effect.succeed(Tool.textResult(String(a + b)))),
    Echo.toLayer(({ text }) => Effect.succeed(Tool.textResult(text.toUpperCase())))
  ]))

  it.live("the calls run through executeToolCalls and the next request replays the reasoning with its items", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: fullBody, chunkSize: 97 }, { body: responsesSse(responsesText("The sum is 42.")) }]
      const layer = layerFor(server)
      const first = yield* collect(request([user("add 2 and 40, echo naïve")])).pipe(Effect.provide(layer))
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
      expect(checkProtocol(second).content).toEqual([{ type: "text", text: "The sum is 42.", textSignature: "msg_t" }])
      expect(server.requests[1]!.body.input.slice(1)).toEqual([
        {
          type: "reasoning",
          id: "rs_01",
          summary: [{ type: "summary_text", text: "**Adding** numbers… 🤔" }, {
            type: "summary_text",
            text: "Then echo."
          }],
          encrypted_content: ENCRYPTED
        },
        {
          type: "message",
          role: "assistant",
          id: "msg_01",
          status: "completed",
          content: [{ type: "output_text", text: "Héllo wörld 🌍!", annotations: [] }]
        },
        { type: "function_call", id: "fc_01", call_id: "call_a", name: "add", arguments: "{\"a\":2,\"b\":40}" },
        {
          type: "function_call",
          id: "fc_02",
          call_id: "call_b",
          name: "echo",
          arguments: "{\"text\":\"naïve ✓ 日本\"}"
        },
        { type: "function_call_output", call_id: "call_a", output: "42" },
        { type: "function_call_output", call_id: "call_b", output: "NAÏVE ✓ 日本" }
      ])
    }))
})

describe("OpenAiResponses: live", () => {
  const env = process.env
  it.live.skipIf(!env.OPENAI_API_KEY)(
    "answers a prompt against OpenAI (OPENAI_API_KEY, OPENAI_RESPONSES_MODEL, OPENAI_BASE_URL)",
    () =>
      Effect.gen(function*() {
        const events = yield* collect(
          request([user("Reply with the single word: pong")], { options: { maxTokens: 400 } })
        ).pipe(
          Effect.provide(
            OpenAiResponses.layer({
              baseUrl: env.OPENAI_BASE_URL ?? OpenAiResponses.DEFAULT_BASE_URL,
              apiKey: Redacted.make(env.OPENAI_API_KEY!),
              model: env.OPENAI_RESPONSES_MODEL ?? "gpt-5-mini"
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
