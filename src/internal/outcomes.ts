/**
 * The immediate outcomes of prepare (TE 2, TE 9.1), each with the exact text the model will read, and the
 * way a user stage of prepare (`prepareArguments`, `beforeToolCall`) turns its failures into one.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import {
  AbortedBeforeStart,
  DuplicateToolCallId,
  type ImmediateOutcome,
  PrepareFailed,
  ToolCallBlocked,
  ToolCallSkipped,
  ToolNotFound
} from "../ImmediateOutcome.ts"
import type { ToolCall } from "../Message.ts"
import { errorResult, type Finalized } from "./callState.ts"
import { clip } from "./clip.ts"
import { callUser } from "./eager.ts"
import { causeMessage } from "./errorText.ts"

const ids = (toolCall: ToolCall) => ({ toolCallId: toolCall.id, toolName: toolCall.name })

/** TE 9.1: an earlier call of the batch has this id. */
export const duplicateId = (toolCall: ToolCall) =>
  new DuplicateToolCallId({
    ...ids(toolCall),
    message: `Tool call id "${
      clip(toolCall.id)
    }" is a duplicate: an earlier call in this message has the same id, so this one was not executed.`
  })

/** TE 2: the loop asked for the batch not to run (a response that cannot be trusted), with its reason. */
export const skipped = (toolCall: ToolCall, reason: string) =>
  new ToolCallSkipped({ ...ids(toolCall), message: reason })

/** TE 2.5: the run was aborted before the call could execute. */
export const abortedBeforeStart = (toolCall: ToolCall) =>
  new AbortedBeforeStart({
    ...ids(toolCall),
    message: `Tool ${clip(toolCall.name)} was not executed: the run was aborted before it started.`
  })

/** TE 2.2: no tool of that name. */
export const notFound = (toolCall: ToolCall) =>
  new ToolNotFound({ ...ids(toolCall), message: `Tool ${clip(toolCall.name)} not found` })

/** TE 2.4: `beforeToolCall` blocked the call (`reason` is the result text). */
export const blocked = (toolCall: ToolCall, reason: string | undefined, terminate: boolean) =>
  new ToolCallBlocked({ ...ids(toolCall), message: reason || "Tool execution was blocked", terminate })

/**
 * Runs a user stage of prepare (`prepareArguments`, `beforeToolCall`, a handler's `resources`): its failures
 * and defects (a synchronous throw included) become `PrepareFailed` with their message; an interruption
 * passes, so that an abort stays an abort.
 */
export const userStage = <A, R>(
  toolCall: ToolCall,
  stage: "prepareArguments" | "beforeToolCall" | "resources",
  effect: () => Effect.Effect<A, unknown, R>
): Effect.Effect<A, PrepareFailed, R> =>
  Effect.matchCauseEffectEager(callUser(effect), {
    onSuccess: Effect.succeed,
    onFailure: (cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.fail(new PrepareFailed({ ...ids(toolCall), message: causeMessage(cause), stage }))
  })

/** An immediate outcome as the call's final result (TE 5). Only a block may terminate (TE 7). */
export const immediateResult = (outcome: ImmediateOutcome): Finalized => {
  const finalized = { ...errorResult(outcome.message), errorType: outcome._tag }
  return outcome._tag === "ToolCallBlocked" && outcome.terminate
    ? { ...finalized, result: { ...finalized.result, terminate: true } }
    : finalized
}
