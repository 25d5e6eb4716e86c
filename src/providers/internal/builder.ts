/**
 * Building an assistant message while its response streams in, and the events of pi's protocol that
 * describe each step. Every event carries a snapshot of the message so far: blocks are never mutated, a
 * changed block is replaced, so a snapshot an event carries stays as it was.
 *
 * Internal: no entry point exports it.
 */
import type { AssistantMessageEvent } from "../../AssistantMessageEvent.ts"
import type { AssistantContent, AssistantMessage, StopReason, ThinkingContent, ToolCall, Usage } from "../../Message.ts"
import { emptyUsage } from "../../Message.ts"
import type { ModelInfo } from "../../Model.ts"
import { parseArguments } from "./partialJson.ts"

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

/** Prices in dollars per million tokens, to fill in `usage.cost`. */
export interface Pricing {
  readonly input: number
  readonly output: number
  readonly cacheRead?: number | undefined
  readonly cacheWrite?: number | undefined
}

/** Token counts as providers report them; the total and the cost are derived. */
export interface TokenCounts {
  readonly input: number
  readonly output: number
  readonly cacheRead: number
  readonly cacheWrite: number
}

/** A usage record from token counts, with its cost when prices are known. */
export const makeUsage = (counts: TokenCounts, pricing: Pricing | undefined): Usage => {
  const per = (tokens: number, price: number | undefined) => (tokens * (price ?? 0)) / 1_000_000
  const cost = pricing === undefined
    ? emptyUsage.cost
    : {
      input: per(counts.input, pricing.input),
      output: per(counts.output, pricing.output),
      cacheRead: per(counts.cacheRead, pricing.cacheRead),
      cacheWrite: per(counts.cacheWrite, pricing.cacheWrite),
      total: 0
    }
  return {
    ...counts,
    totalTokens: counts.input + counts.output + counts.cacheRead + counts.cacheWrite,
    cost: pricing === undefined
      ? cost
      : { ...cost, total: cost.input + cost.output + cost.cacheRead + cost.cacheWrite }
  }
}

/** The message under construction and the events that narrate it. */
export class ResponseBuilder {
  private readonly content: Array<AssistantContent> = []
  private readonly open = new Set<number>()
  private readonly argumentText = new Map<number, string>()
  private events: Array<AssistantMessageEvent> = []
  private started = false
  usage: Usage = emptyUsage
  stopReason: StopReason = "stop"
  errorMessage: string | undefined = undefined
  responseId: string | undefined = undefined
  responseModel: string | undefined = undefined

  readonly info: ModelInfo
  readonly timestamp: number

  constructor(info: ModelInfo, timestamp: number) {
    this.info = info
    this.timestamp = timestamp
  }

  /** The message so far. */
  snapshot(): AssistantMessage {
    return {
      role: "assistant",
      content: this.content.slice(),
      api: this.info.api,
      provider: this.info.provider,
      model: this.info.model,
      ...(this.responseModel !== undefined && this.responseModel !== this.info.model
        ? { responseModel: this.responseModel }
        : {}),
      ...(this.responseId !== undefined ? { responseId: this.responseId } : {}),
      usage: this.usage,
      stopReason: this.stopReason,
      ...(this.errorMessage !== undefined ? { errorMessage: this.errorMessage } : {}),
      timestamp: this.timestamp
    }
  }

  /** The events produced since the last call. */
  drain(): Array<AssistantMessageEvent> {
    const out = this.events
    this.events = []
    return out
  }

  get hasStarted(): boolean {
    return this.started
  }

  /** Emits `start` once. */
  start(): void {
    if (this.started) return
    this.started = true
    this.events.push({ type: "start", partial: this.snapshot() })
  }

  /** The content index of the last block, or -1. */
  get lastIndex(): number {
    return this.content.length - 1
  }

  block(index: number): AssistantContent | undefined {
    return this.content[index]
  }

  isOpen(index: number): boolean {
    return this.open.has(index)
  }

  openText(initial = ""): number {
    this.start()
    const index = this.content.push({ type: "text", text: "" }) - 1
    this.open.add(index)
    this.events.push({ type: "text_start", contentIndex: index, partial: this.snapshot() })
    if (initial.length > 0) this.appendText(index, initial)
    return index
  }

  appendText(index: number, delta: string): void {
    const block = this.content[index]
    if (block?.type !== "text" || !this.open.has(index) || delta.length === 0) return
    this.content[index] = { ...block, text: block.text + delta }
    this.events.push({ type: "text_delta", contentIndex: index, delta, partial: this.snapshot() })
  }

  openThinking(
    options: { readonly signature?: string; readonly redacted?: boolean; readonly initial?: string } = {}
  ): number {
    this.start()
    const block: ThinkingContent = {
      type: "thinking",
      thinking: options.redacted === true ? "[Reasoning redacted]" : "",
      ...(options.signature !== undefined ? { thinkingSignature: options.signature } : {}),
      ...(options.redacted === true ? { redacted: true } : {})
    }
    const index = this.content.push(block) - 1
    this.open.add(index)
    this.events.push({ type: "thinking_start", contentIndex: index, partial: this.snapshot() })
    if (options.initial !== undefined && options.initial.length > 0) this.appendThinking(index, options.initial)
    return index
  }

  appendThinking(index: number, delta: string): void {
    const block = this.content[index]
    if (block?.type !== "thinking" || !this.open.has(index) || delta.length === 0) return
    this.content[index] = { ...block, thinking: block.thinking + delta }
    this.events.push({ type: "thinking_delta", contentIndex: index, delta, partial: this.snapshot() })
  }

  /** Adds to a thinking block's signature (signatures stream in pieces too); no event of its own. */
  appendSignature(index: number, piece: string): void {
    const block = this.content[index]
    if (block?.type !== "thinking" || piece.length === 0) return
    this.content[index] = { ...block, thinkingSignature: (block.thinkingSignature ?? "") + piece }
  }

  /**
   * Sets the opaque token a provider wants back with a block: a text's `textSignature`, a thinking block's
   * `thinkingSignature`, a tool call's `thoughtSignature`. No event of its own: the next snapshot shows it.
   */
  setSignature(index: number, signature: string): void {
    const block = this.content[index]
    if (block === undefined || signature.length === 0) return
    switch (block.type) {
      case "text":
        this.content[index] = { ...block, textSignature: signature }
        break
      case "thinking":
        this.content[index] = { ...block, thinkingSignature: signature }
        break
      case "toolCall":
        this.content[index] = { ...block, thoughtSignature: signature }
        break
    }
  }

  openToolCall(id: string, name: string, initialArguments: Record<string, unknown> = {}): number {
    this.start()
    const index = this.content.push({ type: "toolCall", id, name, arguments: initialArguments }) - 1
    this.open.add(index)
    this.argumentText.set(index, "")
    this.events.push({ type: "toolcall_start", contentIndex: index, partial: this.snapshot() })
    return index
  }

  /** Fills in the id or name of a tool call when they arrive after its first piece. */
  completeToolCall(
    index: number,
    fields: { readonly id?: string | undefined; readonly name?: string | undefined }
  ): void {
    const block = this.content[index]
    if (block?.type !== "toolCall") return
    const id = block.id === "" && fields.id ? fields.id : block.id
    const name = block.name === "" && fields.name ? fields.name : block.name
    if (id !== block.id || name !== block.name) this.content[index] = { ...block, id, name }
  }

  appendToolArguments(index: number, delta: string): void {
    const block = this.content[index]
    if (block?.type !== "toolCall" || !this.open.has(index) || delta.length === 0) return
    const text = (this.argumentText.get(index) ?? "") + delta
    this.argumentText.set(index, text)
    this.content[index] = { ...block, arguments: parseArguments(text) }
    this.events.push({ type: "toolcall_delta", contentIndex: index, delta, partial: this.snapshot() })
  }

  /** Replaces a tool call's arguments with a complete value (no event: `close` reports it). */
  setToolArguments(index: number, args: Record<string, unknown>): void {
    const block = this.content[index]
    if (block?.type !== "toolCall") return
    this.argumentText.set(index, "")
    this.content[index] = { ...block, arguments: args }
  }

  /**
   * Ends a block with its `*_end` event. A tool call's arguments are parsed from all of their text; when
   * that text is not valid JSON the call keeps it as `rawArguments`.
   */
  close(index: number): void {
    if (!this.open.delete(index)) return
    const block = this.content[index]!
    switch (block.type) {
      case "text":
        this.events.push({ type: "text_end", contentIndex: index, content: block.text, partial: this.snapshot() })
        break
      case "thinking":
        this.events.push({
          type: "thinking_end",
          contentIndex: index,
          content: block.thinking,
          partial: this.snapshot()
        })
        break
      case "toolCall": {
        const text = this.argumentText.get(index) ?? ""
        this.argumentText.delete(index)
        const toolCall: ToolCall = text.trim() === ""
          ? block
          : isJson(text)
          ? { ...block, arguments: parseArguments(text) }
          // What could be salvaged stays in `arguments`; the raw text tells the tool layer it was not JSON.
          : { ...block, arguments: parseArguments(text), rawArguments: text }
        this.content[index] = toolCall
        this.events.push({ type: "toolcall_end", contentIndex: index, toolCall, partial: this.snapshot() })
        break
      }
    }
  }

  /** Ends every open block, in content order. */
  closeAll(): void {
    for (const index of [...this.open].sort((a, b) => a - b)) this.close(index)
  }

  get hasToolCalls(): boolean {
    return this.content.some((block) => block.type === "toolCall")
  }

  /** Ends the response with a provider's stop reason mapped to ours (see {@link finish}). */
  finishWith(mapped: { readonly stopReason: StopReason; readonly errorMessage?: string | undefined }): void {
    this.stopReason = mapped.stopReason
    if (mapped.errorMessage !== undefined) this.errorMessage = mapped.errorMessage
    this.finish()
  }

  /**
   * Ends the response: closes what is open and emits `done`, or `error` when the stop reason is `error`
   * (e.g. a content filter), with the final message.
   */
  finish(): void {
    this.start()
    this.closeAll()
    const message = this.snapshot()
    if (this.stopReason === "error" || this.stopReason === "aborted") {
      this.events.push({ type: "error", reason: this.stopReason, error: message })
    } else {
      this.events.push({ type: "done", reason: this.stopReason, message })
    }
  }
}
