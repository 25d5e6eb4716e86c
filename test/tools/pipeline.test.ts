/** The built-in tools inside the real tool-execution pipeline (registry, validation, modes, abort). */
import { assert, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import * as EventSink from "../../src/EventSink.ts"
import type { AssistantMessage, ToolResultMessage } from "../../src/Message.ts"
import * as ResourceAccess from "../../src/ResourceAccess.ts"
import type * as Tool from "../../src/Tool.ts"
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
  it.live("a mixed batch runs in parallel, each call after the earlier ones it touches (TE 11): a sequential run's results", () =>
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
      // Parallel: every start first (the invalid call 6 ends in preflight), then the ends. Each call touches
      // what the one before it touched (one file; bash and the unresolvable path are exclusive), so they end
      // in source order, each having waited for the one before it.
      assert.deepStrictEqual(order(result.events), [
        ...[1, 2, 3, 4, 5, 6].map((i) => `start:${i}`),
        "end:6",
        "start:7",
        ...[1, 2, 3, 4, 5, 7].map((i) => `end:${i}`)
      ])
      const waits = new Map(
        result.events.flatMap((e) => e.type === "tool_execution_waiting" ? [[e.toolCallId, e.waitingFor]] : [])
      )
      assert.deepStrictEqual(waits.get("2"), ["1"])
      assert.deepStrictEqual(waits.get("3"), ["2"])
      assert.deepStrictEqual(waits.get("5"), ["4"])
      assert.deepStrictEqual(waits.get("7"), ["5"])
      assert.deepStrictEqual([...waits.keys()].sort(), ["2", "3", "4", "5", "7"])
      assert.strictEqual(yield* box.get("notes/todo.md"), "- one\n- 2\n")
    }).pipe(Effect.provide(platform)))

  it.live("TE 11: each built-in tool declares what it touches: its path resolved in the workspace; bash everything", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      yield* box.put("src/math.ts", "x")
      yield* box.fs.symlink(box.path.join(box.root, "src"), box.path.join(box.root, "alias"))
      const real = yield* box.fs.realPath(box.root)
      const declared = (tool: Tool.Tool.Any, args: unknown) => {
        const handler: Tool.Handler<unknown> = Context.get(box.context as Context.Context<any>, tool.Handler)
        const resources = handler.resources!(args)
        return Effect.isEffect(resources) ? resources : Effect.succeed(resources)
      }
      const file = `${real}/src/math.ts`
      assert.deepStrictEqual(yield* declared(BuiltinTools.read, { path: "src/math.ts" }), [ResourceAccess.read(file)])
      // Other spellings of one file, a link among them, are the same key.
      assert.deepStrictEqual(yield* declared(BuiltinTools.edit, { path: "./src/../src/math.ts" }), [
        ResourceAccess.write(file)
      ])
      assert.deepStrictEqual(yield* declared(BuiltinTools.write, { path: `${box.root}/alias/math.ts` }), [
        ResourceAccess.write(file)
      ])
      for (const tool of [BuiltinTools.ls, BuiltinTools.find, BuiltinTools.grep]) {
        assert.deepStrictEqual(yield* declared(tool, {}), [ResourceAccess.read(real)], tool.name)
        assert.deepStrictEqual(yield* declared(tool, { path: "src" }), [ResourceAccess.read(`${real}/src`)], tool.name)
      }
      assert.deepStrictEqual(yield* declared(BuiltinTools.bash, { command: "ls" }), [ResourceAccess.exclusive])
      // A path the workspace refuses: its call will fail, and nothing may race it meanwhile.
      assert.deepStrictEqual(yield* declared(BuiltinTools.read, { path: "../escape.txt" }), [ResourceAccess.exclusive])
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
