/**
 * A differential oracle for the tool-execution batch: one neutral scenario, run twice, once through pi's
 * agent loop (`@mariozechner/pi-agent-core` 0.73.1, the reference) and once through our
 * `executeToolCalls`, each giving a normalized trace that can be compared exactly.
 *
 * pi is driven from the outside only (its published `agentLoop` / `runAgentLoop` / `Agent`, with a scripted
 * `streamFn` built on pi-ai's assistant-message event stream); none of its code is copied here.
 *
 * A scenario describes:
 * - tools: name, parameter shape ({@link Param}, built both as a typebox schema for pi and an Effect
 *   Schema for us), execution mode, an optional `prepareArguments` shim, and a scripted behaviour;
 * - the tool calls of the assistant message (ids, names, raw arguments);
 * - the configured mode and optional `beforeToolCall` / `afterToolCall` hooks (plain functions that may
 *   throw; each runner adapts them);
 * - the completion order of gated calls (`release`): a gated call waits at its gate until it is its turn
 *   in `release.order` and every earlier call of the order has emitted `tool_execution_end`. Both runners
 *   share this controller, so completion order is identical by construction, not by timing.
 */
import {
  Agent,
  type AgentContext as PiAgentContext,
  type AgentEvent as PiAgentEvent,
  agentLoop,
  type AgentLoopConfig,
  type AgentTool,
  runAgentLoop,
  type StreamFn
} from "@mariozechner/pi-agent-core"
import {
  type AssistantMessage as PiAssistantMessage,
  createAssistantMessageEventStream,
  type Message as PiMessage,
  type Model,
  Type
} from "@mariozechner/pi-ai"
import { Effect, Layer, References, Schema } from "effect"
import type { TSchema } from "typebox"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import * as EventSink from "../../src/EventSink.ts"
import { type AssistantMessage, emptyUsage } from "../../src/Message.ts"
import * as Tool from "../../src/Tool.ts"
import { executeToolCalls, type ToolExecutionOptions } from "../../src/ToolExecution.ts"
import { type RegisteredTool, ToolRegistry } from "../../src/ToolRegistry.ts"

// ---------------------------------------------------------------------------------------------------------
// Scenario description
// ---------------------------------------------------------------------------------------------------------

/** A parameter shape, buildable as a typebox schema (pi) and as an Effect Schema (ours). */
export type Param =
  | { readonly type: "string" }
  | { readonly type: "number" }
  | { readonly type: "integer" }
  | { readonly type: "boolean" }
  /** Any JSON value (typebox `Type.Unknown()`, Effect `Schema.Unknown`). */
  | { readonly type: "unknown" }
  | { readonly type: "array"; readonly items: Param }
  | {
    readonly type: "object"
    readonly properties: { readonly [key: string]: Param }
    readonly optional?: ReadonlyArray<string>
  }

/** Shorthands for {@link Param}. */
export const P = {
  string: { type: "string" },
  number: { type: "number" },
  integer: { type: "integer" },
  boolean: { type: "boolean" },
  unknown: { type: "unknown" },
  array: (items: Param): Param => ({ type: "array", items }),
  object: (properties: { readonly [key: string]: Param }, optional: ReadonlyArray<string> = []): Param => ({
    type: "object",
    properties,
    optional
  })
} as const satisfies Record<string, Param | ((...args: any) => Param)>

/** A tool result (or partial result) with one text block. */
export interface ResultSpec {
  readonly text: string
  readonly details?: unknown
  readonly terminate?: boolean
}

/** One step of a tool's script, before its outcome. */
export type Step =
  /** Report progress (pi: `onUpdate(partial)`; ours: `yield* ctx.update(partial)`). */
  | { readonly update: ResultSpec }
  /** Wait until the scenario's release order lets this call complete. */
  | { readonly gate: true }
  /** Wait this many real milliseconds. */
  | { readonly sleepMs: number }
  /** Abort the run's signal (both runners hand the same kind of signal to the batch). */
  | { readonly abortRun: true }
  /** Wait for a promise that never settles (subject to `onAbort`). */
  | { readonly hang: true }
  /**
   * Mutate the received arguments in place, deeply: every object gets `mutated: true`, every array gets
   * `"mutated"` pushed (a tool that treats its arguments as its own).
   */
  | { readonly mutateArgs: true }

/** How a tool execution ends. */
export type Outcome =
  /** Succeed with this result. */
  | { readonly succeed: ResultSpec }
  /** Succeed with the received (validated) arguments as canonical JSON text, `details: { received }`. */
  | { readonly echo: true; readonly terminate?: boolean }
  /**
   * Fail with this value. pi: `throw value`. Ours: `Effect.fail(value)` (`as: "fail"`, the default) or a
   * defect `Effect.die(value)` (`as: "die"`).
   */
  | { readonly throws: unknown; readonly as?: "fail" | "die" }
  /** Return this value as it is, even if it is not a valid tool result. */
  | { readonly returns: unknown }

/** A tool's scripted behaviour. */
export interface Behaviour {
  readonly steps?: ReadonlyArray<Step>
  /** Default: `{ echo: true }`. */
  readonly outcome?: Outcome
  /**
   * An update sent after the call has settled: fired when the call's `tool_execution_end` has been observed,
   * before any later gate is released.
   */
  readonly lateUpdate?: ResultSpec
  /**
   * What a gate wait does when the run is aborted. `"reject"` (default): a cooperative tool (pi: rejects with
   * `Error("Aborted by signal")`; ours: the wait is interruptible). `"ignore"`: a tool that ignores
   * cancellation (pi: keeps waiting; ours: an uninterruptible wait).
   */
  readonly onAbort?: "reject" | "ignore"
}

/** A tool of a scenario. */
export interface ScenarioTool {
  readonly name: string
  readonly parameters: Param
  readonly executionMode?: "sequential" | "parallel"
  /** A synchronous compatibility shim (may throw). pi calls it as is; ours wraps it in `Effect.try`. */
  readonly prepareArguments?: (raw: unknown) => unknown
  /** Default: echo the arguments. */
  readonly behaviour?: Behaviour
}

/** A tool call of the assistant message. */
export interface ScenarioCall {
  readonly id: string
  readonly name: string
  readonly arguments: Record<string, unknown>
}

/** What the neutral `beforeToolCall` sees. */
export interface BeforeContext {
  readonly toolCallId: string
  readonly toolName: string
  readonly args: unknown
}

/** What the neutral `beforeToolCall` may return (pi 0.73.1 reads only `block` and `reason`). */
export interface BeforeDecision {
  readonly block?: boolean
  readonly reason?: string
  readonly terminate?: boolean
  readonly args?: unknown
}

/** What the neutral `afterToolCall` sees. */
export interface AfterContext {
  readonly toolCallId: string
  readonly toolName: string
  readonly args: unknown
  readonly result: unknown
  readonly isError: boolean
}

/** What the neutral `afterToolCall` may return. */
export interface AfterOverride {
  readonly content?: ReadonlyArray<{ readonly type: "text"; readonly text: string }>
  readonly details?: unknown
  readonly isError?: boolean
  readonly terminate?: boolean
}

/** A whole scenario. */
export interface Scenario {
  readonly tools: ReadonlyArray<ScenarioTool>
  readonly calls: ReadonlyArray<ScenarioCall>
  /** The configured mode (`toolExecution`); omitted = the default (parallel). */
  readonly mode?: "sequential" | "parallel"
  /** Per-call-id behaviours, overriding the tool's. */
  readonly behaviours?: { readonly [toolCallId: string]: Behaviour }
  /**
   * The completion order of gated calls. With `afterAllArrived`, the first release waits until every call of
   * the order is waiting at its gate (only meaningful in parallel mode).
   */
  readonly release?: { readonly order: ReadonlyArray<string>; readonly afterAllArrived?: boolean }
  /** May throw. */
  readonly beforeToolCall?: (context: BeforeContext) => BeforeDecision | undefined
  /** May throw. */
  readonly afterToolCall?: (context: AfterContext) => AfterOverride | undefined
  /** Abort the run's signal when `beforeToolCall` runs for this call (a hook is installed if none is given). */
  readonly abortInBeforeToolCallOf?: string
}

// ---------------------------------------------------------------------------------------------------------
// Normalized traces
// ---------------------------------------------------------------------------------------------------------

/** A tool-result message without its timestamp. */
export interface TraceMessage {
  readonly role: "toolResult"
  readonly toolCallId: string
  readonly toolName: string
  readonly content: unknown
  readonly details?: unknown
  readonly isError: boolean
}

/** A tool-execution event, normalized: no timestamps, no `undefined`-valued keys. */
export type TraceEvent =
  | {
    readonly type: "tool_execution_start"
    readonly toolCallId: string
    readonly toolName: string
    readonly args: unknown
  }
  | {
    readonly type: "tool_execution_update"
    readonly toolCallId: string
    readonly toolName: string
    readonly args: unknown
    readonly partialResult: unknown
  }
  | {
    readonly type: "tool_execution_end"
    readonly toolCallId: string
    readonly toolName: string
    readonly result: unknown
    readonly isError: boolean
  }
  | { readonly type: "message_start" | "message_end"; readonly message: TraceMessage }

/** A hook invocation, as the hook saw it. */
export interface HookCall {
  readonly hook: "before" | "after"
  readonly toolCallId: string
  readonly args: unknown
  readonly result?: unknown
  readonly isError?: boolean
}

/** One run of a scenario by one implementation. */
export interface RunResult {
  readonly impl: "pi" | "ours"
  /** The tool-execution events (start/update/end and toolResult message_start/message_end), normalized. */
  readonly events: ReadonlyArray<TraceEvent>
  /** The tool-result messages the batch returned (pi: the first `turn_end`'s `toolResults`), normalized. */
  readonly messages: ReadonlyArray<TraceMessage>
  /** The timestamps of the returned messages, in order. */
  readonly timestamps: ReadonlyArray<number>
  /**
   * Whether the batch asked the loop to stop. Ours: `ToolBatchResult.terminate`. pi: inferred, true when the
   * loop did not call the model again after the batch.
   */
  readonly terminate: boolean | undefined
  /** Ours: `ToolBatchResult.aborted`. pi: undefined (pi has no such report). */
  readonly aborted: boolean | undefined
  /** pi: how many times the loop called the model (1 = stopped after the batch). Ours: undefined. */
  readonly modelCalls: number | undefined
  /** Tool executions in the order they started, with the arguments the tool received. */
  readonly executions: ReadonlyArray<{ readonly toolCallId: string; readonly args: unknown }>
  /** The most tool executions that were in progress at the same time. */
  readonly maxConcurrent: number
  readonly hookCalls: ReadonlyArray<HookCall>
  /** pi: the loop rejected with this message (the run crashed). */
  readonly crash: string | undefined
  /** The run had not finished within the time limit. */
  readonly hung: boolean
  /** The assistant message's tool-call arguments after the run (to check they were not mutated). */
  readonly argumentsAfter: ReadonlyArray<unknown>
  /** Every event as emitted (pi: the whole loop's events), for ad-hoc assertions. */
  readonly rawEvents: ReadonlyArray<unknown>
}

/** Drops `undefined`-valued keys, recursively (pi spreads optional fields as `undefined`, we omit them). */
export const clean = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(clean)
  if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {}
    for (const [key, inner] of Object.entries(value)) {
      if (inner !== undefined) out[key] = clean(inner)
    }
    return out
  }
  return value
}

const normalizeMessage = (message: any): TraceMessage => {
  const { timestamp: _timestamp, ...rest } = message
  return clean(rest) as TraceMessage
}

/** Keeps the tool-execution events of a run and normalizes them. */
export const normalizeEvents = (events: ReadonlyArray<any>): Array<TraceEvent> => {
  const out: Array<TraceEvent> = []
  for (const e of events) {
    switch (e.type) {
      case "tool_execution_start":
        out.push(clean({ type: e.type, toolCallId: e.toolCallId, toolName: e.toolName, args: e.args }) as TraceEvent)
        break
      case "tool_execution_update":
        out.push(
          clean({
            type: e.type,
            toolCallId: e.toolCallId,
            toolName: e.toolName,
            args: e.args,
            partialResult: e.partialResult
          }) as TraceEvent
        )
        break
      case "tool_execution_end":
        out.push(
          clean({
            type: e.type,
            toolCallId: e.toolCallId,
            toolName: e.toolName,
            result: e.result,
            isError: e.isError
          }) as TraceEvent
        )
        break
      case "message_start":
      case "message_end":
        if (e.message?.role === "toolResult") out.push({ type: e.type, message: normalizeMessage(e.message) })
        break
    }
  }
  return out
}

/** The text of a result-like value's first text block. */
export const textOf = (value: unknown): string => {
  const content = (value as { content?: unknown } | undefined)?.content
  if (!Array.isArray(content)) return String(content)
  return content.filter((c) => c?.type === "text").map((c) => c.text).join("")
}

/** A compact label per event (`start:a`, `update:a`, `end:a`, `msg_start:a`, `msg_end:a`). */
export const labels = (events: ReadonlyArray<TraceEvent>): Array<string> =>
  events.map((e) => {
    switch (e.type) {
      case "tool_execution_start":
        return `start:${e.toolCallId}`
      case "tool_execution_update":
        return `update:${e.toolCallId}`
      case "tool_execution_end":
        return `end:${e.toolCallId}`
      case "message_start":
        return `msg_start:${e.message.toolCallId}`
      case "message_end":
        return `msg_end:${e.message.toolCallId}`
    }
  })

/** JSON with sorted keys, so that key order (schema order vs input order) does not matter. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, inner) =>
    typeof inner === "object" && inner !== null && !Array.isArray(inner)
      ? Object.fromEntries(Object.keys(inner).sort().map((k) => [k, inner[k]]))
      : inner)

// ---------------------------------------------------------------------------------------------------------
// Shared machinery: gates, late updates, hooks
// ---------------------------------------------------------------------------------------------------------

const ABORT_TEXT = "Aborted by signal"

/** Releases gated calls one at a time in a fixed order, each after the previous one's end event. */
class GateController {
  private readonly waiting = new Map<string, () => void>()
  private readonly released = new Set<string>()
  private readonly ended = new Set<string>()
  private readonly order: ReadonlyArray<string>
  private readonly afterAllArrived: boolean
  constructor(order: ReadonlyArray<string>, afterAllArrived: boolean) {
    this.order = order
    this.afterAllArrived = afterAllArrived
  }

  wait(id: string): Promise<void> {
    if (!this.order.includes(id)) return Promise.resolve()
    return new Promise((resolve) => {
      this.waiting.set(id, resolve)
      this.pump()
    })
  }

  end(id: string): void {
    this.ended.add(id)
    this.pump()
  }

  releaseAll(): void {
    for (const [id, resolve] of this.waiting) {
      this.released.add(id)
      resolve()
    }
  }

  private pump(): void {
    for (const id of this.order) {
      // A call that ended without reaching its gate (an immediate outcome) does not hold the order.
      if (this.ended.has(id) && !this.released.has(id)) continue
      if (this.released.has(id)) {
        if (!this.ended.has(id)) return
        continue
      }
      if (
        this.afterAllArrived &&
        !this.order.every((i) => this.waiting.has(i) || this.released.has(i) || this.ended.has(i))
      ) return
      const resolve = this.waiting.get(id)
      if (resolve === undefined) return
      this.released.add(id)
      resolve()
      return
    }
  }
}

/** Per-run state shared by the tool scripts and the event observer. */
class Harness {
  readonly gates: GateController
  readonly controller = new AbortController()
  readonly executions: Array<{ toolCallId: string; args: unknown }> = []
  inFlight = 0
  maxConcurrent = 0
  readonly hookCalls: Array<HookCall> = []
  readonly rawEvents: Array<unknown> = []
  /** Each event copied when it was emitted (later mutation of shared objects does not rewrite history). */
  readonly snapshots: Array<unknown> = []
  readonly lateUpdates = new Map<string, () => Promise<void>>()
  private chain: Promise<void> = Promise.resolve()

  readonly scenario: Scenario
  constructor(scenario: Scenario) {
    this.scenario = scenario
    this.gates = new GateController(scenario.release?.order ?? [], scenario.release?.afterAllArrived === true)
  }

  behaviourOf(tool: ScenarioTool, toolCallId: string): Behaviour {
    return this.scenario.behaviours?.[toolCallId] ?? tool.behaviour ?? {}
  }

  /** Records an event and reacts to it after the current reactions (late updates, then gate releases). */
  observe(event: { readonly type: string; readonly toolCallId?: string }): void {
    this.rawEvents.push(event)
    this.snapshots.push(clean(event))
    if (event.type !== "tool_execution_end") return
    const id = event.toolCallId!
    this.chain = this.chain.then(async () => {
      const late = this.lateUpdates.get(id)
      if (late !== undefined) {
        this.lateUpdates.delete(id)
        await late()
      }
      this.gates.end(id)
    })
  }

  enter(): void {
    this.inFlight++
    this.maxConcurrent = Math.max(this.maxConcurrent, this.inFlight)
  }

  leave(): void {
    this.inFlight--
  }

  before(context: BeforeContext): BeforeDecision | undefined {
    this.hookCalls.push({ hook: "before", toolCallId: context.toolCallId, args: clean(context.args) })
    if (this.scenario.abortInBeforeToolCallOf === context.toolCallId) this.controller.abort()
    return this.scenario.beforeToolCall?.(context)
  }

  after(context: AfterContext): AfterOverride | undefined {
    this.hookCalls.push({
      hook: "after",
      toolCallId: context.toolCallId,
      args: clean(context.args),
      result: clean(context.result),
      isError: context.isError
    })
    return this.scenario.afterToolCall?.(context)
  }

  get hasBefore(): boolean {
    return this.scenario.beforeToolCall !== undefined || this.scenario.abortInBeforeToolCallOf !== undefined
  }
}

const toResult = (
  spec: ResultSpec
): { content: Array<{ type: "text"; text: string }>; details?: unknown; terminate?: boolean } => ({
  content: [{ type: "text", text: spec.text }],
  ...(spec.details !== undefined ? { details: spec.details } : {}),
  ...(spec.terminate !== undefined ? { terminate: spec.terminate } : {})
})

const echoResult = (args: unknown, terminate: boolean | undefined) => ({
  content: [{ type: "text" as const, text: canonicalJson(args) }],
  details: { received: args },
  ...(terminate !== undefined ? { terminate } : {})
})

const mutateDeeply = (value: unknown): void => {
  if (Array.isArray(value)) {
    for (const inner of value) mutateDeeply(inner)
    value.push("mutated")
  } else if (typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) mutateDeeply(inner)
    ;(value as Record<string, unknown>).mutated = true
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const assistantMessageOf = (calls: ReadonlyArray<ScenarioCall>): AssistantMessage => ({
  role: "assistant",
  content: [
    { type: "text", text: "Calling tools." },
    ...calls.map((call) => ({
      type: "toolCall" as const,
      id: call.id,
      name: call.name,
      arguments: structuredClone(call.arguments)
    }))
  ],
  api: "scripted",
  provider: "scripted",
  model: "scripted",
  usage: emptyUsage,
  stopReason: "toolUse",
  timestamp: 1
})

const argumentsOf = (message: { readonly content: ReadonlyArray<any> }): Array<unknown> =>
  message.content.filter((c) => c.type === "toolCall").map((c) => structuredClone(c.arguments))

// ---------------------------------------------------------------------------------------------------------
// pi
// ---------------------------------------------------------------------------------------------------------

/** Builds a typebox schema (pi's parameter schemas). */
export const toTypebox = (param: Param): TSchema => {
  switch (param.type) {
    case "string":
      return Type.String()
    case "number":
      return Type.Number()
    case "integer":
      return Type.Integer()
    case "boolean":
      return Type.Boolean()
    case "unknown":
      return Type.Unknown()
    case "array":
      return Type.Array(toTypebox(param.items))
    case "object": {
      const properties: Record<string, TSchema> = {}
      for (const [key, inner] of Object.entries(param.properties)) {
        properties[key] = param.optional?.includes(key) ? Type.Optional(toTypebox(inner)) : toTypebox(inner)
      }
      return Type.Object(properties)
    }
  }
}

const piModel: Model<any> = {
  id: "scripted",
  name: "scripted",
  api: "scripted",
  provider: "scripted",
  baseUrl: "",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 100_000,
  maxTokens: 1_000
}

const finalMessage = (stopReason: "stop" | "aborted"): PiAssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text: "Done." }],
  api: "scripted",
  provider: "scripted",
  model: "scripted",
  usage: emptyUsage,
  stopReason,
  ...(stopReason === "aborted" ? { errorMessage: "aborted" } : {}),
  timestamp: 2
})

/** How to drive pi. */
export interface PiRunOptions {
  /**
   * `"agentLoop"` (default): `agentLoop(...)`, consuming its event stream. `"runAgentLoop"`: the same loop
   * with a direct `emit`, so that a crash is a rejected promise we can observe instead of an unhandled
   * rejection and a stream that never ends. `"agent"`: the stateful `Agent` with one subscriber.
   */
  readonly driver?: "agentLoop" | "runAgentLoop" | "agent"
  /** With `driver: "agent"`: the subscriber throws on these events (after recording them). */
  readonly subscriberThrowsOn?: (event: PiAgentEvent) => boolean
  /** Give up waiting after this many milliseconds and report `hung`. Default 5000. */
  readonly timeoutMs?: number
}

/** Runs a scenario through pi's agent loop. */
export const runPi = async (scenario: Scenario, options: PiRunOptions = {}): Promise<RunResult> => {
  const h = new Harness(scenario)
  const message = assistantMessageOf(scenario.calls) as unknown as PiAssistantMessage
  let modelCalls = 0

  const tools: Array<AgentTool<any>> = scenario.tools.map((spec) => {
    const tool: AgentTool<any> = {
      name: spec.name,
      label: spec.name,
      description: spec.name,
      parameters: toTypebox(spec.parameters),
      execute: async (toolCallId, params, signal, onUpdate) => {
        h.executions.push({ toolCallId, args: clean(params) })
        h.enter()
        try {
          return await script(toolCallId, params, signal, onUpdate)
        } finally {
          h.leave()
        }
      }
    }
    const script = async (
      toolCallId: string,
      params: unknown,
      signal: AbortSignal | undefined,
      onUpdate: ((partial: any) => void) | undefined
    ): Promise<any> => {
      const behaviour = h.behaviourOf(spec, toolCallId)
      for (const step of behaviour.steps ?? []) {
        if ("update" in step) onUpdate?.(toResult(step.update) as any)
        else if ("sleepMs" in step) await sleep(step.sleepMs)
        else if ("abortRun" in step) h.controller.abort()
        else if ("mutateArgs" in step) mutateDeeply(params)
        else if ("hang" in step) await waitAbortable(new Promise<void>(() => {}), signal, behaviour.onAbort ?? "reject")
        else await waitAbortable(h.gates.wait(toolCallId), signal, behaviour.onAbort ?? "reject")
      }
      if (behaviour.lateUpdate !== undefined) {
        const late = behaviour.lateUpdate
        h.lateUpdates.set(toolCallId, async () => onUpdate?.(toResult(late) as any))
      }
      const outcome = behaviour.outcome ?? { echo: true }
      if ("succeed" in outcome) return toResult(outcome.succeed) as any
      if ("echo" in outcome) return echoResult(params, outcome.terminate)
      if ("throws" in outcome) throw outcome.throws
      return outcome.returns as any
    }
    if (spec.executionMode !== undefined) tool.executionMode = spec.executionMode
    if (spec.prepareArguments !== undefined) tool.prepareArguments = spec.prepareArguments as any
    return tool
  })

  const streamFn: StreamFn = (_model, _context, streamOptions) => {
    modelCalls++
    const stream = createAssistantMessageEventStream()
    const first = modelCalls === 1
    const response = first ? message : finalMessage(streamOptions?.signal?.aborted ? "aborted" : "stop")
    stream.push({ type: "start", partial: response })
    if (response.stopReason === "aborted") stream.push({ type: "error", reason: "aborted", error: response })
    else stream.push({ type: "done", reason: first ? "toolUse" : "stop", message: response })
    return stream
  }

  const before = h.hasBefore
    ? async (ctx: { toolCall: { id: string; name: string }; args: unknown }) =>
      h.before({ toolCallId: ctx.toolCall.id, toolName: ctx.toolCall.name, args: ctx.args }) as any
    : undefined
  const after = scenario.afterToolCall !== undefined
    ? async (ctx: { toolCall: { id: string; name: string }; args: unknown; result: unknown; isError: boolean }) =>
      h.after({
        toolCallId: ctx.toolCall.id,
        toolName: ctx.toolCall.name,
        args: ctx.args,
        result: ctx.result,
        isError: ctx.isError
      }) as any
    : undefined

  const prompt = { role: "user" as const, content: "go", timestamp: 0 }
  let crash: string | undefined
  const driver = options.driver ?? "agentLoop"
  let run: Promise<void>
  let agent: Agent | undefined

  if (driver === "agent") {
    agent = new Agent({
      initialState: { systemPrompt: "", model: piModel, tools },
      streamFn,
      ...(scenario.mode !== undefined ? { toolExecution: scenario.mode } : {}),
      ...(before !== undefined ? { beforeToolCall: before } : {}),
      ...(after !== undefined ? { afterToolCall: after } : {})
    })
    const throwsOn = options.subscriberThrowsOn
    agent.subscribe((event) => {
      h.observe(event as any)
      if (throwsOn?.(event)) throw new Error("subscriber failed")
    })
    // The Agent ties its own AbortController to the run; forward ours to it.
    h.controller.signal.addEventListener("abort", () => agent!.abort(), { once: true })
    run = agent.prompt([prompt]).catch((e) => {
      crash = e instanceof Error ? e.message : String(e)
    })
  } else {
    const context: PiAgentContext = { systemPrompt: "", messages: [], tools }
    const config: AgentLoopConfig = { model: piModel, convertToLlm: (messages) => messages as Array<PiMessage> }
    if (scenario.mode !== undefined) config.toolExecution = scenario.mode
    if (before !== undefined) config.beforeToolCall = before
    if (after !== undefined) config.afterToolCall = after
    if (driver === "agentLoop") {
      const stream = agentLoop([prompt], context, config, h.controller.signal, streamFn)
      run = (async () => {
        for await (const event of stream) h.observe(event as any)
      })()
    } else {
      run = runAgentLoop(
        [prompt],
        context,
        config,
        async (event) => h.observe(event as any),
        h.controller.signal,
        streamFn
      )
        .then(() => undefined, (e) => {
          crash = e instanceof Error ? `${e.name}: ${e.message}` : String(e)
        })
    }
  }

  let timer: ReturnType<typeof setTimeout> | undefined
  const finished = await Promise.race([
    run.then(() => true),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), options.timeoutMs ?? 5_000)
    })
  ])
  clearTimeout(timer)
  if (!finished) h.gates.releaseAll() // let a stuck pi run finish in the background
  // The Agent catches a failed run itself: it records the error and ends with a failure message.
  if (agent !== undefined && finished && agent.state.errorMessage !== undefined) crash = agent.state.errorMessage

  const rawEvents = [...h.rawEvents]
  const events = normalizeEvents(h.snapshots)
  const turnEnd = h.snapshots.find((e: any) => e.type === "turn_end") as { toolResults: Array<unknown> } | undefined
  const returned = turnEnd?.toolResults ??
    h.snapshots.filter((e: any) => e.type === "message_end" && e.message.role === "toolResult").map((e: any) =>
      e.message
    )
  return {
    impl: "pi",
    events,
    messages: returned.map(normalizeMessage),
    timestamps: returned.map((m: any) => m.timestamp),
    terminate: finished && crash === undefined ? modelCalls === 1 : undefined,
    aborted: undefined,
    modelCalls,
    executions: [...h.executions],
    maxConcurrent: h.maxConcurrent,
    hookCalls: [...h.hookCalls],
    crash,
    hung: !finished,
    argumentsAfter: argumentsOf(message),
    rawEvents
  }
}

const waitAbortable = (gate: Promise<void>, signal: AbortSignal | undefined, onAbort: "reject" | "ignore") => {
  if (onAbort === "ignore" || signal === undefined) return gate
  return new Promise<void>((resolve, reject) => {
    const abort = () => reject(new Error(ABORT_TEXT))
    if (signal.aborted) return abort()
    signal.addEventListener("abort", abort, { once: true })
    gate.then(resolve)
  })
}

// ---------------------------------------------------------------------------------------------------------
// Ours
// ---------------------------------------------------------------------------------------------------------

/** Builds an Effect Schema (our parameter schemas). */
export const toEffectSchema = (param: Param): Schema.Top => {
  switch (param.type) {
    case "string":
      return Schema.String
    case "number":
      return Schema.Number
    case "integer":
      return Schema.Int
    case "boolean":
      return Schema.Boolean
    case "unknown":
      return Schema.Unknown
    case "array":
      return Schema.Array(toEffectSchema(param.items))
    case "object": {
      const fields: Record<string, Schema.Top> = {}
      for (const [key, inner] of Object.entries(param.properties)) {
        fields[key] = param.optional?.includes(key) ? Schema.optionalKey(toEffectSchema(inner)) : toEffectSchema(inner)
      }
      return Schema.Struct(fields)
    }
  }
}

/** Options only our implementation has. */
export interface OursRunOptions {
  readonly timeout?: number
  readonly abandonAfter?: number
  readonly concurrency?: number
  /** The event sink fails (a defect) on these events, after recording them. */
  readonly subscriberFailsOn?: (event: AgentEvent) => boolean
  /** Give up waiting after this many milliseconds and report `hung`. Default 5000. */
  readonly timeoutMs?: number
}

/** Runs a scenario through our `executeToolCalls`. */
export const runOurs = async (scenario: Scenario, options: OursRunOptions = {}): Promise<RunResult> => {
  const h = new Harness(scenario)
  const message = assistantMessageOf(scenario.calls)

  const entries: Array<RegisteredTool> = scenario.tools.map((spec) => {
    const prepare = spec.prepareArguments
    const tool = Tool.make(spec.name, {
      description: spec.name,
      parameters: toEffectSchema(spec.parameters) as Schema.Decoder<unknown>,
      ...(spec.executionMode !== undefined ? { executionMode: spec.executionMode } : {}),
      ...(prepare !== undefined
        ? { prepareArguments: (raw: unknown) => Effect.try({ try: () => prepare(raw), catch: (e) => e }) }
        : {})
    })
    const handler: Tool.Handler<unknown, unknown> = (args, ctx) =>
      Effect.acquireUseRelease(
        Effect.sync(() => h.enter()),
        () => script(args, ctx),
        () => Effect.sync(() => h.leave())
      )
    const script: Tool.Handler<unknown, unknown> = (args, ctx) =>
      Effect.gen(function*() {
        h.executions.push({ toolCallId: ctx.toolCallId, args: clean(args) })
        const behaviour = h.behaviourOf(spec, ctx.toolCallId)
        for (const step of behaviour.steps ?? []) {
          if ("update" in step) yield* ctx.update(toResult(step.update) as Tool.ToolResult)
          else if ("sleepMs" in step) yield* Effect.promise(() => sleep(step.sleepMs))
          else if ("abortRun" in step) h.controller.abort()
          else if ("mutateArgs" in step) mutateDeeply(args)
          else {
            const wait = "hang" in step ? Effect.never : Effect.promise(() => h.gates.wait(ctx.toolCallId))
            yield* (behaviour.onAbort === "ignore" ? Effect.uninterruptible(wait) : wait)
          }
        }
        if (behaviour.lateUpdate !== undefined) {
          const late = ctx.update(toResult(behaviour.lateUpdate) as Tool.ToolResult)
          h.lateUpdates.set(ctx.toolCallId, () => Effect.runPromise(late))
        }
        const outcome = behaviour.outcome ?? { echo: true }
        if ("succeed" in outcome) return toResult(outcome.succeed) as Tool.ToolResult
        if ("echo" in outcome) return echoResult(args, outcome.terminate)
        if ("throws" in outcome) {
          return yield* (outcome.as === "die" ? Effect.die(outcome.throws) : Effect.fail(outcome.throws))
        }
        return outcome.returns as Tool.ToolResult
      })
    return { tool, handler }
  })

  const failsOn = options.subscriberFailsOn
  const sink: EventSink.EventSinkShape = {
    emit: (event) =>
      Effect.suspend(() => {
        h.observe(event as any)
        return failsOn?.(event) ? Effect.die(new Error("subscriber failed")) : Effect.void
      })
  }

  const batchOptions: ToolExecutionOptions = {
    signal: h.controller.signal,
    toolExecution: scenario.mode,
    timeout: options.timeout,
    abandonAfter: options.abandonAfter,
    concurrency: options.concurrency,
    beforeToolCall: h.hasBefore
      ? (ctx) =>
        Effect.try({
          try: () => h.before({ toolCallId: ctx.toolCall.id, toolName: ctx.toolCall.name, args: ctx.args }),
          catch: (e) => e
        })
      : undefined,
    afterToolCall: scenario.afterToolCall !== undefined
      ? (ctx) =>
        Effect.try({
          try: () =>
            h.after({
              toolCallId: ctx.toolCall.id,
              toolName: ctx.toolCall.name,
              args: ctx.args,
              result: ctx.result,
              isError: ctx.isError
            }),
          catch: (e) => e
        })
      : undefined
  }

  const program = executeToolCalls(message, batchOptions).pipe(
    Effect.provide(ToolRegistry.fromEntries(entries).pipe(Layer.orDie)),
    Effect.provideService(EventSink.EventSink, sink),
    Effect.provideService(References.MinimumLogLevel, "None")
  )
  let timer: ReturnType<typeof setTimeout> | undefined
  const outcome = await Promise.race([
    Effect.runPromise(program),
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), options.timeoutMs ?? 5_000)
    })
  ])
  clearTimeout(timer)
  if (outcome === undefined) h.gates.releaseAll()

  const rawEvents = [...h.rawEvents]
  return {
    impl: "ours",
    events: normalizeEvents(h.snapshots),
    messages: (outcome?.messages ?? []).map(normalizeMessage),
    timestamps: (outcome?.messages ?? []).map((m) => m.timestamp),
    terminate: outcome?.terminate,
    aborted: outcome?.aborted,
    modelCalls: undefined,
    executions: [...h.executions],
    maxConcurrent: h.maxConcurrent,
    hookCalls: [...h.hookCalls],
    crash: undefined,
    hung: outcome === undefined,
    argumentsAfter: argumentsOf(message),
    rawEvents
  }
}

/** Runs a scenario through both implementations (one after the other, never interleaved). */
export const runBoth = async (
  scenario: Scenario,
  options: { readonly pi?: PiRunOptions; readonly ours?: OursRunOptions } = {}
): Promise<{ readonly pi: RunResult; readonly ours: RunResult }> => {
  const pi = await runPi(scenario, options.pi)
  const ours = await runOurs(scenario, options.ours)
  return { pi, ours }
}

/**
 * Makes completion order explicit for a scenario that does not set one: every call waits at a gate after
 * its steps, and calls complete in source order. Without it, the completion order of ungated parallel
 * calls depends on how many promise/fiber hops each implementation takes (e.g. pi awaits the update
 * promises of a call before finalizing it), which no rule of the spec fixes.
 */
export const completingInSourceOrder = (scenario: Scenario): Scenario => {
  if (scenario.release !== undefined) return scenario
  const behaviours: Record<string, Behaviour> = {}
  for (const c of scenario.calls) {
    const base = scenario.behaviours?.[c.id] ?? scenario.tools.find((t) => t.name === c.name)?.behaviour ?? {}
    behaviours[c.id] = { ...base, steps: [...(base.steps ?? []), { gate: true }] }
  }
  return { ...scenario, behaviours, release: { order: [...new Set(scenario.calls.map((c) => c.id))] } }
}

// ---------------------------------------------------------------------------------------------------------
// Validation texts
// ---------------------------------------------------------------------------------------------------------

const VALIDATION_HEADER = /^Validation failed for tool "[^"]*":\n/

/**
 * Replaces the issue lines of a validation-failure text with one placeholder line. The header and the
 * `Received arguments` block are kept. pi words its issues with typebox's messages (`must be number`,
 * `must have required properties a, b`), we word them with Effect Schema's (`Expected number`,
 * `Missing key`), by design; everything else in the text must match.
 */
export const normalizeValidationText = (text: string): string => {
  if (!VALIDATION_HEADER.test(text)) return text
  const lines = text.split("\n")
  const out: Array<string> = [lines[0]]
  let i = 1
  while (i < lines.length && lines[i].startsWith("  - ")) i++
  out.push("  - <issues>")
  return [...out, ...lines.slice(i)].join("\n")
}

/** The issue paths of a validation-failure text, in order. */
export const issuePaths = (text: string): Array<string> =>
  text.split("\n").filter((line) => line.startsWith("  - ")).map((line) => line.slice(4, line.indexOf(":", 4)))

const mapTexts = (value: any, f: (text: string) => string): any => {
  if (Array.isArray(value)) return value.map((v) => mapTexts(v, f))
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [key, inner] of Object.entries(value)) {
      out[key] = key === "text" && typeof inner === "string" ? f(inner) : mapTexts(inner, f)
    }
    return out
  }
  return value
}

/** A run with every validation-failure text normalized by {@link normalizeValidationText}. */
export const withNormalizedValidation = (run: RunResult): RunResult => ({
  ...run,
  events: mapTexts(run.events, normalizeValidationText),
  messages: mapTexts(run.messages, normalizeValidationText)
})
