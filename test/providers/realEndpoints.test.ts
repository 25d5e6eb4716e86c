/**
 * What real endpoints do that the happy path does not (issue 11, items 1-6): prompt caching, retries that
 * listen to the server, SSE `retry:` fields, errors in the server's own words, partial content on a
 * failure, tool calls assembled by index, and no tracing headers sent to third parties.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import type { AssistantMessageEvent } from "../../src/AssistantMessageEvent.ts"
import type { AssistantMessage } from "../../src/Message.ts"
import { Model, ModelError, type ModelRequest } from "../../src/Model.ts"
import * as Anthropic from "../../src/providers/Anthropic.ts"
import * as OpenAiCompatible from "../../src/providers/OpenAiCompatible.ts"
import {
  addTool,
  anthropicSse,
  anthropicText,
  assistant,
  blockDelta,
  blockStart,
  blockStop,
  chunk,
  messageDelta,
  messageStart,
  messageStop,
  openAiSse,
  openAiTextStream,
  ping,
  request,
  toolResult,
  user
} from "./support/fixtures.ts"
import { checkProtocol } from "./support/protocol.ts"
import { bytesIn, memoryClient, type Reply, startServer, type TestServer } from "./support/server.ts"

const KEY = "sk-test-SECRET-key-0123456789"

const openAiLayer = (server: TestServer, overrides: Partial<OpenAiCompatible.Options> = {}) =>
  OpenAiCompatible.layer({
    model: "test-model",
    baseUrl: `${server.url}/v1`,
    apiKey: Redacted.make(KEY),
    retry: { times: 2, baseDelay: 5 },
    idleTimeout: "3 seconds",
    ...overrides
  }).pipe(Layer.provide(FetchHttpClient.layer))

const anthropicLayer = (server: TestServer, overrides: Partial<Anthropic.Options> = {}) =>
  Anthropic.layer({
    model: "claude-test",
    baseUrl: server.url,
    apiKey: Redacted.make(KEY),
    retry: { times: 2, baseDelay: 5 },
    idleTimeout: "3 seconds",
    ...overrides
  }).pipe(Layer.provide(FetchHttpClient.layer))

const collect = (req: ModelRequest) => Model.use((model) => Stream.runCollect(model.stream(req)))

const runOpenAi = (
  replies: Array<Reply>,
  req: ModelRequest = request([user("hi")]),
  overrides: Partial<OpenAiCompatible.Options> = {}
) =>
  Effect.gen(function*() {
    const server = yield* startServer
    server.replies = replies
    const exit = yield* Effect.exit(collect(req).pipe(Effect.provide(openAiLayer(server, overrides))))
    return { server, exit }
  })

const runAnthropic = (
  replies: Array<Reply>,
  req: ModelRequest = request([user("hi")]),
  overrides: Partial<Anthropic.Options> = {}
) =>
  Effect.gen(function*() {
    const server = yield* startServer
    server.replies = replies
    const exit = yield* Effect.exit(collect(req).pipe(Effect.provide(anthropicLayer(server, overrides))))
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

const finalMessage = (events: ReadonlyArray<AssistantMessageEvent>): AssistantMessage => {
  const last = events[events.length - 1]!
  if (last.type === "done") return last.message
  if (last.type === "error") return last.error
  throw new Error(`the stream did not end with done/error but ${last.type}`)
}

const EPHEMERAL = { type: "ephemeral" }

/** Every `cache_control` in a request body, with the path that holds it. */
const breakpoints = (value: unknown, path = ""): Array<string> => {
  if (Array.isArray(value)) return value.flatMap((item, i) => breakpoints(item, `${path}[${i}]`))
  if (typeof value !== "object" || value === null) return []
  return Object.entries(value).flatMap(([key, inner]) =>
    key === "cache_control" ? [path] : breakpoints(inner, path === "" ? key : `${path}.${key}`)
  )
}

// ---------------------------------------------------------------------------------------------------------
// 1. Prompt caching
// ---------------------------------------------------------------------------------------------------------

describe("issue 11.1: prompt caching", () => {
  const transcript = [
    user("What is 2+40?"),
    assistant([{ type: "toolCall", id: "toolu_1", name: "add", arguments: { a: 2, b: 40 } }], {
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-test"
    }),
    toolResult("toolu_1", "add", [{ type: "text", text: "42" }])
  ]

  it.live("Anthropic: the system prompt, the last tool and the newest user turn are breakpoints; at most 4", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runAnthropic(
        [{ body: anthropicSse(anthropicText()) }],
        request(transcript, { systemPrompt: "Be brief.", tools: [addTool, { ...addTool, name: "sub" }] })
      )
      successOf(exit)
      const body = server.requests[0]!.body
      expect(breakpoints(body).sort()).toEqual(["messages[2].content[0]", "system[0]", "tools[1]"])
      expect(body.system[0].cache_control).toEqual(EPHEMERAL)
      expect(body.tools[1].cache_control).toEqual(EPHEMERAL)
      expect(body.tools[0].cache_control).toBeUndefined()
      // The newest user turn here is the tool results.
      expect(body.messages[2].content[0]).toMatchObject({ type: "tool_result", cache_control: EPHEMERAL })
      expect(body.messages[0].content).toBe("What is 2+40?")
      expect(breakpoints(body).length).toBeLessThanOrEqual(4)
    }))

  it.live("Anthropic: promptCaching false sends no cache_control; cacheTtl 1h is sent", () =>
    Effect.gen(function*() {
      const off = yield* runAnthropic(
        [{ body: anthropicSse(anthropicText()) }],
        request([user("hi")], { systemPrompt: "Be brief.", tools: [addTool] }),
        { promptCaching: false }
      )
      successOf(off.exit)
      expect(breakpoints(off.server.requests[0]!.body)).toEqual([])
      const hour = yield* runAnthropic(
        [{ body: anthropicSse(anthropicText()) }],
        request([user("hi")], { systemPrompt: "Be brief." }),
        { cacheTtl: "1h" }
      )
      successOf(hour.exit)
      expect(hour.server.requests[0]!.body.system[0].cache_control).toEqual({ type: "ephemeral", ttl: "1h" })
    }))

  it.live("Anthropic: cache reads and writes are reported in usage", () =>
    Effect.gen(function*() {
      const body = anthropicSse([
        messageStart({
          input_tokens: 12,
          output_tokens: 1,
          cache_read_input_tokens: 900,
          cache_creation_input_tokens: 300
        }),
        ...anthropicText("ok").slice(1)
      ])
      const { exit } = yield* runAnthropic([{ body }], request([user("hi")]), {
        pricing: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }
      })
      const usage = checkProtocol(successOf(exit)).usage
      expect(usage).toMatchObject({ input: 12, cacheRead: 900, cacheWrite: 300 })
      expect(usage.cost.cacheRead).toBeCloseTo(900 * 0.3 / 1e6)
      expect(usage.cost.cacheWrite).toBeCloseTo(300 * 3.75 / 1e6)
    }))

  it.effect("OpenRouter, Anthropic model: system prompt and newest user turn carry cache_control; not elsewhere", () =>
    Effect.gen(function*() {
      const seen: Array<any> = []
      const layerFor = (baseUrl: string, model: string, extra: Partial<OpenAiCompatible.Options> = {}) =>
        OpenAiCompatible.layer({ model, baseUrl, ...extra }).pipe(
          Layer.provide(memoryClient((req) => {
            seen.push(req.body)
            return { chunks: bytesIn(openAiTextStream(), 64) }
          }))
        )
      const req = request([user("first"), assistant([{ type: "text", text: "ok" }]), user("second")], {
        systemPrompt: "Be brief."
      })
      yield* collect(req).pipe(Effect.provide(layerFor("https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4.5")))
      const body = seen[0]
      expect(body.messages[0]).toEqual({
        role: "system",
        content: [{ type: "text", text: "Be brief.", cache_control: EPHEMERAL }]
      })
      expect(body.messages[3]).toEqual({
        role: "user",
        content: [{ type: "text", text: "second", cache_control: EPHEMERAL }]
      })
      expect(body.messages[1]).toEqual({ role: "user", content: "first" })
      expect(breakpoints(body)).toHaveLength(2)
      // Another OpenRouter model, or another server: nothing unless asked.
      yield* collect(req).pipe(Effect.provide(layerFor("https://openrouter.ai/api/v1", "openai/gpt-4.1")))
      expect(breakpoints(seen[1])).toEqual([])
      yield* collect(req).pipe(Effect.provide(layerFor("http://localhost:8000/v1", "anthropic/claude")))
      expect(breakpoints(seen[2])).toEqual([])
      yield* collect(req).pipe(
        Effect.provide(
          layerFor("https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4.5", { promptCaching: false })
        )
      )
      expect(breakpoints(seen[3])).toEqual([])
    }))
})

// ---------------------------------------------------------------------------------------------------------
// 2. Retries that listen to the server
// ---------------------------------------------------------------------------------------------------------

describe("issue 11.2: retries that listen to the server", () => {
  it.live("x-should-retry: false is obeyed, even on a 5xx", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runOpenAi([
        { status: 503, headers: { "x-should-retry": "false" }, body: JSON.stringify({ error: { message: "down" } }) },
        { body: openAiTextStream() }
      ])
      const error = failureOf(exit)
      expect(error.status).toBe(503)
      expect(error.retryable).toBe(false)
      expect(server.requests).toHaveLength(1)
    }))

  it.live("x-should-retry: true makes a 400 worth a retry", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runOpenAi([
        { status: 400, headers: { "x-should-retry": "true" }, body: "{}" },
        { body: openAiTextStream("ok") }
      ])
      expect(checkProtocol(successOf(exit)).content).toEqual([{ type: "text", text: "ok" }])
      expect(server.requests).toHaveLength(2)
    }))

  it.live("a 429 of type insufficient_quota is not retried and says so", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runOpenAi([{
        status: 429,
        headers: { "retry-after": "0" },
        body: JSON.stringify({
          error: {
            message: "You exceeded your current quota, please check your plan and billing details.",
            type: "insufficient_quota",
            param: null,
            code: "insufficient_quota"
          }
        })
      }, { body: openAiTextStream() }])
      const error = failureOf(exit)
      expect(error.retryable).toBe(false)
      expect(error.message).toContain("You exceeded your current quota")
      expect(error.message).toContain("insufficient_quota")
      expect(server.requests).toHaveLength(1)
      // Some servers name it only in `code`.
      const byCode = yield* runOpenAi([{
        status: 429,
        body: JSON.stringify({ error: { message: "Quota exceeded", type: "requests", code: "insufficient_quota" } })
      }, { body: openAiTextStream() }])
      expect(failureOf(byCode.exit).retryable).toBe(false)
      expect(byCode.server.requests).toHaveLength(1)
    }))

  it.live("two retries by default, like the official clients", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runOpenAi(
        [{ status: 500, body: "boom" }],
        request([user("hi")]),
        { retry: { baseDelay: 5 } }
      )
      expect(failureOf(exit).status).toBe(500)
      expect(server.requests).toHaveLength(3)
    }))

  it.live("a retry-after beyond the cap fails at once and the error says how long the server asked for", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runOpenAi(
        [{
          status: 429,
          headers: { "retry-after": "3600" },
          body: JSON.stringify({ error: { message: "slow down" } })
        }],
        request([user("hi")]),
        { retry: { times: 2, baseDelay: 5, maxDelay: "10 seconds" } }
      )
      const error = failureOf(exit)
      expect(error.message).toContain("slow down")
      expect(error.message).toMatch(/asked to wait 1h.*10s.*retry\.maxDelay/)
      expect(server.requests).toHaveLength(1)
    }))

  it.live("Anthropic: an overloaded error after message_start but before content is retried; one start is seen", () =>
    Effect.gen(function*() {
      const overloaded = anthropicSse([
        messageStart(),
        ping,
        { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } as any
      ])
      const { exit, server } = yield* runAnthropic([{ body: overloaded }, { body: anthropicSse(anthropicText("ok")) }])
      const events = successOf(exit)
      expect(checkProtocol(events).content).toEqual([{ type: "text", text: "ok" }])
      expect(events.filter((event) => event.type === "start")).toHaveLength(1)
      expect(server.requests).toHaveLength(2)
    }))

  it.live("Anthropic: an overloaded error after content is not retried", () =>
    Effect.gen(function*() {
      const body = anthropicSse([
        messageStart(),
        blockStart(0, { type: "text", text: "" }),
        blockDelta(0, { type: "text_delta", text: "Hel" }),
        { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } as any
      ])
      const { exit, server } = yield* runAnthropic([{ body }, { body: anthropicSse(anthropicText("ok")) }])
      expect(failureOf(exit).message).toContain("Overloaded")
      expect(server.requests).toHaveLength(1)
    }))
})

// ---------------------------------------------------------------------------------------------------------
// 3. SSE retry: fields
// ---------------------------------------------------------------------------------------------------------

describe("issue 11.3: an SSE retry: field is a hint, not a failure", () => {
  it.effect.each([1, 3, 7, 64, 4096])("OpenAI-compatible, %s-byte chunks", (size) =>
    Effect.gen(function*() {
      const body = `retry: 3000\n\n${openAiSse([chunk({ content: "Hel" })], false)}retry: 10\n${
        openAiSse([chunk({ content: "lo" }), chunk({}, "stop")])
      }`
      const events = yield* collect(request([user("hi")])).pipe(
        Effect.provide(
          OpenAiCompatible.layer({ model: "m", baseUrl: "http://memory/v1" }).pipe(
            Layer.provide(memoryClient(() => ({ chunks: bytesIn(body, size) })))
          )
        )
      )
      expect(checkProtocol(events).content).toEqual([{ type: "text", text: "Hello" }])
    }))

  it.effect.each([2, 4096])("Anthropic, %s-byte chunks", (size) =>
    Effect.gen(function*() {
      const body = `retry: 5000\n\n${anthropicSse(anthropicText("fine"))}`
      const events = yield* collect(request([user("hi")])).pipe(
        Effect.provide(
          Anthropic.layer({ model: "claude-test", apiKey: Redacted.make(KEY), baseUrl: "http://memory" }).pipe(
            Layer.provide(memoryClient(() => ({ chunks: bytesIn(body, size) })))
          )
        )
      )
      expect(checkProtocol(events).content).toEqual([{ type: "text", text: "fine" }])
    }))
})

// ---------------------------------------------------------------------------------------------------------
// 4. The server's own words; partial content kept
// ---------------------------------------------------------------------------------------------------------

describe("issue 11.4: the server's own words reach the user", () => {
  it.live("a vLLM-style error chunk surfaces its message", () =>
    Effect.gen(function*() {
      const body = openAiSse([{
        object: "error",
        message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
        type: "BadRequestError",
        param: null,
        code: 400
      }])
      const { exit } = yield* runOpenAi([{ body }])
      const error = failureOf(exit)
      expect(error.message).toContain("maximum context length is 4096 tokens")
      expect(error.message).not.toMatch(/ended before/)
    }))

  it.live("an `event: error` in the stream surfaces its message", () =>
    Effect.gen(function*() {
      const body = `${openAiSse([chunk({ content: "Hi" })], false)}event: error\ndata: ${
        JSON.stringify({ error: { message: "upstream provider timed out", code: 504 } })
      }\n\n`
      const error = failureOf((yield* runOpenAi([{ body }])).exit)
      expect(error.message).toContain("upstream provider timed out")
    }))

  it.live("a 200 with a whole JSON completion (stream ignored) becomes the response", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({
        id: "chatcmpl-9",
        object: "chat.completion",
        model: "served-model",
        choices: [{
          index: 0,
          message: {
            role: "assistant",
            content: "Adding.",
            reasoning_content: "Easy sum.",
            tool_calls: [{ id: "call_1", type: "function", function: { name: "add", arguments: "{\"a\":2,\"b\":40}" } }]
          },
          finish_reason: "tool_calls"
        }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
      })
      const { exit } = yield* runOpenAi([{ headers: { "content-type": "application/json" }, body }])
      const message = checkProtocol(successOf(exit))
      expect(message.content).toEqual([
        { type: "thinking", thinking: "Easy sum.", thinkingSignature: "reasoning_content" },
        { type: "text", text: "Adding." },
        { type: "toolCall", id: "call_1", name: "add", arguments: { a: 2, b: 40 } }
      ])
      expect(message.stopReason).toBe("toolUse")
      expect(message.usage).toMatchObject({ input: 10, output: 5 })
      expect(message.responseId).toBe("chatcmpl-9")
    }))

  it.live("a 200 with a JSON error body surfaces the error's message", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({ error: { message: "model 'nope' not found", type: "not_found_error" } })
      const { exit, server } = yield* runOpenAi([{ headers: { "content-type": "application/json" }, body }])
      const error = failureOf(exit)
      expect(error.message).toContain("model 'nope' not found")
      expect(server.requests).toHaveLength(1)
      const plain = failureOf(
        (yield* runOpenAi([{ headers: { "content-type": "application/json" }, body: "[1,2]" }])).exit
      )
      expect(plain.reason).toBe("decode")
      expect(plain.message).toContain("[1,2]")
    }))

  it.live("Anthropic: a 200 with a whole JSON message (stream ignored) becomes the response", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({
        id: "msg_9",
        type: "message",
        role: "assistant",
        model: "claude-test",
        content: [
          { type: "thinking", thinking: "Sum.", signature: "sig==" },
          { type: "text", text: "Adding." },
          { type: "tool_use", id: "toolu_9", name: "add", input: { a: 2, b: 40 } }
        ],
        stop_reason: "tool_use",
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 5 }
      })
      const { exit } = yield* runAnthropic([{ headers: { "content-type": "application/json" }, body }])
      const message = checkProtocol(successOf(exit))
      expect(message.content).toEqual([
        { type: "thinking", thinking: "Sum.", thinkingSignature: "sig==" },
        { type: "text", text: "Adding." },
        { type: "toolCall", id: "toolu_9", name: "add", arguments: { a: 2, b: 40 } }
      ])
      expect(message.stopReason).toBe("toolUse")
      expect(message.usage).toMatchObject({ input: 10, output: 5 })
    }))

  it.live("a mid-stream failure keeps the partial content: the error carries the text and calls so far", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{
        body: openAiSse([
          chunk({ content: "Let me add " }),
          chunk({ content: "these." }),
          chunk({
            tool_calls: [{
              index: 0,
              id: "call_1",
              type: "function",
              function: { name: "add", arguments: "{\"a\": 2" }
            }]
          })
        ], false),
        after: "destroy"
      }]
      const seen: Array<AssistantMessageEvent> = []
      const exit = yield* Model.use((model) =>
        Stream.runForEach(model.stream(request([user("hi")])), (e) => Effect.sync(() => seen.push(e)))
      ).pipe(Effect.provide(openAiLayer(server)), Effect.exit)
      const error = failureOf(exit)
      expect(error.reason).toBe("network")
      expect(error.message).toContain("Let me add these.")
      expect(error.message).toContain("add({\"a\":2})")
      const last = seen[seen.length - 1]!
      expect("partial" in last && last.partial.content[0]).toEqual({ type: "text", text: "Let me add these." })
    }))

  it.live("Anthropic: a mid-stream error event carries the server's message and the text so far", () =>
    Effect.gen(function*() {
      const body = anthropicSse([
        messageStart(),
        blockStart(0, { type: "text", text: "" }),
        blockDelta(0, { type: "text_delta", text: "Half an answ" }),
        { type: "error", error: { type: "api_error", message: "Internal server error" } } as any
      ])
      const error = failureOf((yield* runAnthropic([{ body }])).exit)
      expect(error.message).toContain("Internal server error")
      expect(error.message).toContain("Half an answ")
    }))
})

// ---------------------------------------------------------------------------------------------------------
// 5. Tool calls by index; raw arguments kept when they are not JSON
// ---------------------------------------------------------------------------------------------------------

describe("issue 11.5: OpenAI tool-call assembly by index", () => {
  it.live("calls come out in index order even when a higher index streams first", () =>
    Effect.gen(function*() {
      const body = openAiSse([
        chunk({
          tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "echo", arguments: "{\"text\"" } }]
        }),
        chunk({
          tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "add", arguments: "{\"a\":1," } }]
        }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: ":\"x\"}" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: "\"b\":2}" } }] }),
        chunk({}, "tool_calls")
      ])
      const message = checkProtocol(successOf((yield* runOpenAi([{ body }])).exit))
      expect(message.content).toEqual([
        { type: "toolCall", id: "call_a", name: "add", arguments: { a: 1, b: 2 } },
        { type: "toolCall", id: "call_b", name: "echo", arguments: { text: "x" } }
      ])
    }))

  it.live("two calls that share an index but have different ids stay two calls", () =>
    Effect.gen(function*() {
      const body = openAiSse([
        chunk({
          tool_calls: [{
            index: 0,
            id: "call_1",
            type: "function",
            function: { name: "add", arguments: "{\"a\":1,\"b\":2}" }
          }]
        }),
        chunk({
          tool_calls: [{ index: 0, id: "call_2", type: "function", function: { name: "add", arguments: "{\"a\":3," } }]
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: "\"b\":4}" } }] }),
        chunk({}, "tool_calls")
      ])
      const message = checkProtocol(successOf((yield* runOpenAi([{ body }])).exit))
      expect(message.content).toEqual([
        { type: "toolCall", id: "call_1", name: "add", arguments: { a: 1, b: 2 } },
        { type: "toolCall", id: "call_2", name: "add", arguments: { a: 3, b: 4 } }
      ])
    }))

  it.live("arguments that never became valid JSON are kept raw; valid ones are not marked", () =>
    Effect.gen(function*() {
      const body = openAiSse([
        chunk({
          tool_calls: [{
            index: 0,
            id: "call_1",
            type: "function",
            function: { name: "add", arguments: "{\"a\": 1, \"b\": " }
          }]
        }),
        chunk({
          tool_calls: [{
            index: 1,
            id: "call_2",
            type: "function",
            function: { name: "add", arguments: "{\"a\":1,\"b\":2}" }
          }]
        }),
        chunk({}, "tool_calls")
      ])
      const events = successOf((yield* runOpenAi([{ body }])).exit)
      const message = finalMessage(events)
      expect(message.content[0]).toEqual({
        type: "toolCall",
        id: "call_1",
        name: "add",
        arguments: { a: 1 },
        rawArguments: "{\"a\": 1, \"b\": "
      })
      expect(message.content[1]).toEqual({ type: "toolCall", id: "call_2", name: "add", arguments: { a: 1, b: 2 } })
      const end = events.find((e) => e.type === "toolcall_end" && e.contentIndex === 0)
      expect(end?.type === "toolcall_end" && end.toolCall.rawArguments).toBe("{\"a\": 1, \"b\": ")
    }))

  it.live("Anthropic: input that never became valid JSON is kept raw", () =>
    Effect.gen(function*() {
      const body = anthropicSse([
        messageStart(),
        blockStart(0, { type: "tool_use", id: "toolu_1", name: "add", input: {} }),
        blockDelta(0, { type: "input_json_delta", partial_json: "{\"a\": 1, \"b\"" }),
        blockStop(0),
        messageDelta("tool_use"),
        messageStop
      ])
      const message = finalMessage(successOf((yield* runAnthropic([{ body }])).exit))
      expect(message.content[0]).toEqual({
        type: "toolCall",
        id: "toolu_1",
        name: "add",
        arguments: { a: 1 },
        rawArguments: "{\"a\": 1, \"b\""
      })
    }))
})

// ---------------------------------------------------------------------------------------------------------
// 6. Token limit field; no tracing headers
// ---------------------------------------------------------------------------------------------------------

describe("issue 11.6: request headers and fields", () => {
  it.live("no traceparent or b3 header reaches a third-party API unless asked", () =>
    Effect.gen(function*() {
      const plain = yield* runOpenAi([{ body: openAiTextStream() }])
      successOf(plain.exit)
      expect(plain.server.requests[0]!.headers.traceparent).toBeUndefined()
      expect(plain.server.requests[0]!.headers.b3).toBeUndefined()
      const anthropic = yield* runAnthropic([{ body: anthropicSse(anthropicText()) }])
      successOf(anthropic.exit)
      expect(anthropic.server.requests[0]!.headers.traceparent).toBeUndefined()
      expect(anthropic.server.requests[0]!.headers.b3).toBeUndefined()
      const asked = yield* runOpenAi([{ body: openAiTextStream() }], request([user("hi")]), { propagateTracing: true })
      successOf(asked.exit)
      expect(asked.server.requests[0]!.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
    }))

  it.live("max_completion_tokens can be chosen for any server", () =>
    Effect.gen(function*() {
      const { exit, server } = yield* runOpenAi(
        [{ body: openAiTextStream() }],
        request([user("hi")], { options: { maxTokens: 77 } }),
        { maxTokensField: "max_completion_tokens" }
      )
      successOf(exit)
      expect(server.requests[0]!.body.max_completion_tokens).toBe(77)
      expect(server.requests[0]!.body.max_tokens).toBeUndefined()
    }))
})
