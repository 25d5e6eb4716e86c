/**
 * Checks that a list of events follows pi's streaming protocol, whatever the provider:
 * one `start` first, one `done`/`error` last; per content block a `*_start`, its deltas and one `*_end`
 * with matching types and indexes; deltas add up to the block's final text; every `partial` holds the
 * block its event is about, as it stands after that event; the final message holds every block as it
 * ended. Throws with a description of the first violation.
 */
import { Schema } from "effect"
import { AssistantMessageEvent } from "../../../src/AssistantMessageEvent.ts"
import type { AssistantMessage } from "../../../src/Message.ts"

const kindOf = (type: string) => type.split("_")[0]!

export const checkProtocol = (events: ReadonlyArray<AssistantMessageEvent>): AssistantMessage => {
  const fail = (i: number, why: string): never => {
    throw new Error(`event ${i} (${events[i]?.type}): ${why}`)
  }
  if (events.length < 2) throw new Error(`expected at least start and done, got ${events.length} events`)
  const decode = Schema.decodeUnknownSync(AssistantMessageEvent)
  const open = new Map<number, { kind: string; text: string }>()
  const ended = new Map<number, unknown>()
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!
    decode(Schema.encodeSync(AssistantMessageEvent)(event)) // the event has the protocol's shape
    if (i === 0 && event.type !== "start") fail(i, "the first event must be start")
    if (i > 0 && event.type === "start") fail(i, "start must come once")
    const last = i === events.length - 1
    if ((event.type === "done" || event.type === "error") !== last) fail(i, "done/error must come last, once")
    if (!("contentIndex" in event)) continue
    const index = event.contentIndex
    const block = event.partial.content[index]
    if (block === undefined) fail(i, `partial has no block ${index}`)
    const kind = kindOf(event.type)
    const blockKind = block!.type === "toolCall" ? "toolcall" : block!.type
    if (blockKind !== kind) fail(i, `block ${index} is ${block!.type}`)
    if (event.type.endsWith("_start")) {
      if (open.has(index) || ended.has(index)) fail(i, `block ${index} started twice`)
      if (index !== open.size + ended.size) fail(i, `block ${index} started out of order`)
      open.set(index, { kind, text: "" })
    } else if (event.type.endsWith("_delta")) {
      const state = open.get(index)
      if (state === undefined) fail(i, `delta for block ${index} which is not open`)
      state!.text += (event as { delta: string }).delta
      if (block!.type === "text" && block!.text !== state!.text) fail(i, "partial text differs from the deltas")
      if (block!.type === "thinking" && !block!.redacted && block!.thinking !== state!.text) {
        fail(i, "partial thinking differs from the deltas")
      }
    } else {
      const state = open.get(index)
      if (state === undefined) fail(i, `end for block ${index} which is not open`)
      open.delete(index)
      if (event.type === "toolcall_end") {
        ended.set(index, event.toolCall)
        if (JSON.stringify(event.toolCall) !== JSON.stringify(block)) fail(i, "toolCall differs from the partial")
        if (
          state!.text !== "" && JSON.stringify(JSON.parse(state!.text)) !== JSON.stringify(event.toolCall.arguments)
        ) {
          fail(i, "tool call arguments differ from the streamed JSON")
        }
      } else {
        const content = (event as { content: string }).content
        ended.set(index, block)
        if (!(block!.type === "thinking" && block!.redacted) && content !== state!.text) {
          fail(i, "end content differs from the deltas")
        }
      }
    }
  }
  if (open.size > 0) throw new Error(`blocks never ended: ${[...open.keys()].join(", ")}`)
  const final = events[events.length - 1]!
  const message = final.type === "done" ? final.message : final.type === "error" ? final.error : undefined
  if (message === undefined) throw new Error("no final message")
  if (message.content.length !== ended.size) throw new Error("the final message has blocks that were never streamed")
  message.content.forEach((block, index) => {
    if (JSON.stringify(block) !== JSON.stringify(ended.get(index))) {
      throw new Error(`final block ${index} differs from its end event`)
    }
  })
  return message
}

/** The events as `type:contentIndex` (or `type`), the shape a streaming test compares. */
export const eventShape = (events: ReadonlyArray<AssistantMessageEvent>): ReadonlyArray<string> =>
  events.map((e) => "contentIndex" in e ? `${e.type}:${e.contentIndex}` : e.type)
