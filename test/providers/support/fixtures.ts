/**
 * Streams and transcripts written from each API's documented format.
 */
import type { AssistantMessage, Message, ToolResultMessage, UserMessage } from "../../../src/Message.ts"
import { emptyUsage } from "../../../src/Message.ts"
import type { ModelRequest } from "../../../src/Model.ts"

// ---------------------------------------------------------------------------------------------------------
// OpenAI Chat Completions chunks
// ---------------------------------------------------------------------------------------------------------

export const openAiSse = (chunks: ReadonlyArray<unknown>, done = true): string =>
  chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("") + (done ? "data: [DONE]\n\n" : "")

export const chunk = (
  delta: Record<string, unknown>,
  finish: string | null = null,
  extra: Record<string, unknown> = {}
) => ({
  id: "chatcmpl-123",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model: "gpt-test-2025",
  system_fingerprint: "fp_1",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  ...extra
})

export const usageChunk = (prompt: number, completion: number, cached = 0) => ({
  id: "chatcmpl-123",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model: "gpt-test-2025",
  choices: [],
  usage: {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached },
    completion_tokens_details: { reasoning_tokens: 0 }
  }
})

/** Reasoning, text with multi-byte characters, two tool calls whose arguments interleave, usage. */
export const openAiFullStream = openAiSse([
  chunk({ role: "assistant", content: "" }),
  chunk({ reasoning_content: "Let me think… " }),
  chunk({ reasoning_content: "🤔 about sums" }),
  chunk({ content: "Héllo wörld " }),
  chunk({ content: "🌍! Calling tools." }),
  chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "add", arguments: "" } }] }),
  chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "echo", arguments: "" } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"a\": 2," } }] }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: "{\"text\": \"naïve ✓" } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: " \"b\": 40}" } }] }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: " 日本\"}" } }] }),
  chunk({}, "tool_calls"),
  usageChunk(100, 20, 30)
])

/** A plain text answer. */
export const openAiTextStream = (text = "Hi there", finish = "stop") =>
  openAiSse([chunk({ role: "assistant", content: "" }), chunk({ content: text }), chunk({}, finish), usageChunk(5, 2)])

// ---------------------------------------------------------------------------------------------------------
// Anthropic Messages events
// ---------------------------------------------------------------------------------------------------------

export const anthropicSse = (events: ReadonlyArray<{ readonly type: string }>, eol = "\n"): string =>
  events.map((event) => `event: ${event.type}${eol}data: ${JSON.stringify(event)}${eol}${eol}`).join("")

export const messageStart = (usage: Record<string, number> = { input_tokens: 25, output_tokens: 1 }) => ({
  type: "message_start",
  message: {
    id: "msg_01",
    type: "message",
    role: "assistant",
    content: [],
    model: "claude-test-20250101",
    stop_reason: null,
    stop_sequence: null,
    usage
  }
})
export const blockStart = (index: number, content_block: Record<string, unknown>) => ({
  type: "content_block_start",
  index,
  content_block
})
export const blockDelta = (index: number, delta: Record<string, unknown>) => ({
  type: "content_block_delta",
  index,
  delta
})
export const blockStop = (index: number) => ({ type: "content_block_stop", index })
export const messageDelta = (stop_reason: string, usage: Record<string, number> = { output_tokens: 89 }) => ({
  type: "message_delta",
  delta: { stop_reason, stop_sequence: null },
  usage
})
export const messageStop = { type: "message_stop" }
export const ping = { type: "ping" }

/** Thinking with a signature, redacted thinking, text with multi-byte characters, two tool uses, usage. */
export const anthropicFullEvents = [
  messageStart({ input_tokens: 25, output_tokens: 1, cache_read_input_tokens: 10, cache_creation_input_tokens: 5 }),
  blockStart(0, { type: "thinking", thinking: "", signature: "" }),
  blockDelta(0, { type: "thinking_delta", thinking: "I need to add… " }),
  blockDelta(0, { type: "thinking_delta", thinking: "🤔 then echo" }),
  blockDelta(0, { type: "signature_delta", signature: "EqQBCgIYAhIM" }),
  blockDelta(0, { type: "signature_delta", signature: "1gbcDa9GJwZA==" }),
  blockStop(0),
  blockStart(1, { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4a" }),
  blockStop(1),
  ping,
  blockStart(2, { type: "text", text: "" }),
  blockDelta(2, { type: "text_delta", text: "Héllo wörld " }),
  blockDelta(2, { type: "text_delta", text: "🌍!" }),
  blockStop(2),
  blockStart(3, { type: "tool_use", id: "toolu_01", name: "add", input: {} }),
  blockDelta(3, { type: "input_json_delta", partial_json: "" }),
  blockDelta(3, { type: "input_json_delta", partial_json: "{\"a\": 2" }),
  blockDelta(3, { type: "input_json_delta", partial_json: ", \"b\": 40}" }),
  blockStop(3),
  blockStart(4, { type: "tool_use", id: "toolu_02", name: "echo", input: {} }),
  blockDelta(4, { type: "input_json_delta", partial_json: "{\"text\": \"naïve" }),
  blockDelta(4, { type: "input_json_delta", partial_json: " ✓ 日本\"}" }),
  blockStop(4),
  messageDelta("tool_use", { output_tokens: 89 }),
  messageStop
]

export const anthropicText = (text = "Hi there", stop = "end_turn") => [
  messageStart(),
  blockStart(0, { type: "text", text: "" }),
  blockDelta(0, { type: "text_delta", text }),
  blockStop(0),
  messageDelta(stop, { output_tokens: 3 }),
  messageStop
]

// ---------------------------------------------------------------------------------------------------------
// Transcripts
// ---------------------------------------------------------------------------------------------------------

export const PNG = "iVBORw0KGgo="

export const user = (content: UserMessage["content"]): UserMessage => ({ role: "user", content, timestamp: 1 })

export const assistant = (
  content: AssistantMessage["content"],
  fields: Partial<AssistantMessage> = {}
): AssistantMessage => ({
  role: "assistant",
  content,
  api: "openai-completions",
  provider: "openai-compatible",
  model: "test-model",
  usage: emptyUsage,
  stopReason: content.some((block) => block.type === "toolCall") ? "toolUse" : "stop",
  timestamp: 2,
  ...fields
})

export const toolResult = (
  toolCallId: string,
  toolName: string,
  content: ToolResultMessage["content"],
  isError = false
): ToolResultMessage => ({ role: "toolResult", toolCallId, toolName, content, isError, timestamp: 3 })

export const request = (messages: ReadonlyArray<Message>, fields: Partial<ModelRequest> = {}): ModelRequest => ({
  systemPrompt: "",
  messages,
  tools: [],
  ...fields
})

export const addTool = {
  name: "add",
  description: "Add two numbers",
  parameters: {
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
    additionalProperties: false
  }
}
