/**
 * OpenAI Responses API streams, written from the documented streaming events (`response.created`,
 * `response.output_item.added`, `response.reasoning_summary_text.delta`, `response.output_text.delta`,
 * `response.function_call_arguments.delta`, `response.output_item.done`, `response.completed`, …).
 */

let sequence = 0

/** One SSE event per payload, named by its `type` as the API does, with a `sequence_number`. */
export const responsesSse = (events: ReadonlyArray<{ readonly type: string } & Record<string, unknown>>): string => {
  sequence = 0
  return events
    .map((event) => `event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number: sequence++ })}\n\n`)
    .join("")
}

export const MODEL_VERSION = "gpt-5-mini-2025-08-07"
export const ENCRYPTED = "gAAAAABo_encrypted_reasoning_0123456789+/=="

const response = (status: string, extra: Record<string, unknown> = {}) => ({
  id: "resp_01",
  object: "response",
  created_at: 1_760_000_000,
  status,
  model: MODEL_VERSION,
  output: [],
  usage: null,
  ...extra
})

export const created = { type: "response.created", response: response("in_progress") }
export const inProgress = { type: "response.in_progress", response: response("in_progress") }

export const usage = (input: number, output: number, cached = 0, reasoning = 0) => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: cached },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: reasoning },
  total_tokens: input + output
})

export const completed = (u = usage(100, 20, 30, 12)) => ({
  type: "response.completed",
  response: response("completed", { usage: u })
})
export const incomplete = (reason: string) => ({
  type: "response.incomplete",
  response: response("incomplete", { incomplete_details: { reason }, usage: usage(10, 5) })
})
export const failed = (code: string, message: string) => ({
  type: "response.failed",
  response: response("failed", { error: { code, message } })
})

export const itemAdded = (output_index: number, item: Record<string, unknown>) => ({
  type: "response.output_item.added",
  output_index,
  item
})
export const itemDone = (output_index: number, item: Record<string, unknown>) => ({
  type: "response.output_item.done",
  output_index,
  item
})
export const partAdded = (item_id: string, output_index: number) => ({
  type: "response.content_part.added",
  item_id,
  output_index,
  content_index: 0,
  part: { type: "output_text", text: "", annotations: [] }
})
export const textDelta = (item_id: string, output_index: number, delta: string) => ({
  type: "response.output_text.delta",
  item_id,
  output_index,
  content_index: 0,
  delta,
  logprobs: []
})
export const textDone = (item_id: string, output_index: number, text: string) => ({
  type: "response.output_text.done",
  item_id,
  output_index,
  content_index: 0,
  text,
  logprobs: []
})
export const summaryPartAdded = (item_id: string, output_index: number, summary_index: number) => ({
  type: "response.reasoning_summary_part.added",
  item_id,
  output_index,
  summary_index,
  part: { type: "summary_text", text: "" }
})
export const summaryDelta = (item_id: string, output_index: number, summary_index: number, delta: string) => ({
  type: "response.reasoning_summary_text.delta",
  item_id,
  output_index,
  summary_index,
  delta
})
export const argsDelta = (item_id: string, output_index: number, delta: string) => ({
  type: "response.function_call_arguments.delta",
  item_id,
  output_index,
  delta
})
export const argsDone = (item_id: string, output_index: number, args: string) => ({
  type: "response.function_call_arguments.done",
  item_id,
  output_index,
  arguments: args
})

const message = (id: string, text: string, status = "completed") => ({
  id,
  type: "message",
  status,
  role: "assistant",
  content: status === "completed" ? [{ type: "output_text", text, annotations: [] }] : []
})
const call = (id: string, call_id: string, name: string, args: string, status = "completed") => ({
  id,
  type: "function_call",
  status,
  arguments: args,
  call_id,
  name
})

/** Reasoning in two summary parts with its encrypted content, text, two function calls, usage. */
export const responsesFullEvents = [
  created,
  inProgress,
  itemAdded(0, { id: "rs_01", type: "reasoning", summary: [] }),
  summaryPartAdded("rs_01", 0, 0),
  summaryDelta("rs_01", 0, 0, "**Adding** numbers… "),
  summaryDelta("rs_01", 0, 0, "🤔"),
  {
    type: "response.reasoning_summary_text.done",
    item_id: "rs_01",
    output_index: 0,
    summary_index: 0,
    text: "**Adding** numbers… 🤔"
  },
  summaryPartAdded("rs_01", 0, 1),
  summaryDelta("rs_01", 0, 1, "Then echo."),
  itemDone(0, {
    id: "rs_01",
    type: "reasoning",
    summary: [{ type: "summary_text", text: "**Adding** numbers… 🤔" }, { type: "summary_text", text: "Then echo." }],
    encrypted_content: ENCRYPTED
  }),
  itemAdded(1, message("msg_01", "", "in_progress")),
  partAdded("msg_01", 1),
  textDelta("msg_01", 1, "Héllo wörld "),
  textDelta("msg_01", 1, "🌍!"),
  textDone("msg_01", 1, "Héllo wörld 🌍!"),
  {
    type: "response.content_part.done",
    item_id: "msg_01",
    output_index: 1,
    content_index: 0,
    part: { type: "output_text", text: "Héllo wörld 🌍!", annotations: [] }
  },
  itemDone(1, message("msg_01", "Héllo wörld 🌍!")),
  itemAdded(2, call("fc_01", "call_a", "add", "", "in_progress")),
  argsDelta("fc_01", 2, "{\"a\": 2,"),
  argsDelta("fc_01", 2, " \"b\": 40}"),
  argsDone("fc_01", 2, "{\"a\": 2, \"b\": 40}"),
  itemDone(2, call("fc_01", "call_a", "add", "{\"a\": 2, \"b\": 40}")),
  itemAdded(3, call("fc_02", "call_b", "echo", "", "in_progress")),
  argsDelta("fc_02", 3, "{\"text\": \"naïve ✓"),
  argsDelta("fc_02", 3, " 日本\"}"),
  argsDone("fc_02", 3, "{\"text\": \"naïve ✓ 日本\"}"),
  itemDone(3, call("fc_02", "call_b", "echo", "{\"text\": \"naïve ✓ 日本\"}")),
  completed()
]

/** A plain text answer. */
export const responsesText = (text = "Hi there", end: { readonly type: string } = completed(usage(5, 2))) => [
  created,
  itemAdded(0, message("msg_t", "", "in_progress")),
  partAdded("msg_t", 0),
  textDelta("msg_t", 0, text),
  itemDone(0, message("msg_t", text)),
  end
]
