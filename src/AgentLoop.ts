/**
 * The agent loop: turns of "stream a model response, run its tool batch", with steering messages read after
 * each whole batch and follow-up messages read when the agent would otherwise stop. The contract is
 * `docs/agent-loop.md`.
 *
 * Every run ends its event stream with exactly one `agent_end`; model, hook and subscriber failures end the
 * turn with an `error` assistant message instead of escaping; an abort ends it with an `aborted` one; and
 * every tool call in the returned messages has exactly one tool result after it.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Channel from "effect/Channel"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Pull from "effect/Pull"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentContext } from "./AgentContext.ts"
import type { AgentEvent } from "./AgentEvent.ts"
import type { AssistantMessageEvent } from "./AssistantMessageEvent.ts"
import * as EventSink from "./EventSink.ts"
import { abortOnInterrupt, interruptOnAbort } from "./internal/abort.ts"
import { makeEmitter } from "./internal/emitter.ts"
import { causeMessage } from "./internal/errorText.ts"
import { EventIterator } from "./internal/eventIterator.ts"
import { Growing } from "./internal/growing.ts"
import { skipping } from "./internal/skip.ts"
import * as Telemetry from "./internal/telemetry.ts"
import type { Restore } from "./internal/uninterruptible.ts"
import {
  type AgentMessage,
  type AssistantMessage,
  emptyUsage,
  isMessage,
  type Message,
  toolCallsOf,
  type ToolResultMessage
} from "./Message.ts"
import { Model, type ModelOptions, type ModelRequest, type ModelShape, type ToolSpec } from "./Model.ts"
import {
  executeToolCalls,
  type ToolBatchResult,
  type ToolExecutionConfig,
  type ToolExecutionOptions
} from "./ToolExecution.ts"
import { ToolRegistry, type ToolRegistryShape } from "./ToolRegistry.ts"

/** What `shouldStopAfterTurn` sees once a turn is over. */
interface ShouldStopAfterTurnContext {
  readonly message: AssistantMessage
  readonly toolResults: ReadonlyArray<ToolResultMessage>
  readonly context: AgentContext
  readonly newMessages: ReadonlyArray<AgentMessage>
}

/**
 * How a run behaves. Hooks are Effects that may use services `R`; their failures are contained (see each
 * field).
 */
export interface AgentLoopConfig<R = never> extends ToolExecutionConfig<R> {
  /**
   * Turns the transcript into the messages the model reads; application messages are dropped or converted
   * here. Default: keep user, assistant and tool-result messages. A failure ends the turn with an `error`
   * assistant message.
   */
  readonly convertToLlm?:
    | ((messages: ReadonlyArray<AgentMessage>) => Effect.Effect<ReadonlyArray<Message>, unknown, R>)
    | undefined
  /**
   * Rewrites the transcript before `convertToLlm` (pruning, injection). A failure ends the turn with an
   * `error` assistant message.
   */
  readonly transformContext?:
    | ((messages: ReadonlyArray<AgentMessage>) => Effect.Effect<ReadonlyArray<AgentMessage>, unknown, R>)
    | undefined
  /** Messages to inject after the current batch (read after each whole batch and its `turn_end`). */
  readonly getSteeringMessages?: Effect.Effect<ReadonlyArray<AgentMessage>, never, R> | undefined
  /** Messages to process when the agent would otherwise stop. */
  readonly getFollowUpMessages?: Effect.Effect<ReadonlyArray<AgentMessage>, never, R> | undefined
  /**
   * Asked after each turn; `true` ends the run before steering and follow-ups are read. A failure is logged
   * and ends the run the same way (stopping is the safe choice).
   */
  readonly shouldStopAfterTurn?:
    | ((context: ShouldStopAfterTurnContext) => Effect.Effect<boolean, unknown, R>)
    | undefined
  /** Options passed to the model on every call. */
  readonly modelOptions?: ModelOptions | undefined
  /** Aborting it ends the run: the current response ends `aborted`, the batch settles, no model call follows. */
  readonly signal?: AbortSignal | undefined
}

/** `continue` was asked of a transcript it cannot continue. */
export class CannotContinue extends Schema.TaggedError<CannotContinue>()("CannotContinue", {
  message: Schema.String
}) {}

/** The messages a model reads by default: user, assistant and tool results; application messages dropped (AL 1.2). */
export const defaultConvertToLlm = (messages: ReadonlyArray<AgentMessage>): ReadonlyArray<Message> =>
  messages.filter(isMessage)

/** The tools of a registry as the model sees them. */
const toolSpecs = (registry: ToolRegistryShape): ReadonlyArray<ToolSpec> =>
  registry.tools.map(({ tool }) => ({ name: tool.name, description: tool.description, parameters: tool.jsonSchema }))

const NOT_RUN_AFTER_LENGTH =
  "Tool call was not executed: the response hit the output token limit, so its arguments may be truncated."

// ---------------------------------------------------------------------------------------------------------
// One run
// ---------------------------------------------------------------------------------------------------------

interface Run<R> {
  readonly config: AgentLoopConfig<R>
  readonly model: ModelShape
  readonly registry: ToolRegistryShape
  /** The registry's tools as the model sees them, built once per run. */
  readonly tools: ReadonlyArray<ToolSpec>
  readonly emit: (event: AgentEvent) => Effect.Effect<void>
  readonly signal: AbortSignal | undefined
  /**
   * The transcript so far. Appending costs the same at any length: snapshots handed out (to hooks, to the
   * model) are immutable arrays, and the transcript copies itself only on the first append after one was
   * actually taken (see `Growing`).
   */
  readonly transcript: Growing<AgentMessage>
  /** How many messages of the transcript the default conversion drops (application messages). */
  dropped: number
  /** The messages this run added, kept the same way. */
  readonly newMessages: Growing<AgentMessage>
  /** The run's spans and metrics; `undefined` when nothing is recorded (docs/telemetry.md OT 1.2). */
  readonly trace: Telemetry.RunTrace | undefined
}

const isAborted = (run: Run<any>) => run.signal?.aborted === true

const append = <R>(run: Run<R>, message: AgentMessage) => {
  run.transcript.append(message)
  if (!isMessage(message)) run.dropped++
  run.newMessages.append(message)
}

/** A batch's results, appended at once (tool results are messages: nothing to drop). */
const appendAll = <R>(run: Run<R>, messages: ReadonlyArray<ToolResultMessage>) => {
  run.transcript.appendAll(messages)
  run.newMessages.appendAll(messages)
}

/**
 * The context as of now. Its `messages` are taken only when read, so a batch or hook that never looks at the
 * transcript costs nothing; read later, they are still the messages of this moment.
 */
const contextOf = <R>(run: Run<R>, systemPrompt: string): AgentContext =>
  new LaterContext(systemPrompt, run.transcript.later())

/**
 * A context whose `messages` are read when asked for: an own enumerable getter (a spread copy reads it),
 * defined from one shared descriptor (V8 builds an object literal with a getter through its runtime, several
 * times slower, and it is made once per turn).
 */
class LaterContext implements AgentContext {
  readonly systemPrompt: string
  declare readonly messages: ReadonlyArray<AgentMessage>
  readonly #messages: () => ReadonlyArray<AgentMessage>
  static readonly messagesDescriptor: PropertyDescriptor = {
    get(this: LaterContext) {
      return this.#messages()
    },
    enumerable: true,
    configurable: true
  }
  constructor(systemPrompt: string, messages: () => ReadonlyArray<AgentMessage>) {
    this.systemPrompt = systemPrompt
    this.#messages = messages
    Object.defineProperty(this, "messages", LaterContext.messagesDescriptor)
  }
}

/**
 * Delivery for the loop's own events: contained (a failing subscriber never ends a run), and never cut
 * half-way: a synchronous or eager sink's delivery cannot be (see `internal/syncSink.ts`), any other
 * effectful sink's runs uninterruptibly, so an abort waits for the event in flight.
 */
const loopEmit = (sink: EventSink.EventSinkShape) => {
  const emitter = makeEmitter(sink)
  return emitter.direct ? emitter.emit : emitUninterruptibly.bind(undefined, emitter.emit)
}

// Bound, not closures made per run and per event (see `Response`).
function emitUninterruptibly(emit: (event: AgentEvent) => Effect.Effect<void>, event: AgentEvent): Effect.Effect<void> {
  return Effect.uninterruptible(Effect.suspend(emit.bind(undefined, event)))
}

const announce = <R>(run: Run<R>, message: AgentMessage) =>
  Effect.flatMapEager(run.emit({ type: "message_start", message }), emitMessageEnd.bind(undefined, run, message))

function emitMessageEnd(run: Run<any>, message: AgentMessage): Effect.Effect<void> {
  return run.emit({ type: "message_end", message })
}

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
      : defaultConvertToLlm(run.transcript.peek())
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
  else if (transformed !== undefined) messages = defaultConvertToLlm(transformed)
  // Nothing to drop: the model reads the transcript itself, with no filtering pass over it.
  else if (run.dropped === 0) messages = run.transcript.snapshot() as ReadonlyArray<Message>
  else messages = defaultConvertToLlm(run.transcript.peek())
  const request: ModelRequest = { systemPrompt, messages, tools: run.tools, options: run.config.modelOptions }
  return request
})

const CONTINUE = Exit.succeed(true)
const STOP = Exit.succeed(false)

/** One model call being read (AL 2.3): what has arrived so far, and the steps that read it. */
class Response {
  partial: AssistantMessage | undefined = undefined
  final: AssistantMessage | undefined = undefined
  started = false
  /** The stream's pull, once opened; the stream's resources live in `scope`, closed when the call ends. */
  pull: Pull.Pull<ReadonlyArray<AssistantMessageEvent>, unknown, unknown> | undefined = undefined
  readonly scope: Scope.Closeable = Scope.makeUnsafe()
  readonly run: Run<any>
  readonly onPull: (
    pull: Pull.Pull<ReadonlyArray<AssistantMessageEvent>, unknown, unknown>
  ) => Effect.Effect<void, unknown>
  readonly onChunk: (chunk: ReadonlyArray<AssistantMessageEvent>) => Effect.Effect<void, unknown>
  readonly onExit: (exit: Exit.Exit<void, unknown>) => Effect.Effect<void>
  readonly onEnd: (exit: Exit.Exit<void, unknown>) => Effect.Effect<AssistantMessage>
  constructor(run: Run<any>) {
    this.run = run
    this.onPull = openedResponse.bind(undefined, this)
    this.onChunk = readChunk.bind(undefined, this, 0)
    this.onExit = closeScope.bind(undefined, this)
    this.onEnd = endResponse.bind(undefined, this)
  }
}

/** The stream ended (a stream may end before its `done` event: `endResponse` closes such a call). */
const endOfStream = (): Effect.Effect<void> => Effect.void

/**
 * Announces one event of the stream and says whether to read on: the stream is read up to its `done` or
 * `error` event and no further.
 */
function onResponseEvent(response: Response, event: AssistantMessageEvent): Effect.Effect<boolean> {
  const run = response.run
  // Aborted while the stream was delivering synchronously: stop here, as the signal's listener would.
  if (isAborted(run)) return Effect.interrupt
  let handled: Effect.Effect<void>
  switch (event.type) {
    case "start":
      response.partial = event.partial
      response.started = true
      handled = run.emit({ type: "message_start", message: event.partial })
      break
    case "done":
      response.final = event.message
      return STOP
    case "error":
      response.final = event.error
      return STOP
    default:
      response.partial = event.partial
      if (!response.started) {
        response.started = true
        handled = Effect.flatMapEager(
          run.emit({ type: "message_start", message: event.partial }),
          () => run.emit({ type: "message_update", message: event.partial, assistantMessageEvent: event })
        )
      } else {
        handled = run.emit({ type: "message_update", message: event.partial, assistantMessageEvent: event })
      }
  }
  // A delivery that completed (a synchronous sink) answers with a shared Exit, not a new Effect per event.
  return Exit.isExit(handled) && Exit.isSuccess(handled) ? CONTINUE : Effect.as(handled, true)
}

/**
 * The model call: the request built, then the stream read through its pull, chunk by chunk, as plain code
 * while each event is delivered at once (`Stream.runForEachWhile` runs a loop of Effects per chunk). The
 * stream's scope is closed with the call's exit, as a stream run closes it.
 */
function readResponse(response: Response, request: ModelRequest): Effect.Effect<void, unknown> {
  const channel = Stream.toChannel(response.run.model.stream(request))
  return Effect.onExit(
    Pull.catchDone(Effect.flatMap(Channel.toPullScoped(channel, response.scope), response.onPull), endOfStream),
    response.onExit
  )
}

function openedResponse(
  response: Response,
  pull: Pull.Pull<ReadonlyArray<AssistantMessageEvent>, unknown, unknown>
): Effect.Effect<void, unknown> {
  response.pull = pull
  return Effect.flatMap(pull, response.onChunk)
}

/** The events of one chunk from `start` on; then the next chunk, unless an event ended the reading. */
function readChunk(
  response: Response,
  start: number,
  chunk: ReadonlyArray<AssistantMessageEvent>
): Effect.Effect<void, unknown> {
  for (let i = start; i < chunk.length; i++) {
    const handled = onResponseEvent(response, chunk[i]!)
    if (handled === CONTINUE) continue
    if (handled === STOP) return Effect.void
    if (Exit.isExit(handled)) return Exit.isFailure(handled) || !handled.value ? Exit.asVoid(handled) : Effect.void
    return Effect.flatMap(handled, resumeChunk.bind(undefined, response, chunk, i + 1))
  }
  return Effect.flatMap(response.pull!, response.onChunk)
}

function resumeChunk(
  response: Response,
  chunk: ReadonlyArray<AssistantMessageEvent>,
  next: number,
  more: boolean
): Effect.Effect<void, unknown> {
  return more ? readChunk(response, next, chunk) : Effect.void
}

// Runs as the finalizer of `Effect.onExit`, which is uninterruptible: the scope is closed right here and its
// finalizers' Effect (if any) returned to run, without `Scope.close`'s closure per call.
function closeScope(response: Response, exit: Exit.Exit<void, unknown>): Effect.Effect<void> {
  return Scope.closeUnsafe(response.scope, exit) ?? Effect.void
}

/**
 * The message the call ended with: the model's own final message, or (a failure, an abort, a stream
 * without a final message) a closing one stamped now. Announced, then returned.
 */
function endResponse(response: Response, exit: Exit.Exit<void, unknown>): Effect.Effect<AssistantMessage> {
  const run = response.run
  if (Exit.isSuccess(exit) && !isAborted(run) && response.final !== undefined) {
    return announceResponse(response, response.final)
  }
  return Effect.flatMap(Clock.currentTimeMillis, closeResponse.bind(undefined, response, exit))
}

function closeResponse(
  response: Response,
  exit: Exit.Exit<void, unknown>,
  now: number
): Effect.Effect<AssistantMessage> {
  const { partial, run } = response
  let message: AssistantMessage
  if (Exit.isSuccess(exit) && !isAborted(run)) {
    message = closingMessage(run, partial, "error", "The model stream ended without a final message", now)
  } else if (isAborted(run) || Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause)) {
    message = closingMessage(run, partial, "aborted", "Request was aborted", now)
  } else {
    message = closingMessage(run, partial, "error", Exit.isFailure(exit) ? causeMessage(exit.cause) : "", now)
  }
  return announceResponse(response, message)
}

/** `message_start` (unless the stream announced it) and `message_end` of the response; then the message. */
function announceResponse(response: Response, message: AssistantMessage): Effect.Effect<AssistantMessage> {
  const run = response.run
  return response.started
    ? announceEnd(run, message)
    : Effect.flatMapEager(run.emit({ type: "message_start", message }), announceEnd.bind(undefined, run, message))
}

function announceEnd(run: Run<any>, message: AssistantMessage): Effect.Effect<AssistantMessage> {
  const emitted = run.emit({ type: "message_end", message })
  return Exit.isExit(emitted) && Exit.isSuccess(emitted) ? Exit.succeed(message) : Effect.as(emitted, message)
}

/**
 * AL 2.3: streams one assistant response, announcing it (`message_start`, `message_update`s, `message_end`).
 * Always returns a message: failures become `stopReason: "error"` (AL 3.2), an abort `stopReason: "aborted"`
 * with whatever had arrived (AL 3.4).
 */
const streamAssistantResponse = <R>(run: Run<R>, systemPrompt: string): Effect.Effect<AssistantMessage, never, R> => {
  const response = new Response(run)
  if (isAborted(run)) return endResponse(response, Exit.interrupt())
  const call = Effect.flatMap(buildRequest(run, systemPrompt), readResponse.bind(undefined, response))
  // Started at once (no trip through the scheduler); an abort raised while the stream delivers
  // synchronously is caught by `onResponseEvent`, which stops at the next event.
  const read = run.signal ? interruptOnAbort(call, run.signal, { startImmediately: true }) : call
  return Effect.flatMap(Effect.exit(read), response.onEnd)
}

/**
 * AL 2.5: the tool batch of a response (TE), or the settled-but-not-run results of a response that cannot
 * be trusted (AL 2.10, AL 3.3).
 */
const runToolBatch = <R>(
  run: Run<R>,
  message: AssistantMessage,
  systemPrompt: string
): Effect.Effect<ToolBatchResult, never, ToolRegistry | R> => {
  const skipReason = message.stopReason === "length"
    ? NOT_RUN_AFTER_LENGTH
    : message.stopReason === "error"
    ? "Tool call was not executed: the model response failed."
    : undefined
  // An aborted response's calls go through an aborted signal, so they settle as "not started".
  const signal = message.stopReason === "aborted" && !isAborted(run) ? AbortSignal.abort() : run.signal
  const { abandonAfter, afterToolCall, beforeToolCall, concurrency, timeout, toolExecution } = run.config
  const options: ToolExecutionOptions<R> = {
    toolExecution,
    concurrency,
    beforeToolCall,
    afterToolCall,
    timeout,
    abandonAfter,
    signal,
    context: contextOf(run, systemPrompt)
  }
  return Telemetry.inTurn(
    run.trace,
    executeToolCalls(message, skipReason === undefined ? options : skipping(options, skipReason))
  )
}

/** AL 2.6: `shouldStopAfterTurn`, with its failure treated as "stop". */
const stopAfterTurn = <R>(
  run: Run<R>,
  message: AssistantMessage,
  toolResults: ReadonlyArray<ToolResultMessage>,
  systemPrompt: string
): Effect.Effect<boolean, never, R> => {
  const hook = run.config.shouldStopAfterTurn
  if (hook === undefined) return Effect.succeed(false)
  const newMessages = run.newMessages.later()
  const context: ShouldStopAfterTurnContext = {
    message,
    toolResults,
    context: contextOf(run, systemPrompt),
    get newMessages() {
      return newMessages()
    }
  }
  return Effect.suspend(() => hook(context)).pipe(
    Effect.catchCause((cause) =>
      Effect.as(Effect.logWarning("effect-agent: shouldStopAfterTurn failed; stopping the run", cause), true)
    )
  )
}

/** Reads a queue; a defect in it is logged and reads as empty, so the run still ends normally (AL 3.1). */
const poll = <R>(queue: Effect.Effect<ReadonlyArray<AgentMessage>, never, R> | undefined, name: string) =>
  queue === undefined
    ? Effect.succeed<ReadonlyArray<AgentMessage>>([])
    : queue.pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause)
          : Effect.as(Effect.logError(`effect-agent: ${name} failed; treating it as empty`, cause), [])
      )
    )

/** AL 2: the two nested loops (steering AL 2.6, follow-ups AL 2.7, termination AL 2.8). */
// The run's registry and sink are the ones in the context it runs in: the batch finds them there.
const runLoop = Effect.fnUntraced(function*<R>(run: Run<R>, systemPrompt: string) {
  let firstTurn = true
  // Built once per run, read once or twice per turn.
  const steering = poll(run.config.getSteeringMessages, "getSteeringMessages")
  const followUps = poll(run.config.getFollowUpMessages, "getFollowUpMessages")
  let pending = yield* steering
  while (true) {
    let moreToolCalls = true
    while (moreToolCalls || pending.length > 0) {
      if (firstTurn) firstTurn = false
      else yield* run.emit({ type: "turn_start" })
      Telemetry.turnStart(run.trace)
      for (const message of pending) {
        yield* announce(run, message)
        append(run, message)
      }
      pending = []

      const message = yield* streamAssistantResponse(run, systemPrompt)
      append(run, message)
      const calls = toolCallsOf(message)
      const batch = calls.length > 0 ? yield* runToolBatch(run, message, systemPrompt) : undefined
      const toolResults = batch?.messages ?? []
      appendAll(run, toolResults)
      yield* run.emit({ type: "turn_end", message, toolResults })
      Telemetry.turnEnd(run.trace, message, toolResults)

      if (message.stopReason === "error" || message.stopReason === "aborted" || batch?.aborted || isAborted(run)) {
        return
      }
      // A terminating batch ends the inner loop; a length stop goes on so the model can retry.
      moreToolCalls = batch !== undefined && !batch.terminate
      if (
        run.config.shouldStopAfterTurn !== undefined && (yield* stopAfterTurn(run, message, toolResults, systemPrompt))
      ) {
        return
      }
      pending = yield* steering
    }
    pending = yield* followUps
    if (pending.length === 0) return
  }
})

/**
 * AL 2.1, AL 3.1: runs the loop to its `agent_end`. Interrupting this fiber is turned into an abort of the
 * run's signal (AL 3.4), so an interrupted run settles exactly like an aborted one (balanced events, results
 * for every tool call, AL 3.5).
 */
const startRun = <R>(
  context: AgentContext,
  config: AgentLoopConfig<R>,
  prompts: ReadonlyArray<AgentMessage>
): Effect.Effect<ReadonlyArray<AgentMessage>, never, Model | ToolRegistry | R> =>
  Effect.uninterruptibleMask((restore) => runMasked(context, config, prompts, restore))

// The run's generators are module functions: a generator function made per run (`Effect.gen(function*...)`
// inside a function) gets a hidden class of its own in the old generation the first time it is called, and
// that class holds the function and so everything its scope holds. Until the next major collection, every
// scavenge then keeps that run's objects alive and promotes them, a run after run: the young generation
// stops working for the loop (each scavenge copied about 1.4 MB and cost several times pi's).
const runMasked = Effect.fnUntraced(function*<R>(
  context: AgentContext,
  config: AgentLoopConfig<R>,
  prompts: ReadonlyArray<AgentMessage>,
  restore: Restore
) {
  // The run's signal fires on an interruption or when the caller's signal does (forwarded by a listener
  // removed when the run ends: `AbortSignal.any` costs several microseconds and weak references per run).
  const interrupted = new AbortController()
  const outer = config.signal
  const forward = outer === undefined ? undefined : () => interrupted.abort(outer.reason)
  if (outer !== undefined) {
    if (outer.aborted) interrupted.abort(outer.reason)
    else outer.addEventListener("abort", forward!, { once: true })
  }
  const signal = interrupted.signal
  const sink = yield* EventSink.EventSink
  const registry = yield* ToolRegistry
  const trace = yield* Telemetry.runTrace
  const run = makeRun(
    config,
    Telemetry.observeModel(trace, yield* Model),
    registry,
    loopEmit(sink),
    signal,
    new Growing(context.messages),
    trace
  )
  for (const message of context.messages) if (!isMessage(message)) run.dropped++
  for (const prompt of prompts) append(run, prompt)
  const body = runBody(run, prompts, context.systemPrompt)
  const work = abortOnInterrupt(Telemetry.invokeAgent(trace, run.model.info, body), interrupted, restore)
  yield* forward === undefined
    ? work
    : Effect.ensuring(work, Effect.sync(() => outer!.removeEventListener("abort", forward)))
  return run.newMessages.snapshot()
})

/** A run's state. */
function makeRun<R>(
  config: AgentLoopConfig<R>,
  model: ModelShape,
  registry: ToolRegistryShape,
  emit: (event: AgentEvent) => Effect.Effect<void>,
  signal: AbortSignal,
  transcript: Growing<AgentMessage>,
  trace: Telemetry.RunTrace | undefined
): Run<R> {
  return {
    config,
    model,
    registry,
    tools: toolSpecs(registry),
    emit,
    signal,
    transcript,
    dropped: 0,
    newMessages: new Growing(),
    trace
  }
}

const runBody = Effect.fnUntraced(function*<R>(
  run: Run<R>,
  prompts: ReadonlyArray<AgentMessage>,
  systemPrompt: string
) {
  yield* run.emit({ type: "agent_start" })
  yield* run.emit({ type: "turn_start" })
  for (const prompt of prompts) yield* announce(run, prompt)
  // Nothing inside the loop fails by design; a defect anyway (a bug, a throwing hook) still ends the run.
  const loop = yield* Effect.exit(runLoop(run, systemPrompt))
  if (Exit.isFailure(loop) && !Cause.hasInterruptsOnly(loop.cause)) {
    yield* Effect.logError("effect-agent: the agent loop died", loop.cause)
  }
  yield* run.emit({ type: "agent_end", messages: run.newMessages.snapshot() })
})

// ---------------------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------------------

/**
 * Runs the loop from new prompt messages, emitting events to the {@link EventSink.EventSink} in the
 * context, and returns the messages the run added (the prompts included). Never fails: every failure is
 * inside the transcript. The caller's context is not mutated.
 */
export const runAgentLoop = <R = never>(
  prompts: ReadonlyArray<AgentMessage>,
  context: AgentContext,
  config: AgentLoopConfig<R> = {}
): Effect.Effect<ReadonlyArray<AgentMessage>, never, Model | ToolRegistry | R> => startRun(context, config, prompts)

/**
 * AL 2.11: continues the loop from the current transcript without a new message (a retry, or after tool
 * results). Fails with {@link CannotContinue} when there is nothing to continue or the last message is the assistant's.
 */
export const runAgentLoopContinue = <R = never>(
  context: AgentContext,
  config: AgentLoopConfig<R> = {}
): Effect.Effect<ReadonlyArray<AgentMessage>, CannotContinue, Model | ToolRegistry | R> => {
  const last = context.messages.at(-1)
  if (last === undefined) return Effect.fail(new CannotContinue({ message: "Cannot continue: no messages in context" }))
  if (last.role === "assistant") {
    return Effect.fail(new CannotContinue({ message: "Cannot continue from message role: assistant" }))
  }
  return startRun(context, config, [])
}

const toStream = <E, R>(
  run: Effect.Effect<ReadonlyArray<AgentMessage>, E, R>
): Stream.Stream<AgentEvent, E, R> =>
  Stream.callback<AgentEvent, E, R>((queue) =>
    run.pipe(
      Effect.provideService(
        EventSink.EventSink,
        EventSink.fromCallback((event) => void Queue.offerUnsafe(queue, event))
      ),
      Effect.andThen(Queue.end(queue))
    )
  )

/**
 * The events of a run from new prompts, as a Stream that ends after `agent_end` (whose `messages` are the
 * run's new messages). Stopping the stream early interrupts the run.
 */
export const agentLoop = <R = never>(
  prompts: ReadonlyArray<AgentMessage>,
  context: AgentContext,
  config: AgentLoopConfig<R> = {}
): Stream.Stream<AgentEvent, never, Model | ToolRegistry | R> => toStream(runAgentLoop(prompts, context, config))

/** The events of a continued run, as a Stream; see {@link runAgentLoopContinue}. */
export const agentLoopContinue = <R = never>(
  context: AgentContext,
  config: AgentLoopConfig<R> = {}
): Stream.Stream<AgentEvent, CannotContinue, Model | ToolRegistry | R> =>
  toStream(runAgentLoopContinue(context, config))

/** The messages a finished run added, read from its `agent_end` event. @internal */
export const newMessagesOf = (events: ReadonlyArray<AgentEvent>): Option.Option<ReadonlyArray<AgentMessage>> => {
  const end = events.findLast((event) => event.type === "agent_end")
  return end === undefined ? Option.none() : Option.some(end.messages as ReadonlyArray<AgentMessage>)
}

// ---------------------------------------------------------------------------------------------------------
// For callers outside Effect
// ---------------------------------------------------------------------------------------------------------

/** The services a run needs, as a layer built per run by the adapters below. */
type RunLayer = Layer.Layer<Model | ToolRegistry, unknown>

/**
 * The events of a run as an `AsyncIterable`, for code without Effect (AL 3.7). The layer (model and tools) is built
 * for the run; breaking out of the loop (or a throw in its body) aborts the run, which still settles.
 */
export const agentLoopAsyncIterable = (
  prompts: ReadonlyArray<AgentMessage>,
  context: AgentContext,
  config: AgentLoopConfig,
  layer: RunLayer
): AsyncIterable<AgentEvent> => ({
  [Symbol.asyncIterator]: () =>
    new EventIterator((sink) =>
      runAgentLoop(prompts, context, config).pipe(
        Effect.provideService(EventSink.EventSink, sink),
        Effect.provide(layer)
      )
    )
})

/**
 * A run as a Promise of the messages it added, for code without Effect; events go to `onEvent` (awaited
 * in order; AL 3.7). Aborting `config.signal` aborts the run, which still resolves with a well-formed transcript.
 * Rejects only if the layer cannot be built.
 */
export const runAgentLoopPromise = (
  prompts: ReadonlyArray<AgentMessage>,
  context: AgentContext,
  config: AgentLoopConfig,
  layer: RunLayer,
  onEvent?: (event: AgentEvent) => void | Promise<void>
): Promise<ReadonlyArray<AgentMessage>> =>
  Effect.runPromise(
    runAgentLoop(prompts, context, config).pipe(
      Effect.provideService(EventSink.EventSink, {
        emit: (event) => onEvent === undefined ? Effect.void : Effect.promise(async () => await onEvent(event))
      }),
      Effect.provide(layer)
    )
  )
