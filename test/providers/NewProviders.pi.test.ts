/**
 * A differential test for the two new formats: the same recorded-format bytes, cut the same ways, are
 * decoded by pi's own providers (`@mariozechner/pi-ai` 0.73.1's `openai-responses` on the official `openai`
 * client and `google-generative-ai` on `@google/genai`, driven from the outside through `complete`) and by
 * ours; text, thinking, tool calls, stop reason and token counts must agree.
 */
import { describe, expect, it } from "@effect/vitest"
import { type AssistantMessage as PiAssistantMessage, complete, getModel } from "@mariozechner/pi-ai"
import { Effect, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import type { AssistantMessage } from "../../src/Message.ts"
import { Model } from "../../src/Model.ts"
import * as Gemini from "../../src/providers/Gemini.ts"
import * as OpenAiResponses from "../../src/providers/OpenAiResponses.ts"
import { request, user } from "./support/fixtures.ts"
import { geminiChunk, geminiFullChunks, geminiSse, geminiText, SIGNATURE } from "./support/geminiFixtures.ts"
import { checkProtocol } from "./support/protocol.ts"
import {
  completed,
  incomplete,
  responsesFullEvents,
  responsesSse,
  responsesText,
  usage
} from "./support/responsesFixtures.ts"
import { startServer } from "./support/server.ts"

type AnyMessage = AssistantMessage | PiAssistantMessage

/** What both must agree on. Call ids are compared as the API's `call_id` (pi appends `|item_id`). */
const normalize = (message: AnyMessage, withCallIds: boolean) => ({
  content: message.content.map((block) => {
    switch (block.type) {
      case "text":
        return { type: "text", text: block.text }
      case "thinking":
        return { type: "thinking", thinking: block.thinking }
      case "toolCall":
        return {
          type: "toolCall",
          ...(withCallIds ? { id: block.id.split("|")[0] } : {}),
          name: block.name,
          arguments: block.arguments
        }
      default:
        return block
    }
  }),
  stopReason: message.stopReason,
  usage: {
    input: message.usage.input,
    output: message.usage.output,
    cacheRead: message.usage.cacheRead,
    cacheWrite: message.usage.cacheWrite,
    totalTokens: message.usage.totalTokens
  }
})

const SIZES = [23, 500]
const context = { systemPrompt: "", messages: [{ role: "user" as const, content: "hi", timestamp: 1 }] }

const compare = (
  body: string,
  size: number,
  pi: (baseUrl: string) => Promise<PiAssistantMessage>,
  ours: (baseUrl: string) => Layer.Layer<Model>,
  path: string,
  withCallIds: boolean
) =>
  Effect.gen(function*() {
    const server = yield* startServer
    server.replies = [{ body, chunkSize: size, delayMs: 0 }]
    const theirs = yield* Effect.promise(() => pi(`${server.url}${path}`))
    const events = yield* Model.use((model) => Stream.runCollect(model.stream(request([user("hi")])))).pipe(
      Effect.provide(ours(`${server.url}${path}`))
    )
    const mine = checkProtocol(events)
    expect(normalize(mine, withCallIds)).toEqual(normalize(theirs, withCallIds))
    return { mine, theirs }
  })

describe("OpenAI Responses: ours and pi's decode the same bytes alike", () => {
  const pi = (baseUrl: string) =>
    complete({ ...getModel("openai", "gpt-5-mini"), baseUrl }, context, { apiKey: "k-test" })
  const ours = (baseUrl: string) =>
    OpenAiResponses.layer({ model: "gpt-5-mini", baseUrl, apiKey: Redacted.make("k-test"), retry: { times: 0 } }).pipe(
      Layer.provide(FetchHttpClient.layer)
    )
  const streams: Array<[string, string]> = [
    ["reasoning, text and two calls", responsesSse(responsesFullEvents)],
    ["a text answer", responsesSse(responsesText("Hi there"))],
    ["usage without cached tokens", responsesSse(responsesText("x", completed(usage(9, 3))))]
  ]
  for (const [name, body] of streams) {
    it.live.each(SIZES)(`${name} (%s-byte chunks)`, (size) =>
      Effect.gen(function*() {
        const { mine } = yield* compare(body, size, pi, ours, "/v1", true)
        expect(mine.content.length).toBeGreaterThan(0)
      }))
  }
})

describe("OpenAI Responses: where we differ from pi on purpose", () => {
  it.live("a response.incomplete event ends the answer with stopReason length and its usage (pi 0.73.1 only reads response.completed)", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      server.replies = [{ body: responsesSse(responsesText("Cut", incomplete("max_output_tokens"))) }]
      const theirs = yield* Effect.promise(() =>
        complete({ ...getModel("openai", "gpt-5-mini"), baseUrl: `${server.url}/v1` }, context, { apiKey: "k-test" })
      )
      const events = yield* Model.use((model) => Stream.runCollect(model.stream(request([user("hi")])))).pipe(
        Effect.provide(
          OpenAiResponses.layer({ model: "gpt-5-mini", baseUrl: `${server.url}/v1` }).pipe(
            Layer.provide(FetchHttpClient.layer)
          )
        )
      )
      const mine = checkProtocol(events)
      expect(mine.content).toEqual(
        theirs.content.map((block) => block.type === "text" ? { ...block, textSignature: "msg_t" } : block)
      )
      expect(mine.stopReason).toBe("length")
      expect(mine.usage).toMatchObject({ input: 10, output: 5 })
      // pi leaves the answer as a normal stop with no usage.
      expect(theirs.stopReason).toBe("stop")
      expect(theirs.usage.totalTokens).toBe(0)
    }))
})

describe("Gemini: ours and pi's decode the same bytes alike", () => {
  const pi = (baseUrl: string) =>
    complete({ ...getModel("google", "gemini-2.5-flash"), baseUrl }, context, { apiKey: "k-test" })
  const ours = (baseUrl: string) =>
    Gemini.layer({ model: "gemini-2.5-flash", baseUrl, apiKey: Redacted.make("k-test"), retry: { times: 0 } }).pipe(
      Layer.provide(FetchHttpClient.layer)
    )
  const streams: Array<[string, string]> = [
    ["thoughts, text and two calls", geminiSse(geminiFullChunks)],
    ["a text answer signed in a part of its own", geminiSse(geminiText("Hi there"))],
    ["an answer cut at the token limit", geminiSse(geminiText("Cut", "MAX_TOKENS"))],
    [
      "text, then a thought, then text again",
      geminiSse([
        geminiChunk([{ text: "One. " }]),
        geminiChunk([{ text: "Hmm…", thought: true }]),
        geminiChunk([{ text: "Two." }], {
          finishReason: "STOP",
          usage: { promptTokenCount: 4, candidatesTokenCount: 3, totalTokenCount: 7 }
        })
      ])
    ]
  ]
  for (const [name, body] of streams) {
    // Gemini sends no call ids; pi and we make up different ones.
    it.live.each(SIZES)(`${name} (%s-byte chunks)`, (size) =>
      Effect.gen(function*() {
        const { mine, theirs } = yield* compare(body, size, pi, ours, "/v1beta", false)
        // Where pi keeps a thought signature on a call, so do we.
        const signatures = (m: AnyMessage) =>
          m.content.flatMap((block) => block.type === "toolCall" ? [block.thoughtSignature ?? null] : [])
        expect(signatures(mine)).toEqual(signatures(theirs))
      }))
  }
})

// ---------------------------------------------------------------------------------------------------------
// The next request: the model's own turn goes back the same way
// ---------------------------------------------------------------------------------------------------------

/** Runs a turn and the one after it (with a text result per call) through pi, and returns the second request. */
const piSecondRequest = (model: Parameters<typeof complete>[0]) =>
  Effect.promise(async () => {
    const ctx: Parameters<typeof complete>[1] = { ...context, messages: [...context.messages] }
    const first = await complete(model, ctx, { apiKey: "k-test" })
    ctx.messages.push(first)
    for (const block of first.content) {
      if (block.type === "toolCall") {
        ctx.messages.push({
          role: "toolResult",
          toolCallId: block.id,
          toolName: block.name,
          content: [{ type: "text", text: "42" }],
          isError: false,
          timestamp: 3
        })
      }
    }
    await complete(model, ctx, { apiKey: "k-test" })
  })

/** The same through ours. */
const oursSecondRequest = (layer: Layer.Layer<Model>) =>
  Effect.gen(function*() {
    const first = checkProtocol(
      yield* Model.use((model) => Stream.runCollect(model.stream(request([user("hi")])))).pipe(Effect.provide(layer))
    )
    const results = first.content.flatMap((block) =>
      block.type === "toolCall"
        ? [{
          role: "toolResult" as const,
          toolCallId: block.id,
          toolName: block.name,
          content: [{ type: "text" as const, text: "42" }],
          isError: false,
          timestamp: 3
        }]
        : []
    )
    yield* Model.use((model) => Stream.runCollect(model.stream(request([user("hi"), first, ...results])))).pipe(
      Effect.provide(layer)
    )
  })

describe("the model's own turn goes back as pi sends it", () => {
  it.live("Responses: the reasoning item with its encrypted content, the message and the calls with their item ids", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      const reply = [{ body: responsesSse(responsesFullEvents) }, { body: responsesSse(responsesText()) }]
      server.replies = [...reply, ...reply]
      yield* piSecondRequest({ ...getModel("openai", "gpt-5-mini"), baseUrl: `${server.url}/v1` })
      yield* oursSecondRequest(
        OpenAiResponses.layer({ model: "gpt-5-mini", baseUrl: `${server.url}/v1` }).pipe(
          Layer.provide(FetchHttpClient.layer)
        )
      )
      const turn = (body: any) =>
        (body.input as Array<any>).filter((item) =>
          item.type === "reasoning" || item.type === "function_call" || item.role === "assistant"
        )
      expect(turn(server.requests[3]!.body)).toEqual(turn(server.requests[1]!.body))
      expect(turn(server.requests[3]!.body).map((item: any) => item.type)).toEqual([
        "reasoning",
        "message",
        "function_call",
        "function_call"
      ])
    }))

  it.live("Gemini: thought, text and calls, the call with its thought signature", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      const reply = [{ body: geminiSse(geminiFullChunks) }, { body: geminiSse(geminiText()) }]
      server.replies = [...reply, ...reply]
      yield* piSecondRequest({ ...getModel("google", "gemini-2.5-flash"), baseUrl: `${server.url}/v1beta` })
      yield* oursSecondRequest(
        Gemini.layer({ model: "gemini-2.5-flash", baseUrl: `${server.url}/v1beta`, apiKey: Redacted.make("k-test") })
          .pipe(
            Layer.provide(FetchHttpClient.layer)
          )
      )
      const modelTurn = (body: any) => (body.contents as Array<any>).find((content) => content.role === "model")
      expect(modelTurn(server.requests[3]!.body)).toEqual(modelTurn(server.requests[1]!.body))
      expect(modelTurn(server.requests[3]!.body).parts[2].thoughtSignature).toBe(SIGNATURE)
    }))
})
