/**
 * Where one tool call of a batch stands, as one tagged union. The batch moves each call forward through
 * these states as its events go out (docs/tool-execution.md, TE 2 to TE 5); after an abort the state alone
 * says honestly what happened to the call (TE 8) and which of its events are still owed.
 */
import type { ToolCall, ToolResultMessage } from "../Message.ts"
import type { ToolResult } from "../Tool.ts"
import type { ToolBatchResult } from "../ToolBatch.ts"

/** A call's final result (after `afterToolCall`), as its end event and result message carry it. */
export interface Finalized {
  readonly result: ToolResult
  readonly isError: boolean
  /** The immediate outcome's tag, for telemetry (docs/telemetry.md OT 2.3). */
  readonly errorType?: string
}

/**
 * - `Waiting`: nothing sent yet.
 * - `Preparing`: `tool_execution_start` sent; in prepare (TE 2).
 * - `Prepared`: ready to execute; the tool has not started.
 * - `Running`: the handler was called (TE 3); `abort` aborts the signal the tool holds.
 * - `Stopped`: interrupted while running, and its own cleanup is done.
 * - `Finalizing`: in `afterToolCall` (TE 4); `abandoned` if its tool timed out and ignored cancellation.
 * - `Abandoned`: its tool did not stop within the grace period after an abort or a timeout (TE 3.5, TE 8.2);
 *   it may still be running.
 * - `Ended`: `tool_execution_end` sent with `outcome` (TE 5.1).
 * - `Announcing`: its result `message` created and `message_start` sent (TE 5.2).
 * - `Done`: `message_end` sent too. Every call of a batch that returns is `Done`.
 */
export type CallState =
  | { readonly _tag: "Waiting" }
  | { readonly _tag: "Preparing" }
  | { readonly _tag: "Prepared" }
  | { readonly _tag: "Running"; readonly abort: () => void }
  | { readonly _tag: "Stopped" }
  | { readonly _tag: "Finalizing"; readonly abandoned: boolean }
  | { readonly _tag: "Abandoned" }
  | { readonly _tag: "Ended"; readonly outcome: Finalized }
  | { readonly _tag: "Announcing"; readonly outcome: Finalized; readonly message: ToolResultMessage }
  | { readonly _tag: "Done"; readonly outcome: Finalized; readonly message: ToolResultMessage }

// The states without data are shared: a call changes state several times, and a batch may hold 100 000 calls.
export const Waiting: CallState = { _tag: "Waiting" }
export const Preparing: CallState = { _tag: "Preparing" }
export const Prepared: CallState = { _tag: "Prepared" }
export const Stopped: CallState = { _tag: "Stopped" }
export const Finalizing: CallState = { _tag: "Finalizing", abandoned: false }
export const FinalizingAbandoned: CallState = { _tag: "Finalizing", abandoned: true }
export const Abandoned: CallState = { _tag: "Abandoned" }

/** One tool call of a batch and where it stands. */
export interface Call {
  readonly toolCall: ToolCall
  state: CallState
}

/** Whether the call's tool was started (its handler called): after an abort it may have had side effects. */
export const wasStarted = (state: CallState): boolean => {
  switch (state._tag) {
    case "Running":
    case "Stopped":
    case "Finalizing":
    case "Abandoned":
      return true
    default:
      return false
  }
}

/** Whether the call's work phase may still be going on (so an abort must stop it, or abandon it). */
export const isBusy = (state: CallState): boolean => state._tag === "Running" || state._tag === "Finalizing"

/** Whether the call's tool was abandoned: it ignored cancellation (TE 8.2). */
export const wasAbandoned = (state: CallState): boolean =>
  state._tag === "Abandoned" || (state._tag === "Finalizing" && state.abandoned)

/** Whether `tool_execution_start` went out. */
export const hasStartEvent = (state: CallState): boolean => state._tag !== "Waiting"

/** Whether `tool_execution_end` went out. */
export const hasEndEvent = (state: CallState): boolean =>
  state._tag === "Ended" || state._tag === "Announcing" || state._tag === "Done"

/** A result for an error: one text block, `isError`. */
export const errorResult = (text: string, details: unknown = {}): Finalized => ({
  result: { content: [{ type: "text", text }], details },
  isError: true
})

/** The result message of a call; every call of a batch that returns has one (a missing one is a bug). */
const messageOf = (call: Call): ToolResultMessage => {
  const state = call.state
  if (state._tag === "Done" || state._tag === "Announcing") return state.message
  throw new Error(`effect-agent: tool call ${call.toolCall.id} left the batch in state ${state._tag}`)
}

/** TE 7: the batch's result once every call has its message. */
export const resultOf = (calls: ReadonlyArray<Call>, aborted: boolean): ToolBatchResult => ({
  messages: calls.map(messageOf),
  terminate: calls.length > 0 &&
    calls.every((call) => call.state._tag === "Done" && call.state.outcome.result.terminate === true),
  aborted
})
