/**
 * The stateful agent: a transcript, queues of steering and follow-up messages, one run at a time, and
 * subscribers that see every event in order. Its state is observable as a `SubscriptionRef`.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { identity } from "effect/Function"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type { AgentEvent } from "./AgentEvent.ts"
import { type AgentLoopConfig, CannotContinue, runAgentLoop, runAgentLoopContinue } from "./AgentLoop.ts"
import * as EventSink from "./EventSink.ts"
import { abortOnInterrupt } from "./internal/abort.ts"
import { contain } from "./internal/contain.ts"
import { Growing } from "./internal/growing.ts"
import { deliveringEagerly } from "./internal/syncSink.ts"
import type { Restore } from "./internal/uninterruptible.ts"
import type { AgentMessage, ImageContent, UserMessage } from "./Message.ts"
import { Model, type ModelInfo } from "./Model.ts"
import type { LimitReached } from "./RunLimits.ts"
import type { Tool } from "./Tool.ts"
import { ToolRegistry } from "./ToolRegistry.ts"

/**
 * AL 4.1: what the agent shows of itself. Replaced on every change, and never mutated: a state read later (from
 * `changes`, or kept by a subscriber) still shows its own moment. `messages` and `pendingToolCalls` are
 * taken when first read, so a change costs the same whatever the transcript's length; reading the current
 * state's `messages` gives the transcript itself, which the agent then stops appending to (it moves to a
 * copy on its next message). Spreading a state reads them (a plain copy is still a valid state).
 */
export interface AgentState {
  readonly systemPrompt: string
  readonly model: ModelInfo
  readonly tools: ReadonlyArray<Tool.Any>
  readonly messages: ReadonlyArray<AgentMessage>
  /** True from the start of a run until its `agent_end` subscribers have finished. */
  readonly isStreaming: boolean
  /** The message being streamed, if any. */
  readonly streamingMessage: AgentMessage | undefined
  /** Ids of the tool calls started and not yet ended. */
  readonly pendingToolCalls: ReadonlySet<string>
  /** The error of the most recent failed or aborted turn. */
  readonly errorMessage: string | undefined
  /** The limit that stopped the most recent run, when one did (AL 5); cleared when a run starts. */
  readonly limitReached: LimitReached | undefined
}

/** How queued messages are handed to the loop: the oldest alone (default), or all at once. */
export type QueueMode = "one-at-a-time" | "all"

/** A call the agent cannot take now (a run is active). The message says what to do instead. */
export class AgentBusy extends Schema.TaggedError<AgentBusy>()("AgentBusy", { message: Schema.String }) {}

/**
 * A subscriber: called for every event of every run, in subscription order, and awaited before the next
 * subscriber and the next event. It gets the run's abort signal (AL 4.6). Its failures are logged and never
 * reach the run (AL 4.7).
 */
type Listener = (event: AgentEvent, signal: AbortSignal) => Effect.Effect<void, unknown>

/** The input of `prompt`: text, one message, or several. */
export type PromptInput = string | AgentMessage | ReadonlyArray<AgentMessage>

/** Options of an agent. */
export interface AgentOptions<R = never>
  extends Omit<AgentLoopConfig<R>, "signal" | "getSteeringMessages" | "getFollowUpMessages">
{
  readonly systemPrompt?: string | undefined
  readonly messages?: ReadonlyArray<AgentMessage> | undefined
  readonly steeringMode?: QueueMode | undefined
  readonly followUpMode?: QueueMode | undefined
}

/** The agent's operations. */
export interface AgentShape {
  /** The observable state; `SubscriptionRef.changes(state)` streams it. */
  readonly state: SubscriptionRef.SubscriptionRef<AgentState>
  /**
   * Runs the agent on a prompt and settles when the run is over and its `agent_end` subscribers have
   * finished. Refused while a run is active (queue with `steer` or `followUp`). Interrupting it aborts the run.
   * AL 4.2.
   */
  readonly prompt: (input: PromptInput, images?: ReadonlyArray<ImageContent>) => Effect.Effect<void, AgentBusy>
  /**
   * Continues from the transcript: after a user message or tool results, runs the loop; after an assistant
   * message, delivers one queued steering message, else the queued follow-ups, else fails. AL 4.3.
   */
  readonly continue: Effect.Effect<void, AgentBusy | CannotContinue>
  /** Queues a message to inject after the current batch (AL 4.4, AL 2.6). */
  readonly steer: (message: AgentMessage | string) => Effect.Effect<void>
  /** Queues a message to process when the agent would otherwise stop (AL 4.4, AL 2.7). */
  readonly followUp: (message: AgentMessage | string) => Effect.Effect<void>
  readonly setSteeringMode: (mode: QueueMode) => Effect.Effect<void>
  readonly setFollowUpMode: (mode: QueueMode) => Effect.Effect<void>
  readonly clearSteeringQueue: Effect.Effect<void>
  readonly clearFollowUpQueue: Effect.Effect<void>
  readonly clearAllQueues: Effect.Effect<void>
  readonly hasQueuedMessages: Effect.Effect<boolean>
  /** Aborts the active run, if any. The run settles (every started tool call gets its result). AL 4.5. */
  readonly abort: Effect.Effect<void>
  /** Settles when no run is active. */
  readonly waitForIdle: Effect.Effect<void>
  /** Clears the transcript, the queues and the error. Refused while a run is active (AL 4.5). */
  readonly reset: Effect.Effect<void, AgentBusy>
  readonly setSystemPrompt: (systemPrompt: string) => Effect.Effect<void>
  /** Replaces the transcript. Refused while a run is active. */
  readonly setMessages: (messages: ReadonlyArray<AgentMessage>) => Effect.Effect<void, AgentBusy>
  /** Adds a subscriber; the returned effect removes it. */
  readonly subscribe: (listener: Listener) => Effect.Effect<Effect.Effect<void>>
}

const PROMPT_BUSY =
  "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
const CONTINUE_BUSY = "Agent is already processing. Wait for completion before continuing."
const RESET_BUSY = "Agent is processing. Abort it or wait for completion before resetting."
const SET_MESSAGES_BUSY = "Agent is processing. Wait for completion before replacing the messages."

class MessageQueue {
  items: Array<AgentMessage> = []
  mode: QueueMode
  constructor(mode: QueueMode) {
    this.mode = mode
  }
  drain(): ReadonlyArray<AgentMessage> {
    if (this.mode === "all") {
      const all = this.items
      this.items = []
      return all
    }
    const first = this.items.shift()
    return first === undefined ? [] : [first]
  }
}

interface ActiveRun {
  readonly controller: AbortController
  readonly done: Deferred.Deferred<void>
}

/** The plain fields of a state; the two collections are kept apart so that a change never copies them. */
type Plain = Omit<AgentState, "messages" | "pendingToolCalls">

/**
 * A state: `plain`'s fields (but `streamingMessage`), and collections read only when asked for. The two
 * collections are own enumerable getters (so a spread copy reads them), defined from one shared descriptor
 * each: V8 builds an object literal with getters through its runtime, several times slower.
 */
class BuiltState implements AgentState {
  readonly systemPrompt: string
  readonly model: ModelInfo
  readonly tools: ReadonlyArray<Tool.Any>
  readonly isStreaming: boolean
  readonly streamingMessage: AgentMessage | undefined
  readonly errorMessage: string | undefined
  readonly limitReached: LimitReached | undefined
  declare readonly messages: ReadonlyArray<AgentMessage>
  declare readonly pendingToolCalls: ReadonlySet<string>
  readonly #messages: () => ReadonlyArray<AgentMessage>
  readonly #pending: HashSet.HashSet<string>
  #pendingSet: ReadonlySet<string> | undefined = undefined
  static readonly messagesDescriptor: PropertyDescriptor = {
    get(this: BuiltState) {
      return this.#messages()
    },
    enumerable: true,
    configurable: true
  }
  static readonly pendingDescriptor: PropertyDescriptor = {
    get(this: BuiltState) {
      return this.#pendingSet ??= new Set(this.#pending)
    },
    enumerable: true,
    configurable: true
  }
  /** The collections a state built here keeps (read by `makeStates` without an object per state). */
  static messagesOf(state: BuiltState): () => ReadonlyArray<AgentMessage> {
    return state.#messages
  }
  static pendingOf(state: BuiltState): HashSet.HashSet<string> {
    return state.#pending
  }
  constructor(
    plain: Plain,
    streamingMessage: AgentMessage | undefined,
    messages: () => ReadonlyArray<AgentMessage>,
    pending: HashSet.HashSet<string>
  ) {
    this.systemPrompt = plain.systemPrompt
    this.model = plain.model
    this.tools = plain.tools
    this.isStreaming = plain.isStreaming
    this.streamingMessage = streamingMessage
    this.errorMessage = plain.errorMessage
    this.limitReached = plain.limitReached
    this.#messages = messages
    this.#pending = pending
    Object.defineProperty(this, "messages", BuiltState.messagesDescriptor)
    Object.defineProperty(this, "pendingToolCalls", BuiltState.pendingDescriptor)
  }
}

const build = (
  plain: Plain,
  streamingMessage: AgentMessage | undefined,
  messages: () => ReadonlyArray<AgentMessage>,
  pending: HashSet.HashSet<string>
): BuiltState => new BuiltState(plain, streamingMessage, messages, pending)

const plainOf = (state: AgentState): Plain => ({
  systemPrompt: state.systemPrompt,
  model: state.model,
  tools: state.tools,
  isStreaming: state.isStreaming,
  streamingMessage: state.streamingMessage,
  errorMessage: state.errorMessage,
  limitReached: state.limitReached
})

/**
 * The agent's transcript and its states. The transcript only grows during a run (see `Growing`); each state
 * holds a deferred snapshot of it. The collections of the state built last are kept here (every change
 * starts from the current state, which is that one); any other state, one set from outside or an older
 * one set back, is adopted as it is: its messages become the transcript, copied.
 */
const makeStates = (initial: ReadonlyArray<AgentMessage>) => {
  let transcript = new Growing(initial)
  let last: BuiltState | undefined
  const make = (
    plain: Plain,
    streamingMessage: AgentMessage | undefined,
    messages: () => ReadonlyArray<AgentMessage>,
    pending: HashSet.HashSet<string>
  ): AgentState => (last = build(plain, streamingMessage, messages, pending))
  /** The last state built, or `state` adopted: its messages become the transcript (copied). */
  const own = (state: AgentState): BuiltState => {
    if (state === last) return last
    transcript = new Growing(state.messages)
    return (last = build(
      plainOf(state),
      state.streamingMessage,
      transcript.later(),
      HashSet.fromIterable(state.pendingToolCalls)
    ))
  }
  const pendingOf = (state: AgentState) => BuiltState.pendingOf(own(state))
  /** `state` with some plain fields changed; the collections are shared, not copied. */
  const patch = (state: AgentState, fields: Partial<Plain>): AgentState => {
    const built = own(state)
    const plain = { ...plainOf(built), ...fields }
    return make(plain, plain.streamingMessage, BuiltState.messagesOf(built), BuiltState.pendingOf(built))
  }
  return {
    initial: (plain: Plain) => make(plain, plain.streamingMessage, transcript.later(), HashSet.empty()),
    patch,
    /** A new transcript (copied from `messages`) and no pending calls. */
    replace: (state: AgentState, fields: Partial<Plain>, messages: ReadonlyArray<AgentMessage>): AgentState => {
      transcript = new Growing(messages)
      const plain = { ...plainOf(state), ...fields }
      return make(plain, plain.streamingMessage, transcript.later(), HashSet.empty())
    },
    clearPending: (state: AgentState, fields: Partial<Plain>): AgentState => {
      const built = own(state)
      const plain = { ...plainOf(built), ...fields }
      return make(plain, plain.streamingMessage, BuiltState.messagesOf(built), HashSet.empty())
    },
    /** Applies an event to the state, as the transcript and UI fields follow it. O(1) in the transcript. */
    reduce: (state: AgentState, event: AgentEvent): AgentState => {
      switch (event.type) {
        case "message_start":
        case "message_update": {
          const built = own(state)
          return make(built, event.message, BuiltState.messagesOf(built), BuiltState.pendingOf(built))
        }
        case "message_end": {
          const pending = pendingOf(state)
          transcript.append(event.message)
          return make(state, undefined, transcript.later(), pending)
        }
        case "tool_execution_start":
        case "tool_execution_end": {
          const built = own(state)
          const pending = BuiltState.pendingOf(built)
          return make(
            built,
            built.streamingMessage,
            BuiltState.messagesOf(built),
            event.type === "tool_execution_start"
              ? HashSet.add(pending, event.toolCallId)
              : HashSet.remove(pending, event.toolCallId)
          )
        }
        case "turn_end": {
          const message = event.message
          return message.role === "assistant" && typeof message.errorMessage === "string"
            ? patch(state, { errorMessage: message.errorMessage })
            : state
        }
        case "agent_end":
          return patch(
            state,
            event.limitReached === undefined
              ? { streamingMessage: undefined }
              : { streamingMessage: undefined, limitReached: event.limitReached }
          )
        default:
          return state
      }
    }
  }
}

/**
 * One delivery at a time, first come first served. Taking a free turn is a plain check; a waiter is woken
 * from a microtask (never inline, so a long queue of deliveries that complete at once cannot grow the
 * stack), and a waiter interrupted after being handed the turn passes it on.
 */
class Turn {
  #busy = false
  readonly #waiting: Array<() => void> = []
  tryTake(): boolean {
    if (this.#busy) return false
    this.#busy = true
    return true
  }
  /** Hands the turn to the oldest waiter, or frees it. */
  release(): void {
    const next = this.#waiting.shift()
    if (next === undefined) this.#busy = false
    else next()
  }
  /** Waits for the turn (taking it at once if free). */
  readonly take: Effect.Effect<void> = Effect.callback<void>((resume) => {
    if (this.tryTake()) return resume(Effect.void)
    let handed = false
    const wake = () => {
      handed = true
      queueMicrotask(() => resume(Effect.void))
    }
    this.#waiting.push(wake)
    return Effect.sync(() => {
      if (handed) this.release()
      else this.#waiting.splice(this.#waiting.indexOf(wake), 1)
    })
  })
}

/**
 * `SubscriptionRef.update(ref, (a) => f(a, b))` without an Effect (nor a closure), when nothing holds the ref
 * (an update run with an Effect of its own, `updateEffect`, may be waiting between its read and its write):
 * sets the value and publishes it exactly as `update` does. Returns `false` when it could not (the caller then
 * runs `update`). It reads the ref's fields, which `effect` does not export: if they are not there, it returns
 * `false` and the caller takes the ordinary path.
 */
const updateNow = <A, B>(ref: SubscriptionRef.SubscriptionRef<A>, f: (a: A, b: B) => A, b: B): boolean => {
  const parts = ref as unknown as {
    value?: A
    pubsub?: PubSub.PubSub<A>
    semaphore?: { readonly free: number }
  }
  if (parts.pubsub === undefined || parts.semaphore?.free !== 1 || !("value" in parts)) return false
  parts.value = f(parts.value as A, b)
  PubSub.publishUnsafe(parts.pubsub, parts.value)
  return true
}

const STREAMING: Partial<Plain> = {
  isStreaming: true,
  streamingMessage: undefined,
  errorMessage: undefined,
  limitReached: undefined
}
const IDLE: Partial<Plain> = { isStreaming: false, streamingMessage: undefined }

/** Builds an agent on the {@link Model} and {@link ToolRegistry} in the context. */
export const make = Effect.fn("Agent.make")(function*<R = never>(options: AgentOptions<R> = {}) {
  const model = yield* Model
  const registry = yield* ToolRegistry
  const services = yield* Effect.context<Model | ToolRegistry | R>()
  const states = makeStates(options.messages ?? [])
  const state = yield* SubscriptionRef.make<AgentState>(states.initial({
    systemPrompt: options.systemPrompt ?? "",
    model: model.info,
    tools: registry.tools.map((entry) => entry.tool),
    isStreaming: false,
    streamingMessage: undefined,
    errorMessage: undefined,
    limitReached: undefined
  }))
  const steering = new MessageQueue(options.steeringMode ?? "one-at-a-time")
  const followUps = new MessageQueue(options.followUpMode ?? "one-at-a-time")
  let listeners: ReadonlyArray<Listener> = []
  let active: ActiveRun | undefined
  /**
   * Sets the state to `f(current, b)`: at once when nothing holds the ref, else through `SubscriptionRef.update`.
   * Call it while running (inside a `suspend` or a generator), never to build an Effect for later.
   */
  const setState = <B>(f: (current: AgentState, b: B) => AgentState, b: B): Effect.Effect<void> =>
    updateNow(state, f, b) ? Effect.void : SubscriptionRef.update(state, (current) => f(current, b))

  // Events of parallel tool fibers are delivered one at a time, in emission order.
  const turn = new Turn()
  const what = (event: AgentEvent) => `a subscriber on ${event.type}`

  /** Each subscriber of `current` from `start` on, in order; synchronously as long as each one completes at once. */
  const listenersFrom = (
    current: ReadonlyArray<Listener>,
    start: number,
    event: AgentEvent,
    signal: AbortSignal,
    restore: Restore
  ): Effect.Effect<void> => {
    for (let i = start; i < current.length; i++) {
      let effect: Effect.Effect<void, unknown>
      try {
        effect = current[i]!(event, signal)
      } catch (error) {
        effect = Effect.die(error)
      }
      if (!Exit.isExit(effect)) {
        const pending = effect
        return Effect.flatMap(
          restore(contain(what(event), () => pending)),
          () => listenersFrom(current, i + 1, event, signal, restore)
        )
      }
      if (Exit.isFailure(effect) && !Cause.hasInterruptsOnly(effect.cause)) {
        return Effect.flatMap(
          Effect.logWarning(`effect-agent: ${what(event)} failed`, effect.cause),
          () => listenersFrom(current, i + 1, event, signal, restore)
        )
      }
    }
    return Effect.void
  }

  /**
   * Delivers one event while holding the turn, as far as it can synchronously: the state first, then each
   * subscriber of the moment in order. A subscriber whose Effect is still pending is waited for (through
   * `restore`), and the turn is released when the rest ends, however it ends. Runs uninterruptibly.
   */
  const held = (
    event: AgentEvent,
    signal: AbortSignal,
    restore: Restore
  ): Effect.Effect<void> => {
    const current = listeners
    const rest = updateNow(state, states.reduce, event)
      ? listenersFrom(current, 0, event, signal, restore)
      : Effect.flatMap(
        restore(SubscriptionRef.update(state, (s) => states.reduce(s, event))),
        () => listenersFrom(current, 0, event, signal, restore)
      )
    if (Exit.isExit(rest)) {
      turn.release()
      return rest
    }
    return Effect.onExit(rest, () => Effect.sync(() => turn.release()))
  }

  const deliverNow = (
    event: AgentEvent,
    signal: AbortSignal,
    restore: Restore
  ): Effect.Effect<void> =>
    turn.tryTake()
      ? held(event, signal, restore)
      : Effect.flatMap(restore(turn.take), () => held(event, signal, restore))

  const emitWith = (signal: AbortSignal, event: AgentEvent): Effect.Effect<void> =>
    Effect.uninterruptibleMask((restore) => Effect.suspend(() => deliverNow(event, signal, restore)))
  /**
   * The eager delivery (see `syncSink.ts`): as far as it goes synchronously, right here; a rest that goes
   * pending (a subscriber that waits, the turn held) runs in an uninterruptible fiber of its own, with the
   * caller's services, and the caller awaits it. So the caller needs no uninterruptible step around the call:
   * interrupting it stops its wait, never the delivery, which still releases the turn when it ends.
   */
  const deliverEagerlyWith = (signal: AbortSignal, event: AgentEvent): Effect.Effect<void> => {
    const delivered = deliverNow(event, signal, identity)
    if (Exit.isExit(delivered)) return delivered
    const caller = Fiber.getCurrent()
    const rest = Effect.runForkWith(caller === undefined ? Context.empty() : caller.context)(delivered, {
      uninterruptible: true
    })
    return Fiber.join(rest)
  }

  /** The run's sink: eager for the loop and the batch (see `syncSink.ts`), an ordinary Effect for anyone else. */
  const sinkOf = (signal: AbortSignal): EventSink.EventSinkShape =>
    deliveringEagerly((event) => emitWith(signal, event), (event) => deliverEagerlyWith(signal, event))

  const toMessage = (input: AgentMessage | string, images?: ReadonlyArray<ImageContent>) =>
    typeof input !== "string"
      ? Effect.succeed(input)
      : Effect.map(Clock.currentTimeMillis, (timestamp): UserMessage => ({
        role: "user",
        content: [{ type: "text", text: input }, ...(images ?? [])],
        timestamp
      }))

  /** One run from start to idle; `start` runs the loop with the run's config. */
  const lifecycle = <E>(
    busy: string,
    start: (
      config: AgentLoopConfig<R>,
      snapshot: AgentState
    ) => Effect.Effect<unknown, E, Model | ToolRegistry | R>
  ): Effect.Effect<void, AgentBusy | E> =>
    Effect.uninterruptibleMask((restore) => lifecycleMasked(busy, start, restore))

  // Made once per agent, not per prompt: a generator function made per call gets a hidden class of its own
  // in the old generation that keeps everything its scope holds alive through every scavenge until the next
  // major collection (the lint rule in tools/lint/eslint.config.mjs says why).
  const lifecycleMasked = Effect.fnUntraced(
    function*<E>(
      busy: string,
      start: (
        config: AgentLoopConfig<R>,
        snapshot: AgentState
      ) => Effect.Effect<unknown, E, Model | ToolRegistry | R>,
      restore: Restore
    ) {
      if (active !== undefined) return yield* new AgentBusy({ message: busy })
      const run: ActiveRun = { controller: new AbortController(), done: Deferred.makeUnsafe<void>() }
      active = run
      const snapshot = updateNow(state, states.patch, STREAMING)
        ? SubscriptionRef.getUnsafe(state)
        : yield* SubscriptionRef.updateAndGet(state, (current) => states.patch(current, STREAMING))
      skipSteering = false
      runConfig.signal = run.controller.signal
      const config: AgentLoopConfig<R> = runConfig
      // The run has its own fiber so that interrupting `prompt` can abort the signal subscribers hold
      // before waiting for the run to settle (a subscriber may be waiting on that very signal).
      const exit = yield* Effect.exit(abortOnInterrupt(
        start(config, snapshot).pipe(
          Effect.provideService(EventSink.EventSink, sinkOf(run.controller.signal)),
          Effect.provide(services)
        ),
        run.controller,
        restore
      ))
      yield* setState(states.clearPending, IDLE)
      active = undefined
      yield* Deferred.succeed(run.done, undefined)
      if (exit._tag === "Failure" && !Cause.hasInterruptsOnly(exit.cause)) {
        return yield* Effect.failCause(exit.cause)
      }
    }
  )

  // The queues' polls, made once per agent. One run at a time, so one flag says whether this run's first
  // poll of steering is to be skipped.
  let skipSteering = false
  const pollSteering = Effect.sync((): ReadonlyArray<AgentMessage> => {
    if (skipSteering) {
      skipSteering = false
      return []
    }
    return steering.drain()
  })
  const pollFollowUps = Effect.sync(() => followUps.drain())
  // One config for all of the agent's runs, its signal set as each starts (one run at a time).
  const runConfig: { -readonly [K in keyof AgentLoopConfig<R>]: AgentLoopConfig<R>[K] } = {
    ...options,
    signal: undefined,
    getSteeringMessages: pollSteering,
    getFollowUpMessages: pollFollowUps
  }

  const runPrompts = (prompts: ReadonlyArray<AgentMessage>, busy: string, skipInitialSteering = false) =>
    lifecycle(busy, (config, snapshot) => {
      skipSteering = skipInitialSteering
      return runAgentLoop(prompts, { systemPrompt: snapshot.systemPrompt, messages: snapshot.messages }, config)
    })

  const prompt: AgentShape["prompt"] = Effect.fnUntraced(function*(
    input: PromptInput,
    images?: ReadonlyArray<ImageContent>
  ) {
    if (active !== undefined) return yield* new AgentBusy({ message: PROMPT_BUSY })
    const prompts = Array.isArray(input)
      ? input as ReadonlyArray<AgentMessage>
      : [yield* toMessage(input as AgentMessage | string, images)]
    return yield* runPrompts(prompts, PROMPT_BUSY)
  })

  const continueRun: AgentShape["continue"] = Effect.gen(function*() {
    if (active !== undefined) return yield* new AgentBusy({ message: CONTINUE_BUSY })
    const { messages } = yield* SubscriptionRef.get(state)
    const last = messages.at(-1)
    if (last === undefined) return yield* new CannotContinue({ message: "No messages to continue from" })
    if (last.role === "assistant") {
      const queuedSteering = steering.drain()
      if (queuedSteering.length > 0) return yield* runPrompts(queuedSteering, CONTINUE_BUSY, true)
      const queuedFollowUps = followUps.drain()
      if (queuedFollowUps.length > 0) return yield* runPrompts(queuedFollowUps, CONTINUE_BUSY)
      return yield* new CannotContinue({ message: "Cannot continue from message role: assistant" })
    }
    return yield* lifecycle(
      CONTINUE_BUSY,
      (config, snapshot) =>
        runAgentLoopContinue({ systemPrompt: snapshot.systemPrompt, messages: snapshot.messages }, config)
    )
  })

  const whenIdle = <A>(busy: string, f: () => Effect.Effect<A>) =>
    Effect.suspend(() => active !== undefined ? Effect.fail(new AgentBusy({ message: busy })) : f())

  return {
    state,
    prompt,
    continue: continueRun,
    steer: (message) => Effect.map(toMessage(message), (m) => void steering.items.push(m)),
    followUp: (message) => Effect.map(toMessage(message), (m) => void followUps.items.push(m)),
    setSteeringMode: (mode) => Effect.sync(() => void (steering.mode = mode)),
    setFollowUpMode: (mode) => Effect.sync(() => void (followUps.mode = mode)),
    clearSteeringQueue: Effect.sync(() => void (steering.items = [])),
    clearFollowUpQueue: Effect.sync(() => void (followUps.items = [])),
    clearAllQueues: Effect.sync(() => {
      steering.items = []
      followUps.items = []
    }),
    hasQueuedMessages: Effect.sync(() => steering.items.length > 0 || followUps.items.length > 0),
    abort: Effect.sync(() => active?.controller.abort()),
    waitForIdle: Effect.suspend(() => active === undefined ? Effect.void : Deferred.await(active.done)),
    reset: whenIdle(RESET_BUSY, () => {
      steering.items = []
      followUps.items = []
      return setState(
        (current, _: void) => states.replace(current, { streamingMessage: undefined, errorMessage: undefined }, []),
        undefined
      )
    }),
    setSystemPrompt: (systemPrompt) => Effect.suspend(() => setState(states.patch, { systemPrompt })),
    setMessages: (messages) =>
      whenIdle(SET_MESSAGES_BUSY, () => setState((current, m) => states.replace(current, {}, m), messages)),
    subscribe: (listener) =>
      Effect.sync(() => {
        listeners = [...listeners, listener]
        return Effect.sync(() => {
          listeners = listeners.filter((l) => l !== listener)
        })
      })
  } satisfies AgentShape
})

/** The agent as a service. */
export class Agent extends Context.Service<Agent, AgentShape>()("effect-agent/Agent") {
  /** An agent built from options, on the {@link Model} and {@link ToolRegistry} of the layer's context. */
  static layer(options: AgentOptions = {}): Layer.Layer<Agent, never, Model | ToolRegistry> {
    return Layer.effect(Agent, make(options))
  }
}
