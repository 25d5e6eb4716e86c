/**
 * The scripted model: its streaming protocol (deltas that reassemble to the reply), stop reasons, failures,
 * delays, request-dependent steps, exhaustion and the recorded requests.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { AssistantMessageEvent } from "../src/AssistantMessageEvent.ts"
import type { AssistantContent, AssistantMessage } from "../src/Message.ts"
import { Model, ModelError, type ModelRequest } from "../src/Model.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import { callTools, say, toolCall } from "../src/ScriptedModel.ts"

const request = (text = "hi"): ModelRequest => ({
  systemPrompt: "sys",
  messages: [{ role: "user", content: text, timestamp: 0 }],
  tools: []
})

const collect = (script: ReadonlyArray<ScriptedModel.Step>, options?: ScriptedModel.ScriptOptions) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.make(script, options)
    return yield* Stream.runCollect(model.stream(request()))
  })

/** Rebuilds the content from the deltas alone, as a UI would. */
const reassemble = (events: ReadonlyArray<AssistantMessageEvent>): Array<AssistantContent> => {
  const blocks: Array<{ type: string; text?: string; thinking?: string; json?: string; id?: string; name?: string }> =
    []
  for (const e of events) {
    switch (e.type) {
      case "text_start":
        blocks[e.contentIndex] = { type: "text", text: "" }
        break
      case "text_delta":
        blocks[e.contentIndex]!.text += e.delta
        break
      case "thinking_start":
        blocks[e.contentIndex] = { type: "thinking", thinking: "" }
        break
      case "thinking_delta":
        blocks[e.contentIndex]!.thinking += e.delta
        break
      case "toolcall_start": {
        const block = e.partial.content[e.contentIndex] as { id: string; name: string }
        blocks[e.contentIndex] = { type: "toolCall", json: "", id: block.id, name: block.name }
        break
      }
      case "toolcall_delta":
        blocks[e.contentIndex]!.json += e.delta
        break
      default:
        break
    }
  }
  return blocks.map((b): AssistantContent =>
    b.type === "text"
      ? { type: "text", text: b.text! }
      : b.type === "thinking"
      ? { type: "thinking", thinking: b.thinking! }
      : { type: "toolCall", id: b.id!, name: b.name!, arguments: JSON.parse(b.json!) }
  )
}

const isEvent = Schema.is(AssistantMessageEvent)

describe("ScriptedModel", () => {
  it.effect("streaming deltas reassemble to the reply (text, thinking, tool calls)", () =>
    Effect.gen(function*() {
      const content: Array<AssistantContent> = [
        { type: "thinking", thinking: "Let me think about this for a while, carefully." },
        { type: "text", text: "Here is a fairly long answer that spans several chunks of text." },
        toolCall("c1", "add", { a: 1, b: 2, nested: { list: [1, "two", null], flag: true } }),
        toolCall("c2", "echo", { text: "quote \" and unicode é ✓" })
      ]
      const events = yield* collect([{ content }], { chunkSize: 5 })
      assert.isTrue(events.every(isEvent), "every event matches the protocol schema")
      assert.strictEqual(events[0]!.type, "start")
      const last = events.at(-1)!
      assert.strictEqual(last.type, "done")
      if (last.type !== "done") return
      assert.deepStrictEqual(last.message.content, content)
      assert.strictEqual(last.reason, "toolUse")
      assert.strictEqual(last.message.stopReason, "toolUse")
      assert.deepStrictEqual(reassemble(events), content, "deltas alone rebuild the content")
      // text deltas respect the chunk size, and there are several of them
      const textDeltas = events.filter((e) => e.type === "text_delta")
      assert.isAbove(textDeltas.length, 5)
      assert.isTrue(textDeltas.every((e) => e.type === "text_delta" && e.delta.length <= 5))
      // each *_end carries the whole block
      const textEnd = events.find((e) => e.type === "text_end")
      assert.strictEqual(
        textEnd?.type === "text_end" ? textEnd.content : undefined,
        content[1]!.type === "text" ? content[1]!.text : ""
      )
      const toolEnds = events.filter((e) => e.type === "toolcall_end")
      assert.deepStrictEqual(toolEnds.map((e): unknown => e.type === "toolcall_end" ? e.toolCall : undefined), [
        content[2],
        content[3]
      ])
      // the partial grows monotonically and ends equal to the final message
      const partials = events.flatMap((e) => "partial" in e ? [e.partial as AssistantMessage] : [])
      for (let i = 1; i < partials.length; i++) {
        assert.isAtLeast(partials[i]!.content.length, partials[i - 1]!.content.length)
      }
      assert.deepStrictEqual(partials.at(-1)!.content, content)
      // block order in events follows content order
      const starts = events.filter((e) => e.type.endsWith("_start") && e.type !== "start").map((e) =>
        (e as { contentIndex: number }).contentIndex
      )
      assert.deepStrictEqual(starts, [0, 1, 2, 3])
    }))

  it.effect("text deltas concatenate to the text for any chunk size", () =>
    Effect.gen(function*() {
      const text = "The quick brown fox jumps over the lazy dog."
      for (const chunkSize of [1, 2, 3, 7, 12, 100]) {
        const events = yield* collect([say(text)], { chunkSize })
        const joined = events.flatMap((e) => e.type === "text_delta" ? [e.delta] : []).join("")
        assert.strictEqual(joined, text, `chunkSize ${chunkSize}`)
        const done = events.at(-1)!
        assert.strictEqual(done.type === "done" ? done.reason : "", "stop")
      }
    }))

  it.effect("an empty text still streams a start, one delta and an end", () =>
    Effect.gen(function*() {
      const events = yield* collect([say("")])
      assert.deepStrictEqual(events.map((e) => e.type), ["start", "text_start", "text_delta", "text_end", "done"])
    }))

  it.effect("stop reasons: stop for text, toolUse for calls, or as scripted", () =>
    Effect.gen(function*() {
      const reasons = yield* Effect.forEach(
        [say("a"), callTools([toolCall("c", "x", {})]), {
          ...callTools([toolCall("c", "x", {})]),
          stopReason: "length" as const
        }, say("b", { stopReason: "toolUse" })],
        (step) =>
          Effect.map(collect([step]), (events) => {
            const done = events.at(-1)!
            return done.type === "done" ? [done.reason, done.message.stopReason] : ["?", "?"]
          })
      )
      assert.deepStrictEqual(reasons, [["stop", "stop"], ["toolUse", "toolUse"], ["length", "length"], [
        "toolUse",
        "toolUse"
      ]])
    }))

  it.effect("a failure as an event: the content, then an `error` event with the message", () =>
    Effect.gen(function*() {
      const events = yield* collect([{ fail: "overloaded", content: [{ type: "text", text: "part" }] }])
      const last = events.at(-1)!
      assert.strictEqual(last.type, "error")
      if (last.type !== "error") return
      assert.strictEqual(last.reason, "error")
      assert.strictEqual(last.error.stopReason, "error")
      assert.strictEqual(last.error.errorMessage, "overloaded")
      assert.deepStrictEqual(last.error.content, [{ type: "text", text: "part" }])
    }))

  it.effect("a failure as a typed error: the content streams, then the stream fails with ModelError", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([{
        fail: "rate limited",
        as: "error",
        content: [{ type: "text", text: "abc" }]
      }])
      const seen: Array<string> = []
      const exit = yield* model.stream(request()).pipe(
        Stream.runForEach((e) => Effect.sync(() => void seen.push(e.type))),
        Effect.exit
      )
      assert.deepStrictEqual(seen, ["start", "text_start", "text_delta", "text_end"])
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(
        Stream.runDrain((yield* ScriptedModel.make([{ fail: "x", as: "error" }])).stream(request()))
      )
      assert.instanceOf(error, ModelError)
      assert.strictEqual(error.message, "x")
    }))

  it.effect("steps can depend on the request (plain or effectful); requests are recorded in order", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([
        (req) => say(`you said ${req.messages.length} message(s)`),
        (req) => Effect.succeed(say(`system: ${req.systemPrompt}`))
      ])
      const first = yield* Stream.runCollect(model.stream(request("one")))
      const second = yield* Stream.runCollect(model.stream({ ...request("two"), systemPrompt: "other" }))
      const text = (events: ReadonlyArray<AssistantMessageEvent>) => {
        const done = events.at(-1)!
        return done.type === "done" && done.message.content[0]!.type === "text" ? done.message.content[0]!.text : ""
      }
      assert.strictEqual(text(first), "you said 1 message(s)")
      assert.strictEqual(text(second), "system: other")
      const requests = yield* model.requests
      assert.deepStrictEqual(requests.map((r) => r.messages[0]!.role === "user" ? r.messages[0]!.content : ""), [
        "one",
        "two"
      ])
    }))

  it.effect("when exhausted: a clear ModelError by default, or the last step again", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([say("only")])
      yield* Stream.runDrain(model.stream(request()))
      const error = yield* Effect.flip(Stream.runDrain(model.stream(request())))
      assert.strictEqual(error.reason, "config")
      assert.match(error.message, /1 step/)
      const repeating = yield* ScriptedModel.make([say("again")], { whenExhausted: "repeat-last" })
      for (let i = 0; i < 3; i++) {
        const events = yield* Stream.runCollect(repeating.stream(request()))
        assert.strictEqual(events.at(-1)!.type, "done")
      }
      assert.strictEqual((yield* repeating.requests).length, 3)
    }))

  it.effect("model info shows in the messages", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([say("x")], { info: { provider: "acme", model: "m1" } })
      assert.deepStrictEqual(model.info, { api: "scripted", provider: "acme", model: "m1" })
      const done = (yield* Stream.runCollect(model.stream(request()))).at(-1)!
      if (done.type !== "done") return assert.fail("expected done")
      assert.deepStrictEqual([done.message.api, done.message.provider, done.message.model], ["scripted", "acme", "m1"])
    }))

  it.effect("a delay paces the events in virtual time; interrupting the stream stops it", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([{ ...say("abcdefgh"), delay: "1 second" }], { chunkSize: 2 })
      const seen: Array<string> = []
      const fiber = yield* model.stream(request()).pipe(
        Stream.runForEach((e) => Effect.sync(() => void seen.push(e.type))),
        Effect.forkChild
      )
      yield* TestClock.adjust("2500 millis")
      const soFar = seen.length
      assert.isAtLeast(soFar, 2)
      assert.isBelow(soFar, 8, "not everything arrived yet")
      yield* Fiber.interrupt(fiber)
      yield* TestClock.adjust("1 minute")
      assert.strictEqual(seen.length, soFar, "nothing after the interruption")
    }))

  it.effect("the layer serves the scripted model as the Model service", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const events = yield* Stream.runCollect(model.stream(request()))
      assert.strictEqual(events.at(-1)!.type, "done")
    }).pipe(Effect.provide(ScriptedModel.layer([say("from layer")]))))
})
