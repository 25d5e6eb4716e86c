/**
 * Issue 16 item 10: `--json` output grows linearly. Each event is printed once with what changed: a
 * streaming step without the message so far, a tool update without the arguments and, when its text only
 * grew, with just the added text. The lines still let a reader rebuild everything: the streamed text, each
 * call's arguments and each call's progress.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Agent from "../../src/Agent.ts"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import { makeJsonLineEncoder } from "../../src/cli/JsonLines.ts"
import { Model } from "../../src/Model.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import type { ToolContext } from "../../src/Tool.ts"
import { ToolRegistry } from "../../src/ToolRegistry.ts"
import { customTool, echoTool } from "../support/loop.ts"

/** The events of a run whose single response makes `calls` tiny `echo` calls, then says "done". */
const runEvents = (calls: number) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.make([
      ScriptedModel.callTools(
        Array.from({ length: calls }, (_, i) => ScriptedModel.toolCall(`call-${i}`, "echo", { text: `t${i}` })),
        "Calling."
      ),
      ScriptedModel.say("All done.")
    ])
    const agent = yield* Agent.make({}).pipe(
      Effect.provideService(Model, model),
      Effect.provide(ToolRegistry.fromEntries([echoTool])),
      Effect.orDie
    )
    const events: Array<AgentEvent> = []
    yield* agent.subscribe((event) => Effect.sync(() => void events.push(event)))
    yield* agent.prompt("go")
    return events
  })

const encodeAll = (events: ReadonlyArray<AgentEvent>): Array<string> => {
  const encoder = makeJsonLineEncoder()
  return events.map((event) => encoder.encode(event))
}
const bytes = (lines: ReadonlyArray<string>) => lines.reduce((n, line) => n + Buffer.byteLength(line) + 1, 0)

describe("--json lines (makeJsonLineEncoder)", () => {
  it.effect("a call's id is on a bounded number of lines however many calls the response makes", () =>
    Effect.gen(function*() {
      const lines = encodeAll(yield* runEvents(200))
      // Printing every event whole put call-0 on every later streaming line (hundreds of them).
      // Its lines: toolcall_end, tool start and end, result message start and end, the assistant's
      // message_end, turn_end, agent_end.
      const withFirst = lines.filter((line) => line.includes("\"call-0\""))
      assert.isAtMost(withFirst.length, 10, `${withFirst.length} lines mention call-0`)
    }))

  it.effect("output size grows linearly with the number of calls", () =>
    Effect.gen(function*() {
      const small = bytes(encodeAll(yield* runEvents(100)))
      const large = bytes(encodeAll(yield* runEvents(400)))
      // Linear: 4x the calls, about 4x the bytes (whole events gave about 15x: 3.5 MB and 51 MB; for 500
      // calls 79 MB, now 0.86 MB).
      assert.isBelow(large / small, 5, `100 calls: ${small} bytes, 400 calls: ${large} bytes`)
    }))

  it.effect("every line is JSON; the streamed text and each call's arguments can be rebuilt from the lines", () =>
    Effect.gen(function*() {
      const events = yield* runEvents(20)
      const lines = encodeAll(events)
      assert.strictEqual(lines.length, events.length)
      const parsed = lines.map((line) => JSON.parse(line))
      parsed.forEach((line, i) => assert.strictEqual(line.type, events[i].type))
      const steps = parsed.filter((l) => l.type === "message_update").map((l) => l.assistantMessageEvent)
      for (const step of steps) {
        assert.notProperty(step, "partial")
        assert.notProperty(step, "message")
      }
      const text = steps.filter((s) => s.type === "text_delta").map((s) => s.delta).join("")
      assert.strictEqual(text, "Calling.All done.")
      // Tool-call arguments: the deltas of each block, joined, are its JSON.
      const argsOf = new Map<number, string>()
      for (const s of steps.filter((s) => s.type === "toolcall_delta")) {
        argsOf.set(s.contentIndex, (argsOf.get(s.contentIndex) ?? "") + s.delta)
      }
      assert.deepStrictEqual(JSON.parse(argsOf.get(1)!), { text: "t0" })
      assert.deepStrictEqual(JSON.parse(argsOf.get(20)!), { text: "t19" })
      // The final message is on the message_end line, whole.
      const ends = parsed.filter((l) => l.type === "message_end" && l.message.role === "assistant")
      assert.strictEqual(ends.at(-1).message.content[0].text, "All done.")
    }))

  it.effect("a tool's growing progress text is printed as what was added; other updates whole", () =>
    Effect.gen(function*() {
      const progress = ["line 1\n", "line 1\nline 2\n", "line 2\nline 3\n"] // the last one cut its head
      const streamer = customTool("stream", (_args: unknown, context: ToolContext<unknown>) =>
        Effect.gen(function*() {
          for (const text of progress) {
            yield* context.update({ content: [{ type: "text", text }], details: { running: true } })
          }
          yield* context.update({
            content: [{ type: "image", data: "AA==", mimeType: "image/png" }],
            details: { running: true }
          })
          return { content: [{ type: "text", text: "finished" }], details: { running: false } }
        }), Schema.Struct({ big: Schema.String }))
      const model = yield* ScriptedModel.make([
        ScriptedModel.callTools([ScriptedModel.toolCall("s1", "stream", { big: "x".repeat(1000) })]),
        ScriptedModel.say("ok")
      ])
      const agent = yield* Agent.make({}).pipe(
        Effect.provideService(Model, model),
        Effect.provide(ToolRegistry.fromEntries([streamer])),
        Effect.orDie
      )
      const events: Array<AgentEvent> = []
      yield* agent.subscribe((event) => Effect.sync(() => void events.push(event)))
      yield* agent.prompt("go")
      const updates = encodeAll(events).map((l) => JSON.parse(l)).filter((l) => l.type === "tool_execution_update")
      assert.strictEqual(updates.length, 4)
      for (const u of updates) assert.notProperty(u, "args") // the 1000-character argument is on the start line only
      assert.deepStrictEqual(updates[0].partialResult, {
        content: [{ type: "text", text: "line 1\n" }],
        details: { running: true }
      })
      assert.deepStrictEqual(updates[1], {
        type: "tool_execution_update",
        toolCallId: "s1",
        toolName: "stream",
        partialResult: { details: { running: true } },
        textAppended: "line 2\n"
      })
      assert.deepStrictEqual(updates[2].partialResult.content, [{ type: "text", text: "line 2\nline 3\n" }])
      assert.notProperty(updates[2], "textAppended")
      assert.deepStrictEqual(updates[3].partialResult.content[0].type, "image")
    }))

  it("a value JSON cannot hold (a bigint, a cycle) gives a JSON line, not a crash", () => {
    const encoder = makeJsonLineEncoder()
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const big = encoder.encode({
      type: "tool_execution_end",
      toolCallId: "b",
      toolName: "x",
      result: { content: [], details: 10n },
      isError: false
    })
    assert.deepStrictEqual(JSON.parse(big).result, { content: [], details: "10" })
    const cycle = JSON.parse(
      encoder.encode({
        type: "tool_execution_end",
        toolCallId: "c",
        toolName: "x",
        result: { content: [], details: cyclic },
        isError: false
      })
    )
    assert.strictEqual(cycle.type, "tool_execution_end")
    assert.strictEqual(cycle.toolCallId, "c")
    assert.match(cycle.unencodable, /circular/i)
  })
})
