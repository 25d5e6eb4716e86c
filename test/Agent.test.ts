/**
 * The stateful agent (`src/Agent.ts`) and its Promise facade (`src/PromiseAgent.ts`), against the
 * stateful agent of `docs/agent-loop.md` (AL 4).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Stream, SubscriptionRef } from "effect"
import { TestClock } from "effect/testing"
import * as Agent from "../src/Agent.ts"
import type { AgentEvent } from "../src/AgentEvent.ts"
import { CannotContinue } from "../src/AgentLoop.ts"
import type { AgentMessage, AssistantMessage, ImageContent, UserMessage } from "../src/Message.ts"
import { Model, type ModelRequest } from "../src/Model.ts"
import { PromiseAgent } from "../src/PromiseAgent.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import { callTools, say } from "../src/ScriptedModel.ts"
import { type RegisteredTool, ToolRegistry } from "../src/ToolRegistry.ts"
import {
  addTool,
  assertBalanced,
  assertOneAgentEnd,
  assertWellFormed,
  assistantText,
  call,
  customTool,
  labelOf,
  makeGate,
  settle,
  skeleton,
  standardTools,
  textOf,
  toolResults,
  user,
  within
} from "./support/loop.ts"

const PROMPT_BUSY =
  "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
const CONTINUE_BUSY = "Agent is already processing. Wait for completion before continuing."

const setup = (
  script: ReadonlyArray<ScriptedModel.Step>,
  options: Agent.AgentOptions = {},
  tools: ReadonlyArray<RegisteredTool> = standardTools
) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.make(script)
    const agent = yield* Agent.make(options).pipe(
      Effect.provideService(Model, model),
      Effect.provide(ToolRegistry.fromEntries(tools)),
      Effect.orDie
    )
    const events: Array<AgentEvent> = []
    yield* agent.subscribe((event) => Effect.sync(() => void events.push(event)))
    return { agent, model, events }
  })

const stateOf = (agent: Agent.AgentShape) => SubscriptionRef.get(agent.state)

const userTexts = (request: ModelRequest) => request.messages.filter((m) => m.role === "user").map((m) => textOf(m))

const assistantMessage = (text: string): AssistantMessage => assistantText(text)

describe("Agent", () => {
  describe("AL 4.2 prompt", () => {
    it.effect("AL 4.2 with text: a user message with a text block (and images), then the run", () =>
      Effect.gen(function*() {
        const { agent, model, events } = yield* setup([say("hello")], { systemPrompt: "Be nice." })
        yield* TestClock.setTime(1234)
        const image: ImageContent = { type: "image", data: "AAAA", mimeType: "image/png" }
        yield* agent.prompt("hi there", [image])
        const state = yield* stateOf(agent)
        assert.deepStrictEqual(state.messages.map((m) => m.role), ["user", "assistant"])
        const prompt = state.messages[0] as UserMessage
        assert.deepStrictEqual(prompt, {
          role: "user",
          content: [{ type: "text", text: "hi there" }, image],
          timestamp: 1234
        })
        assert.strictEqual(textOf(state.messages[1]), "hello")
        const [request] = yield* model.requests
        assert.strictEqual(request!.systemPrompt, "Be nice.")
        assert.deepStrictEqual(request!.messages, [prompt])
        assertOneAgentEnd(events)
        assertBalanced(events)
        assert.isFalse(state.isStreaming)
      }))

    it.effect("AL 4.2 with a message: the message itself is the prompt", () =>
      Effect.gen(function*() {
        const { agent } = yield* setup([say("ok")])
        const message = user("as a message", 7)
        yield* agent.prompt(message)
        const state = yield* stateOf(agent)
        assert.strictEqual(state.messages[0], message)
        assert.strictEqual(state.messages.length, 2)
      }))

    it.effect("AL 4.2 with messages: all of them, in order, in one run", () =>
      Effect.gen(function*() {
        const { agent, model, events } = yield* setup([say("ok")])
        yield* agent.prompt([user("one"), user("two")])
        const state = yield* stateOf(agent)
        assert.deepStrictEqual(state.messages.map((m) => textOf(m)), ["one", "two", "ok"])
        assert.deepStrictEqual(userTexts((yield* model.requests)[0]!), ["one", "two"])
        assert.strictEqual(events.filter((e) => e.type === "agent_start").length, 1)
      }))

    it.effect("AL 4.2 continues the transcript across prompts", () =>
      Effect.gen(function*() {
        const { agent, model } = yield* setup([callTools([call("c1", "add", { a: 1, b: 2 })]), say("3"), say("again")])
        yield* agent.prompt("1+2?")
        yield* agent.prompt("and again")
        const state = yield* stateOf(agent)
        assert.deepStrictEqual(state.messages.map((m) => m.role), [
          "user",
          "assistant",
          "toolResult",
          "assistant",
          "user",
          "assistant"
        ])
        assertWellFormed(state.messages)
        assert.strictEqual((yield* model.requests)[2]!.messages.length, 5)
      }))

    it.effect("AL 4.2 during a run is refused with pi's text", () =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent } = yield* setup([callTools([call("g", "gate")]), say("done")], {}, [gate.tool])
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "the run is busy")
        const refused = yield* agent.prompt("again").pipe(Effect.flip)
        assert.instanceOf(refused, Agent.AgentBusy)
        assert.strictEqual(refused.message, PROMPT_BUSY)
        const refusedMessages = yield* agent.prompt([user("x")]).pipe(Effect.flip)
        assert.strictEqual(refusedMessages.message, PROMPT_BUSY)
        yield* Deferred.succeed(gate.open, undefined)
        yield* within(Fiber.join(run), "the run ends")
        const state = yield* stateOf(agent)
        assert.deepStrictEqual(state.messages.filter((m) => m.role === "user").map((m) => textOf(m)), ["go"])
      }))
  })

  describe("AL 4.3 continue", () => {
    it.effect("AL 4.3 from a user message runs the loop", () =>
      Effect.gen(function*() {
        const { agent, events } = yield* setup([say("answer")], { messages: [user("question")] })
        yield* agent.continue
        const state = yield* stateOf(agent)
        assert.deepStrictEqual(state.messages.map((m) => m.role), ["user", "assistant"])
        assert.deepStrictEqual(skeleton(events).slice(0, 3), [
          "agent_start",
          "turn_start",
          "message_start:assistant:stop"
        ])
      }))

    it.effect("AL 4.3 from a tool result runs the loop", () =>
      Effect.gen(function*() {
        const messages: ReadonlyArray<AgentMessage> = [
          user("q"),
          { ...assistantMessage(""), content: [call("c", "add", { a: 1, b: 1 })], stopReason: "toolUse" },
          {
            role: "toolResult",
            toolCallId: "c",
            toolName: "add",
            content: [{ type: "text", text: "2" }],
            isError: false,
            timestamp: 0
          }
        ]
        const { agent } = yield* setup([say("it is 2")], { messages })
        yield* agent.continue
        const state = yield* stateOf(agent)
        assert.strictEqual(state.messages.length, 4)
        assert.strictEqual(textOf(state.messages[3]), "it is 2")
      }))

    it.effect("AL 4.3 from an assistant message drains one steering message (and skips the initial steering poll)", () =>
      Effect.gen(function*() {
        const { agent, model } = yield* setup([say("to A"), say("to B"), say("to F")], {
          messages: [user("q"), assistantMessage("a")]
        })
        yield* agent.steer("A")
        yield* agent.steer("B")
        yield* agent.followUp("F")
        yield* agent.continue
        const requests = yield* model.requests
        assert.deepStrictEqual(userTexts(requests[0]!), ["q", "A"], "only one steering message in the first turn")
        assert.deepStrictEqual(userTexts(requests[1]!), ["q", "A", "B"], "the next one after that turn")
        assert.deepStrictEqual(userTexts(requests[2]!), ["q", "A", "B", "F"], "follow-ups only when idle")
        assert.strictEqual(requests.length, 3)
      }))

    it.effect("AL 4.3 from an assistant message without steering runs the follow-ups", () =>
      Effect.gen(function*() {
        const { agent, model } = yield* setup([say("to F")], { messages: [user("q"), assistantMessage("a")] })
        yield* agent.followUp("F")
        yield* agent.continue
        assert.deepStrictEqual(userTexts((yield* model.requests)[0]!), ["q", "F"])
        assert.isFalse(yield* agent.hasQueuedMessages)
      }))

    it.effect("AL 4.3 from an assistant message with nothing queued fails", () =>
      Effect.gen(function*() {
        const { agent, model } = yield* setup([say("never")], { messages: [user("q"), assistantMessage("a")] })
        const error = yield* agent.continue.pipe(Effect.flip)
        assert.instanceOf(error, CannotContinue)
        assert.strictEqual(error.message, "Cannot continue from message role: assistant")
        assert.strictEqual((yield* model.requests).length, 0)
        assert.isFalse((yield* stateOf(agent)).isStreaming)
      }))

    it.effect("AL 4.3 with no messages fails", () =>
      Effect.gen(function*() {
        const { agent } = yield* setup([say("never")])
        const error = yield* agent.continue.pipe(Effect.flip)
        assert.strictEqual(error._tag, "CannotContinue")
        assert.strictEqual(error.message, "No messages to continue from")
      }))

    it.effect("AL 4.3 during a run is refused", () =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent } = yield* setup([callTools([call("g", "gate")]), say("done")], {}, [gate.tool])
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "the run is busy")
        const error = yield* agent.continue.pipe(Effect.flip)
        assert.strictEqual(error._tag, "AgentBusy")
        assert.strictEqual(error.message, CONTINUE_BUSY)
        yield* Deferred.succeed(gate.open, undefined)
        yield* within(Fiber.join(run), "the run ends")
      }))
  })

  describe("AL 4.4 queues", () => {
    const steerDuringBatch = (mode: Agent.QueueMode) =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent, model } = yield* setup(
          [callTools([call("g", "gate")]), say("r1"), say("r2"), say("r3")],
          { steeringMode: mode },
          [gate.tool]
        )
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "the tool runs")
        yield* agent.steer("A")
        yield* agent.steer(user("B"))
        yield* Deferred.succeed(gate.open, undefined)
        yield* within(Fiber.join(run), "the run ends")
        return { requests: yield* model.requests, state: yield* stateOf(agent) }
      })

    it.effect("AL 4.4 steering one-at-a-time (default): one message per turn", () =>
      Effect.gen(function*() {
        const { requests, state } = yield* steerDuringBatch("one-at-a-time")
        assert.strictEqual(requests.length, 3)
        assert.deepStrictEqual(userTexts(requests[1]!), ["go", "A"])
        assert.deepStrictEqual(userTexts(requests[2]!), ["go", "A", "B"])
        assertWellFormed(state.messages)
      }))

    it.effect("AL 4.4 steering all: every queued message at once", () =>
      Effect.gen(function*() {
        const { requests } = yield* steerDuringBatch("all")
        assert.strictEqual(requests.length, 2)
        assert.deepStrictEqual(userTexts(requests[1]!), ["go", "A", "B"])
      }))

    it.effect("AL 4.4 follow-ups one-at-a-time vs all, and setFollowUpMode", () =>
      Effect.gen(function*() {
        const one = yield* setup([say("r1"), say("r2"), say("r3")])
        yield* one.agent.followUp("F1")
        yield* one.agent.followUp("F2")
        yield* one.agent.prompt("go")
        const oneRequests = yield* one.model.requests
        assert.strictEqual(oneRequests.length, 3)
        assert.deepStrictEqual(userTexts(oneRequests[1]!), ["go", "F1"])
        assert.deepStrictEqual(userTexts(oneRequests[2]!), ["go", "F1", "F2"])

        const all = yield* setup([say("r1"), say("r2")])
        yield* all.agent.setFollowUpMode("all")
        yield* all.agent.followUp("F1")
        yield* all.agent.followUp("F2")
        yield* all.agent.prompt("go")
        const allRequests = yield* all.model.requests
        assert.strictEqual(allRequests.length, 2)
        assert.deepStrictEqual(userTexts(allRequests[1]!), ["go", "F1", "F2"])
      }))

    it.effect("AL 4.4 setSteeringMode switches the steering queue", () =>
      Effect.gen(function*() {
        const { agent, model } = yield* setup([say("r1")])
        yield* agent.setSteeringMode("all")
        yield* agent.steer("S1")
        yield* agent.steer("S2")
        yield* agent.prompt("go")
        assert.deepStrictEqual(userTexts((yield* model.requests)[0]!), ["go", "S1", "S2"], "initial poll takes all")
      }))

    it.effect("AL 4.4 clearing the queues", () =>
      Effect.gen(function*() {
        const { agent, model } = yield* setup([say("r1")])
        assert.isFalse(yield* agent.hasQueuedMessages)
        yield* agent.steer("S")
        yield* agent.followUp("F")
        assert.isTrue(yield* agent.hasQueuedMessages)
        yield* agent.clearSteeringQueue
        assert.isTrue(yield* agent.hasQueuedMessages, "follow-up still queued")
        yield* agent.clearFollowUpQueue
        assert.isFalse(yield* agent.hasQueuedMessages)
        yield* agent.steer("S")
        yield* agent.followUp("F")
        yield* agent.clearAllQueues
        assert.isFalse(yield* agent.hasQueuedMessages)
        yield* agent.prompt("go")
        assert.deepStrictEqual(userTexts((yield* model.requests)[0]!), ["go"])
        assert.strictEqual((yield* model.requests).length, 1)
      }))
  })

  describe("AL 4.5 abort, waitForIdle, reset", () => {
    it.effect("AL 4.5 abort during a tool: the run settles, the tool call has its result, no further model call", () =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent, model, events } = yield* setup([callTools([call("g", "gate")]), say("never")], {}, [gate.tool])
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "the tool runs")
        yield* agent.abort
        yield* within(Fiber.join(run), "prompt settles")
        const state = yield* stateOf(agent)
        assertWellFormed(state.messages)
        assertOneAgentEnd(events)
        assertBalanced(events)
        assert.strictEqual((yield* model.requests).length, 1)
        assert.match(textOf(toolResults(state.messages)[0]), /interrupted/)
        assert.isFalse(state.isStreaming)
        assert.strictEqual(state.pendingToolCalls.size, 0)
      }))

    it.effect("AL 4.5 abort while streaming: an `aborted` message and errorMessage", () =>
      Effect.gen(function*() {
        const { agent, events } = yield* setup([{ ...say("slowly streaming"), delay: "1 second" }])
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* TestClock.adjust("2500 millis")
        assert.isTrue(events.some((e) => e.type === "message_update"), "streaming has started")
        yield* agent.abort
        yield* within(Fiber.join(run), "prompt settles")
        const state = yield* stateOf(agent)
        const last = state.messages.at(-1) as AssistantMessage
        assert.strictEqual(last.stopReason, "aborted")
        assert.isString(state.errorMessage)
        assert.strictEqual(state.errorMessage, last.errorMessage)
      }))

    it.effect("AL 4.5 abort when idle does nothing", () =>
      Effect.gen(function*() {
        const { agent } = yield* setup([say("ok")])
        yield* agent.abort
        yield* agent.prompt("go")
        assert.strictEqual(textOf((yield* stateOf(agent)).messages.at(-1)), "ok", "a later run is not aborted")
      }))

    it.effect("AL 4.5 interrupting prompt aborts the run; the agent is idle and usable afterwards", () =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent, events } = yield* setup([callTools([call("g", "gate")]), say("never"), say("next")], {}, [
          gate.tool
        ])
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "the tool runs")
        yield* within(Fiber.interrupt(run), "interrupt completes")
        yield* within(Deferred.await(gate.interrupted), "the tool was interrupted")
        const state = yield* stateOf(agent)
        assert.isFalse(state.isStreaming)
        assertWellFormed(state.messages)
        assertOneAgentEnd(events)
        yield* agent.prompt("again")
        assert.strictEqual(textOf((yield* stateOf(agent)).messages.at(-1)), "never")
      }))

    it.effect("AL 4.5 waitForIdle: immediate when idle; during a run, settles when the run is over", () =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent } = yield* setup([callTools([call("g", "gate")]), say("done")], {}, [gate.tool])
        yield* within(agent.waitForIdle, "idle agent")
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "the tool runs")
        const idle = yield* agent.waitForIdle.pipe(Effect.forkChild)
        yield* settle
        assert.isUndefined(idle.pollUnsafe(), "still running")
        yield* Deferred.succeed(gate.open, undefined)
        yield* within(Fiber.join(idle), "waitForIdle settles")
        assert.isFalse((yield* stateOf(agent)).isStreaming)
        assert.strictEqual(textOf((yield* stateOf(agent)).messages.at(-1)), "done")
        yield* Fiber.join(run)
      }))

    it.effect("AL 4.5 reset is refused during a run and works after it", () =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent } = yield* setup([callTools([call("g", "gate")]), { fail: "bad", as: "error" }], {}, [gate.tool])
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "the tool runs")
        const error = yield* agent.reset.pipe(Effect.flip)
        assert.strictEqual(error._tag, "AgentBusy")
        assert.match(error.message, /abort|wait/i)
        assert.isTrue((yield* stateOf(agent)).messages.length > 0, "nothing was cleared")
        yield* Deferred.succeed(gate.open, undefined)
        yield* within(Fiber.join(run), "the run ends")
        yield* agent.steer("S")
        yield* agent.followUp("F")
        assert.strictEqual((yield* stateOf(agent)).errorMessage, "bad")
        yield* agent.reset
        const state = yield* stateOf(agent)
        assert.deepStrictEqual(state.messages, [])
        assert.isUndefined(state.errorMessage)
        assert.isUndefined(state.streamingMessage)
        assert.strictEqual(state.pendingToolCalls.size, 0)
        assert.isFalse(yield* agent.hasQueuedMessages)
      }))
  })

  describe("AL 4.6 subscribers", () => {
    it.effect("AL 4.6 run in subscription order, each awaited before the next", () =>
      Effect.gen(function*() {
        const { agent } = yield* setup([callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")])
        const trace: Array<string> = []
        yield* agent.subscribe((e) =>
          Effect.gen(function*() {
            trace.push(`A>${e.type}`)
            yield* Effect.sleep("10 millis")
            yield* Effect.yieldNow
            trace.push(`A<${e.type}`)
          })
        )
        yield* agent.subscribe((e) => Effect.sync(() => void trace.push(`B:${e.type}`)))
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        for (let i = 0; i < 200 && run.pollUnsafe() === undefined; i++) yield* TestClock.adjust("10 millis")
        yield* within(Fiber.join(run), "run ends")
        // for every event: A starts, A ends, then B
        assert.strictEqual(trace.length % 3, 0)
        for (let i = 0; i < trace.length; i += 3) {
          const type = trace[i]!.slice(2)
          assert.deepStrictEqual(trace.slice(i, i + 3), [`A>${type}`, `A<${type}`, `B:${type}`])
        }
        assert.strictEqual(trace.at(-1), "B:agent_end")
      }))

    it.effect("AL 4.6 a subscriber blocked on a Deferred holds the run; prompt settles only after agent_end subscribers finish", () =>
      Effect.gen(function*() {
        const { agent, model } = yield* setup([callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")])
        const release = Deferred.makeUnsafe<void>()
        const atEnd = Deferred.makeUnsafe<void>()
        const releaseEnd = Deferred.makeUnsafe<void>()
        const blockedAt = Deferred.makeUnsafe<void>()
        yield* agent.subscribe((e) =>
          e.type === "turn_end"
            ? Deferred.succeed(blockedAt, undefined).pipe(Effect.andThen(Deferred.await(release)))
            : e.type === "agent_end"
            ? Deferred.succeed(atEnd, undefined).pipe(Effect.andThen(Deferred.await(releaseEnd)))
            : Effect.void
        )
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(blockedAt), "the subscriber is blocked")
        yield* settle
        assert.strictEqual((yield* model.requests).length, 1, "the next turn waits for the subscriber")
        yield* Deferred.succeed(release, undefined)
        yield* within(Deferred.await(atEnd), "agent_end delivered")
        yield* settle
        assert.isUndefined(run.pollUnsafe(), "prompt has not settled while an agent_end subscriber runs")
        assert.isTrue((yield* stateOf(agent)).isStreaming, "still streaming until agent_end subscribers finish")
        const idle = yield* agent.waitForIdle.pipe(Effect.forkChild)
        yield* settle
        assert.isUndefined(idle.pollUnsafe(), "waitForIdle has not settled either")
        yield* Deferred.succeed(releaseEnd, undefined)
        yield* within(Fiber.join(run), "prompt settles")
        yield* within(Fiber.join(idle), "waitForIdle settles")
        assert.isFalse((yield* stateOf(agent)).isStreaming)
      }))

    it.effect("AL 4.6 events of parallel calls wait behind a blocked subscriber, then arrive in order, each with its own state", () =>
      Effect.gen(function*() {
        let finished = 0
        const slow = customTool("slow", () =>
          Effect.gen(function*() {
            yield* Effect.yieldNow
            yield* Effect.yieldNow
            finished++
            return { content: [{ type: "text" as const, text: "slow done" }], details: {} }
          }))
        const { agent } = yield* setup(
          [callTools([call("a", "slow"), call("b", "slow"), call("c", "slow")]), say("done")],
          { toolExecution: "parallel" },
          [slow]
        )
        const release = Deferred.makeUnsafe<void>()
        const blockedAt = Deferred.makeUnsafe<void>()
        const seen: Array<{ readonly event: AgentEvent; readonly pending: ReadonlyArray<string> }> = []
        let blocked: number | undefined
        yield* agent.subscribe((event) => {
          seen.push({ event, pending: [...SubscriptionRef.getUnsafe(agent.state).pendingToolCalls].sort() })
          if (event.type !== "tool_execution_end" || blocked !== undefined) return Effect.void
          blocked = seen.length
          return Deferred.succeed(blockedAt, undefined).pipe(Effect.andThen(Deferred.await(release)))
        })
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(blockedAt), "the subscriber is blocked on the first end")
        yield* settle
        assert.strictEqual(finished, 3, "the other calls finished and wait to deliver their end events")
        const whileBlocked = seen.length
        assert.strictEqual(whileBlocked, blocked, "nothing is delivered past the blocked event")
        assert.deepStrictEqual(
          (yield* stateOf(agent)).pendingToolCalls.size,
          2,
          "nor applied to the state: the waiting ends are still pending"
        )
        yield* Deferred.succeed(release, undefined)
        yield* within(Fiber.join(run), "prompt settles")
        assert.isAbove(seen.length, whileBlocked)
        const events = seen.map((s) => s.event)
        assertOneAgentEnd(events)
        assertBalanced(events)
        // Each subscriber call saw the state of its own event: the calls started and not yet ended so far.
        const pending = new Set<string>()
        for (const { event, pending: shown } of seen) {
          if (event.type === "tool_execution_start") pending.add(event.toolCallId)
          if (event.type === "tool_execution_end") pending.delete(event.toolCallId)
          assert.deepStrictEqual(shown, [...pending].sort(), `the state seen with ${event.type}`)
        }
        assert.strictEqual(events.filter((e) => e.type === "tool_execution_end").length, 3)
        assertWellFormed((yield* stateOf(agent)).messages)
      }))

    it.effect("AL 4.6 an assistant message_end is handled by subscribers before tool preflight starts", () =>
      Effect.gen(function*() {
        const trace: Array<string> = []
        const add = customTool(
          "add",
          () =>
            Effect.sync(
              () => (trace.push("execute"), { content: [{ type: "text" as const, text: "ok" }], details: {} })
            )
        )
        const { agent } = yield* setup([callTools([call("c1", "add")]), say("done")], {
          beforeToolCall: () => Effect.sync(() => void trace.push("beforeToolCall"))
        }, [add])
        const release = Deferred.makeUnsafe<void>()
        const blocked = Deferred.makeUnsafe<void>()
        yield* agent.subscribe((e) => {
          if (e.type === "message_end" && e.message.role === "assistant" && trace.length === 0) {
            return Effect.gen(function*() {
              trace.push("subscriber:message_end:start")
              yield* Deferred.succeed(blocked, undefined)
              yield* Deferred.await(release)
              trace.push("subscriber:message_end:done")
            })
          }
          return e.type === "tool_execution_start"
            ? Effect.sync(() => void trace.push("tool_execution_start"))
            : Effect.void
        })
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(blocked), "subscriber handles message_end")
        yield* settle
        assert.deepStrictEqual(trace, ["subscriber:message_end:start"], "no preflight while the subscriber runs")
        yield* Deferred.succeed(release, undefined)
        yield* within(Fiber.join(run), "run ends")
        assert.deepStrictEqual(trace, [
          "subscriber:message_end:start",
          "subscriber:message_end:done",
          "tool_execution_start",
          "beforeToolCall",
          "execute"
        ])
      }))

    it.effect("AL 4.6 an abort while a subscriber still handles a streamed event: that event's handling ends, the events after it wait for it, the agent stays usable", () =>
      Effect.gen(function*() {
        const { agent } = yield* setup([{ ...say("slowly streaming"), delay: "1 second" }, say("again")])
        const trace: Array<string> = []
        const blocked = Deferred.makeUnsafe<void>()
        const release = Deferred.makeUnsafe<void>()
        let first = true
        yield* agent.subscribe((e) => {
          if (e.type === "message_update" && first) {
            first = false
            return Effect.gen(function*() {
              trace.push("update>")
              yield* Deferred.succeed(blocked, undefined)
              yield* Deferred.await(release)
              trace.push("update<")
            })
          }
          return Effect.sync(() => void trace.push(e.type))
        })
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        for (let i = 0; i < 20 && !(yield* Deferred.isDone(blocked)); i++) yield* TestClock.adjust("1 second")
        yield* within(Deferred.await(blocked), "the subscriber is handling the first update")
        yield* agent.abort
        yield* settle
        assert.isUndefined(run.pollUnsafe(), "the run waits for the event being handled")
        assert.strictEqual(trace.at(-1), "update>", "nothing is delivered while that event is handled")
        yield* Deferred.succeed(release, undefined)
        yield* within(Fiber.join(run), "prompt settles")
        const after = trace.slice(trace.indexOf("update>"))
        assert.deepStrictEqual(after.slice(0, 3), ["update>", "update<", "message_end"])
        assert.strictEqual(trace.at(-1), "agent_end")
        const state = yield* stateOf(agent)
        assert.strictEqual((state.messages.at(-1) as AssistantMessage).stopReason, "aborted")
        assert.isFalse(state.isStreaming)
        yield* within(agent.prompt("once more"), "the next prompt runs")
        assertWellFormed((yield* stateOf(agent)).messages)
      }))

    it.effect("AL 4.6 subscribers receive the run's abort signal", () =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent } = yield* setup([callTools([call("g", "gate")]), say("never")], {}, [gate.tool])
        const signals: Array<AbortSignal> = []
        yield* agent.subscribe((_e, signal) => Effect.sync(() => void signals.push(signal)))
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "the tool runs")
        assert.isAbove(signals.length, 0)
        assert.isFalse(signals[0]!.aborted)
        yield* agent.abort
        yield* within(Fiber.join(run), "run ends")
        assert.isTrue(signals.every((s) => s === signals[0]), "one signal per run")
        assert.isTrue(signals[0]!.aborted)
      }))

    it.effect("AL 4.6 interrupting prompt aborts the signal subscribers got (a subscriber honouring it lets the run end)", () =>
      Effect.gen(function*() {
        const { agent } = yield* setup([callTools([call("c1", "add", { a: 1, b: 2 })]), say("never")])
        const waiting = Deferred.makeUnsafe<void>()
        let seen: AbortSignal | undefined
        // e.g. a UI asking for confirmation, which gives up when the run is aborted
        yield* agent.subscribe((e, signal) => {
          if (e.type !== "message_end" || e.message.role !== "assistant") return Effect.void
          seen = signal
          return Deferred.succeed(waiting, undefined).pipe(
            Effect.andThen(Effect.callback<void>((resume) => {
              if (signal.aborted) return resume(Effect.void)
              signal.addEventListener("abort", () => resume(Effect.void), { once: true })
            }))
          )
        })
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(waiting), "the subscriber waits for the abort signal")
        const interrupted = yield* Effect.exit(within(Fiber.interrupt(run), "interrupting prompt completes", 1_000))
        const abortedBySignal = seen?.aborted === true
        // release a stuck run so the test can end either way
        yield* agent.abort
        yield* within(agent.waitForIdle, "idle after abort")
        assert.isTrue(abortedBySignal, "the subscriber's signal is aborted when prompt is interrupted")
        assert.isTrue(
          interrupted._tag === "Success",
          "interrupting prompt does not hang on a subscriber that honours the signal"
        )
      }))

    it.effect("AL 4.7 failing and throwing subscribers never orphan a tool call and never break the run", () =>
      Effect.gen(function*() {
        const { agent, events } = yield* setup([
          callTools([call("c1", "add", { a: 1, b: 2 }), call("c2", "echo", { text: "x" })]),
          say("done")
        ])
        yield* agent.subscribe((e) => {
          if (e.type === "message_end" && e.message.role === "assistant") throw new Error("sync throw")
          return Effect.void
        })
        yield* agent.subscribe((e) => e.type === "tool_execution_start" ? Effect.fail("typed failure") : Effect.void)
        yield* agent.subscribe((e) => e.type === "tool_execution_end" ? Effect.die(new Error("defect")) : Effect.void)
        yield* agent.subscribe((e) => e.type === "agent_end" ? Effect.fail("at the end") : Effect.void)
        const after: Array<string> = []
        yield* agent.subscribe((e) => Effect.sync(() => void after.push(e.type)))
        yield* agent.prompt("go")
        const state = yield* stateOf(agent)
        assertWellFormed(state.messages)
        assert.deepStrictEqual(state.messages.map((m) => m.role), [
          "user",
          "assistant",
          "toolResult",
          "toolResult",
          "assistant"
        ])
        assert.deepStrictEqual(toolResults(state.messages).map((r) => r.isError), [false, false])
        assertOneAgentEnd(events)
        assertBalanced(events)
        assert.deepStrictEqual(after, events.map((e) => e.type), "later subscribers still get every event")
        assert.strictEqual(state.pendingToolCalls.size, 0)
      }))

    it.effect("AL 4.6 unsubscribing stops delivery", () =>
      Effect.gen(function*() {
        const { agent } = yield* setup([say("a"), say("b")])
        const seen: Array<string> = []
        const unsubscribe = yield* agent.subscribe((e) => Effect.sync(() => void seen.push(e.type)))
        yield* agent.prompt("one")
        const n = seen.length
        yield* unsubscribe
        yield* agent.prompt("two")
        assert.strictEqual(seen.length, n)
      }))
  })

  describe("AL 4.1 state (SubscriptionRef)", () => {
    it.effect("AL 4.1 isStreaming, streamingMessage, pendingToolCalls and messages follow the run", () =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent } = yield* setup(
          [callTools([call("g", "gate"), call("c2", "add", { a: 1, b: 2 })], "thinking"), say("done")],
          {},
          [gate.tool, addTool]
        )
        const seen: Array<{ label: string; state: Agent.AgentState }> = []
        yield* agent.subscribe((e) =>
          Effect.map(stateOf(agent), (state) => void seen.push({ label: labelOf(e), state }))
        )
        const initial = yield* stateOf(agent)
        assert.isFalse(initial.isStreaming)
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "tool runs")
        const during = yield* stateOf(agent)
        assert.isTrue(during.isStreaming)
        assert.isTrue(during.pendingToolCalls.has("g"))
        yield* Deferred.succeed(gate.open, undefined)
        yield* within(Fiber.join(run), "run ends")
        const at = (label: string) => seen.find((s) => s.label === label)!.state
        assert.isTrue(at("agent_start").isStreaming)
        assert.strictEqual(at("message_start:user").streamingMessage?.role, "user")
        assert.isUndefined(at("message_end:user").streamingMessage)
        const update = seen.find((s) => s.label.startsWith("message_update"))!.state
        assert.strictEqual(update.streamingMessage?.role, "assistant")
        assert.isTrue(at("tool_execution_start:g").pendingToolCalls.has("g"))
        assert.isFalse(at("tool_execution_end:g").pendingToolCalls.has("g"))
        assert.strictEqual(at("message_end:assistant:toolUse").messages.at(-1)?.role, "assistant")
        assert.isTrue(at("agent_end").isStreaming, "isStreaming until agent_end subscribers finish")
        assert.isUndefined(at("agent_end").streamingMessage)
        const final = yield* stateOf(agent)
        assert.isFalse(final.isStreaming)
        assert.isUndefined(final.streamingMessage)
        assert.strictEqual(final.pendingToolCalls.size, 0)
        assert.deepStrictEqual(final.messages.map((m) => m.role), [
          "user",
          "assistant",
          "toolResult",
          "toolResult",
          "assistant"
        ])
        assert.isUndefined(final.errorMessage)
      }))

    it.effect("AL 4.1 a state keeps its moment, and a plain copy set from outside is taken as it is", () =>
      Effect.gen(function*() {
        const { agent } = yield* setup([say("one"), say("two")])
        yield* agent.prompt("first")
        const state = yield* stateOf(agent)
        yield* SubscriptionRef.set(agent.state, { ...state, messages: state.messages.slice(0, 1) })
        yield* agent.prompt("second")
        const after = yield* stateOf(agent)
        assert.deepStrictEqual(after.messages.map((m) => textOf(m)), ["first", "second", "two"])
        assert.deepStrictEqual(state.messages.map((m) => textOf(m)), ["first", "one"], "the earlier state is unchanged")
      }))

    it.effect("AL 4.1 errorMessage is set by a failed turn and cleared by the next run", () =>
      Effect.gen(function*() {
        const { agent } = yield* setup([{ fail: "rate limited", as: "error" }, say("fine")])
        yield* agent.prompt("go")
        const failed = yield* stateOf(agent)
        assert.strictEqual(failed.errorMessage, "rate limited")
        assert.strictEqual((failed.messages.at(-1) as AssistantMessage).stopReason, "error")
        yield* agent.prompt("again")
        assert.isUndefined((yield* stateOf(agent)).errorMessage)
      }))

    it.effect("AL 4.1 an event arriving while someone else holds the state (updateEffect) waits for it: no update is lost", () =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent, events } = yield* setup([callTools([call("g", "gate")]), say("done")], {}, [gate.tool])
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "the tool runs")
        const held = Deferred.makeUnsafe<void>()
        const release = Deferred.makeUnsafe<void>()
        const outside = yield* SubscriptionRef.updateEffect(agent.state, (s) =>
          Deferred.succeed(held, undefined).pipe(
            Effect.andThen(Deferred.await(release)),
            Effect.as({ ...s, systemPrompt: "set from outside" })
          )).pipe(Effect.forkChild)
        yield* within(Deferred.await(held), "the state is held from outside")
        const before = events.length
        yield* Deferred.succeed(gate.open, undefined)
        yield* settle
        // The tool's end event was delivered to no one yet: its state update waits for the holder.
        assert.strictEqual(events.length, before, "delivery waits for the state")
        yield* Deferred.succeed(release, undefined)
        yield* within(Fiber.join(outside), "the outside update ends")
        yield* within(Fiber.join(run), "prompt settles")
        const state = yield* stateOf(agent)
        assert.strictEqual(state.systemPrompt, "set from outside", "the outside update is kept")
        assert.deepStrictEqual(state.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"])
        assertWellFormed(state.messages)
        assert.strictEqual(state.pendingToolCalls.size, 0)
        assert.isFalse(state.isStreaming)
      }))

    it.effect("AL 4.1 changes stream every state, from idle through streaming back to idle", () =>
      Effect.gen(function*() {
        const { agent } = yield* setup([callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")])
        const ready = Deferred.makeUnsafe<void>()
        const collector = yield* SubscriptionRef.changes(agent.state).pipe(
          Stream.tap(() => Deferred.succeed(ready, undefined)),
          Stream.takeUntil((s) => !s.isStreaming && s.messages.length === 4),
          Stream.runCollect,
          Effect.forkChild
        )
        yield* Deferred.await(ready)
        yield* agent.prompt("go")
        const states = yield* within(Fiber.join(collector), "changes complete")
        assert.isFalse(states[0]!.isStreaming)
        assert.isTrue(states.some((s) => s.isStreaming && s.pendingToolCalls.has("c1")))
        assert.isTrue(states.some((s) => s.streamingMessage?.role === "assistant"))
        const last = states.at(-1)!
        assert.isFalse(last.isStreaming)
        assert.strictEqual(last.messages.length, 4)
      }))

    it.effect("AL 4.1 setMessages and setSystemPrompt", () =>
      Effect.gen(function*() {
        const gate = makeGate()
        const { agent, model } = yield* setup([callTools([call("g", "gate")]), say("done"), say("ok")], {}, [gate.tool])
        yield* agent.setSystemPrompt("New prompt.")
        const run = yield* agent.prompt("go").pipe(Effect.forkChild)
        yield* within(Deferred.await(gate.started), "tool runs")
        const refused = yield* agent.setMessages([]).pipe(Effect.flip)
        assert.strictEqual(refused._tag, "AgentBusy")
        yield* Deferred.succeed(gate.open, undefined)
        yield* Fiber.join(run)
        yield* agent.setMessages([user("fresh")])
        yield* agent.continue
        const requests = yield* model.requests
        assert.strictEqual(requests[0]!.systemPrompt, "New prompt.")
        assert.deepStrictEqual(userTexts(requests[2]!), ["fresh"])
      }))
  })

  it.effect("AL 4.1 Agent.layer serves an agent built from options", () =>
    Effect.gen(function*() {
      const agent = yield* Agent.Agent
      yield* agent.prompt("hi")
      assert.strictEqual(textOf((yield* stateOf(agent)).messages.at(-1)), "layered")
    }).pipe(
      Effect.provide(
        Agent.Agent.layer({ systemPrompt: "s" }).pipe(
          Layer.provide([ScriptedModel.layer([say("layered")]), ToolRegistry.empty])
        )
      )
    ))
})

// ---------------------------------------------------------------------------------------------------------
// PromiseAgent
// ---------------------------------------------------------------------------------------------------------

const promiseLayer = (
  script: ReadonlyArray<ScriptedModel.Step>,
  tools: ReadonlyArray<RegisteredTool> = standardTools
) => Layer.merge(ScriptedModel.layer(script), ToolRegistry.fromEntries(tools))

/** A tool that waits for a promise the test resolves. */
const promiseGate = () => {
  let open!: () => void
  let started!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  const startedP = new Promise<void>((resolve) => (started = resolve))
  const tool = customTool("gate", () =>
    Effect.promise(async () => {
      started()
      await opened
      return { content: [{ type: "text" as const, text: "opened" }], details: {} }
    }))
  return { tool, open: () => open(), started: startedP }
}

describe("PromiseAgent", () => {
  it("AL 4.1 basic flow: prompt, events to subscribers, state", async () => {
    const agent = new PromiseAgent({
      layer: promiseLayer([callTools([call("c1", "add", { a: 1, b: 2 })]), say("3")]),
      systemPrompt: "Add."
    })
    try {
      const events: Array<string> = []
      const unsubscribe = await agent.subscribe((e) => void events.push(e.type))
      await agent.prompt("1+2?")
      const state = await agent.state()
      assert.deepStrictEqual(state.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"])
      assert.strictEqual(textOf(state.messages.at(-1)), "3")
      assert.isFalse(state.isStreaming)
      assert.strictEqual(events[0], "agent_start")
      assert.strictEqual(events.at(-1), "agent_end")
      await unsubscribe()
      const n = events.length
      await agent.followUp("more?")
      await agent.reset()
      assert.deepStrictEqual((await agent.state()).messages, [])
      assert.strictEqual(events.length, n)
    } finally {
      await agent.dispose()
    }
  })

  it("AL 4.2 rejections carry the agent's texts", async () => {
    const gate = promiseGate()
    const agent = new PromiseAgent({ layer: promiseLayer([callTools([call("g", "gate")]), say("done")], [gate.tool]) })
    try {
      await agent.continue().then(
        () => assert.fail("continue on an empty transcript must reject"),
        (e) => {
          assert.strictEqual(e._tag, "CannotContinue")
          assert.strictEqual(e.message, "No messages to continue from")
        }
      )
      const run = agent.prompt("go")
      await gate.started
      await agent.prompt("again").then(
        () => assert.fail("prompt during a run must reject"),
        (e) => {
          assert.strictEqual(e._tag, "AgentBusy")
          assert.strictEqual(e.message, PROMPT_BUSY)
        }
      )
      await agent.continue().then(
        () => assert.fail("continue during a run must reject"),
        (e) => assert.strictEqual(e.message, CONTINUE_BUSY)
      )
      await agent.reset().then(
        () => assert.fail("reset during a run must reject"),
        (e) => assert.strictEqual(e._tag, "AgentBusy")
      )
      gate.open()
      await run
      await agent.continue().then(
        () => assert.fail("continue from an assistant tail must reject"),
        (e) => assert.strictEqual(e.message, "Cannot continue from message role: assistant")
      )
    } finally {
      await agent.dispose()
    }
  })

  it("AL 4.7 a throwing or rejecting subscriber does not break the run; waitForIdle and abort work", async () => {
    const gate = promiseGate()
    const agent = new PromiseAgent({ layer: promiseLayer([callTools([call("g", "gate")]), say("never")], [gate.tool]) })
    try {
      await agent.subscribe((e) => {
        if (e.type === "message_end") throw new Error("sync")
      })
      await agent.subscribe(async (e) => {
        if (e.type === "tool_execution_start") throw new Error("async")
      })
      let signal: AbortSignal | undefined
      await agent.subscribe((_e, s) => void (signal = s))
      const run = agent.prompt("go")
      await gate.started
      await agent.abort()
      await agent.waitForIdle()
      await run
      assert.isTrue(signal?.aborted)
      const state = await agent.state()
      assertWellFormed(state.messages)
      assert.deepStrictEqual(state.messages.map((m) => m.role), ["user", "assistant", "toolResult"])
      assert.isFalse(state.isStreaming)
    } finally {
      await agent.dispose()
    }
  })

  it("AL 4.4 steering and follow-ups through the facade", async () => {
    const gate = promiseGate()
    const agent = new PromiseAgent({
      layer: promiseLayer([callTools([call("g", "gate")]), say("steered"), say("followed")], [gate.tool])
    })
    try {
      const run = agent.prompt("go")
      await gate.started
      await agent.steer("S")
      await agent.followUp("F")
      gate.open()
      await run
      const state = await agent.state()
      assert.deepStrictEqual(state.messages.map((m) => m.role === "user" ? textOf(m) : m.role), [
        "go",
        "assistant",
        "toolResult",
        "S",
        "assistant",
        "F",
        "assistant"
      ])
    } finally {
      await agent.dispose()
    }
  })
})
