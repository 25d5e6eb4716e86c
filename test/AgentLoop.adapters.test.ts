import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { vi } from "vitest"
import type { AgentEvent } from "../src/AgentEvent.ts"
import { agentLoopAsyncIterable, runAgentLoopPromise } from "../src/AgentLoop.ts"
import type { AgentMessage, UserMessage } from "../src/Message.ts"
import { Model } from "../src/Model.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"

// The loop for callers outside Effect: an AsyncIterable of events and a Promise of the new messages.

const Add = Tool.make("add", { description: "add", parameters: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }) })
const Wait = Tool.make("wait", { description: "waits until aborted", parameters: Schema.Struct({}) })

const user: UserMessage = { role: "user", content: "go", timestamp: 0 }
const context = { systemPrompt: "", messages: [] }

const setup = (script: ReadonlyArray<ScriptedModel.Step>) => {
  const seen = { interrupted: false, signalAborted: false, onBegin: (): void => {} }
  const tools = ToolRegistry.layer(Add, Wait).pipe(Layer.provide([
    Add.toLayer(({ a, b }) => Effect.succeed(Tool.textResult(String(a + b)))),
    Wait.toLayer((_, ctx) =>
      Effect.sync(() => seen.onBegin()).pipe(
        Effect.andThen(Effect.never),
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            seen.interrupted = true
            seen.signalAborted = ctx.signal.aborted
          })
        )
      )
    )
  ]))
  return { seen, layer: Layer.merge(tools, ScriptedModel.layer(script)) }
}

const toolResultsOf = (messages: ReadonlyArray<AgentMessage>) => messages.filter((m) => m.role === "toolResult")

describe("AgentLoop adapters", () => {
  it("AL 3.7 agentLoopAsyncIterable yields every event of the run, agent_start to agent_end", async () => {
    const { layer } = setup([
      ScriptedModel.callTools([ScriptedModel.toolCall("c1", "add", { a: 1, b: 2 })]),
      ScriptedModel.say("3")
    ])
    const types: Array<string> = []
    for await (const event of agentLoopAsyncIterable([user], context, {}, layer)) types.push(event.type)
    expect(types[0]).toBe("agent_start")
    expect(types.at(-1)).toBe("agent_end")
    expect(types.filter((t) => t === "tool_execution_end")).toHaveLength(1)
    expect(types.filter((t) => t === "turn_end")).toHaveLength(2)
  })

  it("AL 3.7 agentLoopAsyncIterable yields the events in the order the run emits them, none lost or repeated", async () => {
    const script = [
      ScriptedModel.callTools([
        ScriptedModel.toolCall("c1", "add", { a: 1, b: 2 }),
        ScriptedModel.toolCall("c2", "add", { a: 3, b: 4 })
      ]),
      ScriptedModel.say("done")
    ]
    const emitted: Array<AgentEvent> = []
    await runAgentLoopPromise([user], context, {}, setup(script).layer, (event) => void emitted.push(event))
    const iterated: Array<AgentEvent> = []
    for await (const event of agentLoopAsyncIterable([user], context, {}, setup(script).layer)) {
      iterated.push(event)
      // A consumer slower than the run: every event is buffered until read.
      await Promise.resolve()
    }
    const label = (e: AgentEvent) => "toolCallId" in e ? `${e.type}:${e.toolCallId}` : e.type
    expect(iterated.map(label)).toEqual(emitted.map(label))
  })

  // Thousands of events, read in bursts while the run goes on delivering: the iterator drops what was read
  // from its buffer from time to time (src/AgentLoop.ts, `LoopIterator.pull`), which must lose, repeat or
  // reorder nothing.
  it("AL 3.7 agentLoopAsyncIterable keeps every event of a long run in order while the reader lags behind", async () => {
    const calls = Array.from({ length: 3000 }, (_, i) => ScriptedModel.toolCall(`c${i}`, "add", { a: i, b: 1 }))
    const script = [ScriptedModel.callTools(calls), ScriptedModel.say("done")]
    const label = (e: AgentEvent) => "toolCallId" in e ? `${e.type}:${e.toolCallId}` : e.type
    const emitted: Array<string> = []
    await runAgentLoopPromise([user], context, {}, setup(script).layer, (event) => void emitted.push(label(event)))
    const iterated: Array<string> = []
    for await (const event of agentLoopAsyncIterable([user], context, {}, setup(script).layer)) {
      iterated.push(label(event))
      // Every 700 events the reader gives the run a turn of the event loop to deliver more.
      if (iterated.length % 700 === 0) await new Promise((resolve) => setImmediate(resolve))
    }
    expect(iterated.length).toBe(emitted.length)
    expect(iterated).toEqual(emitted)
  })

  it.effect.prop(
    "AL 3.7 agentLoopAsyncIterable, whatever the consumer's pace (and several next() calls at once), yields exactly the run's events in order",
    {
      turns: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 }))).check(Schema.isMaxLength(4)),
      // Before each read: none, a microtask, a macrotask, or two next() calls at once.
      pace: Schema.Array(Schema.Literals(["none", "microtask", "macrotask", "double"])).check(Schema.isMinLength(1))
    },
    ({ turns, pace }) =>
      Effect.promise(async () => {
        const script = [
          ...turns.map((calls, t) =>
            ScriptedModel.callTools(
              Array.from({ length: calls }, (_, i) => ScriptedModel.toolCall(`t${t}_${i}`, "add", { a: t, b: i })),
              calls === 0 ? `nothing ${t}` : undefined
            )
          ),
          ScriptedModel.say("done")
        ]
        const label = (e: AgentEvent) => "toolCallId" in e ? `${e.type}:${e.toolCallId}` : e.type
        const emitted: Array<string> = []
        await runAgentLoopPromise([user], context, { toolExecution: "sequential" }, setup(script).layer, (event) =>
          void emitted.push(label(event)))
        const iterator = agentLoopAsyncIterable([user], context, { toolExecution: "sequential" }, setup(script).layer)[
          Symbol.asyncIterator
        ]()
        const iterated: Array<string> = []
        let done = false
        for (let i = 0; !done; i++) {
          const step = pace[i % pace.length]
          if (step === "microtask") {
            await Promise.resolve()
          }
          if (step === "macrotask") {
            await new Promise<void>((resolve) =>
              setImmediate(resolve)
            )
          }
          const results = step === "double"
            ? await Promise.all([iterator.next(), iterator.next()])
            : [await iterator.next()]
          for (const result of results) {
            if (result.done) {
              done = true
            } else {
              expect(done, "no event after the end").toBe(false)
              iterated.push(label(result.value))
            }
          }
        }
        expect(iterated).toEqual(emitted)
        expect((await iterator.next()).done, "the iterator stays done").toBe(true)
      }),
    { timeout: 30_000, arbitrary: { runs: 100 } }
  )

  it("AL 3.7 agentLoopAsyncIterable throws the error of a layer that cannot be built", async () => {
    const broken = Layer.merge(
      ToolRegistry.layer(Add).pipe(Layer.provide(Add.toLayer(() => Effect.succeed(Tool.textResult("0"))))),
      Layer.effect(Model, Effect.fail(new Error("no model here")))
    )
    const iterate = async () => {
      for await (const _ of agentLoopAsyncIterable([user], context, {}, broken)) {
        // no event is expected
      }
    }
    await expect(iterate()).rejects.toThrow("no model here")
  })

  it("AL 3.7 breaking out of the iteration stops the run: the running tool is interrupted", async () => {
    const { layer, seen } = setup([ScriptedModel.callTools([ScriptedModel.toolCall("w", "wait", {})])])
    for await (const event of agentLoopAsyncIterable([user], context, {}, layer)) {
      if (event.type === "tool_execution_start") break
    }
    // The run settles in the background after the break.
    await vi.waitFor(() => expect(seen.interrupted).toBe(true), { timeout: 5_000 })
    expect(seen.interrupted).toBe(true)
    expect(seen.signalAborted).toBe(true)
  })

  it("AL 3.7 runAgentLoopPromise resolves with the new messages and hands every event to onEvent in order", async () => {
    const { layer } = setup([
      ScriptedModel.callTools([ScriptedModel.toolCall("c1", "add", { a: 2, b: 2 })]),
      ScriptedModel.say("4")
    ])
    const events: Array<AgentEvent> = []
    const messages = await runAgentLoopPromise([user], context, {}, layer, async (event) => {
      await Promise.resolve()
      events.push(event)
    })
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"])
    expect(events[0]!.type).toBe("agent_start")
    expect(events.at(-1)).toMatchObject({ type: "agent_end", messages })
  })

  it("AL 3.7 a rejecting onEvent is contained: the run still completes", async () => {
    const { layer } = setup([ScriptedModel.say("done")])
    const messages = await runAgentLoopPromise(
      [user],
      context,
      {},
      layer,
      () => Promise.reject(new Error("subscriber"))
    )
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"])
  })

  it("AL 3.7 aborting the signal resolves the Promise with a well-formed transcript", async () => {
    const { layer, seen } = setup([ScriptedModel.callTools([ScriptedModel.toolCall("w", "wait", {})])])
    const controller = new AbortController()
    seen.onBegin = () => controller.abort() // the tool is running when the abort comes
    const messages = await runAgentLoopPromise([user], context, { signal: controller.signal }, layer)
    const results = toolResultsOf(messages)
    expect(results).toHaveLength(1)
    expect(results[0]).toMatchObject({ toolCallId: "w", isError: true })
    expect(JSON.stringify(results[0]!.content)).toContain("interrupted after it started")
    expect(seen.interrupted).toBe(true)
    expect(seen.signalAborted).toBe(true)
  })
})
