/**
 * Test support for the agent loop, the stateful agent and the pi conformance tests: messages, a recording
 * event sink, event labels and the structural checks every run must pass (one `agent_end`, balanced
 * start/end pairs, a well-formed transcript), a small tool set, a runner for one loop run on a scripted
 * model, and the pi side (pi tools and a pi `streamFn` replaying the very events our scripted model streams).
 */
import { assert } from "@effect/vitest"
import { createAssistantMessageEventStream, Type } from "@mariozechner/pi-ai"
import { Cause, Deferred, Effect, Exit, Schema, Stream } from "effect"
import type { AgentContext } from "../../src/AgentContext.ts"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import { type AgentLoopConfig, runAgentLoop } from "../../src/AgentLoop.ts"
import type { AssistantMessageEvent } from "../../src/AssistantMessageEvent.ts"
import * as EventSink from "../../src/EventSink.ts"
import {
  type AgentMessage,
  type AssistantMessage,
  emptyUsage,
  type Message,
  type ToolCall,
  type ToolResultMessage,
  type UserMessage
} from "../../src/Message.ts"
import { Model, type ModelRequest, type ModelShape } from "../../src/Model.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import * as Tool from "../../src/Tool.ts"
import { type RegisteredTool, ToolRegistry } from "../../src/ToolRegistry.ts"
import * as Recording from "./recording.ts"

// ---------------------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------------------

/** A user message with string content. */
export const user = (text: string, timestamp = 0): UserMessage => ({ role: "user", content: text, timestamp })

/** An application's own message kind (never a model message). */
export type NoteMessage = {
  readonly role: "note"
  readonly note: string
  readonly timestamp: number
}
/** A finished text answer of a test model (`stop` unless `extra` says otherwise). */
export const assistantText = (text: string, extra: Partial<AssistantMessage> = {}): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text }],
  api: "x",
  provider: "x",
  model: "x",
  usage: emptyUsage,
  stopReason: "stop",
  timestamp: 0,
  ...extra
})

export const note = (text: string): NoteMessage => ({ role: "note", note: text, timestamp: 0 })

/** The text of the first text block of a message (or its string content). */
export const textOf = (message: AgentMessage | undefined): string => {
  assert.isDefined(message, "expected a message")
  const content = (message as { content?: unknown }).content
  if (typeof content === "string") return content
  const block = (content as ReadonlyArray<{ type: string; text?: string }>).find((b) => b.type === "text")
  assert.isDefined(block, `expected a text block in ${JSON.stringify(message)}`)
  return block!.text!
}

export const isAssistant = (m: AgentMessage | undefined): m is AssistantMessage => m?.role === "assistant"
export const isToolResult = (m: AgentMessage | undefined): m is ToolResultMessage => m?.role === "toolResult"

export const assistants = (messages: ReadonlyArray<AgentMessage>): Array<AssistantMessage> =>
  messages.filter(isAssistant)
export const toolResults = (messages: ReadonlyArray<AgentMessage>): Array<ToolResultMessage> =>
  messages.filter(isToolResult)

/** Freezes a value and everything reachable from it. */
export const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key])
  }
  return value
}

/** A deep copy with every `timestamp` key removed (timestamps differ between runs and implementations). */
export const withoutTimestamps = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(withoutTimestamps)
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) if (k !== "timestamp") out[k] = withoutTimestamps(v)
    return out
  }
  return value
}

// ---------------------------------------------------------------------------------------------------------
// Event labels
// ---------------------------------------------------------------------------------------------------------

const roleOf = (message: unknown): string => {
  const m = message as { role?: string; stopReason?: string; toolCallId?: string }
  if (m.role === "assistant") return `assistant:${m.stopReason}`
  if (m.role === "toolResult") return `toolResult:${m.toolCallId}`
  return String(m.role)
}

/**
 * A short, implementation-independent label: `message_start:user`, `message_end:assistant:toolUse`,
 * `message_update:text_delta`, `tool_execution_end:c1`, `turn_end:assistant:stop[c1]`, ...
 */
export const labelOf = (event: { readonly type: string } & Record<string, any>): string => {
  switch (event.type) {
    case "message_start":
    case "message_end":
      return `${event.type}:${roleOf(event.message)}`
    case "message_update":
      return `message_update:${event.assistantMessageEvent?.type}`
    case "tool_execution_start":
    case "tool_execution_update":
    case "tool_execution_end":
      return `${event.type}:${event.toolCallId}`
    case "turn_end":
      return `turn_end:${roleOf(event.message)}[${
        (event.toolResults as ReadonlyArray<{ toolCallId: string }>).map((r) => r.toolCallId).join(",")
      }]`
    default:
      return event.type
  }
}

/** The labels of the events, without the streaming `message_update`s. */
export const skeleton = (events: ReadonlyArray<{ readonly type: string }>): Array<string> =>
  events.filter((e) => e.type !== "message_update").map((e) => labelOf(e as any))

// ---------------------------------------------------------------------------------------------------------
// Recording sink
// ---------------------------------------------------------------------------------------------------------

/** Records every event (see support/recording.ts), with {@link labelOf} labels. */
export interface Recorder extends Recording.Recorder {
  /** The labels of the events, in order. */
  readonly labels: () => Array<string>
}

/** Records every event; `onEvent` runs synchronously for each (e.g. to abort or queue a message at a point). */
export const makeRecorder = (onEvent?: (event: AgentEvent, index: number) => void): Recorder => {
  const recorder = Recording.makeRecorder(labelOf, onEvent)
  return { ...recorder, labels: () => recorder.events.map(labelOf) }
}

// ---------------------------------------------------------------------------------------------------------
// Structural checks
// ---------------------------------------------------------------------------------------------------------

/** Exactly one `agent_start` (first) and one `agent_end` (last). */
export const assertOneAgentEnd = (events: ReadonlyArray<{ readonly type: string }>): void => {
  assert.isAbove(events.length, 0, "no events")
  assert.strictEqual(events.filter((e) => e.type === "agent_end").length, 1, "exactly one agent_end")
  assert.strictEqual(events.filter((e) => e.type === "agent_start").length, 1, "exactly one agent_start")
  assert.strictEqual(events[0]!.type, "agent_start", "agent_start comes first")
  assert.strictEqual(events[events.length - 1]!.type, "agent_end", "agent_end comes last")
}

/**
 * Start/end events balance and nest: turns do not overlap, a message's start is directly followed by its
 * updates and its end (no interleaving), every tool call id has one start then one end, and all of them
 * happen inside a turn.
 */
export const assertBalanced = (events: ReadonlyArray<AgentEvent>): void => {
  let inTurn = false
  let openMessage: unknown = undefined
  const openTools = new Set<string>()
  const ended = new Set<string>()
  events.forEach((e, i) => {
    const where = `event ${i} (${labelOf(e)})`
    if (openMessage !== undefined && e.type !== "message_update" && e.type !== "message_end") {
      assert.fail(`${where}: a message was started and not ended before this event`)
    }
    switch (e.type) {
      case "turn_start":
        assert.isFalse(inTurn, `${where}: turn_start inside a turn`)
        inTurn = true
        break
      case "turn_end":
        assert.isTrue(inTurn, `${where}: turn_end outside a turn`)
        assert.strictEqual(openTools.size, 0, `${where}: turn_end with running tool calls`)
        inTurn = false
        break
      case "message_start":
        assert.isTrue(inTurn, `${where}: message outside a turn`)
        openMessage = e.message
        break
      case "message_update":
        assert.isDefined(openMessage, `${where}: update outside a message`)
        break
      case "message_end":
        assert.isDefined(openMessage, `${where}: message_end without message_start`)
        openMessage = undefined
        break
      case "tool_execution_start":
        assert.isTrue(inTurn, `${where}: tool outside a turn`)
        assert.isFalse(openTools.has(e.toolCallId) || ended.has(e.toolCallId), `${where}: second start`)
        openTools.add(e.toolCallId)
        break
      case "tool_execution_update":
        assert.isTrue(openTools.has(e.toolCallId), `${where}: update outside its call`)
        break
      case "tool_execution_end":
        assert.isTrue(openTools.has(e.toolCallId), `${where}: end without start`)
        openTools.delete(e.toolCallId)
        ended.add(e.toolCallId)
        break
      case "agent_end":
        assert.isFalse(inTurn, `${where}: agent_end inside a turn`)
        break
      default:
        break
    }
  })
  assert.isUndefined(openMessage, "a message was never ended")
  assert.strictEqual(openTools.size, 0, "a tool call was never ended")
  const count = (type: string) => events.filter((e) => e.type === type).length
  assert.strictEqual(count("turn_start"), count("turn_end"), "turn_start/turn_end balance")
  assert.strictEqual(count("message_start"), count("message_end"), "message_start/message_end balance")
  assert.strictEqual(count("tool_execution_start"), count("tool_execution_end"), "tool start/end balance")
}

/**
 * The transcript is well formed: every tool call of every assistant message has exactly one tool result,
 * placed after it and before the next assistant message; every tool result answers such a call.
 */
export const assertWellFormed = (messages: ReadonlyArray<AgentMessage>): void => {
  let open = new Map<string, number>()
  const check = (where: string) => {
    for (const [id, n] of open) {
      assert.strictEqual(n, 1, `tool call ${id} has ${n} result(s) ${where}`)
    }
  }
  messages.forEach((m, i) => {
    if (isAssistant(m)) {
      check(`before assistant message ${i}`)
      open = new Map()
      for (const block of m.content) if (block.type === "toolCall") open.set(block.id, 0)
    } else if (isToolResult(m)) {
      const n = open.get(m.toolCallId)
      assert.isDefined(n, `tool result ${i} (${m.toolCallId}) answers no call of the preceding assistant message`)
      open.set(m.toolCallId, n! + 1)
    }
  })
  check("at the end")
}

/** The run's new messages equal the ones announced with `message_end` (same order, same objects). */
export const assertMessagesMatchEvents = (
  events: ReadonlyArray<AgentEvent>,
  messages: ReadonlyArray<AgentMessage>
): void => {
  const ended = events.filter((e) => e.type === "message_end").map((e) => (e as { message: unknown }).message)
  assert.deepStrictEqual(ended, messages as Array<unknown>, "message_end events = new messages")
  const end = events.findLast((e) => e.type === "agent_end") as { messages: ReadonlyArray<unknown> } | undefined
  assert.isDefined(end)
  assert.deepStrictEqual(end!.messages, messages as Array<unknown>, "agent_end.messages = new messages")
}

/** All the structural checks of a finished run. */
export const assertRunInvariants = (
  events: ReadonlyArray<AgentEvent>,
  messages: ReadonlyArray<AgentMessage>,
  context: ReadonlyArray<AgentMessage> = []
): void => {
  assertOneAgentEnd(events)
  assertBalanced(events)
  assertMessagesMatchEvents(events, messages)
  assertWellFormed([...context, ...messages])
}

// ---------------------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------------------

export const AddParams = Schema.Struct({ a: Schema.Number, b: Schema.Number })
export const EchoParams = Schema.Struct({ text: Schema.String })

/** A tool definition with a plain `string` name (so it fits `Tool.Any`). */
export const defineTool = (name: string, description: string, parameters: Tool.Parameters): Tool.Tool.Any =>
  Tool.make(name, { description, parameters })

export const addTool: RegisteredTool = {
  tool: defineTool("add", "Adds two numbers", AddParams),
  handler: ({ a, b }: { a: number; b: number }) =>
    Effect.succeed({ content: [{ type: "text", text: String(a + b) }], details: { sum: a + b } })
}
export const echoTool: RegisteredTool = {
  tool: defineTool("echo", "Echoes its text", EchoParams),
  handler: ({ text }: { text: string }) => Effect.succeed({ content: [{ type: "text", text }], details: { text } })
}
/** Fails with `boom: <text>`. */
export const failTool: RegisteredTool = {
  tool: defineTool("fail", "Always fails", EchoParams),
  handler: ({ text }: { text: string }) => Effect.fail(new Error(`boom: ${text}`))
}
/** Succeeds and asks the loop to stop after the batch. */
export const stopTool: RegisteredTool = {
  tool: defineTool("stop", "Stops the run", EchoParams),
  handler: ({ text }: { text: string }) =>
    Effect.succeed({ content: [{ type: "text", text }], details: { text }, terminate: true })
}

export const standardTools: ReadonlyArray<RegisteredTool> = [addTool, echoTool, failTool, stopTool]

/** A tool with its own handler (e.g. one gated by a Deferred). */
export const customTool = (
  name: string,
  handler: Tool.Handler<any, any>,
  parameters: Tool.Parameters = Schema.Struct({})
): RegisteredTool => ({
  tool: defineTool(name, `test tool ${name}`, parameters),
  handler
})

// ---------------------------------------------------------------------------------------------------------
// Running the loop
// ---------------------------------------------------------------------------------------------------------

export interface RunOptions<R> {
  readonly script: ReadonlyArray<ScriptedModel.Step>
  readonly prompts?: ReadonlyArray<AgentMessage>
  readonly context?: AgentContext
  readonly config?: AgentLoopConfig<R>
  readonly tools?: ReadonlyArray<RegisteredTool>
  readonly recorder?: Recorder
  readonly scriptOptions?: ScriptedModel.ScriptOptions
  /** A model to use instead of one built from `script`. */
  readonly model?: ModelShape & { readonly requests: Effect.Effect<ReadonlyArray<ModelRequest>> }
}

export interface RunResult {
  readonly events: Array<AgentEvent>
  readonly messages: ReadonlyArray<AgentMessage>
  readonly requests: ReadonlyArray<ModelRequest>
}

/** Provides a model, a tool registry and an event sink to an effect. */
export const provideRun = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  model: ModelShape,
  tools: ReadonlyArray<RegisteredTool>,
  sink: EventSink.EventSinkShape
) =>
  effect.pipe(
    Effect.provideService(Model, model),
    Effect.provideService(EventSink.EventSink, sink),
    Effect.provide(ToolRegistry.fromEntries(tools)),
    Effect.catchTag("DuplicateToolName", (e) => Effect.die(e))
  )

/** One run of `runAgentLoop` on a scripted model; returns its events, new messages and the model requests. */
export const runLoop = <R = never>(options: RunOptions<R>) =>
  Effect.gen(function*() {
    const model = options.model ?? (yield* ScriptedModel.make(options.script, options.scriptOptions))
    const recorder = options.recorder ?? makeRecorder()
    const messages = yield* provideRun(
      runAgentLoop(
        options.prompts ?? [user("hi")],
        options.context ?? { systemPrompt: "You are a test.", messages: [] },
        options.config ?? {}
      ),
      model,
      options.tools ?? standardTools,
      recorder.sink
    )
    return { events: recorder.events, messages, requests: yield* model.requests } satisfies RunResult
  })

// ---------------------------------------------------------------------------------------------------------
// The pi side
// ---------------------------------------------------------------------------------------------------------

/** pi's versions of {@link standardTools}: same names, parameters and results. */
export const piTools = (): Array<any> => {
  const text = Type.Object({ text: Type.String() })
  return [
    {
      name: "add",
      label: "add",
      description: "Adds two numbers",
      parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
      execute: async (_id: string, { a, b }: { a: number; b: number }) => ({
        content: [{ type: "text", text: String(a + b) }],
        details: { sum: a + b }
      })
    },
    {
      name: "echo",
      label: "echo",
      description: "Echoes its text",
      parameters: text,
      execute: async (_id: string, { text }: { text: string }) => ({
        content: [{ type: "text", text }],
        details: { text }
      })
    },
    {
      name: "fail",
      label: "fail",
      description: "Always fails",
      parameters: text,
      execute: async (_id: string, { text }: { text: string }) => {
        throw new Error(`boom: ${text}`)
      }
    },
    {
      name: "stop",
      label: "stop",
      description: "Stops the run",
      parameters: text,
      execute: async (_id: string, { text }: { text: string }) => ({
        content: [{ type: "text", text }],
        details: { text },
        terminate: true
      })
    }
  ]
}

/** A pi model object (only what pi's loop and Agent read). */
export const piModel: any = {
  id: "scripted-model",
  name: "scripted",
  api: "scripted",
  provider: "scripted",
  baseUrl: "",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 100_000,
  maxTokens: 10_000
}

/** What a pi `streamFn` saw on each call. */
export interface PiCall {
  readonly systemPrompt: string | undefined
  readonly messages: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<string>
  readonly abortedAtCall: boolean
}

/**
 * A pi `streamFn` that replays a scripted model: it streams exactly the events our {@link ScriptedModel}
 * streams for the same request, into pi-ai's assistant message event stream. Like pi's providers (its faux
 * provider), it turns a failure into an `error` event and an abort into an `error` event with reason
 * `aborted` and the partial message so far ("Request was aborted").
 */
export const piStreamFn =
  (model: ModelShape, calls: Array<PiCall> = []) =>
  (_model: unknown, context: any, options?: { signal?: AbortSignal }) => {
    const stream = createAssistantMessageEventStream()
    const signal = options?.signal
    calls.push({
      systemPrompt: context.systemPrompt,
      messages: context.messages,
      tools: (context.tools ?? []).map((t: { name: string }) => t.name),
      abortedAtCall: signal?.aborted === true
    })
    const request: ModelRequest = {
      systemPrompt: context.systemPrompt ?? "",
      messages: context.messages,
      tools: (context.tools ?? []).map((t: any) => ({
        name: t.name,
        description: t.description,
        parameters: t.parameters
      }))
    }
    let partial: AssistantMessage | undefined
    let finished = false
    /** What a provider reports when it fails before or while streaming: the partial so far, or an empty message. */
    const base = (): AssistantMessage =>
      partial ?? {
        role: "assistant",
        content: [],
        api: model.info.api,
        provider: model.info.provider,
        model: model.info.model,
        usage: emptyUsage,
        stopReason: "error",
        timestamp: Date.now()
      }
    const aborted = () => {
      const error = { ...base(), stopReason: "aborted" as const, errorMessage: "Request was aborted" }
      stream.push({ type: "error", reason: "aborted", error } as any)
      stream.end(error as any)
    }
    if (signal?.aborted) {
      queueMicrotask(aborted)
      return stream
    }
    const program = model.stream(request).pipe(
      Stream.runForEach((event: AssistantMessageEvent) =>
        Effect.sync(() => {
          if ("partial" in event) partial = event.partial
          if (event.type === "done" || event.type === "error") finished = true
          stream.push(event as any)
        })
      )
    )
    void Effect.runPromiseExit(program, signal ? { signal } : undefined).then((exit) => {
      if (finished) return
      if (Exit.isSuccess(exit)) {
        stream.end()
      } else if (signal?.aborted) {
        aborted()
      } else {
        const squashed = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        const error = (squashed as { message?: string } | undefined)?.message ?? String(squashed)
        const message = { ...base(), stopReason: "error" as const, errorMessage: error }
        stream.push({ type: "error", reason: "error", error: message } as any)
        stream.end(message as any)
      }
    })
    return stream
  }

/** Runs a scripted model's step list through pi's streamFn; returns the stream function and its calls. */
export const piScripted = (script: ReadonlyArray<ScriptedModel.Step>, options?: ScriptedModel.ScriptOptions) => {
  const model = Effect.runSync(ScriptedModel.make(script, options))
  const calls: Array<PiCall> = []
  return { streamFn: piStreamFn(model, calls), calls, model }
}

/** A tool call block (re-exported for brevity). */
export const call = (id: string, name: string, args: Record<string, unknown> = {}): ToolCall =>
  ScriptedModel.toolCall(id, name, args)

// ---------------------------------------------------------------------------------------------------------
// Timing helpers
// ---------------------------------------------------------------------------------------------------------

/** See support/recording.ts. */
export const within = Recording.within

/** Lets every runnable fiber make progress. */
export const settle = Recording.settle

/** A one-shot gate a tool waits on, and flags that say what the tool went through. */
export interface Gate {
  readonly started: Deferred.Deferred<void>
  readonly open: Deferred.Deferred<void>
  readonly interrupted: Deferred.Deferred<void>
  readonly finished: Deferred.Deferred<void>
  readonly tool: RegisteredTool
}

/** A tool named `name` that signals `started`, waits for `open`, then succeeds with `done`. */
export const makeGate = (name = "gate"): Gate => {
  const started = Deferred.makeUnsafe<void>()
  const open = Deferred.makeUnsafe<void>()
  const interrupted = Deferred.makeUnsafe<void>()
  const finished = Deferred.makeUnsafe<void>()
  const tool = customTool(name, () =>
    Effect.gen(function*() {
      yield* Deferred.succeed(started, undefined)
      yield* Deferred.await(open)
      yield* Deferred.succeed(finished, undefined)
      return { content: [{ type: "text" as const, text: "done" }], details: {} }
    }).pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))))
  return { started, open, interrupted, finished, tool }
}

/** Counts executions of a handler. */
export const counted = (entry: RegisteredTool): { readonly tool: RegisteredTool; readonly count: () => number } => {
  let n = 0
  return {
    tool: { tool: entry.tool, handler: (args, ctx) => Effect.suspend(() => (n++, entry.handler(args, ctx))) },
    count: () => n
  }
}

/** The kinds of tool call the random loop scenarios draw; each property test draws from its own subset. */
export type ScenarioCallKind =
  | "ok"
  | "fail"
  | "die"
  | "unknown"
  | "invalid"
  | "terminate"
  | "slow"
  | "abort"
  | "echo"
  | "plain"

/** The concrete tool call of a scenario's kind: the same call in every property test that draws it. */
export const scenarioCall = (kind: ScenarioCallKind, id: string): ToolCall => {
  switch (kind) {
    case "ok":
      return ScriptedModel.toolCall(id, "add", { a: 1, b: 2 })
    case "fail":
      return ScriptedModel.toolCall(id, "fail", { text: id })
    case "die":
      return ScriptedModel.toolCall(id, "die", {})
    case "unknown":
      return ScriptedModel.toolCall(id, "missing", {})
    case "invalid":
      return ScriptedModel.toolCall(id, "add", { a: "not a number" })
    case "terminate":
      return ScriptedModel.toolCall(id, "stop", { text: id })
    case "slow":
      return ScriptedModel.toolCall(id, "slow", {})
    case "abort":
      return ScriptedModel.toolCall(id, "abort", {})
    case "echo":
      return ScriptedModel.toolCall(id, "echo", { text: `echo ${id}` })
    case "plain":
      return ScriptedModel.toolCall(id, "plain", {})
  }
}
