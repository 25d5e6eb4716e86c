/**
 * Differential test (issue 11, "done means"): the same random streams, cut into random byte chunks by a
 * local server, go through the official clients' stream accumulators (`openai`'s
 * `chat.completions.stream(...).finalChatCompletion()`, `@anthropic-ai/sdk`'s
 * `messages.stream(...).finalMessage()`) and through our providers; text, thinking, tool calls and stop
 * reasons must agree.
 *
 * Limits of the oracles, kept out of the generated streams: the OpenAI client keeps only the last
 * `reasoning_content` piece (so reasoning comes in one piece) and merges calls that share an index (so
 * each call has its own); the Anthropic client keeps only the last `signature_delta` (so one per block).
 */
import Anthropic from "@anthropic-ai/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import OpenAI from "openai"
import type { AssistantMessage, StopReason } from "../../src/Message.ts"
import { Model } from "../../src/Model.ts"
import * as OurAnthropic from "../../src/providers/Anthropic.ts"
import * as OpenAiCompatible from "../../src/providers/OpenAiCompatible.ts"
import {
  anthropicSse,
  blockDelta,
  blockStart,
  blockStop,
  chunk,
  messageDelta,
  messageStart,
  messageStop,
  openAiSse,
  ping,
  request,
  usageChunk,
  user
} from "./support/fixtures.ts"
import { checkProtocol } from "./support/protocol.ts"
import { startServer, type TestServer } from "./support/server.ts"

// ---------------------------------------------------------------------------------------------------------
// Random cases
// ---------------------------------------------------------------------------------------------------------

const Small = (max: number) => Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: max }))
const Text = Schema.String.check(Schema.isMaxLength(40))
const Args = Schema.Record(
  Schema.String.check(Schema.isMaxLength(8)),
  Schema.Union([Text, Schema.Int, Schema.Boolean, Schema.Array(Small(9)).check(Schema.isMaxLength(3))])
).check(Schema.isMaxProperties(4))
const ToolName = Schema.Literals(["add", "echo", "read_file"])

const OpenAiCase = Schema.Struct({
  reasoning: Schema.NullOr(Text),
  texts: Schema.Array(Text).check(Schema.isMaxLength(4)),
  calls: Schema.Array(Schema.Struct({ name: ToolName, args: Args })).check(Schema.isMaxLength(3)),
  finish: Schema.Literals(["stop", "length"]),
  usage: Schema.Boolean,
  /** Drives how argument text is split and how the calls' pieces interleave. */
  seed: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 })),
  chunkSize: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 97 }))
})
type OpenAiCase = typeof OpenAiCase.Type

const AnthropicBlock = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), pieces: Schema.Array(Text).check(Schema.isMaxLength(4)) }),
  Schema.Struct({
    type: Schema.Literal("thinking"),
    pieces: Schema.Array(Text).check(Schema.isMaxLength(4)),
    signature: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(30))
  }),
  Schema.Struct({ type: Schema.Literal("tool_use"), name: ToolName, args: Args })
])
const AnthropicCase = Schema.Struct({
  blocks: Schema.Array(AnthropicBlock).check(Schema.isMaxLength(4)),
  stop: Schema.Literals(["end_turn", "max_tokens", "stop_sequence"]),
  pings: Schema.Boolean,
  seed: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 })),
  chunkSize: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 97 }))
})
type AnthropicCase = typeof AnthropicCase.Type

/** A small deterministic generator, so that a case's seed replays the same splits. */
const random = (seed: number) => {
  let state = seed >>> 0
  return (n: number): number => {
    state = (state + 0x6D2B79F5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (((t ^ (t >>> 14)) >>> 0) % Math.max(1, n))
  }
}

/** A text cut into 1–4 pieces at random places (through characters too: the wire carries JSON text). */
const split = (text: string, next: (n: number) => number): Array<string> => {
  const cuts = [...new Set(Array.from({ length: next(4) }, () => next(text.length + 1)))].sort((a, b) => a - b)
  const pieces: Array<string> = []
  let from = 0
  for (const cut of cuts) {
    pieces.push(text.slice(from, cut))
    from = cut
  }
  pieces.push(text.slice(from))
  return pieces.filter((piece) => piece.length > 0)
}

const openAiBody = (c: OpenAiCase): string => {
  const next = random(c.seed)
  const chunks: Array<unknown> = [chunk({ role: "assistant", content: "" })]
  if (c.reasoning !== null && c.reasoning.length > 0) chunks.push(chunk({ reasoning_content: c.reasoning }))
  for (const text of c.texts) chunks.push(chunk({ content: text }))
  // Each call's pieces in order; the calls interleave at random.
  const queues = c.calls.map((call, index) => {
    const [first = "", ...rest] = split(JSON.stringify(call.args), next)
    return [
      { index, id: `call_${index}_${c.seed}`, type: "function", function: { name: call.name, arguments: first } },
      ...rest.map((piece) => ({ index, function: { arguments: piece } }))
    ]
  })
  while (queues.some((queue) => queue.length > 0)) {
    const open = queues.filter((queue) => queue.length > 0)
    chunks.push(chunk({ tool_calls: [open[next(open.length)]!.shift()] }))
  }
  chunks.push(chunk({}, c.calls.length > 0 ? "tool_calls" : c.finish))
  if (c.usage) chunks.push(usageChunk(30, 12, 4))
  return openAiSse(chunks)
}

const anthropicBody = (c: AnthropicCase): string => {
  const next = random(c.seed)
  const events: Array<{ readonly type: string }> = [messageStart()]
  c.blocks.forEach((block, index) => {
    if (c.pings && next(3) === 0) events.push(ping)
    switch (block.type) {
      case "text":
        events.push(blockStart(index, { type: "text", text: "" }))
        for (const piece of block.pieces) events.push(blockDelta(index, { type: "text_delta", text: piece }))
        break
      case "thinking":
        events.push(blockStart(index, { type: "thinking", thinking: "", signature: "" }))
        for (const piece of block.pieces) events.push(blockDelta(index, { type: "thinking_delta", thinking: piece }))
        events.push(blockDelta(index, { type: "signature_delta", signature: block.signature }))
        break
      case "tool_use":
        events.push(
          blockStart(index, { type: "tool_use", id: `toolu_${index}_${c.seed}`, name: block.name, input: {} })
        )
        for (const piece of split(JSON.stringify(block.args), next)) {
          events.push(blockDelta(index, { type: "input_json_delta", partial_json: piece }))
        }
        break
    }
    events.push(blockStop(index))
  })
  const stop = c.blocks.some((block) => block.type === "tool_use") ? "tool_use" : c.stop
  events.push(messageDelta(stop, { output_tokens: 17 }), messageStop)
  return anthropicSse(events)
}

// ---------------------------------------------------------------------------------------------------------
// What is compared
// ---------------------------------------------------------------------------------------------------------

interface Outcome {
  readonly text: string
  readonly thinking: ReadonlyArray<{ readonly thinking: string; readonly signature: string | undefined }>
  readonly calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly args: unknown }>
  readonly stopReason: StopReason
}

const ours = (message: AssistantMessage, signatures: boolean): Outcome => ({
  text: message.content.flatMap((block) => block.type === "text" ? [block.text] : []).join(""),
  thinking: message.content.flatMap((block) =>
    block.type === "thinking"
      ? [{ thinking: block.thinking, signature: signatures ? block.thinkingSignature : undefined }]
      : []
  ),
  calls: message.content.flatMap((block) =>
    block.type === "toolCall" ? [{ id: block.id, name: block.name, args: block.arguments }] : []
  ),
  stopReason: message.stopReason
})

const OPENAI_STOP: Record<string, StopReason> = { stop: "stop", length: "length", tool_calls: "toolUse" }
const ANTHROPIC_STOP: Record<string, StopReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  tool_use: "toolUse"
}

const openAiOracle = (server: TestServer) =>
  Effect.promise(async (): Promise<Outcome> => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "sk-test", maxRetries: 0 })
    const completion = await client.chat.completions
      .stream({ model: "test-model", messages: [{ role: "user", content: "hi" }] })
      .finalChatCompletion()
    const choice = completion.choices[0]!
    const reasoning = (choice.message as { reasoning_content?: string }).reasoning_content
    return {
      text: choice.message.content ?? "",
      thinking: reasoning ? [{ thinking: reasoning, signature: undefined }] : [],
      calls: (choice.message.tool_calls ?? []).flatMap((call) =>
        call.type === "function"
          ? [{ id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments) }]
          : []
      ),
      stopReason: OPENAI_STOP[choice.finish_reason] ?? "error"
    }
  })

const anthropicOracle = (server: TestServer) =>
  Effect.promise(async (): Promise<Outcome> => {
    const client = new Anthropic({ baseURL: server.url, apiKey: "sk-ant-test", maxRetries: 0 })
    const message = await client.messages
      .stream({ model: "claude-test", max_tokens: 100, messages: [{ role: "user", content: "hi" }] })
      .finalMessage()
    return {
      text: message.content.flatMap((block) => block.type === "text" ? [block.text] : []).join(""),
      thinking: message.content.flatMap((block) =>
        block.type === "thinking" ? [{ thinking: block.thinking, signature: block.signature }] : []
      ),
      calls: message.content.flatMap((block) =>
        block.type === "tool_use" ? [{ id: block.id, name: block.name, args: block.input }] : []
      ),
      stopReason: ANTHROPIC_STOP[message.stop_reason ?? ""] ?? "error"
    }
  })

const ourOutcome = (layer: Layer.Layer<Model>, signatures: boolean) =>
  Model.use((model) => Stream.runCollect(model.stream(request([user("hi")])))).pipe(
    Effect.provide(layer),
    Effect.map((events) => ours(checkProtocol(events), signatures))
  )

const options = (runs: number) => ({
  timeout: 60_000,
  arbitrary: {
    runs: Math.max(1, Math.round(runs * Number(process.env.PROP_RUNS_FACTOR ?? 1))),
    size: 10,
    ...(process.env.PROP_SEED !== undefined ? { seed: process.env.PROP_SEED } : {})
  }
})

describe("differential: our stream decoding agrees with the official clients", () => {
  it.effect.prop(
    "OpenAI Chat Completions: random streams in random byte chunks",
    { c: OpenAiCase },
    ({ c }) =>
      Effect.gen(function*() {
        const server = yield* startServer
        server.replies = [{ body: openAiBody(c), chunkSize: c.chunkSize, delayMs: 0 }]
        const expected = yield* openAiOracle(server)
        const actual = yield* ourOutcome(
          OpenAiCompatible.layer({ model: "test-model", baseUrl: `${server.url}/v1`, retry: { times: 0 } }).pipe(
            Layer.provide(FetchHttpClient.layer)
          ),
          false
        )
        // Ours splits reasoning and text into blocks where the oracle keeps one string each.
        expect({ ...actual, thinking: actual.thinking.map((t) => t.thinking).join("") }).toEqual({
          ...expected,
          thinking: expected.thinking.map((t) => t.thinking).join("")
        })
      }).pipe(Effect.scoped),
    options(20)
  )

  it.effect.prop(
    "Anthropic Messages: random streams in random byte chunks",
    { c: AnthropicCase },
    ({ c }) =>
      Effect.gen(function*() {
        const server = yield* startServer
        server.replies = [{ body: anthropicBody(c), chunkSize: c.chunkSize, delayMs: 0 }]
        const expected = yield* anthropicOracle(server)
        const actual = yield* ourOutcome(
          OurAnthropic.layer({
            model: "claude-test",
            apiKey: Redacted.make("sk-ant-test"),
            baseUrl: server.url,
            retry: { times: 0 }
          }).pipe(Layer.provide(FetchHttpClient.layer)),
          true
        )
        expect(actual).toEqual(expected)
      }).pipe(Effect.scoped),
    options(20)
  )
})
