/** The built-in tools inside the real tool-execution pipeline (registry, validation, modes, abort). */
import { assert, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import * as EventSink from "../../src/EventSink.ts"
import type { AssistantMessage, ToolResultMessage } from "../../src/Message.ts"
import { executeToolCalls, type ToolExecutionOptions } from "../../src/ToolExecution.ts"
import { ToolRegistry } from "../../src/ToolRegistry.ts"
import * as BuiltinTools from "../../src/tools/index.ts"
import type { ReadDetails } from "../../src/tools/read.ts"
import { assistantMessage, toolCall } from "../support/batch.ts"
import { aliveInGroup, isAlive, platform, type Sandbox, sandbox } from "./helpers.ts"

type Call = readonly [id: string, name: string, args: Record<string, unknown>]

const message = (calls: ReadonlyArray<Call>): AssistantMessage =>
  assistantMessage(...calls.map(([id, name, args]) => toolCall(id, name, args)))

/** Runs a batch against the sandbox's handlers, recording the events. */
const runBatch = (box: Sandbox, assistant: AssistantMessage, options: ToolExecutionOptions = {}) =>
  Effect.gen(function*() {
    const events: Array<AgentEvent> = []
    const registry = ToolRegistry.layer(...BuiltinTools.builtinTools).pipe(
      Layer.provide(Layer.succeedContext(box.context))
    )
    const result = yield* executeToolCalls(assistant, options).pipe(
      Effect.provide(registry),
      Effect.provideService(EventSink.EventSink, EventSink.fromCallback((event) => events.push(event)))
    )
    return { ...result, events }
  })

const texts = (messages: ReadonlyArray<ToolResultMessage>) =>
  messages.map((m) => m.content.map((c) => (c.type === "text" ? c.text : "")).join(""))

const order = (events: ReadonlyArray<AgentEvent>) =>
  events
    .filter((e) => e.type === "tool_execution_start" || e.type === "tool_execution_end")
    .map((e) => `${e.type === "tool_execution_start" ? "start" : "end"}:${(e as { toolCallId: string }).toolCallId}`)

describe("built-in tools in executeToolCalls", () => {
  it.live("a mixed batch runs sequentially (write, edit, bash are sequential) and every call gets its result", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const result = yield* runBatch(
        box,
        message([
          ["1", "write", { path: "notes/todo.md", content: "- one\n- two\n" }],
          ["2", "edit", { path: "notes/todo.md", oldText: "- two", newText: "- 2" }],
          ["3", "read", { path: "notes/todo.md", offset: "2" }], // numeric string: coerced by the pipeline
          ["4", "bash", { command: "wc -l < notes/todo.md" }],
          ["5", "read", { path: "../escape.txt" }],
          ["6", "bash", { command: "" }],
          ["7", "edit", { path: "notes/todo.md", oldText: "- ", newText: "* " }]
        ])
      )
      assert.isFalse(result.aborted)
      assert.deepStrictEqual(result.messages.map((m) => m.isError), [false, false, false, false, true, true, true])
      const [written, edited, read, counted, escaped, invalid, ambiguous] = texts(result.messages)
      assert.strictEqual(written, "Created notes/todo.md (12 bytes).")
      assert.strictEqual(edited, "Edited notes/todo.md: replaced 1 line(s) at line 2 with 1 line(s).")
      assert.strictEqual(read, "- 2")
      assert.strictEqual(counted.trim(), "2")
      expect(escaped).toMatch(/^Path "\.\.\/escape\.txt" is outside the workspace/)
      expect(invalid).toMatch(/^Validation failed for tool "bash":\n {2}- command: /)
      expect(ambiguous).toMatch(/^oldText occurs 2 times in notes\/todo\.md; it must occur exactly once\./)
      assert.deepStrictEqual((result.messages[2].details as ReadDetails).startLine, 2)
      // sequential: each call ends before the next starts
      assert.deepStrictEqual(order(result.events), [1, 2, 3, 4, 5, 6, 7].flatMap((i) => [`start:${i}`, `end:${i}`]))
      assert.strictEqual(yield* box.get("notes/todo.md"), "- one\n- 2\n")
    }).pipe(Effect.provide(platform)))

  it.live("read-only tools run in parallel", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("src/a.ts", "export const a = 1\n")
      yield* box.put("src/b.ts", "export const b = 2\n")
      const result = yield* runBatch(
        box,
        message([
          ["r", "read", { path: "src/a.ts" }],
          ["l", "ls", { path: "src" }],
          ["f", "find", { pattern: "*.ts" }],
          ["g", "grep", { pattern: "const b" }]
        ])
      )
      assert.deepStrictEqual(texts(result.messages), [
        "export const a = 1",
        "a.ts\nb.ts",
        "src/a.ts\nsrc/b.ts",
        "src/b.ts:1: export const b = 2"
      ])
      // parallel: every call starts before the first one ends
      const trace = order(result.events)
      assert.deepStrictEqual(trace.slice(0, 4), ["start:r", "start:l", "start:f", "start:g"])
    }).pipe(Effect.provide(platform)))

  it.live("bash output streams as tool_execution_update events; an abort kills the process group", () =>
    Effect.gen(function*() {
      // Unconfined: the pids the command prints are checked from outside, where the sandbox's mean nothing.
      const box = yield* sandbox().pipe(
        Effect.provideService(BuiltinTools.BashSandbox, { ...BuiltinTools.defaultSandboxSettings, mode: "off" })
      )
      const controller = new AbortController()
      const events: Array<AgentEvent> = []
      let seen = ""
      const registry = ToolRegistry.layer(...BuiltinTools.builtinTools).pipe(
        Layer.provide(Layer.succeedContext(box.context))
      )
      const result = yield* executeToolCalls(
        message([
          ["b", "bash", { command: `echo "pgid $$"; sleep 30 & echo "bg $!"; sleep 30; wait` }],
          ["after", "ls", {}]
        ]),
        { signal: controller.signal, abandonAfter: 10_000 }
      ).pipe(
        Effect.provide(registry),
        Effect.provideService(
          EventSink.EventSink,
          EventSink.fromCallback((event) => {
            events.push(event)
            if (event.type === "tool_execution_update") {
              const partial = event.partialResult as { content: ReadonlyArray<{ text: string }> }
              seen = partial.content[0]?.text ?? ""
              if (/bg \d+/.test(seen)) controller.abort()
            }
          })
        )
      )
      assert.isTrue(result.aborted)
      assert.isTrue(result.messages[0].isError)
      expect(texts(result.messages)[0]).toContain("was interrupted after it started")
      expect(texts(result.messages)[1]).toContain("was not executed")
      assert.isTrue(events.some((e) => e.type === "tool_execution_update"))
      const pgid = Number(/pgid (\d+)/.exec(seen)?.[1])
      const bg = Number(/bg (\d+)/.exec(seen)?.[1])
      assert.isTrue(pgid > 0 && bg > 0)
      assert.deepStrictEqual(aliveInGroup(pgid), [])
      assert.isFalse(isAlive(bg))
    }).pipe(Effect.provide(platform)))
})
