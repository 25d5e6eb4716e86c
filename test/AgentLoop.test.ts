/**
 * The agent loop, one test per rule of `docs/agent-loop.md`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { getEventListeners } from "node:events"
import type { AgentEvent } from "../src/AgentEvent.ts"
import {
  agentLoop,
  agentLoopContinue,
  CannotContinue,
  defaultConvertToLlm,
  newMessagesOf,
  runAgentLoop,
  runAgentLoopContinue
} from "../src/AgentLoop.ts"
import * as EventSink from "../src/EventSink.ts"
import type { AgentMessage, AssistantMessage, Message } from "../src/Message.ts"
import { emptyUsage } from "../src/Message.ts"
import { ModelError, type ModelRequest } from "../src/Model.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import { callTools, say } from "../src/ScriptedModel.ts"
import {
  addTool,
  assertBalanced,
  assertMessagesMatchEvents as assertMessagesMatch,
  assertOneAgentEnd,
  assertRunInvariants,
  assertWellFormed,
  assistants,
  assistantText,
  call,
  counted,
  customTool,
  deepFreeze,
  EchoParams,
  echoTool,
  labelOf,
  makeGate,
  makeRecorder,
  note,
  provideRun,
  runLoop,
  skeleton,
  standardTools,
  textOf,
  toolResults,
  user,
  within
} from "./support/loop.ts"

const SYSTEM = "You are a test."
const emptyContext = { systemPrompt: SYSTEM, messages: [] as ReadonlyArray<AgentMessage> }

/** A steering or follow-up queue the test fills; the loop drains it. */
const queue = () => {
  const items: Array<AgentMessage> = []
  let polls = 0
  return {
    items,
    polls: () => polls,
    push: (m: AgentMessage) => Effect.sync(() => void items.push(m)),
    drain: Effect.sync(() => {
      polls++
      return items.splice(0)
    })
  }
}

const textsOf = (requestMessages: ReadonlyArray<Message>) =>
  requestMessages.map((m) =>
    `${m.role}:${m.role === "assistant" ? m.stopReason : m.role === "toolResult" ? m.toolCallId : textOf(m)}`
  )

describe("AgentLoop", () => {
  // -------------------------------------------------------------------------------------------------------
  // The loop
  // -------------------------------------------------------------------------------------------------------

  it.effect("AL 2.1, 2.3, 2.5 a one-tool turn then a final answer: the exact event sequence", () =>
    Effect.gen(function*() {
      const prompt = user("what is 1+2?")
      const { events, messages, requests } = yield* runLoop({
        script: [callTools([call("c1", "add", { a: 1, b: 2 })], "Adding."), say("It is 3.")],
        prompts: [prompt]
      })
      assert.deepStrictEqual(events.map(labelOf), [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant:toolUse",
        "message_update:text_start",
        "message_update:text_delta",
        "message_update:text_end",
        "message_update:toolcall_start",
        "message_update:toolcall_delta",
        "message_update:toolcall_delta",
        "message_update:toolcall_end",
        "message_end:assistant:toolUse",
        "tool_execution_start:c1",
        "tool_execution_end:c1",
        "message_start:toolResult:c1",
        "message_end:toolResult:c1",
        "turn_end:assistant:toolUse[c1]",
        "turn_start",
        "message_start:assistant:stop",
        "message_update:text_start",
        "message_update:text_delta",
        "message_update:text_end",
        "message_end:assistant:stop",
        "turn_end:assistant:stop[]",
        "agent_end"
      ])
      assertRunInvariants(events, messages)
      assert.deepStrictEqual(messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"])
      assert.strictEqual(messages[0], prompt, "the prompt is the first new message, as given")
      const result = toolResults(messages)[0]!
      assert.strictEqual(textOf(result), "3")
      assert.isFalse(result.isError)
      assert.deepStrictEqual(result.details, { sum: 3 })
      assert.strictEqual(textOf(messages[3]), "It is 3.")
      // turn_end carries the turn's assistant message and its results
      const turnEnds = events.filter((e) => e.type === "turn_end")
      assert.strictEqual(turnEnds[0]!.message, messages[1])
      assert.deepStrictEqual(turnEnds[0]!.toolResults, [result])
      // the second model call sees the tool result
      assert.strictEqual(requests.length, 2)
      assert.deepStrictEqual(textsOf(requests[1]!.messages), [
        "user:what is 1+2?",
        "assistant:toolUse",
        "toolResult:c1"
      ])
      // message_update carries the model's streaming event and the partial message
      const update = events.find((e) => e.type === "message_update")!
      assert.strictEqual(update.type, "message_update")
      if (update.type === "message_update") {
        assert.strictEqual(update.assistantMessageEvent.type, "text_start")
        assert.strictEqual(update.message.role, "assistant")
      }
    }))

  it.effect("AL 2.6 shouldStopAfterTurn returning true ends the run after that turn's turn_end", () =>
    Effect.gen(function*() {
      const seen: Array<{ message: AssistantMessage; results: number; newMessages: number; context: number }> = []
      const steering = queue()
      yield* steering.push(user("steer me"))
      const followUps = queue()
      yield* followUps.push(user("follow up"))
      const { events, messages, requests } = yield* runLoop({
        script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("never")],
        config: {
          shouldStopAfterTurn: (ctx) =>
            Effect.sync(() => {
              seen.push({
                message: ctx.message,
                results: ctx.toolResults.length,
                newMessages: ctx.newMessages.length,
                context: ctx.context.messages.length
              })
              return true
            }),
          getSteeringMessages: Effect.suspend(() => steering.polls() === 0 ? Effect.succeed([]) : steering.drain),
          getFollowUpMessages: followUps.drain
        }
      })
      assert.deepStrictEqual(skeleton(events), [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant:toolUse",
        "message_end:assistant:toolUse",
        "tool_execution_start:c1",
        "tool_execution_end:c1",
        "message_start:toolResult:c1",
        "message_end:toolResult:c1",
        "turn_end:assistant:toolUse[c1]",
        "agent_end"
      ])
      assertRunInvariants(events, messages)
      assert.strictEqual(requests.length, 1, "no model call after the stop")
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(seen[0]!.message, messages[1])
      assert.deepStrictEqual([seen[0]!.results, seen[0]!.newMessages, seen[0]!.context], [1, 3, 3])
      assert.strictEqual(followUps.polls(), 0, "follow-ups are not read after a stop")
      assert.strictEqual(followUps.items.length, 1)
      assert.strictEqual(steering.items.length, 1, "steering is not read after a stop")
    }))

  it.effect("AL 2.6 a failing shouldStopAfterTurn stops the run (stopping is the safe choice)", () =>
    Effect.gen(function*() {
      const { events, messages, requests } = yield* runLoop({
        script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("never")],
        config: { shouldStopAfterTurn: () => Effect.fail(new Error("hook broke")) }
      })
      assertRunInvariants(events, messages)
      assert.strictEqual(requests.length, 1)
    }))

  it.effect("AL 2.6 steering is delivered only after the whole batch and its turn_end; no tool call is skipped", () =>
    Effect.gen(function*() {
      const gate = makeGate()
      const add = counted(addTool)
      const steering = queue()
      const recorder = makeRecorder()
      const fiber = yield* runLoop({
        script: [
          callTools([call("g", "gate"), call("c2", "add", { a: 2, b: 2 })]),
          say("after steering")
        ],
        tools: [gate.tool, add.tool, echoTool],
        config: { getSteeringMessages: steering.drain },
        recorder
      }).pipe(Effect.forkChild)
      yield* within(Deferred.await(gate.started), "the gated tool starts")
      yield* within(recorder.reached("tool_execution_end:c2"), "the other call ends")
      yield* steering.push(user("change of plan"))
      yield* Deferred.succeed(gate.open, undefined)
      const { events, messages, requests } = yield* within(Fiber.join(fiber), "the run ends")
      assert.deepStrictEqual(skeleton(events), [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant:toolUse",
        "message_end:assistant:toolUse",
        "tool_execution_start:g",
        "tool_execution_start:c2",
        "tool_execution_end:c2",
        "tool_execution_end:g",
        "message_start:toolResult:g",
        "message_end:toolResult:g",
        "message_start:toolResult:c2",
        "message_end:toolResult:c2",
        "turn_end:assistant:toolUse[g,c2]",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant:stop",
        "message_end:assistant:stop",
        "turn_end:assistant:stop[]",
        "agent_end"
      ])
      assertRunInvariants(events, messages)
      assert.strictEqual(add.count(), 1, "the other call of the batch ran")
      assert.deepStrictEqual(toolResults(messages).map((r) => [textOf(r), r.isError]), [["done", false], ["4", false]])
      assert.deepStrictEqual(textsOf(requests[1]!.messages), [
        "user:hi",
        "assistant:toolUse",
        "toolResult:g",
        "toolResult:c2",
        "user:change of plan"
      ])
    }))

  it.effect("AL 2.6 steering during a sequential batch skips none of its calls", () =>
    Effect.gen(function*() {
      const gate = makeGate()
      const add = counted(addTool)
      const steering = queue()
      const fiber = yield* runLoop({
        script: [callTools([call("g", "gate"), call("c2", "add", { a: 1, b: 1 })]), say("ok")],
        tools: [gate.tool, add.tool],
        config: { toolExecution: "sequential", getSteeringMessages: steering.drain }
      }).pipe(Effect.forkChild)
      yield* within(Deferred.await(gate.started), "the gated tool starts")
      yield* steering.push(user("steer"))
      yield* Deferred.succeed(gate.open, undefined)
      const { events, messages } = yield* within(Fiber.join(fiber), "the run ends")
      assertRunInvariants(events, messages)
      assert.strictEqual(add.count(), 1, "the call after the steering point still ran")
      assert.deepStrictEqual(messages.map((m) => m.role), [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",
        "assistant"
      ])
      assert.deepStrictEqual(toolResults(messages).map((r) => r.isError), [false, false])
    }))

  it.effect("AL 2.6 steering queued by a turn_end subscriber is read right after that turn_end", () =>
    Effect.gen(function*() {
      const steering = queue()
      let queued = false
      const recorder = makeRecorder((event) => {
        if (event.type === "turn_end" && !queued) {
          queued = true
          steering.items.push(user("from turn_end"))
        }
      })
      const { events, messages, requests } = yield* runLoop({
        script: [say("first"), say("second")],
        config: { getSteeringMessages: steering.drain },
        recorder
      })
      assertRunInvariants(events, messages)
      assert.strictEqual(requests.length, 2, "a text-only answer is followed by a turn for the steering message")
      assert.deepStrictEqual(textsOf(requests[1]!.messages), ["user:hi", "assistant:stop", "user:from turn_end"])
    }))

  it.effect("AL 2.2 the initial steering poll: queued steering joins the first turn, after the prompts", () =>
    Effect.gen(function*() {
      const steering = queue()
      yield* steering.push(user("typed while waiting"))
      const { events, messages, requests } = yield* runLoop({
        script: [say("hello")],
        prompts: [user("first")],
        config: { getSteeringMessages: steering.drain }
      })
      assert.deepStrictEqual(skeleton(events), [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:user",
        "message_end:user",
        "message_start:assistant:stop",
        "message_end:assistant:stop",
        "turn_end:assistant:stop[]",
        "agent_end"
      ])
      assertRunInvariants(events, messages)
      assert.strictEqual(requests.length, 1)
      assert.deepStrictEqual(textsOf(requests[0]!.messages), ["user:first", "user:typed while waiting"])
      assert.strictEqual(steering.polls(), 2, "polled at the start and after the turn")
    }))

  it.effect("AL 2.7 follow-ups are read only when the agent would otherwise stop", () =>
    Effect.gen(function*() {
      const followUps = queue()
      yield* followUps.push(user("and then?"))
      const pollsAtRequest: Array<number> = []
      const step = (reply: ScriptedModel.Step) => (_: ModelRequest) => {
        pollsAtRequest.push(followUps.polls())
        return reply as ScriptedModel.Reply
      }
      const { events, messages, requests } = yield* runLoop({
        script: [step(callTools([call("c1", "add", { a: 1, b: 2 })])), step(say("3")), step(say("done"))],
        config: { getFollowUpMessages: followUps.drain }
      })
      assertRunInvariants(events, messages)
      assert.deepStrictEqual(pollsAtRequest, [0, 0, 1], "not polled while tool calls keep the agent busy")
      assert.strictEqual(followUps.polls(), 2)
      assert.deepStrictEqual(skeleton(events).slice(-8), [
        "turn_end:assistant:stop[]",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant:stop",
        "message_end:assistant:stop",
        "turn_end:assistant:stop[]",
        "agent_end"
      ])
      assert.deepStrictEqual(textsOf(requests[2]!.messages).slice(-2), ["assistant:stop", "user:and then?"])
      assert.deepStrictEqual(messages.map((m) => m.role), [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant"
      ])
    }))

  it.effect("AL 2.7 follow-ups queued during the run (e.g. while a tool runs) wait until the agent is idle", () =>
    Effect.gen(function*() {
      const followUps = queue()
      const steering = queue()
      const recorder = makeRecorder((event) => {
        if (event.type === "tool_execution_start") followUps.items.push(user("later"))
      })
      const { events, messages } = yield* runLoop({
        script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("3"), say("later reply")],
        config: { getFollowUpMessages: followUps.drain, getSteeringMessages: steering.drain },
        recorder
      })
      assertRunInvariants(events, messages)
      // the follow-up is not injected after the batch (that is steering's place): it comes after "3"
      assert.deepStrictEqual(messages.map((m) => m.role === "user" ? `user:${textOf(m)}` : m.role), [
        "user:hi",
        "assistant",
        "toolResult",
        "assistant",
        "user:later",
        "assistant"
      ])
      assert.strictEqual(textOf(messages[3]), "3")
    }))

  describe("AL 2.8 a terminating batch", () => {
    it.effect("AL 2.8 without queued messages ends the run", () =>
      Effect.gen(function*() {
        const followUps = queue()
        const { events, messages, requests } = yield* runLoop({
          script: [callTools([call("s1", "stop", { text: "bye" })]), say("never")],
          config: { getFollowUpMessages: followUps.drain }
        })
        assertRunInvariants(events, messages)
        assert.strictEqual(requests.length, 1)
        assert.deepStrictEqual(skeleton(events).slice(-2), ["turn_end:assistant:toolUse[s1]", "agent_end"])
        assert.strictEqual(followUps.polls(), 1, "follow-ups are still read when the batch terminates")
      }))

    it.effect("AL 2.8 followed by queued steering still starts a new turn", () =>
      Effect.gen(function*() {
        const steering = queue()
        const recorder = makeRecorder((event) => {
          if (event.type === "tool_execution_start") steering.items.push(user("one more thing"))
        })
        const { events, messages, requests } = yield* runLoop({
          script: [callTools([call("s1", "stop", { text: "bye" })]), say("sure")],
          config: { getSteeringMessages: steering.drain },
          recorder
        })
        assertRunInvariants(events, messages)
        assert.strictEqual(requests.length, 2)
        assert.deepStrictEqual(skeleton(events).slice(-8), [
          "turn_end:assistant:toolUse[s1]",
          "turn_start",
          "message_start:user",
          "message_end:user",
          "message_start:assistant:stop",
          "message_end:assistant:stop",
          "turn_end:assistant:stop[]",
          "agent_end"
        ])
      }))

    it.effect("AL 2.8 followed by a queued follow-up still starts a new turn", () =>
      Effect.gen(function*() {
        const followUps = queue()
        yield* followUps.push(user("next"))
        const { events, messages, requests } = yield* runLoop({
          script: [callTools([call("s1", "stop", { text: "bye" })]), say("next reply")],
          config: { getFollowUpMessages: followUps.drain }
        })
        assertRunInvariants(events, messages)
        assert.strictEqual(requests.length, 2)
        assert.strictEqual(textOf(messages.at(-1)), "next reply")
      }))

    it.effect("AL 2.8 / TE 7 only when every result terminates", () =>
      Effect.gen(function*() {
        const { events, messages, requests } = yield* runLoop({
          script: [callTools([call("s1", "stop", { text: "bye" }), call("c2", "add", { a: 1, b: 1 })]), say("go on")]
        })
        assertRunInvariants(events, messages)
        assert.strictEqual(requests.length, 2, "a mixed batch does not terminate")
      }))
  })

  it.effect("AL 2.10 a `length` stop: tool calls are not executed, each gets the error result, the loop goes on", () =>
    Effect.gen(function*() {
      const add = counted(addTool)
      const { events, messages, requests } = yield* runLoop({
        script: [
          { ...callTools([call("c1", "add", { a: 1, b: 2 }), call("c2", "add", { a: 3 })]), stopReason: "length" },
          callTools([call("c3", "add", { a: 1, b: 2 })]),
          say("3")
        ],
        tools: [add.tool, echoTool]
      })
      assertRunInvariants(events, messages)
      assert.strictEqual(add.count(), 1, "only the retried call ran")
      const [r1, r2, r3] = toolResults(messages)
      for (const r of [r1!, r2!]) {
        assert.isTrue(r.isError)
        assert.match(textOf(r), /not executed/i)
        assert.match(textOf(r), /token limit/i)
        assert.match(textOf(r), /truncated/i)
      }
      assert.deepStrictEqual([r1!.toolCallId, r2!.toolCallId], ["c1", "c2"])
      assert.strictEqual(textOf(r3), "3")
      assert.strictEqual(assistants(messages)[0]!.stopReason, "length")
      assert.strictEqual(requests.length, 3, "the loop goes on after a length stop")
      assert.deepStrictEqual(textsOf(requests[1]!.messages), [
        "user:hi",
        "assistant:length",
        "toolResult:c1",
        "toolResult:c2"
      ])
      // the results are announced like any tool results
      assert.includeMembers(skeleton(events), [
        "tool_execution_start:c1",
        "tool_execution_end:c2",
        "turn_end:assistant:length[c1,c2]"
      ])
    }))

  it.effect("AL 2.10 a `length` stop without tool calls ends the run", () =>
    Effect.gen(function*() {
      const { events, messages, requests } = yield* runLoop({
        script: [say("cut off", { stopReason: "length" }), say("never")]
      })
      assertRunInvariants(events, messages)
      assert.strictEqual(requests.length, 1)
    }))

  it.effect("AL 2.9 `toolUse` without tool calls ends the run normally", () =>
    Effect.gen(function*() {
      const { events, messages, requests } = yield* runLoop({
        script: [say("I would use a tool", { stopReason: "toolUse" }), say("never")]
      })
      assertRunInvariants(events, messages)
      assert.strictEqual(requests.length, 1)
      const last = assistants(messages)[0]!
      assert.strictEqual(last.stopReason, "toolUse")
      assert.isUndefined(last.errorMessage)
      assert.deepStrictEqual(skeleton(events).slice(-2), ["turn_end:assistant:toolUse[]", "agent_end"])
    }))

  it.effect("AL 2.3 multi-turn: several tool turns in a row, then the answer", () =>
    Effect.gen(function*() {
      const { events, messages, requests } = yield* runLoop({
        script: [
          callTools([call("c1", "add", { a: 1, b: 2 })]),
          callTools([call("c2", "echo", { text: "x" }), call("c3", "fail", { text: "y" })]),
          callTools([call("c4", "nope", {})]),
          say("done")
        ]
      })
      assertRunInvariants(events, messages)
      assert.strictEqual(requests.length, 4)
      assert.deepStrictEqual(toolResults(messages).map((r) => [r.toolCallId, r.isError, textOf(r)]), [
        ["c1", false, "3"],
        ["c2", false, "x"],
        ["c3", true, "boom: y"],
        ["c4", true, "Tool nope not found"]
      ])
      assert.strictEqual(events.filter((e) => e.type === "turn_start").length, 4)
    }))

  // -------------------------------------------------------------------------------------------------------
  // Failures
  // -------------------------------------------------------------------------------------------------------

  describe("AL 3.2 model failure", () => {
    const expectErrorEnd = (
      events: ReadonlyArray<AgentEvent>,
      messages: ReadonlyArray<AgentMessage>,
      errorMessage: string
    ) => {
      assertRunInvariants(events, messages)
      const last = messages.at(-1)
      assert.isTrue(last?.role === "assistant")
      const assistant = last as AssistantMessage
      assert.strictEqual(assistant.stopReason, "error")
      assert.strictEqual(assistant.errorMessage, errorMessage)
      assert.deepStrictEqual(skeleton(events).slice(-4).map((l) => l.replace(/:assistant:\w+/, ":assistant")), [
        "message_start:assistant",
        "message_end:assistant",
        "turn_end:assistant[]",
        "agent_end"
      ])
      assert.deepStrictEqual(skeleton(events).slice(-3), [
        "message_end:assistant:error",
        "turn_end:assistant:error[]",
        "agent_end"
      ])
    }

    it.effect("AL 3.2 typed failure (`fail`, as: \"error\") ends the turn with an error message; no further model call", () =>
      Effect.gen(function*() {
        const { events, messages, requests } = yield* runLoop({
          script: [{ fail: "rate limited", as: "error" }, say("never")]
        })
        expectErrorEnd(events, messages, "rate limited")
        assert.strictEqual(requests.length, 1)
      }))

    it.effect("AL 3.2 typed failure after streamed text keeps the partial content", () =>
      Effect.gen(function*() {
        const { events, messages, requests } = yield* runLoop({
          script: [callTools([call("c1", "add", { a: 1, b: 2 })]), {
            fail: "connection reset",
            as: "error",
            content: [{ type: "text", text: "partial answ" }]
          }, say("never")]
        })
        expectErrorEnd(events, messages, "connection reset")
        assert.strictEqual(textOf(messages.at(-1)), "partial answ")
        assert.strictEqual(requests.length, 2)
      }))

    it.effect("AL 3.2 an `error` event ends the turn with the model's error message; no further model call", () =>
      Effect.gen(function*() {
        const { events, messages, requests } = yield* runLoop({
          script: [{ fail: "overloaded", as: "event", content: [{ type: "text", text: "so" }] }, say("never")]
        })
        expectErrorEnd(events, messages, "overloaded")
        assert.strictEqual(requests.length, 1)
      }))

    it.effect("AL 3.3 an error message holding tool calls: they are not executed but each gets a result", () =>
      Effect.gen(function*() {
        const add = counted(addTool)
        const { events, messages, requests } = yield* runLoop({
          script: [{ fail: "broke mid-call", as: "event", content: [call("c1", "add", { a: 1, b: 2 })] }, say("never")],
          tools: [add.tool]
        })
        assertRunInvariants(events, messages)
        assert.strictEqual(add.count(), 0)
        assert.strictEqual(requests.length, 1)
        const [result] = toolResults(messages)
        assert.isTrue(result!.isError)
        assert.match(textOf(result), /not executed/i)
        assert.strictEqual(assistants(messages)[0]!.stopReason, "error")
        assert.deepStrictEqual(skeleton(events).slice(-2), ["turn_end:assistant:error[c1]", "agent_end"])
      }))

    it.effect("AL 3.2 a script that runs out is a model failure, not a hang", () =>
      Effect.gen(function*() {
        const { events, messages } = yield* runLoop({ script: [callTools([call("c1", "add", { a: 1, b: 2 })])] })
        assertRunInvariants(events, messages)
        assert.strictEqual(assistants(messages).at(-1)!.stopReason, "error")
        assert.match(assistants(messages).at(-1)!.errorMessage!, /script/)
      }))

    it.effect("AL 3.2 a transformContext failure ends the turn with an error message; the model is not called", () =>
      Effect.gen(function*() {
        const { events, messages, requests } = yield* runLoop({
          script: [say("never")],
          config: { transformContext: () => Effect.fail(new Error("pruning failed")) }
        })
        expectErrorEnd(events, messages, "pruning failed")
        assert.strictEqual(requests.length, 0)
      }))

    it.effect("AL 3.2 a convertToLlm failure ends the turn with an error message; the model is not called", () =>
      Effect.gen(function*() {
        const { events, messages, requests } = yield* runLoop({
          script: [say("never")],
          config: { convertToLlm: () => Effect.fail({ message: "cannot convert" }) }
        })
        expectErrorEnd(events, messages, "cannot convert")
        assert.strictEqual(requests.length, 0)
      }))

    it.effect("AL 3.2 a throwing convertToLlm (a defect) is contained the same way", () =>
      Effect.gen(function*() {
        const { events, messages, requests } = yield* runLoop({
          script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("never")],
          config: {
            convertToLlm: (ms) =>
              Effect.sync(() => {
                if (ms.length > 1) throw new Error("converter bug")
                return defaultConvertToLlm(ms)
              })
          }
        })
        expectErrorEnd(events, messages, "converter bug")
        assert.strictEqual(requests.length, 1)
      }))
    it.effect("AL 3.2 a model stream that ends without `done` or `error` gives an error message, not a hang", () =>
      Effect.gen(function*() {
        const partial = assistantText("half")
        const model = {
          info: { api: "x", provider: "x", model: "x" },
          stream: () => Stream.make({ type: "start" as const, partial })
        }
        const recorder = makeRecorder()
        const messages = yield* provideRun(runAgentLoop([user("hi")], emptyContext), model, [], recorder.sink)
        expectErrorEnd(recorder.events, messages, "The model stream ended without a final message")
      }))

    it.effect("AL 3.2 a model stream that dies (a defect) gives an error message", () =>
      Effect.gen(function*() {
        const model = {
          info: { api: "x", provider: "x", model: "x" },
          stream: () => Stream.die(new Error("provider bug"))
        }
        const recorder = makeRecorder()
        const messages = yield* provideRun(runAgentLoop([user("hi")], emptyContext), model, [], recorder.sink)
        expectErrorEnd(recorder.events, messages, "provider bug")
      }))
  })

  describe("AL 3.1 hooks that die", () => {
    it.effect("AL 3.1 a defect in getSteeringMessages still ends the event stream with agent_end", () =>
      Effect.gen(function*() {
        let polls = 0
        const { events, messages } = yield* runLoop({
          script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")],
          config: {
            getSteeringMessages: Effect.sync(() => {
              if (++polls > 1) throw new Error("steering queue broke")
              return []
            })
          }
        })
        assertOneAgentEnd(events)
        assertBalanced(events)
        assertWellFormed(messages)
        assertMessagesMatch(events, messages)
      }))

    it.effect("AL 3.1 a defect in getFollowUpMessages still ends the event stream with agent_end", () =>
      Effect.gen(function*() {
        const { events, messages } = yield* runLoop({
          script: [say("hello")],
          config: { getFollowUpMessages: Effect.die(new Error("follow-up queue broke")) }
        })
        assertOneAgentEnd(events)
        assertBalanced(events)
        assertMessagesMatch(events, messages)
      }))
  })

  it.effect("AL 3.4 abort while transformContext is still working: `aborted` message, the model is not called", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const entered = Deferred.makeUnsafe<void>()
      const fiber = yield* runLoop({
        script: [say("never")],
        config: {
          signal: controller.signal,
          transformContext: () => Deferred.succeed(entered, undefined).pipe(Effect.andThen(Effect.never))
        }
      }).pipe(Effect.forkChild)
      yield* within(Deferred.await(entered), "transformContext runs")
      controller.abort()
      const { events, messages, requests } = yield* within(Fiber.join(fiber), "the run ends")
      assertRunInvariants(events, messages)
      assert.strictEqual(assistants(messages)[0]!.stopReason, "aborted")
      assert.strictEqual(requests.length, 0)
    }))

  // -------------------------------------------------------------------------------------------------------
  // The model request
  // -------------------------------------------------------------------------------------------------------

  it.effect("AL 2.4 transformContext runs before convertToLlm; the model gets the system prompt, converted messages and tool schemas", () =>
    Effect.gen(function*() {
      const order: Array<string> = []
      let transformedOutput: ReadonlyArray<AgentMessage> | undefined
      let convertInput: ReadonlyArray<AgentMessage> | undefined
      let convertedOutput: ReadonlyArray<Message> | undefined
      const { events, messages, requests } = yield* runLoop({
        script: [say("ok")],
        prompts: [user("keep"), user("drop me")],
        context: { systemPrompt: "Be brief.", messages: [user("old")] },
        config: {
          transformContext: (ms) =>
            Effect.sync(() => {
              order.push("transform")
              transformedOutput = ms.filter((m) => !(m.role === "user" && textOf(m) === "drop me"))
              return transformedOutput
            }),
          convertToLlm: (ms) =>
            Effect.sync(() => {
              order.push("convert")
              convertInput = ms
              convertedOutput = [user("injected"), ...defaultConvertToLlm(ms)]
              return convertedOutput
            }),
          modelOptions: { temperature: 0.5, maxTokens: 100 }
        },
        tools: [addTool, echoTool]
      })
      assertRunInvariants(events, messages)
      assert.deepStrictEqual(order, ["transform", "convert"])
      assert.strictEqual(convertInput, transformedOutput, "convertToLlm receives transformContext's output")
      const request = requests[0]!
      assert.strictEqual(request.systemPrompt, "Be brief.")
      assert.strictEqual(request.messages, convertedOutput, "the model gets the converted messages")
      assert.deepStrictEqual(textsOf(request.messages), ["user:injected", "user:old", "user:keep"])
      assert.deepStrictEqual(request.options, { temperature: 0.5, maxTokens: 100 })
      assert.deepStrictEqual(request.tools.map((t) => [t.name, t.description]), [
        ["add", "Adds two numbers"],
        ["echo", "Echoes its text"]
      ])
      // The tools' JSON Schemas are Effect's, except that numbers are only ever "number" for models
      // (Effect's JSON codec also admits the strings "NaN" and "Infinity").
      assert.deepStrictEqual(request.tools[0]!.parameters, {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
        additionalProperties: true
      })
      assert.deepStrictEqual(request.tools[1]!.parameters, Schema.toJsonSchemaDocument(EchoParams).schema)
      const add = request.tools[0]!.parameters as {
        type?: string
        properties?: Record<string, { type?: string }>
        required?: Array<string>
      }
      assert.strictEqual(add.type, "object")
      assert.deepStrictEqual(Object.keys(add.properties ?? {}).sort(), ["a", "b"])
      assert.include(JSON.stringify(add.properties!.a), "\"type\":\"number\"")
      assert.deepStrictEqual([...(add.required ?? [])].sort(), ["a", "b"])
      // the transform does not rewrite the transcript itself
      assert.deepStrictEqual(messages.map((m) => textOf(m)), ["keep", "drop me", "ok"])
    }))

  it.effect("AL 2.4 transformContext and convertToLlm run before every model call", () =>
    Effect.gen(function*() {
      let transforms = 0
      let converts = 0
      const { requests } = yield* runLoop({
        script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")],
        config: {
          transformContext: (ms) => Effect.sync(() => (transforms++, ms)),
          convertToLlm: (ms) => Effect.sync(() => (converts++, defaultConvertToLlm(ms)))
        }
      })
      assert.strictEqual(requests.length, 2)
      assert.deepStrictEqual([transforms, converts], [2, 2])
    }))

  describe("AL 1.2 application message kinds", () => {
    it.effect("AL 1.2 are filtered out by the default convertToLlm but stay in the transcript", () =>
      Effect.gen(function*() {
        const { events, messages, requests } = yield* runLoop({
          script: [say("ok")],
          context: { systemPrompt: SYSTEM, messages: [note("from before"), user("earlier")] },
          prompts: [note("a notification"), user("question")]
        })
        assertOneAgentEnd(events)
        assertBalanced(events)
        assert.deepStrictEqual(textsOf(requests[0]!.messages), ["user:earlier", "user:question"])
        assert.deepStrictEqual(messages.map((m) => m.role), ["note", "user", "assistant"])
        assert.deepStrictEqual(skeleton(events).slice(2, 6), [
          "message_start:note",
          "message_end:note",
          "message_start:user",
          "message_end:user"
        ])
      }))

    it.effect("AL 1.2 can be converted by a custom convertToLlm", () =>
      Effect.gen(function*() {
        const { requests } = yield* runLoop({
          script: [say("ok")],
          prompts: [note("the build failed"), user("why?")],
          config: {
            convertToLlm: (ms) =>
              Effect.succeed(ms.flatMap((m): Array<Message> =>
                m.role === "note"
                  ? [user(`[note] ${(m as unknown as { note: string }).note}`)]
                  : defaultConvertToLlm([m]) as Array<Message>
              ))
          }
        })
        assert.deepStrictEqual(textsOf(requests[0]!.messages), ["user:[note] the build failed", "user:why?"])
      }))
  })

  // -------------------------------------------------------------------------------------------------------
  // Abort and interruption
  // -------------------------------------------------------------------------------------------------------

  it.effect("AL 3.4 abort while streaming: the message ends `aborted`, its tool calls get \"not started\" results, no further model call", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const add = counted(addTool)
      const recorder = makeRecorder()
      const fiber = yield* runLoop({
        script: [
          {
            ...callTools([call("c1", "add", { a: 1, b: 2 }), call("c2", "echo", { text: "x" })], "Let me see"),
            delay: "100 millis"
          },
          say("never")
        ],
        tools: [add.tool, echoTool],
        config: { signal: controller.signal },
        recorder
      }).pipe(Effect.forkChild)
      // advance virtual time one event at a time until the first tool call is complete
      let steps = 0
      while (!recorder.labels().includes("message_update:toolcall_end") && steps < 100) {
        yield* TestClock.adjust("100 millis")
        steps++
      }
      yield* within(recorder.reached("message_update:toolcall_end"), "first tool call streamed")
      assert.isFalse(recorder.labels().includes("message_end:assistant:toolUse"), "still streaming")
      controller.abort()
      const { events, messages, requests } = yield* within(Fiber.join(fiber), "the run ends")
      assertRunInvariants(events, messages)
      const assistant = assistants(messages)[0]!
      assert.strictEqual(assistant.stopReason, "aborted")
      assert.isString(assistant.errorMessage)
      assert.strictEqual(textOf(assistant), "Let me see", "the partial content is kept")
      assert.deepStrictEqual(
        assistant.content.filter((b) => b.type === "toolCall").map((b) => (b as { id: string }).id),
        ["c1"]
      )
      assert.strictEqual(add.count(), 0, "the call was not executed")
      const [result] = toolResults(messages)
      assert.strictEqual(toolResults(messages).length, 1)
      assert.strictEqual(result!.toolCallId, "c1")
      assert.isTrue(result!.isError)
      assert.match(textOf(result), /not executed/)
      assert.match(textOf(result), /before it started/)
      assert.strictEqual(requests.length, 1)
      assert.deepStrictEqual(skeleton(events).slice(-7), [
        "message_end:assistant:aborted",
        "tool_execution_start:c1",
        "tool_execution_end:c1",
        "message_start:toolResult:c1",
        "message_end:toolResult:c1",
        "turn_end:assistant:aborted[c1]",
        "agent_end"
      ])
    }))

  it.effect("AL 3.4 abort signalled by a subscriber while the response streams (events arriving without pause) ends it `aborted`", () =>
    Effect.gen(function*() {
      // The stream has no delay: its events are all available at once, as when a provider delivers several
      // events in one network chunk. The abort happens at the first tool call's toolcall_end update, before
      // message_end, so the response must end `aborted` like a paced one does.
      const controller = new AbortController()
      const add = counted(addTool)
      const { events, messages, requests } = yield* runLoop({
        script: [
          callTools([call("c1", "add", { a: 1, b: 2 }), call("c2", "add", { a: 3, b: 4 })], "Let me see"),
          say("never")
        ],
        tools: [add.tool],
        config: { signal: controller.signal },
        recorder: makeRecorder((event) => {
          if (event.type === "message_update" && event.assistantMessageEvent.type === "toolcall_end") controller.abort()
        })
      })
      assertRunInvariants(events, messages)
      assert.strictEqual(add.count(), 0)
      assert.strictEqual(requests.length, 1)
      const updatesAfterAbort = events.filter((e) => e.type === "message_update").map((e) =>
        e.type === "message_update" ? e.assistantMessageEvent.type : ""
      )
      assert.strictEqual(
        assistants(messages)[0]!.stopReason,
        "aborted",
        `the response ends aborted (updates seen: ${updatesAfterAbort.join(",")})`
      )
    }))

  it.effect("AL 3.4 abort while streaming text only: `aborted` message, then agent_end", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const recorder = makeRecorder((event) => {
        if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") controller.abort()
      })
      const fiber = yield* runLoop({
        script: [{ ...say("a long answer that streams slowly"), delay: "1 second" }, say("never")],
        config: { signal: controller.signal },
        recorder,
        scriptOptions: { chunkSize: 4 }
      }).pipe(Effect.forkChild)
      yield* TestClock.adjust("3 seconds")
      const { events, messages, requests } = yield* within(Fiber.join(fiber), "the run ends")
      assertRunInvariants(events, messages)
      assert.strictEqual(assistants(messages)[0]!.stopReason, "aborted")
      assert.strictEqual(textOf(messages.at(-1)), "a lo", "the content received before the abort")
      assert.strictEqual(requests.length, 1)
      assert.deepStrictEqual(skeleton(events).slice(-3), [
        "message_end:assistant:aborted",
        "turn_end:assistant:aborted[]",
        "agent_end"
      ])
    }))

  it.effect("AL 3.4 a signal aborted before the run: `aborted` message, no model call", () =>
    Effect.gen(function*() {
      const { events, messages, requests } = yield* runLoop({
        script: [say("never")],
        config: { signal: AbortSignal.abort() }
      })
      assertRunInvariants(events, messages)
      assert.strictEqual(assistants(messages)[0]!.stopReason, "aborted")
      assert.strictEqual(requests.length, 0)
    }))

  it.effect("AL 3.4 a caller's signal that outlives its runs keeps no listener of theirs, and still aborts a later run", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      for (let i = 0; i < 3; i++) {
        const { events, messages } = yield* runLoop({
          script: [say(`run ${i}`)],
          config: { signal: controller.signal }
        })
        assertRunInvariants(events, messages)
        assert.strictEqual(assistants(messages)[0]!.stopReason, "stop")
      }
      assert.strictEqual(getEventListeners(controller.signal, "abort").length, 0, "every run removed its listener")
      const gate = makeGate()
      const fiber = yield* runLoop({
        script: [callTools([call("g", "gate")]), say("never")],
        tools: [gate.tool],
        config: { signal: controller.signal }
      }).pipe(Effect.forkChild)
      yield* within(Deferred.await(gate.started), "the gated tool starts")
      controller.abort()
      const { events, messages, requests } = yield* within(Fiber.join(fiber), "the run ends")
      assertRunInvariants(events, messages)
      assert.strictEqual(requests.length, 1, "no model call after the abort")
      assert.strictEqual(getEventListeners(controller.signal, "abort").length, 0)
    }))

  it.effect("AL 3.4 / TE 8 abort during a parallel batch: the running call is interrupted, every call has its result, no further model call", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const gate = makeGate()
      const fiber = yield* runLoop({
        script: [callTools([call("c1", "add", { a: 1, b: 2 }), call("g", "gate")]), say("never")],
        tools: [addTool, gate.tool],
        config: { signal: controller.signal }
      }).pipe(Effect.forkChild)
      yield* within(Deferred.await(gate.started), "the gated tool starts")
      controller.abort()
      const { events, messages, requests } = yield* within(Fiber.join(fiber), "the run ends")
      assertRunInvariants(events, messages)
      yield* within(Deferred.await(gate.interrupted), "the tool was interrupted")
      assert.strictEqual(requests.length, 1)
      const [r1, r2] = toolResults(messages)
      assert.deepStrictEqual([r1!.toolCallId, r1!.isError, textOf(r1)], ["c1", false, "3"])
      assert.strictEqual(r2!.toolCallId, "g")
      assert.isTrue(r2!.isError)
      assert.match(textOf(r2), /interrupted after it started/)
      assert.deepStrictEqual(skeleton(events).slice(-2), ["turn_end:assistant:toolUse[c1,g]", "agent_end"])
    }))

  it.effect("AL 3.4 / TE 8 abort during a sequential batch: later calls never run and say so", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const gate = makeGate()
      const add = counted(addTool)
      const fiber = yield* runLoop({
        script: [callTools([call("g", "gate"), call("c2", "add", { a: 1, b: 2 })]), say("never")],
        tools: [add.tool, gate.tool],
        config: { signal: controller.signal, toolExecution: "sequential" }
      }).pipe(Effect.forkChild)
      yield* within(Deferred.await(gate.started), "the gated tool starts")
      controller.abort()
      const { events, messages, requests } = yield* within(Fiber.join(fiber), "the run ends")
      assertRunInvariants(events, messages)
      assert.strictEqual(add.count(), 0)
      assert.strictEqual(requests.length, 1)
      const [r1, r2] = toolResults(messages)
      assert.match(textOf(r1), /interrupted after it started/)
      assert.match(textOf(r2), /not executed/)
      assert.match(textOf(r2), /before it started/)
    }))

  it.effect("AL 3.4 a tool that aborts the run: the batch settles and the loop ends without another model call", () =>
    Effect.gen(function*() {
      const controller = new AbortController()
      const aborter = customTool(
        "abort",
        () => Effect.sync(() => controller.abort()).pipe(Effect.andThen(Effect.never))
      )
      const { events, messages, requests } = yield* runLoop({
        script: [callTools([call("x", "abort"), call("c2", "add", { a: 1, b: 2 })]), say("never")],
        tools: [aborter, addTool],
        config: { signal: controller.signal }
      }).pipe((run) => within(run, "the run ends"))
      assertRunInvariants(events, messages)
      assert.strictEqual(requests.length, 1)
      assert.match(textOf(toolResults(messages)[0]), /interrupted after it started/)
    }))

  it.effect("AL 3.4 interrupting the fiber still ends the run with agent_end (events through an EventSink)", () =>
    Effect.gen(function*() {
      const gate = makeGate()
      const model = yield* ScriptedModel.make([
        callTools([call("g", "gate"), call("c2", "add", { a: 1, b: 2 })]),
        say("never")
      ])
      const recorder = makeRecorder()
      const fiber = yield* provideRun(
        runAgentLoop([user("hi")], emptyContext),
        model,
        [gate.tool, addTool],
        recorder.sink
      ).pipe(Effect.forkChild)
      yield* within(Deferred.await(gate.started), "the gated tool starts")
      yield* within(Fiber.interrupt(fiber), "interruption completes")
      yield* within(Deferred.await(gate.interrupted), "the tool was interrupted")
      const events = recorder.events
      assertOneAgentEnd(events)
      assertBalanced(events)
      const end = events.at(-1)!
      assert.strictEqual(end.type, "agent_end")
      const messages = (end as { messages: ReadonlyArray<AgentMessage> }).messages
      assertWellFormed(messages)
      assert.deepStrictEqual(messages.map((m) => m.role), ["user", "assistant", "toolResult", "toolResult"])
      assert.match(textOf(messages[2]), /interrupted after it started/)
      assert.strictEqual((yield* model.requests).length, 1)
    }))

  it.effect("AL 3.4 interrupting the fiber while the model streams ends with an `aborted` message and agent_end", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([{ ...say("slow answer"), delay: "1 second" }])
      const recorder = makeRecorder()
      const fiber = yield* provideRun(runAgentLoop([user("hi")], emptyContext), model, [], recorder.sink).pipe(
        Effect.forkChild
      )
      yield* TestClock.adjust("1500 millis")
      yield* within(recorder.reached("message_start:assistant:stop"), "streaming started")
      yield* within(Fiber.interrupt(fiber), "interruption completes")
      assertOneAgentEnd(recorder.events)
      assertBalanced(recorder.events)
      assert.deepStrictEqual(skeleton(recorder.events).slice(-3), [
        "message_end:assistant:aborted",
        "turn_end:assistant:aborted[]",
        "agent_end"
      ])
    }))

  it.effect("AL 3.4 stopping the stream consumer interrupts the run: the tool is interrupted, no further model call", () =>
    Effect.gen(function*() {
      const gate = makeGate()
      const model = yield* ScriptedModel.make([callTools([call("g", "gate")]), say("never")])
      const seen = yield* agentLoop([user("hi")], emptyContext).pipe(
        Stream.takeUntil((e) => e.type === "tool_execution_start"),
        Stream.runCollect,
        (eff) => provideRun(eff, model, [gate.tool], makeRecorder().sink),
        (eff) => within(eff, "the consumer stops")
      )
      assert.strictEqual(seen.at(-1)!.type, "tool_execution_start")
      yield* within(Deferred.await(gate.interrupted), "the tool was interrupted")
      assert.isFalse(Deferred.isDoneUnsafe(gate.finished))
      yield* Deferred.succeed(gate.open, undefined)
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual((yield* model.requests).length, 1)
    }))

  it.effect("AL 1.3 the Stream form emits the same events and ends after agent_end", () =>
    Effect.gen(function*() {
      const script = [callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")]
      const viaSink = yield* runLoop({ script })
      const model = yield* ScriptedModel.make(script)
      const events = yield* provideRun(
        Stream.runCollect(agentLoop([user("hi")], { systemPrompt: SYSTEM, messages: [] })),
        model,
        standardTools,
        makeRecorder().sink
      )
      assert.deepStrictEqual(events.map(labelOf), viaSink.events.map(labelOf))
      assert.strictEqual(events.at(-1)!.type, "agent_end")
      const newMessages = newMessagesOf(events)
      assert.isTrue(Option.isSome(newMessages))
      assert.deepStrictEqual(
        Option.getOrThrow(newMessages).map((m) => m.role),
        ["user", "assistant", "toolResult", "assistant"]
      )
    }))

  it.effect("AL 3.8 reading a run as a Stream adds no scheduler task per event: one setImmediate per tool that waits for one", () =>
    Effect.gen(function*() {
      const calls = 20
      const nextTurn = customTool(
        "turn",
        () => Effect.promise(() => new Promise((resolve) => setImmediate(() => resolve(ok))))
      )
      const ok = { content: [{ type: "text" as const, text: "ok" }], details: {} }
      const model = yield* ScriptedModel.make([
        callTools(Array.from({ length: calls }, (_, i) => call(`t${i}`, "turn"))),
        say("done")
      ])
      const original = globalThis.setImmediate
      let scheduled = 0
      const counting = ((...args: Parameters<typeof setImmediate>) => {
        scheduled++
        return original(...args)
      }) as typeof setImmediate
      const ended: Array<string> = []
      yield* Effect.acquireUseRelease(
        Effect.sync(() => {
          globalThis.setImmediate = counting
        }),
        () =>
          provideRun(
            Stream.runForEach(
              agentLoop([user("hi")], emptyContext, { toolExecution: "sequential" }),
              (event) => Effect.sync(() => void (event.type === "tool_execution_end" && ended.push(event.toolCallId)))
            ),
            model,
            [nextTurn],
            makeRecorder().sink
          ),
        () =>
          Effect.sync(() => {
            globalThis.setImmediate = original
          })
      )
      assert.strictEqual(ended.length, calls)
      assert.strictEqual(scheduled, calls)
    }))

  // -------------------------------------------------------------------------------------------------------
  // Transcript and inputs
  // -------------------------------------------------------------------------------------------------------

  it.effect("AL 3.5 the transcript is always well formed, whatever each turn ended with", () =>
    Effect.gen(function*() {
      const { events, messages } = yield* runLoop({
        script: [
          { ...callTools([call("l1", "add", { a: 1 })]), stopReason: "length" },
          callTools([
            call("c1", "add", { a: 1, b: 2 }),
            call("c2", "nope"),
            call("c3", "fail", { text: "x" }),
            call("c4", "add", { a: "oops" })
          ]),
          { fail: "gone", as: "event", content: [call("e1", "add", { a: 1, b: 2 }), call("e2", "echo", { text: "x" })] }
        ]
      })
      assertRunInvariants(events, messages)
      assert.deepStrictEqual(toolResults(messages).map((r) => r.toolCallId), ["l1", "c1", "c2", "c3", "c4", "e1", "e2"])
    }))

  it.effect("AL 3.6 the caller's context object and messages array are never mutated", () =>
    Effect.gen(function*() {
      const assistant: AssistantMessage = {
        role: "assistant",
        content: [{ type: "text", text: "earlier" }, call("old", "add", { a: 1, b: 1 })],
        api: "x",
        provider: "x",
        model: "x",
        usage: emptyUsage,
        stopReason: "toolUse",
        timestamp: 1
      }
      const context = deepFreeze({
        systemPrompt: SYSTEM,
        messages: [
          user("before"),
          assistant,
          {
            role: "toolResult" as const,
            toolCallId: "old",
            toolName: "add",
            content: [{ type: "text" as const, text: "2" }],
            isError: false,
            timestamp: 2
          }
        ]
      })
      const prompts = deepFreeze([user("now")])
      const snapshot = structuredClone({ context, prompts })
      const { events, messages } = yield* runLoop({
        script: [callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")],
        prompts,
        context,
        config: { transformContext: (ms) => Effect.succeed(ms), beforeToolCall: () => Effect.succeed(undefined) }
      })
      assertRunInvariants(events, messages, context.messages)
      assert.strictEqual(assistants(messages).at(-1)!.stopReason, "stop", "no mutation attempt broke the run")
      assert.deepStrictEqual({ context, prompts }, snapshot)
      assert.strictEqual(context.messages.length, 3)
      // continuing from a frozen context works too and leaves it unchanged
      const model = yield* ScriptedModel.make([say("continued")])
      const continued = yield* provideRun(runAgentLoopContinue(context), model, standardTools, makeRecorder().sink)
      assert.strictEqual(assistants(continued)[0]!.stopReason, "stop")
      assert.deepStrictEqual({ context, prompts }, snapshot)
    }))

  describe("AL 2.11 continue", () => {
    it.effect("AL 2.11 refuses an empty context with a typed CannotContinue", () =>
      Effect.gen(function*() {
        const model = yield* ScriptedModel.make([say("never")])
        const error = yield* provideRun(
          runAgentLoopContinue({ systemPrompt: SYSTEM, messages: [] }),
          model,
          [],
          makeRecorder().sink
        ).pipe(Effect.flip)
        assert.instanceOf(error, CannotContinue)
        assert.strictEqual(error._tag, "CannotContinue")
        assert.strictEqual(error.message, "Cannot continue: no messages in context")
        const streamError = yield* provideRun(
          Stream.runCollect(agentLoopContinue({ systemPrompt: SYSTEM, messages: [] })),
          model,
          [],
          makeRecorder().sink
        ).pipe(Effect.flip)
        assert.strictEqual(streamError._tag, "CannotContinue")
        assert.strictEqual((yield* model.requests).length, 0)
      }))

    it.effect("AL 2.11 refuses an assistant tail with a typed CannotContinue", () =>
      Effect.gen(function*() {
        const model = yield* ScriptedModel.make([say("never")])
        const context = {
          systemPrompt: SYSTEM,
          messages: [
            user("q"),
            assistantText("", { content: [] })
          ]
        }
        const recorder = makeRecorder()
        const error = yield* provideRun(runAgentLoopContinue(context), model, [], recorder.sink).pipe(Effect.flip)
        assert.strictEqual(error._tag, "CannotContinue")
        assert.strictEqual(error.message, "Cannot continue from message role: assistant")
        const streamError = yield* provideRun(Stream.runCollect(agentLoopContinue(context)), model, [], recorder.sink)
          .pipe(Effect.flip)
        assert.strictEqual(streamError.message, "Cannot continue from message role: assistant")
        assert.strictEqual(recorder.events.length, 0, "no events for a refused continue")
        assert.strictEqual((yield* model.requests).length, 0)
      }))

    it.effect("AL 2.11 from a user or tool-result tail runs the loop without prompt events", () =>
      Effect.gen(function*() {
        const model = yield* ScriptedModel.make([say("answer")])
        const recorder = makeRecorder()
        const messages = yield* provideRun(
          runAgentLoopContinue({ systemPrompt: SYSTEM, messages: [user("q")] }),
          model,
          [],
          recorder.sink
        )
        assert.deepStrictEqual(skeleton(recorder.events), [
          "agent_start",
          "turn_start",
          "message_start:assistant:stop",
          "message_end:assistant:stop",
          "turn_end:assistant:stop[]",
          "agent_end"
        ])
        assertRunInvariants(recorder.events, messages, [user("q")])
        assert.deepStrictEqual(messages.map((m) => m.role), ["assistant"])
        assert.deepStrictEqual(textsOf((yield* model.requests)[0]!.messages), ["user:q"])

        const model2 = yield* ScriptedModel.make([say("from tool result")])
        const afterTool = yield* provideRun(
          runAgentLoopContinue({
            systemPrompt: SYSTEM,
            messages: [
              user("q"),
              {
                role: "assistant",
                content: [call("c", "add", { a: 1, b: 1 })],
                api: "x",
                provider: "x",
                model: "x",
                usage: emptyUsage,
                stopReason: "toolUse",
                timestamp: 0
              } satisfies AssistantMessage,
              {
                role: "toolResult",
                toolCallId: "c",
                toolName: "add",
                content: [{ type: "text", text: "2" }],
                isError: false,
                timestamp: 0
              }
            ]
          }),
          model2,
          [],
          makeRecorder().sink
        )
        assert.strictEqual(textOf(afterTool.at(-1)), "from tool result")
        assert.deepStrictEqual(afterTool.map((m) => m.role), ["assistant"])
      }))
  })

  // The loop answers each delivered event with "read on" or "stop"; a synchronous sink takes a shared path.
  for (const sinkKind of ["callback", "effectful"] as const) {
    it.effect(`AL 2.3 the model stream is read up to its done event and no further (${sinkKind} sink)`, () =>
      Effect.gen(function*() {
        const final = assistantText("done", { api: "test", provider: "test", model: "test" })
        const partial: AssistantMessage = { ...final, content: [] }
        let pulledPastDone = false
        const model = {
          info: { api: "test", provider: "test", model: "test" },
          stream: () =>
            Stream.concat(
              Stream.make(
                { type: "start" as const, partial },
                { type: "text_start" as const, contentIndex: 0, partial },
                { type: "done" as const, reason: "stop" as const, message: final }
              ),
              Stream.suspend(() => {
                pulledPastDone = true
                return Stream.die("read past done")
              })
            )
        }
        const events: Array<AgentEvent> = []
        const sink = sinkKind === "callback"
          ? EventSink.fromCallback((event) => void events.push(event))
          : { emit: (event: AgentEvent) => Effect.sync(() => void events.push(event)) }
        const messages = yield* provideRun(runAgentLoop([user("hi")], emptyContext), model, standardTools, sink)
        assert.isFalse(pulledPastDone)
        assert.deepStrictEqual(messages.at(-1), final)
        assert.deepStrictEqual(events.filter((e) => e.type === "message_update").length, 1)
      }))
  }

  // The loop reads the stream through its pull and closes the stream's scope itself (src/AgentLoop.ts).
  for (const ending of ["done", "failure", "abort"] as const) {
    it.effect(`AL 2.3 the model stream's resources are released once, when its call ends (${ending})`, () =>
      Effect.gen(function*() {
        const final = assistantText("done", { api: "test", provider: "test", model: "test" })
        const partial: AssistantMessage = { ...final, content: [] }
        const controller = new AbortController()
        const released: Array<string> = []
        const model = {
          info: { api: "test", provider: "test", model: "test" },
          stream: () =>
            Stream.concat(
              Stream.make({ type: "start" as const, partial }),
              ending === "done"
                ? Stream.make({ type: "done" as const, reason: "stop" as const, message: final }, {
                  type: "text_start" as const,
                  contentIndex: 0,
                  partial
                })
                : ending === "failure"
                ? Stream.fail(new ModelError({ reason: "network", message: "connection reset" }))
                : Stream.fromEffect(Effect.sync(() => controller.abort())).pipe(Stream.flatMap(() => Stream.never))
            ).pipe(
              Stream.onExit((exit) => Effect.sync(() => void released.push(exit._tag)))
            )
        }
        const messages = yield* provideRun(
          runAgentLoop([user("hi")], emptyContext, { signal: controller.signal }),
          model,
          standardTools,
          makeRecorder().sink
        )
        const last = messages.at(-1) as AssistantMessage
        assert.strictEqual(last.stopReason, ending === "done" ? "stop" : ending === "failure" ? "error" : "aborted")
        // A stream stopped at its `done` event ends well; a failed or aborted one does not.
        assert.deepStrictEqual(released, [ending === "done" ? "Success" : "Failure"])
      }))
  }
})
