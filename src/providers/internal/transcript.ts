/**
 * Making a transcript safe to send: what every provider's converter runs first.
 *
 * Internal: no entry point exports it.
 */
import type { AssistantMessage, Message, ToolCall, ToolResultMessage } from "../../Message.ts"
import type { ModelInfo } from "../../Model.ts"

/** The text of the result made up for a tool call that has none. */
export const MISSING_RESULT_TEXT = "No result provided"

/**
 * The messages a provider may see, so that every tool call it sees has exactly one result right after its
 * assistant message and every tool result answers a call it sees:
 *
 * - an assistant message that ended in `error` or `aborted` is dropped, and so are the tool results that
 *   answer its tool calls (its content may be cut short and its calls were never meant to run);
 * - a tool result that answers no call of the assistant message before it, or answers one a second time,
 *   is dropped;
 * - a tool call left without a result (before the next user or assistant message, or at the end) gets an
 *   error result saying no result was provided.
 */
export const sanitizeTranscript = (messages: ReadonlyArray<Message>): Array<Message> => {
  const out: Array<Message> = []
  let pending: Array<ToolCall> = []
  let answered = new Set<string>()
  let pendingSince = 0
  const settlePending = (timestamp: number) => {
    for (const call of pending) {
      if (!answered.has(call.id)) {
        out.push({
          role: "toolResult",
          toolCallId: call.id,
          toolName: call.name,
          content: [{ type: "text", text: MISSING_RESULT_TEXT }],
          isError: true,
          timestamp
        })
      }
    }
    pending = []
    answered = new Set()
  }
  for (const message of messages) {
    switch (message.role) {
      case "assistant": {
        settlePending(message.timestamp)
        if (message.stopReason === "error" || message.stopReason === "aborted") continue
        pending = message.content.filter((block): block is ToolCall => block.type === "toolCall")
        pendingSince = message.timestamp
        out.push(message)
        break
      }
      case "toolResult": {
        if (answered.has(message.toolCallId)) continue
        if (!pending.some((call) => call.id === message.toolCallId)) continue
        answered.add(message.toolCallId)
        out.push(message)
        break
      }
      case "user": {
        settlePending(message.timestamp)
        out.push(message)
        break
      }
    }
  }
  // At the end the made-up results take the time of the message that left them open: the transcript alone
  // decides, so the same transcript always gives the same request.
  settlePending(pendingSince)
  return out
}

/** Whether an assistant message was produced by the model now being called (its opaque tokens are valid). */
export const isSameModel = (message: AssistantMessage, info: ModelInfo): boolean =>
  message.api === info.api && message.provider === info.provider && message.model === info.model

/** Consecutive tool results, grouped: providers want them together after the assistant message. */
export const takeToolResults = (
  messages: ReadonlyArray<Message>,
  start: number
): { readonly results: Array<ToolResultMessage>; readonly next: number } => {
  const results: Array<ToolResultMessage> = []
  let i = start
  while (i < messages.length && messages[i]!.role === "toolResult") {
    results.push(messages[i] as ToolResultMessage)
    i++
  }
  return { results, next: i }
}
