/**
 * Messages keep pi's JSON shapes: a transcript encodes to JSON and decodes back unchanged, including one
 * written with pi's own types and one produced by pi's own agent loop.
 */
import { assert, describe, it } from "@effect/vitest"
import { runAgentLoop as piRunAgentLoop } from "@mariozechner/pi-agent-core"
import type { Message as PiMessage } from "@mariozechner/pi-ai"
import { Effect, Schema } from "effect"
import { AgentEvent } from "../src/AgentEvent.ts"
import { defaultConvertToLlm } from "../src/AgentLoop.ts"
import { type AssistantMessage, emptyUsage, isMessage, Message, text, toolCallsOf } from "../src/Message.ts"
import { callTools, say, toolCall } from "../src/ScriptedModel.ts"
import { call, note, piModel, piScripted, piTools, runLoop, user } from "./support/loop.ts"

/** Encode to a JSON string, parse it, decode it. */
/** A transcript as a JSON codec: `encode` gives pi-compatible JSON. */
const Transcript = Schema.Array(Message)

const roundTrip = (transcript: unknown) => {
  const json = JSON.stringify(Schema.encodeUnknownSync(Transcript)(transcript))
  return { json, decoded: Schema.decodeUnknownSync(Transcript)(JSON.parse(json)) }
}

/** A transcript written against pi-ai's own `Message` type: every optional field pi knows about is used. */
const piTranscript: Array<PiMessage> = [
  { role: "user", content: "plain string content", timestamp: 1_700_000_000_000 },
  {
    role: "user",
    content: [
      { type: "text", text: "look at this" },
      { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }
    ],
    timestamp: 1_700_000_000_001
  },
  {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "hmm", thinkingSignature: "sig-thinking" },
      { type: "thinking", thinking: "", thinkingSignature: "opaque-redacted-payload", redacted: true },
      {
        type: "text",
        text: "Let me check.",
        textSignature: JSON.stringify({ v: 1, id: "msg_1", phase: "commentary" })
      },
      {
        type: "toolCall",
        id: "call_1",
        name: "read",
        arguments: { path: "a.txt", limit: 10, opts: { deep: [1, { x: null }] } },
        thoughtSignature: "ts"
      },
      { type: "toolCall", id: "call_2", name: "ls", arguments: {} }
    ],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-x",
    responseModel: "claude-x-2025",
    responseId: "resp_123",
    usage: {
      input: 100,
      output: 20,
      cacheRead: 5,
      cacheWrite: 1,
      totalTokens: 126,
      cost: { input: 0.001, output: 0.002, cacheRead: 0.0001, cacheWrite: 0.00001, total: 0.00311 }
    },
    stopReason: "toolUse",
    timestamp: 1_700_000_000_002
  },
  {
    role: "toolResult",
    toolCallId: "call_1",
    toolName: "read",
    content: [{ type: "text", text: "file contents" }, { type: "image", data: "AAAA", mimeType: "image/jpeg" }],
    details: { bytes: 13, truncated: false, lines: [1, 2] },
    isError: false,
    timestamp: 1_700_000_000_003
  },
  {
    role: "toolResult",
    toolCallId: "call_2",
    toolName: "ls",
    content: [{ type: "text", text: "permission denied" }],
    isError: true,
    timestamp: 1_700_000_000_004
  },
  {
    role: "assistant",
    content: [{ type: "text", text: "partial" }],
    api: "openai-responses",
    provider: "openai",
    model: "gpt-x",
    usage: emptyUsage,
    stopReason: "error",
    errorMessage: "429 rate limited",
    timestamp: 1_700_000_000_005
  },
  {
    role: "assistant",
    content: [],
    api: "openai-responses",
    provider: "openai",
    model: "gpt-x",
    usage: emptyUsage,
    stopReason: "aborted",
    errorMessage: "Request was aborted",
    timestamp: 1_700_000_000_006
  },
  {
    role: "assistant",
    content: [{ type: "text", text: "cut" }],
    api: "x",
    provider: "x",
    model: "x",
    usage: emptyUsage,
    stopReason: "length",
    timestamp: 1_700_000_000_007
  }
]

describe("Message", () => {
  it("a pi-shaped transcript decodes unchanged and round-trips through JSON", () => {
    const decoded = Schema.decodeUnknownSync(Transcript)(piTranscript)
    assert.deepStrictEqual(decoded, piTranscript)
    const { json, decoded: back } = roundTrip(piTranscript)
    assert.deepStrictEqual(back, piTranscript)
    assert.deepStrictEqual(JSON.parse(json), JSON.parse(JSON.stringify(piTranscript)), "the JSON is pi's JSON")
  })

  it("absent optional fields stay absent (no undefined keys appear)", () => {
    const { decoded } = roundTrip(piTranscript)
    const plainResult = decoded[4]!
    assert.isFalse("details" in plainResult)
    const assistant = decoded[7] as AssistantMessage
    for (const key of ["errorMessage", "responseId", "responseModel", "diagnostics"]) {
      assert.isFalse(key in assistant, key)
    }
    const toolCallBlock = (decoded[2] as AssistantMessage).content[4]!
    assert.isFalse("thoughtSignature" in toolCallBlock)
  })

  it.effect("a transcript produced by our loop round-trips unchanged", () =>
    Effect.gen(function*() {
      const { messages } = yield* runLoop({
        script: [
          callTools(
            [call("c1", "add", { a: 1, b: 2 }), call("c2", "nope"), call("c3", "fail", { text: "x" })],
            "Working."
          ),
          { content: [{ type: "thinking", thinking: "so 3" }, { type: "text", text: "It is 3." }] }
        ]
      })
      const transcript = messages.filter(isMessage)
      assert.strictEqual(transcript.length, messages.length)
      assert.deepStrictEqual(roundTrip(transcript).decoded, transcript)
    }))

  it("a transcript produced by pi's own agent loop decodes unchanged", async () => {
    const { streamFn } = piScripted([
      callTools([
        toolCall("c1", "add", { a: 1, b: 2 }),
        toolCall("c2", "nope", {}),
        toolCall("c3", "fail", { text: "x" })
      ]),
      say("It is 3.")
    ])
    const messages = await piRunAgentLoop(
      [{ role: "user", content: "1+2?", timestamp: Date.now() }],
      { systemPrompt: "s", messages: [], tools: piTools() },
      { model: piModel, convertToLlm: (ms: Array<any>) => ms } as any,
      async () => {},
      undefined,
      streamFn as any
    )
    assert.strictEqual(messages.length, 6)
    assert.deepStrictEqual(Schema.decodeUnknownSync(Transcript)(messages), messages)
    assert.deepStrictEqual(roundTrip(messages).decoded, JSON.parse(JSON.stringify(messages)))
  })

  it("rejects what is not a model message", () => {
    const bad: Array<unknown> = [
      { role: "system", content: "x", timestamp: 0 },
      { role: "user", content: 42, timestamp: 0 },
      { role: "user", content: "x" },
      { ...piTranscript[2], stopReason: "finished" },
      { ...piTranscript[2], content: [{ type: "toolCall", id: "x", name: "y" }] },
      { role: "toolResult", toolCallId: "x", toolName: "y", content: [], timestamp: 0 },
      { role: "toolResult", toolCallId: "x", toolName: "y", content: [{ type: "video" }], isError: false, timestamp: 0 }
    ]
    for (const message of bad) {
      assert.throws(() => Schema.decodeUnknownSync(Message)(message), undefined, undefined, JSON.stringify(message))
    }
  })

  it("application messages are not model messages; helpers", () => {
    assert.isFalse(isMessage(note("n")))
    assert.isTrue(isMessage(user("u")))
    assert.deepStrictEqual(defaultConvertToLlm([note("n"), user("u")]), [user("u")])
    assert.deepStrictEqual(text("hi"), { type: "text", text: "hi" })
    const assistant = piTranscript[2] as AssistantMessage
    assert.deepStrictEqual(toolCallsOf(assistant).map((c) => c.id), ["call_1", "call_2"])
  })

  it.effect("every event of a run encodes to JSON and decodes back through the AgentEvent schema", () =>
    Effect.gen(function*() {
      const { events } = yield* runLoop({
        script: [callTools([call("c1", "add", { a: 1, b: 2 })], "Adding."), say("3")],
        prompts: [note("app note"), user("1+2?")]
      })
      const encode = Schema.encodeUnknownSync(AgentEvent)
      const decode = Schema.decodeUnknownSync(AgentEvent)
      for (const event of events) {
        const back = decode(JSON.parse(JSON.stringify(encode(event))))
        assert.deepStrictEqual(back, JSON.parse(JSON.stringify(event)), event.type)
      }
    }))
})
