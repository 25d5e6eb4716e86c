/**
 * Reaching a durable run from outside (issue 12 item 3): steering and follow-up messages go through the
 * run's inbox and are read at the loop's usual points (after the batch; when the run would stop), and an
 * abort goes through the engine's durable interrupt.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import * as DurableAgent from "../../src/durable/DurableAgent.ts"
import * as EventSink from "../../src/EventSink.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import * as Tool from "../../src/Tool.ts"
import { assertWellFormed, customTool, makeRecorder, textOf, user } from "../support/loop.ts"
import { memoryServices } from "./support.ts"

describe("durable runs from outside", () => {
  it.effect("a steering message sent during a batch is read after it, a follow-up when the run would stop (DR 3.1)", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const wait = customTool("wait", () =>
        Deferred.succeed(entered, undefined).pipe(
          Effect.andThen(Deferred.await(gate)),
          Effect.as(Tool.textResult("waited"))
        ))
      const model = yield* ScriptedModel.make([
        ScriptedModel.callTools([ScriptedModel.toolCall("c1", "wait", {})]),
        ScriptedModel.say("steered"),
        ScriptedModel.say("followed up")
      ])
      const result = yield* Effect.gen(function*() {
        const run = yield* Effect.forkChild(DurableAgent.run({ runId: "run-s", prompts: [user("hi")] }))
        yield* Deferred.await(entered)
        yield* DurableAgent.steer("run-s", user("steer me"))
        yield* DurableAgent.followUp("run-s", user("follow me"))
        yield* Deferred.succeed(gate, undefined)
        const result = yield* Fiber.join(run)
        // A finished run nobody listens to is forgotten: the process's run map does not grow with every run.
        assert.strictEqual((yield* DurableAgent.RunListeners).size, 0)
        return result
      }).pipe(Effect.provide(memoryServices(model, [wait], { inbox: true })))
      assert.deepStrictEqual(
        result.messages.map((m) => `${m.role}:${m.role === "toolResult" ? m.toolCallId : textOfMessage(m)}`),
        [
          "user:hi",
          "assistant:",
          "toolResult:c1",
          "user:steer me",
          "assistant:steered",
          "user:follow me",
          "assistant:followed up"
        ]
      )
      assertWellFormed(result.messages)
      const requests = yield* model.requests
      assert.strictEqual(requests.length, 3)
      assert.strictEqual(textOf(requests[1]!.messages.at(-1)), "steer me")
    }))

  it.effect("without `inbox`, messages sent to the run are not read (DR 3.1)", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([ScriptedModel.say("only answer")])
      const result = yield* Effect.gen(function*() {
        yield* DurableAgent.followUp("run-n", user("ignored"))
        return yield* DurableAgent.run({ runId: "run-n", prompts: [user("hi")] })
      }).pipe(Effect.provide(memoryServices(model, [])))
      assert.deepStrictEqual(result.messages.map((m) => m.role), ["user", "assistant"])
    }))

  it.effect("abort from outside ends the run: the running call is settled and no model call follows (DR 3.2)", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      const hang = customTool("hang", () => Deferred.succeed(entered, undefined).pipe(Effect.andThen(Effect.never)))
      const model = yield* ScriptedModel.make([
        ScriptedModel.callTools([ScriptedModel.toolCall("c1", "hang", {})]),
        ScriptedModel.say("never asked")
      ])
      const recorder = makeRecorder()
      const exit = yield* Effect.gen(function*() {
        const run = yield* Effect.forkChild(
          DurableAgent.run({ runId: "run-a", prompts: [user("hi")] }).pipe(
            Effect.provideService(EventSink.EventSink, recorder.sink)
          )
        )
        yield* Deferred.await(entered)
        yield* DurableAgent.abort("run-a")
        return yield* Fiber.await(run)
      }).pipe(Effect.provide(memoryServices(model, [hang])))
      assert.isTrue(Exit.isSuccess(exit))
      const messages = Exit.isSuccess(exit) ? exit.value.messages : []
      assert.deepStrictEqual(messages.map((m) => m.role), ["user", "assistant", "toolResult"])
      const result = messages[2]!
      assert.isTrue(result.role === "toolResult" && result.isError)
      assert.match(textOf(result), /interrupted after it started: the run was aborted/)
      assert.strictEqual(recorder.events.at(-1)?.type, "agent_end")
      assert.strictEqual((yield* model.requests).length, 1)
    }))
})

const textOfMessage = (m: { readonly content: unknown }) =>
  typeof m.content === "string"
    ? m.content
    : (m.content as ReadonlyArray<{ type: string; text?: string }>).filter((c) => c.type === "text").map((c) => c.text)
      .join("")
