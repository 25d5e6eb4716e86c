/**
 * Both sides through their public entry points, doing the same work:
 *
 * - ours: `AgentLoop.agentLoopAsyncIterable` (events iterated with `for await`), or `runAgentLoop` with a
 *   callback `EventSink` (the callback rows), or the stateful agent through `PromiseAgent.prompt`;
 * - pi: `agentLoop` (its `EventStream` iterated with `for await`), or `runAgentLoop` with a callback (the
 *   callback rows), or its `Agent` through `prompt`.
 *
 * The model is scripted on both sides: each call answers at once with one `done` event carrying the next
 * scripted message. Tools validate `{ x: number }` (an Effect Schema for us, typebox for pi) and return the
 * same fresh result. Handlers and hooks come in three shapes, the same on both sides as far as each
 * library allows:
 *
 * - `succeed`: ours `Effect.succeed(result)`, hooks `Effect.void`; pi `async` functions that return at once;
 * - `sync`: ours `Effect.sync(() => result)`, hooks `Effect.sync`; pi the same `async` functions (pi has only
 *   one shape for a function that does not wait);
 * - `promise`: ours `Effect.promise(async () => { await null; return result })`; pi `async` functions with
 *   the same `await null` before returning;
 * - `immediate` (handlers only; hooks as `promise`): a handler that waits for one turn of the event loop
 *   (`setImmediate`) before returning, as a tool doing I/O does; ours through `Effect.promise`.
 *
 * Both sides convert the transcript for the model with their default rule (keep user, assistant and tool
 * result messages): ours by leaving `convertToLlm` out, pi with the same filter its `Agent` uses by default.
 */
import {
  Agent as PiAgent,
  type AgentEvent as PiEvent,
  agentLoop as piAgentLoop,
  type AgentLoopConfig as PiLoopConfig,
  type AgentMessage as PiAgentMessage,
  type AgentTool,
  runAgentLoop as piRunAgentLoop
} from "@mariozechner/pi-agent-core"
import {
  type AssistantMessage as PiAssistantMessage,
  createAssistantMessageEventStream,
  type Message as PiMessage,
  type Model as PiModel,
  Type
} from "@mariozechner/pi-ai"
import { Effect, Layer, Schema, Stream } from "effect"
import type { AgentEvent } from "../src/AgentEvent.ts"
import { agentLoop, agentLoopAsyncIterable, type AgentLoopConfig, runAgentLoop } from "../src/AgentLoop.ts"
import * as EventSink from "../src/EventSink.ts"
import { type AgentMessage, type AssistantMessage, emptyUsage, type ToolCall } from "../src/Message.ts"
import { Model, type ModelShape } from "../src/Model.ts"
import { PromiseAgent } from "../src/PromiseAgent.ts"
import * as Tool from "../src/Tool.ts"
import { entry, type RegisteredTool, ToolRegistry, type ToolRegistryShape } from "../src/ToolRegistry.ts"
import type { Runner } from "./measure.ts"

export type Mode = "parallel" | "sequential"
export type Shape = "succeed" | "sync" | "promise" | "immediate"
/**
 * How the events are read. `stream` is ours only (`agentLoop` read with `Stream.runForEach`, as an Effect
 * application reads it); pi has no Stream, so its side of a `stream` row iterates its `EventStream`.
 */
export type Consumer = "iterate" | "callback" | "stream"

/** The work of one run. */
export interface Work {
  readonly mode: Mode
  readonly hooks: boolean
  /** The script: one assistant message per model call. */
  readonly script: ReadonlyArray<AssistantMessage>
  /** The transcript the run starts from. */
  readonly context: ReadonlyArray<AgentMessage>
  /** A follow-up message after the first answer (the no-call baseline has two turns like a tool run). */
  readonly followUp?: boolean
}

/** One side: a run resolves with the number of events consumed. */
export interface LoopSide {
  readonly name: "ours" | "pi"
  /** `onEvent` is called for every event consumed (the memory probe samples there). */
  readonly loop: (work: Work, consumer: Consumer, onEvent?: () => void) => Promise<number>
  /** The stateful agent: sets its transcript (untimed by callers), then `prompt`s. */
  readonly agent: {
    readonly reset: (messages: ReadonlyArray<AgentMessage>, script: ReadonlyArray<AssistantMessage>) => Promise<void>
    readonly prompt: () => Promise<number>
    readonly dispose: () => Promise<void>
  }
}

// ---------------------------------------------------------------------------------------------------------
// Shared data
// ---------------------------------------------------------------------------------------------------------

export const body = (x: number) => ({ content: [{ type: "text" as const, text: "ok" }], details: { x } })

/** A scripted assistant message with this content (tool calls with `toolUse`, text with `stop`). */
export const assistant = (
  content: AssistantMessage["content"],
  stopReason: AssistantMessage["stopReason"]
): AssistantMessage => ({
  role: "assistant",
  content,
  api: "bench",
  provider: "bench",
  model: "bench",
  usage: emptyUsage,
  stopReason,
  timestamp: 0
})

/** An assistant message with `n` calls of the bench tool, `{ x: i }`. */
export const callsMessage = (n: number, from = 0): AssistantMessage => {
  const content: Array<ToolCall> = []
  for (let i = 0; i < n; i++) {
    content.push({ type: "toolCall", id: `call_${from + i}`, name: "tool", arguments: { x: i } })
  }
  return assistant(content, n > 0 ? "toolUse" : "stop")
}

export const textMessage = (text: string): AssistantMessage => assistant([{ type: "text", text }], "stop")

export const FINAL = textMessage("done")
export const PROMPT: AgentMessage = { role: "user", content: [{ type: "text", text: "go" }], timestamp: 0 }
const FOLLOW_UP: AgentMessage = { role: "user", content: [{ type: "text", text: "again" }], timestamp: 0 }

/** A realistic transcript of `n` messages: user, assistant with one call, its result, assistant text. */
export const transcriptOf = (n: number): Array<AgentMessage> => {
  const out: Array<AgentMessage> = []
  for (let i = 0; out.length < n; i++) {
    out.push({ role: "user", content: [{ type: "text", text: `question ${i}` }], timestamp: i })
    out.push(callsMessage(1, 1_000_000 + i))
    out.push({
      role: "toolResult",
      toolCallId: `call_${1_000_000 + i}`,
      toolName: "tool",
      content: [{ type: "text", text: "ok" }],
      isError: false,
      timestamp: i
    })
    out.push(textMessage(`answer ${i}`))
  }
  return out.slice(0, n)
}

/** Turns of one instant call each, then the final text. */
export const turnsScript = (turns: number): Array<AssistantMessage> => [
  ...Array.from({ length: turns }, (_, i) => callsMessage(1, i)),
  FINAL
]

/** Events of a run through `agentLoop`, per side (both emit the same kinds for the same work). */
export const loopEvents = (work: Work): number => {
  // agent_start, agent_end; per turn turn_start/turn_end and the assistant's start/end; the prompt's start/end.
  let events = 2 + 2
  for (const message of work.script) {
    const calls = message.content.filter((c) => c.type === "toolCall").length
    events += 4 + 4 * calls
  }
  if (work.followUp) events += 2
  return events
}

/** One side's run of `work` as the sampler takes it (its event count checked on every run). */
export const loopRunner = (side: LoopSide, work: Work, consumer: Consumer = "iterate"): Runner => ({
  run: () => side.loop(work, consumer),
  events: loopEvents(work)
})

/** The same run with no tool calls: two model turns (the second started by a follow-up), like a tool run. */
export const baselineWork = (mode: Mode, hooks: boolean): Work => ({
  mode,
  hooks,
  script: [FINAL, FINAL],
  context: [],
  followUp: true
})

// ---------------------------------------------------------------------------------------------------------
// Ours
// ---------------------------------------------------------------------------------------------------------

const Args = Schema.Struct({ x: Schema.Number })
const tool = Tool.make("tool", { description: "bench tool", parameters: Args })

const handlerOf = (shape: Shape, delayMs: number) => {
  if (delayMs > 0) return (args: { readonly x: number }) => Effect.as(Effect.sleep(delayMs), body(args.x))
  switch (shape) {
    case "succeed":
      return (args: { readonly x: number }) => Effect.succeed(body(args.x))
    case "sync":
      return (args: { readonly x: number }) => Effect.sync(() => body(args.x))
    case "promise":
      return (args: { readonly x: number }) =>
        Effect.promise(async () => {
          await null
          return body(args.x)
        })
    case "immediate":
      return (args: { readonly x: number }) => Effect.promise(() => nextTurn(body(args.x)))
  }
}

/** Resolves with `value` after one turn of the event loop. */
const nextTurn = <A>(value: A): Promise<A> => new Promise((resolve) => setImmediate(() => resolve(value)))

const ourHooks = (shape: Shape): Pick<AgentLoopConfig, "beforeToolCall" | "afterToolCall"> => {
  switch (shape) {
    case "succeed":
      return { beforeToolCall: () => Effect.void, afterToolCall: () => Effect.void }
    case "sync":
      return { beforeToolCall: () => Effect.sync(() => undefined), afterToolCall: () => Effect.sync(() => undefined) }
    case "promise":
    case "immediate":
      return {
        beforeToolCall: () =>
          Effect.promise(async () => {
            await null
          }),
        afterToolCall: () =>
          Effect.promise(async () => {
            await null
          })
      }
  }
}

const registryOf = (shape: Shape, delayMs: number): ToolRegistryShape => {
  const entries: Array<RegisteredTool> = [entry(tool, handlerOf(shape, delayMs))]
  return Effect.runSync(
    Effect.gen(function*() {
      return yield* ToolRegistry
    }).pipe(Effect.provide(ToolRegistry.fromEntries(entries)))
  )
}

/** The one event of a scripted answer. */
const doneEvent = (message: AssistantMessage) =>
  Stream.succeed({
    type: "done" as const,
    reason: message.stopReason === "toolUse" ? "toolUse" as const : "stop" as const,
    message
  })

/**
 * A model that answers each call with the next scripted message, as one `done` event. Like pi's stream
 * function below, it takes the next message when called and returns a stream that holds it.
 */
export const ourModel = (script: ReadonlyArray<AssistantMessage>): ModelShape => {
  let step = 0
  return {
    info: { api: "bench", provider: "bench", model: "bench" },
    stream: () => doneEvent(script[Math.min(step++, script.length - 1)]!)
  }
}

export const makeOurs = (shape: Shape, delayMs = 0): LoopSide => {
  const registry = registryOf(shape, delayMs)
  const hooks = ourHooks(shape)
  const configOf = (work: Work): AgentLoopConfig => {
    let followed = !work.followUp
    return {
      toolExecution: work.mode,
      ...(work.hooks ? hooks : {}),
      getFollowUpMessages: Effect.sync(() => {
        if (followed) return []
        followed = true
        return [FOLLOW_UP]
      })
    }
  }
  let agent: PromiseAgent | undefined
  let agentScript: { script: ReadonlyArray<AssistantMessage>; step: number } = { script: [FINAL], step: 0 }
  const agentModel: ModelShape = {
    info: { api: "bench", provider: "bench", model: "bench" },
    stream: () => doneEvent(agentScript.script[Math.min(agentScript.step++, agentScript.script.length - 1)]!)
  }
  let agentEvents = 0
  return {
    name: "ours",
    loop: async (work, consumer, onEvent) => {
      const model = ourModel(work.script)
      const context = { systemPrompt: "", messages: work.context }
      if (consumer === "iterate") {
        const layer = Layer.merge(Layer.succeed(Model, model), Layer.succeed(ToolRegistry, registry))
        let count = 0
        if (onEvent === undefined) {
          for await (const _ of agentLoopAsyncIterable([PROMPT], context, configOf(work), layer)) {
            count++
          }
        } else {
          for await (const _ of agentLoopAsyncIterable([PROMPT], context, configOf(work), layer)) {
            count++
            onEvent()
          }
        }
        return count
      }
      let count = 0
      if (consumer === "stream") {
        await Effect.runPromise(
          Stream.runForEach(agentLoop([PROMPT], context, configOf(work)), () => Effect.sync(() => void count++)).pipe(
            Effect.provideService(Model, model),
            Effect.provideService(ToolRegistry, registry)
          )
        )
        return count
      }
      await Effect.runPromise(
        runAgentLoop([PROMPT], context, configOf(work)).pipe(
          Effect.provideService(EventSink.EventSink, EventSink.fromCallback(() => void count++)),
          Effect.provideService(Model, model),
          Effect.provideService(ToolRegistry, registry)
        )
      )
      return count
    },
    agent: {
      reset: async (messages, script) => {
        if (agent === undefined) {
          agent = new PromiseAgent({
            layer: Layer.merge(Layer.succeed(Model, agentModel), Layer.succeed(ToolRegistry, registry)),
            toolExecution: "parallel"
          })
          await agent.subscribe((_event: AgentEvent) => void agentEvents++)
        }
        await agent.reset()
        await agent.setMessages(messages)
        agentScript = { script, step: 0 }
      },
      prompt: async () => {
        agentEvents = 0
        await agent!.prompt(PROMPT)
        return agentEvents
      },
      dispose: async () => {
        await agent?.dispose()
        agent = undefined
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// pi
// ---------------------------------------------------------------------------------------------------------

/** The model pi's side names in its config (its stream function is scripted, {@link piStreamFn}). */
export const piModel: PiModel<string> = {
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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const piTool = (shape: Shape, delayMs: number): AgentTool<any> => {
  const parameters = Type.Object({ x: Type.Number() })
  return {
    name: "tool",
    label: "tool",
    description: "bench tool",
    parameters,
    execute: delayMs > 0
      ? async (_id, params: any) => {
        await sleep(delayMs)
        return body(params.x)
      }
      : shape === "promise"
      ? async (_id, params: any) => {
        await null
        return body(params.x)
      }
      : shape === "immediate"
      ? (_id, params: any) => nextTurn(body(params.x))
      : async (_id, params: any) => body(params.x)
  }
}

const piHooks = (shape: Shape): Pick<PiLoopConfig, "beforeToolCall" | "afterToolCall"> =>
  shape === "promise" || shape === "immediate"
    ? {
      beforeToolCall: async () => {
        await null
        return undefined
      },
      afterToolCall: async () => {
        await null
        return undefined
      }
    }
    : { beforeToolCall: async () => undefined, afterToolCall: async () => undefined }

/** pi's `Agent` default conversion, used for its loop too: the same rule as ours. */
export const piConvert = (messages: Array<PiAgentMessage>): Array<PiMessage> =>
  messages.filter((m) => m.role === "user" || m.role === "assistant" || m.role === "toolResult") as Array<PiMessage>

/** pi's scripted stream function: each call takes the next scripted message, as {@link ourModel} does. */
export const piStreamFn = (script: ReadonlyArray<AssistantMessage>) => {
  let step = 0
  return () => {
    const message = script[Math.min(step++, script.length - 1)] as unknown as PiAssistantMessage
    const stream = createAssistantMessageEventStream()
    stream.push({ type: "done", reason: message.stopReason === "toolUse" ? "toolUse" : "stop", message })
    stream.end()
    return stream
  }
}

export const makePi = (shape: Shape, delayMs = 0): LoopSide => {
  const tools = [piTool(shape, delayMs)]
  const hooks = piHooks(shape)
  const configOf = (work: Work): PiLoopConfig => {
    let followed = !work.followUp
    return {
      model: piModel,
      convertToLlm: piConvert,
      toolExecution: work.mode,
      ...(work.hooks ? hooks : {}),
      getFollowUpMessages: async () => {
        if (followed) return []
        followed = true
        return [FOLLOW_UP as PiAgentMessage]
      }
    }
  }
  let agent: PiAgent | undefined
  let agentEvents = 0
  let agentScript: { script: ReadonlyArray<AssistantMessage>; step: number } = { script: [FINAL], step: 0 }
  return {
    name: "pi",
    loop: async (work, consumer, onEvent) => {
      const context = { systemPrompt: "", messages: work.context as Array<PiAgentMessage>, tools }
      const prompts = [PROMPT as PiAgentMessage]
      if (consumer !== "callback") {
        const stream = piAgentLoop(prompts, context, configOf(work), undefined, piStreamFn(work.script))
        let count = 0
        if (onEvent === undefined) { for await (const _ of stream as AsyncIterable<PiEvent>) count++ }
        else {
          for await (const _ of stream as AsyncIterable<PiEvent>) {
            count++
            onEvent()
          }
        }
        await stream.result()
        return count
      }
      let count = 0
      await piRunAgentLoop(prompts, context, configOf(work), () => void count++, undefined, piStreamFn(work.script))
      return count
    },
    agent: {
      reset: async (messages, script) => {
        if (agent === undefined) {
          agent = new PiAgent({
            initialState: { model: piModel, tools },
            toolExecution: "parallel",
            streamFn: () => {
              const message = agentScript
                .script[Math.min(agentScript.step++, agentScript.script.length - 1)] as unknown as PiAssistantMessage
              const stream = createAssistantMessageEventStream()
              stream.push({ type: "done", reason: message.stopReason === "toolUse" ? "toolUse" : "stop", message })
              stream.end()
              return stream
            }
          })
          agent.subscribe(() => void agentEvents++)
        }
        agent.reset()
        agent.state.messages = messages as Array<PiAgentMessage>
        agentScript = { script, step: 0 }
      },
      prompt: async () => {
        agentEvents = 0
        await agent!.prompt(PROMPT as PiAgentMessage)
        return agentEvents
      },
      dispose: async () => {
        agent = undefined
      }
    }
  }
}
