/**
 * AL 5: a run's limits (model calls, tool calls, tokens, cost, wall time, repeated failures), one test per
 * rule of `docs/agent-loop.md`. Time is the TestClock's.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Schema, Stream, SubscriptionRef } from "effect"
import { TestClock } from "effect/testing"
import * as Agent from "../src/Agent.ts"
import type { AgentEvent } from "../src/AgentEvent.ts"
import type { AgentLoopConfig } from "../src/AgentLoop.ts"
import { type AgentMessage, type AssistantMessage, emptyUsage, type Usage } from "../src/Message.ts"
import { Model, type ModelRequest } from "../src/Model.ts"
import * as RunLimits from "../src/RunLimits.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import { callTools, say } from "../src/ScriptedModel.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import {
  assertRunInvariants,
  assertWellFormed,
  assistants,
  call,
  customTool,
  labelOf,
  runLoop,
  standardTools,
  textOf,
  toolResults,
  user
} from "./support/loop.ts"

const endOf = (events: ReadonlyArray<AgentEvent>) => {
  const end = events.at(-1)
  assert.strictEqual(end?.type, "agent_end")
  return end as Extract<AgentEvent, { type: "agent_end" }>
}

/** A model that asks for `add` forever: each response `calls` calls with ids of their own, `usage`, `delay`. */
const forever = (
  options: { readonly calls?: number; readonly usage?: Usage; readonly delay?: Duration.Input } = {}
): ReadonlyArray<ScriptedModel.Step> => {
  let turn = 0
  return [() => {
    turn++
    const calls = Array.from({ length: options.calls ?? 1 }, (_, i) => call(`t${turn}c${i}`, "add", { a: i, b: 1 }))
    return {
      ...callTools(calls),
      ...(options.usage === undefined ? {} : { usage: options.usage }),
      ...(options.delay === undefined ? {} : { delay: options.delay })
    }
  }]
}
const repeat = { whenExhausted: "repeat-last" } as const

const usage = (input: number, output: number, cost: number, cacheRead = 0, cacheWrite = 0): Usage => ({
  ...emptyUsage,
  input,
  output,
  cacheRead,
  cacheWrite,
  totalTokens: input + output + cacheRead + cacheWrite,
  cost: { ...emptyUsage.cost, total: cost }
})

const FINAL_SHAPE: AssistantMessage = {
  role: "assistant",
  content: [],
  api: "custom",
  provider: "custom",
  model: "custom",
  usage: emptyUsage,
  stopReason: "stop",
  timestamp: 0
}

/** The note that ends a stopped run: the last message, an assistant `stop` without usage. */
const assertNote = (messages: ReadonlyArray<AgentMessage>, reason: RunLimits.LimitReached) => {
  const note = messages.at(-1) as AssistantMessage
  assert.strictEqual(note.role, "assistant")
  assert.strictEqual(note.stopReason, "stop")
  assert.deepStrictEqual(note.usage, emptyUsage)
  assert.strictEqual(textOf(note), `[The run was stopped before the task was done: ${RunLimits.describe(reason)}.]`)
  assert.deepStrictEqual(note.content.filter((block) => block.type === "toolCall"), [])
}

describe("AL 5 limits", () => {
  it.effect("AL 5.1-5.4 maxTurns: that many model calls, then a note instead of the next one, and the reason", () =>
    Effect.gen(function*() {
      const { events, messages, requests } = yield* runLoop({
        script: forever(),
        scriptOptions: repeat,
        config: { limits: { maxTurns: 3 } }
      })
      assert.strictEqual(requests.length, 3)
      const reason: RunLimits.LimitReached = { _tag: "MaxTurns", limit: 3, used: 3 }
      assert.deepStrictEqual(endOf(events).limitReached, reason)
      assertNote(messages, reason)
      assert.strictEqual(toolResults(messages).length, 3, "every call of every turn has its result")
      // The note's turn: opened, the note announced, closed with no tool results, then agent_end.
      assert.deepStrictEqual(events.slice(-6).map(labelOf), [
        "turn_end:assistant:toolUse[t3c0]",
        "turn_start",
        "message_start:assistant:stop",
        "message_end:assistant:stop",
        "turn_end:assistant:stop[]",
        "agent_end"
      ])
      assertRunInvariants(events, messages)
      assertWellFormed(messages)
      assert.strictEqual(textOf(messages.at(-1)!).includes("3 model calls; its limit is 3 model calls"), true)
    }))

  it.effect("AL 5.2 maxToolCalls: checked before a model call, so a batch is never cut and may go past it", () =>
    Effect.gen(function*() {
      const { events, messages, requests } = yield* runLoop({
        script: forever({ calls: 2 }),
        scriptOptions: repeat,
        config: { limits: { maxToolCalls: 3 } }
      })
      assert.strictEqual(requests.length, 2)
      assert.deepStrictEqual(endOf(events).limitReached, { _tag: "MaxToolCalls", limit: 3, used: 4 })
      assert.strictEqual(toolResults(messages).length, 4)
      assertWellFormed(messages)
    }))

  it.effect("AL 5.1 tokens and cost: summed over the run's responses; input counts cache reads and writes too", () =>
    Effect.gen(function*() {
      const run = (limits: RunLimits.RunLimits) =>
        Effect.map(
          runLoop({
            script: forever({ usage: usage(100, 10, 0.25, 50, 25) }),
            scriptOptions: repeat,
            config: { limits }
          }),
          ({ events, requests }) => [requests.length, endOf(events).limitReached] as const
        )
      // 175 input tokens per response: 100, 50 read from the cache, 25 written to it.
      assert.deepStrictEqual(yield* run({ maxInputTokens: 350 }), [2, {
        _tag: "MaxInputTokens",
        limit: 350,
        used: 350
      }])
      assert.deepStrictEqual(yield* run({ maxOutputTokens: 25 }), [3, { _tag: "MaxOutputTokens", limit: 25, used: 30 }])
      assert.deepStrictEqual(yield* run({ maxCost: 1 }), [4, { _tag: "MaxCost", limit: 1, used: 1 }])
      // A price list of the caller's instead of the provider's figure.
      assert.deepStrictEqual(yield* run({ maxCost: 1, costOf: () => 0.5 }), [2, {
        _tag: "MaxCost",
        limit: 1,
        used: 1
      }])
      // Several reached at once: the first in the order of RunLimits' fields.
      assert.deepStrictEqual(yield* run({ maxCost: 0.25, maxTurns: 1 }), [1, { _tag: "MaxTurns", limit: 1, used: 1 }])
    }))

  it.effect("AL 5.1 maxDuration: wall time since the run started, read before each model call", () =>
    Effect.gen(function*() {
      const slow = forever({ delay: "400 millis" })
      const fiber = yield* Effect.forkChild(runLoop({
        script: slow,
        scriptOptions: repeat,
        config: { limits: { maxDuration: "1 second" } }
      }))
      // The response streams its chunks 400 ms apart, so it ends after the limit: the check before the next
      // model call stops the run, and says how long it had been running (the TestClock starts at 0).
      for (let i = 0; i < 200 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust("100 millis")
      const { events, messages, requests } = yield* Fiber.join(fiber)
      assert.strictEqual(requests.length, 1)
      const note = messages.at(-1) as AssistantMessage
      assert.isAbove(note.timestamp, 1000)
      assert.deepStrictEqual(endOf(events).limitReached, { _tag: "MaxDuration", limit: 1000, used: note.timestamp })
      assertNote(messages, endOf(events).limitReached!)
    }))

  it.effect("AL 5.1 maxRepeatedFailures: the same tool, arguments (in any key order) and error that many times", () =>
    Effect.gen(function*() {
      let n = 0
      // The model calls `fail` with the same arguments, written with their keys in turn in either order, and
      // once in between with other arguments (which do not count with them).
      const flaky = (): ScriptedModel.Reply => {
        n++
        const args = n === 2
          ? { text: "other", extra: 1 }
          : n % 2 === 0
          ? { text: "x", extra: 1 }
          : { extra: 1, text: "x" }
        return callTools([call(`f${n}`, "flaky", args)])
      }
      const { events, messages, requests } = yield* runLoop({
        script: [flaky, flaky, flaky, flaky, flaky, flaky],
        tools: [
          ...standardTools,
          customTool(
            "flaky",
            () => Effect.fail(new Error("boom")),
            Schema.Struct({ text: Schema.String, extra: Schema.Number })
          )
        ],
        config: { limits: { maxRepeatedFailures: 3 } }
      })
      const reason = { _tag: "RepeatedFailure", limit: 3, used: 3, toolName: "flaky", error: "boom" } as const
      assert.deepStrictEqual(endOf(events).limitReached, reason)
      assert.strictEqual(requests.length, 4, "the first, third and fourth calls failed alike")
      assertNote(messages, reason)
    }))

  it.effect("AL 5.1 counting never ends a run: no usage, no cost, a costOf that throws", () =>
    Effect.gen(function*() {
      // A provider that reports no cost, then one that reports no usage at all.
      const noCost = { ...emptyUsage, cost: undefined } as unknown as Usage
      const noUsage = undefined as unknown as Usage
      for (const reported of [noCost, noUsage]) {
        const { events, messages, requests } = yield* runLoop({
          script: forever({ usage: reported }),
          scriptOptions: repeat,
          config: { limits: { maxCost: 1, maxInputTokens: 1, maxTurns: 3 } }
        })
        assert.strictEqual(requests.length, 3)
        assert.deepStrictEqual(endOf(events).limitReached, { _tag: "MaxTurns", limit: 3, used: 3 })
        assertRunInvariants(events, messages)
      }
      // A price list that throws: logged, the response costs nothing, every call still gets its result.
      const { events, messages, requests } = yield* runLoop({
        script: forever(),
        scriptOptions: repeat,
        config: {
          limits: {
            maxTurns: 2,
            maxCost: 1,
            costOf: () => {
              throw new Error("no price for this model")
            }
          }
        }
      })
      assert.strictEqual(requests.length, 2)
      assert.deepStrictEqual(endOf(events).limitReached, { _tag: "MaxTurns", limit: 2, used: 2 })
      assert.strictEqual(toolResults(messages).length, 2)
      assertRunInvariants(events, messages)
    }))

  it.effect("AL 5.1 arguments JSON cannot write still count as repeats: a bigint, a cycle", () =>
    Effect.gen(function*() {
      const cyclic: Record<string, unknown> = { text: "x" }
      cyclic.self = cyclic
      for (const args of [{ n: 10n }, cyclic]) {
        // A model of the caller's (a provider's JSON never holds these): each response one call of `flaky`.
        const requests: Array<ModelRequest> = []
        const model = {
          info: { api: "custom", provider: "custom", model: "custom" },
          stream: (request: ModelRequest) => {
            requests.push(request)
            const message: AssistantMessage = {
              ...FINAL_SHAPE,
              content: [{ type: "toolCall", id: `f${requests.length}`, name: "flaky", arguments: args }],
              stopReason: "toolUse"
            }
            return Stream.succeed({ type: "done" as const, reason: "toolUse" as const, message })
          },
          requests: Effect.sync(() => requests)
        }
        const { events, messages } = yield* runLoop({
          script: [],
          model,
          tools: [...standardTools, customTool("flaky", () => Effect.fail(new Error("boom")), Schema.Unknown)],
          config: { limits: { maxRepeatedFailures: 3, maxTurns: 10 } }
        })
        assert.strictEqual(requests.length, 3)
        assert.strictEqual(endOf(events).limitReached?._tag, "RepeatedFailure")
        assertRunInvariants(events, messages)
      }
    }))

  it.effect("AL 5.2 a limit reached while a batch runs: the batch ends whole, then the run stops", () =>
    Effect.gen(function*() {
      // The clock passes the limit while the tools run: both calls still run to their results.
      const slowAdd = customTool("slow", () => Effect.as(Effect.sleep("2 seconds"), { content: [], details: {} }))
      const fiber = yield* Effect.forkChild(runLoop({
        script: [callTools([call("s1", "slow"), call("s2", "slow")])],
        scriptOptions: repeat,
        tools: [slowAdd],
        config: { limits: { maxDuration: "1 second" } }
      }))
      for (let i = 0; i < 100 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust("100 millis")
      const { events, messages, requests } = yield* Fiber.join(fiber)
      assert.strictEqual(requests.length, 1)
      assert.deepStrictEqual(toolResults(messages).map((r) => [r.toolCallId, r.isError]), [["s1", false], [
        "s2",
        false
      ]])
      assert.strictEqual(endOf(events).limitReached?._tag, "MaxDuration")
      assertWellFormed(messages)
    }))

  it.effect("AL 5.3 steering queued for the stopped turn is kept before the note; follow-ups are not read", () =>
    Effect.gen(function*() {
      let steeringPolls = 0
      let followUpPolls = 0
      const config: AgentLoopConfig = {
        limits: { maxTurns: 1 },
        // Read before the first turn, then after it: the second read brings a message for the next turn.
        getSteeringMessages: Effect.sync(() => (++steeringPolls === 2 ? [user("also this")] : [])),
        getFollowUpMessages: Effect.sync(() => {
          followUpPolls++
          return [user("later")]
        })
      }
      const { messages, requests } = yield* runLoop({ script: forever(), scriptOptions: repeat, config })
      assert.strictEqual(requests.length, 1)
      assert.strictEqual(followUpPolls, 0)
      const tail = messages.slice(-2)
      assert.strictEqual(textOf(tail[0]!), "also this")
      assert.strictEqual((tail[1] as AssistantMessage).stopReason, "stop")
    }))

  it.effect("AL 5.2 a limit of 0 stops before the first model call; no limits, no note and no reason", () =>
    Effect.gen(function*() {
      const stopped = yield* runLoop({ script: [say("hi")], config: { limits: { maxTurns: 0 } } })
      assert.strictEqual(stopped.requests.length, 0)
      assert.deepStrictEqual(endOf(stopped.events).limitReached, { _tag: "MaxTurns", limit: 0, used: 0 })
      assert.deepStrictEqual(stopped.messages.map((m) => m.role), ["user", "assistant"])
      const free = yield* runLoop({ script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")] })
      assert.isFalse("limitReached" in endOf(free.events))
      assert.strictEqual(textOf(free.messages.at(-1)!), "3")
    }))

  it.effect("AL 5.6 limits that are wrong: no model call, an error naming the field, no limitReached", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [RunLimits.RunLimits, string]> = [
        [{ maxTurns: -1 }, "maxTurns must be a number of at least 0, not -1"],
        [{ maxCost: Number.NaN }, "maxCost must be a number of at least 0, not NaN"],
        [{ maxDuration: "5 minutez" as Duration.Input }, "maxDuration must be a duration of at least 0"],
        [{ maxDuration: Number.NaN }, "maxDuration must be a duration of at least 0"],
        [{ costOf: 3 as unknown as () => number }, "costOf must be a function, not 3"]
      ]
      for (const [limits, problem] of cases) {
        const { events, messages, requests } = yield* runLoop({ script: [say("hi")], config: { limits } })
        assert.strictEqual(requests.length, 0)
        const last = messages.at(-1) as AssistantMessage
        assert.strictEqual(last.stopReason, "error")
        assert.include(last.errorMessage, `Invalid run limits: ${problem}`)
        assert.isFalse("limitReached" in endOf(events))
        assert.deepStrictEqual(messages.map((m) => m.role), ["user", "assistant"])
        assertRunInvariants(events, messages)
      }
    }))

  it.effect("AL 5.4 the agent keeps the reason in its state until its next run; the next run's model reads the note", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([...forever(), ...forever(), say("continuing")])
      const agent = yield* Agent.make({ limits: { maxTurns: 2 } }).pipe(
        Effect.provideService(Model, model),
        Effect.provide(ToolRegistry.fromEntries(standardTools)),
        Effect.orDie
      )
      yield* agent.prompt("go")
      const stopped = yield* SubscriptionRef.get(agent.state)
      assert.deepStrictEqual(stopped.limitReached, { _tag: "MaxTurns", limit: 2, used: 2 })
      yield* agent.prompt("go on")
      const after = yield* SubscriptionRef.get(agent.state)
      assert.isUndefined(after.limitReached)
      const requests = yield* model.requests
      const last = requests.at(-1)!.messages
      assert.isTrue(
        last.some((m) =>
          m.role === "assistant" &&
          m.content.some((b) => b.type === "text" && b.text.startsWith("[The run was stopped before the task"))
        ),
        "the note is in the next request"
      )
      assert.strictEqual(assistants(after.messages).at(-1)?.stopReason, "stop")
    }))
})
