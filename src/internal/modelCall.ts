/**
 * The model call of a turn (docs/agent-loop.md AL 2.3, AL 2.4): the request built from the transcript, the
 * response streamed and announced, and the message it ends with, whatever happens.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import type { AssistantMessageEvent } from "../AssistantMessageEvent.ts"
import { type AgentMessage, type AssistantMessage, emptyUsage, isMessage, type Message } from "../Message.ts"
import type { ModelRequest } from "../Model.ts"
import { interruptOnAbort } from "./abort.ts"
import { causeMessage } from "./errorText.ts"
import { isAborted, type Run } from "./run.ts"

/** AL 1.2: the messages a model reads by default (`defaultConvertToLlm`). */
const convertDefault = (messages: ReadonlyArray<AgentMessage>): ReadonlyArray<Message> => messages.filter(isMessage)

/** A message from no model call: the run failed or was aborted before (or while) the model answered. */
const closingMessage = (
  run: Run<any>,
  partial: AssistantMessage | undefined,
  stopReason: "error" | "aborted",
  errorMessage: string,
  timestamp: number
): AssistantMessage => ({
  ...(partial ?? {
    role: "assistant" as const,
    content: [],
    api: run.model.info.api,
    provider: run.model.info.provider,
    model: run.model.info.model,
    usage: emptyUsage,
    timestamp
  }),
  stopReason,
  errorMessage
})

/** AL 2.4: builds the model request: `transformContext`, then `convertToLlm`, then the tools' schemas. */
const buildRequest = <R>(run: Run<R>, systemPrompt: string): Effect.Effect<ModelRequest, unknown, R> => {
  const transform = run.config.transformContext
  const convert = run.config.convertToLlm
  if (transform === undefined && convert === undefined) {
    // No hook to run: the request is built right here, without an Effect per step.
    const messages = run.dropped === 0
      ? run.transcript.snapshot() as ReadonlyArray<Message>
      : convertDefault(run.transcript.peek())
    return Effect.succeed({ systemPrompt, messages, tools: run.tools, options: run.config.modelOptions })
  }
  return buildRequestWithHooks(run, systemPrompt)
}

// A module function, not a generator made per call (see `runMasked`).
const buildRequestWithHooks = Effect.fnUntraced(function*<R>(run: Run<R>, systemPrompt: string) {
  const transform = run.config.transformContext
  const convert = run.config.convertToLlm
  const transformed = transform ? yield* transform(run.transcript.snapshot()) : undefined
  let messages: ReadonlyArray<Message>
  if (convert !== undefined) messages = yield* convert(transformed ?? run.transcript.snapshot())
  else if (transformed !== undefined) messages = convertDefault(transformed)
  // Nothing to drop: the model reads the transcript itself, with no filtering pass over it.
  else if (run.dropped === 0) messages = run.transcript.snapshot() as ReadonlyArray<Message>
  else messages = convertDefault(run.transcript.peek())
  const request: ModelRequest = { systemPrompt, messages, tools: run.tools, options: run.config.modelOptions }
  return request
})

/** One model call being read (AL 2.3): what has arrived so far. */
interface Response {
  partial: AssistantMessage | undefined
  final: AssistantMessage | undefined
  /** `message_start` went out. */
  started: boolean
}

/**
 * Announces one event of the stream and says whether to read on: the stream is read up to its `done` or
 * `error` event and no further.
 */
const onResponseEvent = (run: Run<any>, response: Response, event: AssistantMessageEvent): Effect.Effect<boolean> => {
  // Aborted while the stream was delivering synchronously: stop here, as the signal's listener would.
  if (isAborted(run)) return Effect.interrupt
  switch (event.type) {
    case "done":
      response.final = event.message
      return Effect.succeed(false)
    case "error":
      response.final = event.error
      return Effect.succeed(false)
    case "start":
      response.partial = event.partial
      response.started = true
      return Effect.as(run.emit({ type: "message_start", message: event.partial }), true)
    default: {
      response.partial = event.partial
      const update = run.emit({ type: "message_update", message: event.partial, assistantMessageEvent: event })
      if (response.started) return Effect.as(update, true)
      response.started = true
      return Effect.as(Effect.andThen(run.emit({ type: "message_start", message: event.partial }), update), true)
    }
  }
}

/** The model call: the request built, then the stream read up to its final event. */
const readResponse = Effect.fnUntraced(function*<R>(run: Run<R>, response: Response, systemPrompt: string) {
  const request = yield* buildRequest(run, systemPrompt)
  yield* Stream.runForEachWhile(run.model.stream(request), (event) => onResponseEvent(run, response, event))
})

/**
 * The message the call ended with: the model's own final message, or (a failure, an abort, a stream
 * without a final message) a closing one stamped now. Announced (`message_start` unless the stream did,
 * then `message_end`), then returned.
 */
const endResponse = Effect.fnUntraced(function*(run: Run<any>, response: Response, exit: Exit.Exit<void, unknown>) {
  let message = response.final
  if (!Exit.isSuccess(exit) || isAborted(run) || message === undefined) {
    const now = yield* Clock.currentTimeMillis
    const { partial } = response
    if (Exit.isSuccess(exit) && !isAborted(run)) {
      message = closingMessage(run, partial, "error", "The model stream ended without a final message", now)
    } else if (isAborted(run) || Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause)) {
      message = closingMessage(run, partial, "aborted", "Request was aborted", now)
    } else {
      message = closingMessage(run, partial, "error", Exit.isFailure(exit) ? causeMessage(exit.cause) : "", now)
    }
  }
  if (!response.started) yield* run.emit({ type: "message_start", message })
  yield* run.emit({ type: "message_end", message })
  return message
})

/**
 * AL 2.3: streams one assistant response, announcing it (`message_start`, `message_update`s, `message_end`).
 * Always returns a message: failures become `stopReason: "error"` (AL 3.2), an abort `stopReason: "aborted"`
 * with whatever had arrived (AL 3.4).
 */
export const streamAssistantResponse = Effect.fnUntraced(function*<R>(run: Run<R>, systemPrompt: string) {
  const response: Response = { partial: undefined, final: undefined, started: false }
  if (isAborted(run)) return yield* endResponse(run, response, Exit.interrupt())
  const call = readResponse(run, response, systemPrompt)
  // Started at once (no trip through the scheduler); an abort raised while the stream delivers
  // synchronously is caught by `onResponseEvent`, which stops at the next event.
  const read = run.signal ? interruptOnAbort(call, run.signal, { startImmediately: true }) : call
  return yield* endResponse(run, response, yield* Effect.exit(read))
})
