/**
 * What a running tool gets besides its arguments (TE 3): its call's id, an abort signal created only if the
 * tool reads it, and `update` for partial results.
 */
import * as Effect from "effect/Effect"
import type { AgentEvent } from "../AgentEvent.ts"
import type { ToolContext, ToolResult } from "../Tool.ts"
import { LazyAbort } from "./abort.ts"
import type { Call } from "./callState.ts"

/** A running call's context. `abort()` aborts the signal the tool holds (TE 8.2). */
export class CallContext extends LazyAbort implements ToolContext {
  readonly toolCallId: string
  readonly #call: Call
  readonly #emit: (event: AgentEvent) => Effect.Effect<void>
  constructor(call: Call, emit: (event: AgentEvent) => Effect.Effect<void>) {
    const id = call.toolCall.id
    super(() => new Error(`Tool call ${id} was interrupted`))
    this.toolCallId = id
    this.#call = call
    this.#emit = emit
  }
  /**
   * TE 3.2: emits `tool_execution_update`, only while the call runs (never after its end event). An own
   * property, so that a tool may destructure it from its context.
   */
  readonly update = (partialResult: ToolResult): Effect.Effect<void> =>
    Effect.suspend(() => {
      const { state, toolCall } = this.#call
      if (state._tag !== "Running") return Effect.void
      return Effect.uninterruptible(this.#emit({
        type: "tool_execution_update",
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        args: toolCall.arguments,
        partialResult
      }))
    })
}
