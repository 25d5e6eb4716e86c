/**
 * The two sides of the benchmark, set up to do identical work:
 *
 * - ours: `executeToolCalls` on one assistant message, events consumed by a counting `EventSink`;
 * - pi: `agentLoop` (pi-agent-core 0.73.1) driven by a scripted stream function that answers once with
 *   the same assistant message and then with a final text message, events consumed by iterating pi's
 *   event stream.
 *
 * Both validate `{ x: number }` (an Effect Schema for us, a typebox schema for pi), run the same tool
 * bodies, and can have trivial `beforeToolCall` / `afterToolCall` hooks. Calls are spread round-robin
 * over the registered tools.
 *
 * pi's loop has per-run costs that are not part of a batch (two model turns, loop events), so its
 * per-call cost is measured against a baseline run with two turns and no tool calls (see `piBaseline`).
 * Ours is measured against a batch with no calls, so both sides subtract their fixed overhead.
 */
import {
  type AgentEvent as PiEvent,
  agentLoop,
  type AgentLoopConfig,
  type AgentTool
} from "@mariozechner/pi-agent-core"
import {
  type AssistantMessage as PiAssistantMessage,
  createAssistantMessageEventStream,
  type Message as PiMessage,
  type Model as PiModel,
  Type
} from "@mariozechner/pi-ai"
import { Effect, Schema } from "effect"
import * as EventSink from "../src/EventSink.ts"
import { type AssistantMessage, emptyUsage, type ToolCall } from "../src/Message.ts"
import * as Tool from "../src/Tool.ts"
import { executeToolCalls, type ToolExecutionOptions } from "../src/ToolExecution.ts"
import { entry, type RegisteredTool, ToolRegistry, type ToolRegistryShape } from "../src/ToolRegistry.ts"

export type Mode = "parallel" | "sequential"

/** What runs: instant tools, or tools that wait `delayMs` before answering. */
export interface SideOptions {
  /** How many tools are registered (calls are spread over them round-robin). */
  readonly toolCount: number
  /** 0 = instant. */
  readonly delayMs: number
}

/** One batch's configuration. */
export interface RunOptions {
  readonly mode: Mode
  readonly hooks: boolean
}

/** A side of the benchmark: `run` executes one batch and resolves with the number of events consumed. */
export interface Side {
  readonly name: "ours" | "pi"
  /** One batch of the message's tool calls. */
  readonly run: (message: AssistantMessage, options: RunOptions) => Promise<number>
  /** The same run with no tool calls, to subtract fixed per-run overhead. */
  readonly baseline: () => Promise<number>
  /** Replaces the event consumer (used by the memory probe to sample while events flow). */
  onEvent: ((type: string) => void) | undefined
}

// ---------------------------------------------------------------------------------------------------------
// Shared work
// ---------------------------------------------------------------------------------------------------------

/** The tool body both sides run: a fresh result per call. */
export const body = (x: number) => ({
  content: [{ type: "text" as const, text: "ok" }],
  details: { x }
})

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export const toolName = (i: number) => `tool_${i}`

/** An assistant message with `n` tool calls `{ x: i }`, spread round-robin over `toolCount` tools. */
export const makeMessage = (n: number, toolCount: number): AssistantMessage => {
  const content: Array<ToolCall> = []
  for (let i = 0; i < n; i++) {
    content.push({ type: "toolCall", id: `call_${i}`, name: toolName(i % toolCount), arguments: { x: i } })
  }
  return {
    role: "assistant",
    content,
    api: "bench",
    provider: "bench",
    model: "bench",
    usage: emptyUsage,
    stopReason: n > 0 ? "toolUse" : "stop",
    timestamp: 0
  }
}

const textMessage = (text: string): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text }],
  api: "bench",
  provider: "bench",
  model: "bench",
  usage: emptyUsage,
  stopReason: "stop",
  timestamp: 0
})

// ---------------------------------------------------------------------------------------------------------
// Ours
// ---------------------------------------------------------------------------------------------------------

const Args = () => Schema.Struct({ x: Schema.Number })

/** Our registry of `toolCount` tools (each with its own parameter Schema), built once. */
export const ourRegistry = (options: SideOptions): ToolRegistryShape => {
  const entries: Array<RegisteredTool> = []
  for (let i = 0; i < options.toolCount; i++) {
    const tool = Tool.make(toolName(i), { description: `bench tool ${i}`, parameters: Args() })
    entries.push(
      entry(
        tool,
        options.delayMs > 0
          ? (args: { readonly x: number }) => Effect.as(Effect.sleep(options.delayMs), body(args.x))
          : (args: { readonly x: number }) => Effect.succeed(body(args.x))
      )
    )
  }
  return Effect.runSync(
    Effect.gen(function*() {
      return yield* ToolRegistry
    }).pipe(Effect.provide(ToolRegistry.fromEntries(entries)))
  )
}

const ourBefore: NonNullable<ToolExecutionOptions["beforeToolCall"]> = () => Effect.void
const ourAfter: NonNullable<ToolExecutionOptions["afterToolCall"]> = () => Effect.void

export const makeOurs = (options: SideOptions): Side => {
  const registry = ourRegistry(options)
  let count = 0
  const side: Side = {
    name: "ours",
    onEvent: undefined,
    run: (message, run) => {
      count = 0
      const onEvent = side.onEvent
      const sink = onEvent === undefined
        ? EventSink.fromCallback(() => {
          count++
        })
        : EventSink.fromCallback((event) => {
          count++
          onEvent(event.type)
        })
      return Effect.runPromise(
        executeToolCalls(message, {
          toolExecution: run.mode,
          beforeToolCall: run.hooks ? ourBefore : undefined,
          afterToolCall: run.hooks ? ourAfter : undefined
        }).pipe(
          Effect.provideService(ToolRegistry, registry),
          Effect.provideService(EventSink.EventSink, sink)
        )
      ).then((result) => {
        if (result.messages.length !== message.content.length) throw new Error("ours: wrong number of results")
        return count
      })
    },
    baseline: () => side.run(EMPTY, { mode: "parallel", hooks: false })
  }
  return side
}

const EMPTY = makeMessage(0, 1)

// ---------------------------------------------------------------------------------------------------------
// pi
// ---------------------------------------------------------------------------------------------------------

const piModel: PiModel<string> = {
  id: "bench",
  name: "bench",
  api: "bench",
  provider: "bench",
  baseUrl: "http://localhost",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 1_000
}

/** pi's tools: the same bodies, each with its own typebox schema. */
export const piTools = (options: SideOptions): Array<AgentTool<any>> => {
  const tools: Array<AgentTool<any>> = []
  for (let i = 0; i < options.toolCount; i++) {
    const parameters = Type.Object({ x: Type.Number() })
    const tool: AgentTool<typeof parameters> = {
      name: toolName(i),
      label: toolName(i),
      description: `bench tool ${i}`,
      parameters,
      execute: options.delayMs > 0
        ? async (_id, params) => {
          await sleep(options.delayMs)
          return body(params.x)
        }
        : async (_id, params) => body(params.x)
    }
    tools.push(tool)
  }
  return tools
}

/** A stream function answering with the scripted messages, one per model call. */
const scriptedStream = (script: ReadonlyArray<AssistantMessage>) => {
  let step = 0
  return () => {
    const message = script[Math.min(step++, script.length - 1)] as unknown as PiAssistantMessage
    const stream = createAssistantMessageEventStream()
    stream.push({ type: "done", reason: message.stopReason === "toolUse" ? "toolUse" : "stop", message })
    stream.end()
    return stream
  }
}

const FINAL = textMessage("done")
const FIRST = textMessage("no tools")
const PROMPT = { role: "user" as const, content: "go", timestamp: 0 }
const FOLLOW_UP = { role: "user" as const, content: "again", timestamp: 0 }
const convertToLlm = (messages: ReadonlyArray<unknown>) => messages as Array<PiMessage>
const piBefore = async () => undefined
const piAfter = async () => undefined

export const makePi = (options: SideOptions): Side => {
  const tools = piTools(options)
  const consume = async (stream: AsyncIterable<PiEvent> & { result(): Promise<unknown> }) => {
    let count = 0
    const onEvent = side.onEvent
    if (onEvent === undefined) {
      for await (const _ of stream) count++
    } else {
      for await (const event of stream) {
        count++
        onEvent(event.type)
      }
    }
    await stream.result()
    return count
  }
  const side: Side = {
    name: "pi",
    onEvent: undefined,
    run: (message, run) => {
      const config: AgentLoopConfig = {
        model: piModel,
        convertToLlm,
        toolExecution: run.mode,
        ...(run.hooks ? { beforeToolCall: piBefore, afterToolCall: piAfter } : {})
      }
      return consume(
        agentLoop(
          [PROMPT],
          { systemPrompt: "", messages: [], tools },
          config,
          undefined,
          scriptedStream([message, FINAL])
        )
      )
    },
    /**
     * Two model turns and no tool calls: the first answer has none, a follow-up message starts the second
     * turn. This matches the loop work of a tool run (two model calls), leaving the batch.
     */
    baseline: () => {
      let followed = false
      const config: AgentLoopConfig = {
        model: piModel,
        convertToLlm,
        getFollowUpMessages: async () => {
          if (followed) return []
          followed = true
          return [FOLLOW_UP]
        }
      }
      return consume(
        agentLoop(
          [PROMPT],
          { systemPrompt: "", messages: [], tools },
          config,
          undefined,
          scriptedStream([FIRST, FINAL])
        )
      )
    }
  }
  return side
}

// ---------------------------------------------------------------------------------------------------------
// Event counts
// ---------------------------------------------------------------------------------------------------------

/** Events per call on both sides: start, end, message_start, message_end. */
export const EVENTS_PER_CALL = 4

/**
 * pi's events outside the batch for a run with tool calls: agent_start, turn_start, prompt
 * message_start/end, assistant message_start/end, turn_end, turn_start, final message_start/end, turn_end,
 * agent_end.
 */
export const PI_LOOP_EVENTS = 12

// ---------------------------------------------------------------------------------------------------------
// The floor: the same bodies with no pipeline
// ---------------------------------------------------------------------------------------------------------

export const floorArgs = (n: number): Array<{ x: number }> => Array.from({ length: n }, (_, i) => ({ x: i }))

const promiseBody = async (_id: string, params: { x: number }) => body(params.x)
const effectBody = (params: { x: number }) => Effect.succeed(body(params.x))

/** `Promise.all` (parallel) or a `for … await` loop (sequential) over the bare pi tool body. */
export const floorPromise = async (args: ReadonlyArray<{ x: number }>, mode: Mode): Promise<number> => {
  if (mode === "parallel") return (await Promise.all(args.map((a) => promiseBody("id", a)))).length
  let n = 0
  for (const a of args) {
    await promiseBody("id", a)
    n++
  }
  return n
}

/** `Effect.forEach` over the bare Effect tool body. */
export const floorEffect = (args: ReadonlyArray<{ x: number }>, mode: Mode): Promise<number> =>
  Effect.runPromise(
    Effect.forEach(args, effectBody, { concurrency: mode === "parallel" ? "unbounded" : 1 }).pipe(
      Effect.map((results) => results.length)
    )
  )
