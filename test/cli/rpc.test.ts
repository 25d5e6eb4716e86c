/**
 * CLI 11.2-11.4 (docs/cli.md), in-process: the RPC server on an agent with a scripted model. A gated tool
 * holds the run open, so commands sent "during the run" are sent while it is certainly running.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Cause, Deferred, Effect, Fiber, Queue, Stream, SubscriptionRef } from "effect"
import * as Agent from "../../src/Agent.ts"
import * as Rpc from "../../src/cli/Rpc.ts"
import { Model } from "../../src/Model.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import { ToolRegistry } from "../../src/ToolRegistry.ts"
import { customTool } from "../support/loop.ts"

describe("Rpc.parseCommand", () => {
  it("CLI 11.3: decodes each command; a bad line gets a one-line error naming the line", () => {
    assert.deepStrictEqual(Rpc.parseCommand(`{"type":"steer","message":"hi","id":"7"}`, 1), {
      type: "steer",
      message: "hi",
      id: "7"
    })
    assert.deepStrictEqual(Rpc.parseCommand(`{"type":"abort"}`, 1), { type: "abort" })
    const bad = Rpc.parseCommand(`{"type":"follow_up","id":"x","message":3}`, 9)
    assert.deepStrictEqual(bad, {
      type: "response",
      command: "follow_up",
      id: "x",
      success: false,
      error: "line 9: \"follow_up\" needs a \"message\" string"
    })
    assert.deepStrictEqual(Rpc.parseCommand(`[1,2]`, 2), {
      type: "response",
      command: undefined,
      success: false,
      error: "line 2: a command is a JSON object with a \"type\""
    })
  })
})

describe("Rpc.serve", () => {
  it.effect("CLI 11.2, 11.4: follow_up during a run is queued; abort settles the held call; the end of input ends it", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      const gate = customTool("wait", () => Effect.andThen(Deferred.succeed(entered, undefined), Effect.never))
      const model = yield* ScriptedModel.make([
        ScriptedModel.callTools([ScriptedModel.toolCall("w1", "wait", {})], "Waiting."),
        ScriptedModel.say("After the abort."),
        ScriptedModel.say("The follow-up answer.")
      ])
      const agent = yield* Agent.make({}).pipe(
        Effect.provideService(Model, model),
        Effect.provide(ToolRegistry.fromEntries([gate])),
        Effect.orDie
      )
      const input = yield* Queue.unbounded<string, Cause.Done>()
      const out: Array<any> = []
      const server = yield* Rpc.serve({
        agent,
        lines: Stream.fromQueue(input),
        writeLine: (line) => Effect.sync(() => void out.push(JSON.parse(line)))
      }).pipe(Effect.forkChild)
      const send = (command: unknown) => Queue.offer(input, JSON.stringify(command))
      const responseTo = (id: string) =>
        Effect.gen(function*() {
          while (true) {
            const found = out.find((l) => l.type === "response" && l.id === id)
            if (found !== undefined) return found
            yield* Effect.yieldNow
          }
        })

      yield* send({ type: "prompt", id: "p", message: "go" })
      yield* Deferred.await(entered) // the run is inside the gated tool
      yield* send({ type: "follow_up", id: "f", message: "and then?" })
      assert.deepStrictEqual((yield* responseTo("f")).data, { queued: true })
      yield* send({ type: "get_state", id: "s" })
      const state = yield* responseTo("s")
      assert.isTrue(state.data.isStreaming)
      assert.deepStrictEqual(state.data.pendingToolCalls, ["w1"])
      yield* send({ type: "abort", id: "a" })
      assert.deepStrictEqual((yield* responseTo("a")).data, { aborted: true })
      yield* Queue.end(input)
      // The input has ended: the server returns once the aborted run is over.
      yield* Fiber.join(server)
      const settled = out.find((l) => l.type === "tool_execution_end" && l.toolCallId === "w1")
      assert.isDefined(settled, "the held call got its result")
      assert.isTrue(settled.isError)
      assert.isTrue(out.some((l) => l.type === "agent_end"))
      assert.isFalse((yield* SubscriptionRef.get(agent.state)).isStreaming)
      // Every command got exactly one response, before what it caused.
      assert.deepStrictEqual(out.filter((l) => l.type === "response").map((l) => l.id), ["p", "f", "s", "a"])
      assert.isBelow(out.findIndex((l) => l.id === "p"), out.findIndex((l) => l.type === "agent_start"))
    }))
})
