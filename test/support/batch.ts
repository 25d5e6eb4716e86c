/**
 * Shared test support for tool batches: assistant messages, tools with scripted behaviours, gates
 * (Deferreds keyed by name) to order what tools do, and a sink that records every event together with
 * markers the tools and hooks leave, as one ordered trace.
 */
import { assert } from "@effect/vitest"
import { type Duration, Effect, Schema } from "effect"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import * as EventSink from "../../src/EventSink.ts"
import type { AssistantMessage, ToolCall, ToolResultMessage } from "../../src/Message.ts"
import { emptyUsage } from "../../src/Message.ts"
import * as Tool from "../../src/Tool.ts"
import { executeToolCalls, type ToolBatchResult, type ToolExecutionOptions } from "../../src/ToolExecution.ts"
import { type RegisteredTool, ToolRegistry } from "../../src/ToolRegistry.ts"
import * as Recording from "./recording.ts"

// ---------------------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------------------

/** A `toolCall` content block. */
export const toolCall = (id: string, name: string, args: Record<string, unknown> = {}): ToolCall => ({
  type: "toolCall",
  id,
  name,
  arguments: args
})

/**
 * An assistant message whose tool calls are the given ones, in that order. A text and a thinking block
 * come first, so the batch must pick the `toolCall` blocks out of mixed content.
 */
export const assistantMessage = (...calls: ReadonlyArray<ToolCall>): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "thinking", thinking: "let me use tools" }, { type: "text", text: "Using tools." }, ...calls],
  api: "test-api",
  provider: "test",
  model: "test-model",
  usage: emptyUsage,
  stopReason: "toolUse",
  timestamp: 0
})

/** The text of the first content block of a message or result. */
export const textOf = (value: { readonly content: ReadonlyArray<{ readonly type: string }> }): string => {
  const block = value.content[0] as { readonly type: string; readonly text?: string } | undefined
  assert.isDefined(block, "expected a content block")
  assert.strictEqual(block!.type, "text")
  return block!.text!
}

// ---------------------------------------------------------------------------------------------------------
// Recording sink
// ---------------------------------------------------------------------------------------------------------

/** The short trace label of an event: `start:<id>`, `update:<id>`, `end:<id>`, `msg_start:<id>`, `msg_end:<id>`. */
const labelOf = (event: AgentEvent): string => {
  switch (event.type) {
    case "tool_execution_start":
      return `start:${event.toolCallId}`
    case "tool_execution_update":
      return `update:${event.toolCallId}`
    case "tool_execution_end":
      return `end:${event.toolCallId}`
    case "message_start":
      return `msg_start:${(event.message as { toolCallId?: string }).toolCallId}`
    case "message_end":
      return `msg_end:${(event.message as { toolCallId?: string }).toolCallId}`
    default:
      return event.type
  }
}

/** Records events and markers in one ordered trace (see support/recording.ts), with {@link labelOf} labels. */
export interface Recorder extends Recording.Recorder {
  /** The trace entries that are event labels of the given kinds, e.g. `["end"]`. */
  readonly labels: (...kinds: ReadonlyArray<string>) => Array<string>
}

export const makeRecorder = (): Recorder => {
  const recorder = Recording.makeRecorder(labelOf)
  return {
    ...recorder,
    labels: (...kinds) => recorder.trace.filter((entry) => kinds.includes(entry.slice(0, entry.lastIndexOf(":"))))
  }
}

// ---------------------------------------------------------------------------------------------------------
// Gates
// ---------------------------------------------------------------------------------------------------------

/** Named one-shot gates: a tool waits on a gate, the test opens it. */
export interface Gates {
  readonly wait: (name: string) => Effect.Effect<void>
  readonly open: (name: string) => Effect.Effect<void>
  readonly isOpen: (name: string) => boolean
}

export const makeGates = (): Gates => {
  const gates = Recording.makeSignals()
  return {
    wait: gates.await,
    open: (name) => Effect.sync(() => gates.fire(name)),
    isOpen: gates.isDone
  }
}

/** See support/recording.ts. */
export const within = Recording.within

/** Lets every runnable fiber make progress (a few scheduler turns). */
export const settleFibers = Recording.settle

// ---------------------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------------------

/** The behaviour of one tool: its handler. */
export type Script = Tool.Handler<any, any>

/** Options for {@link scripted} beside the handler. */
export interface ScriptedOptions {
  readonly parameters?: Tool.Parameters
  readonly executionMode?: "sequential" | "parallel"
  readonly timeout?: Duration.Input
  readonly prepareArguments?: (raw: unknown) => Effect.Effect<unknown, unknown>
}

/** A registered tool named `name` (no parameters unless given) whose handler is `script`. */
export const scripted = (name: string, script: Script, options: ScriptedOptions = {}): RegisteredTool => ({
  tool: Tool.make(name, {
    description: `test tool ${name}`,
    parameters: options.parameters ?? Schema.Struct({}),
    ...(options.executionMode !== undefined ? { executionMode: options.executionMode } : {}),
    ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
    ...(options.prepareArguments !== undefined ? { prepareArguments: options.prepareArguments } : {})
  }),
  handler: script
})

/** A tool whose behaviour depends on the call id (`ctx.toolCallId`); an id without a script dies. */
export const byCallId = (scripts: Record<string, Script>): Script => (args, ctx) => {
  const script = scripts[ctx.toolCallId]
  return script === undefined ? Effect.die(new Error(`no script for call ${ctx.toolCallId}`)) : script(args, ctx)
}

/** Succeeds with a text result (and optional details / terminate). */
export const succeedWith = (text: string, extra: { details?: unknown; terminate?: boolean } = {}): Script => () =>
  Effect.succeed({
    content: [{ type: "text", text }],
    details: extra.details ?? { text },
    ...(extra.terminate !== undefined ? { terminate: extra.terminate } : {})
  })

/**
 * Marks `exec:<id>` in the trace, waits for the gate named after the call id, marks `done:<id>`, and
 * succeeds with the text `done <id>`.
 */
export const gated = (recorder: Recorder, gates: Gates): Script => (_args, ctx) =>
  Effect.gen(function*() {
    yield* recorder.mark(`exec:${ctx.toolCallId}`)
    yield* gates.wait(ctx.toolCallId)
    yield* recorder.mark(`done:${ctx.toolCallId}`)
    return { content: [{ type: "text" as const, text: `done ${ctx.toolCallId}` }], details: { id: ctx.toolCallId } }
  })

/** Marks `exec:<id>` and succeeds at once with the text `ok <id>`. */
export const marking = (recorder: Recorder): Script => (_args, ctx) =>
  Effect.as(recorder.mark(`exec:${ctx.toolCallId}`), {
    content: [{ type: "text" as const, text: `ok ${ctx.toolCallId}` }],
    details: { id: ctx.toolCallId }
  })

// ---------------------------------------------------------------------------------------------------------
// Running a batch
// ---------------------------------------------------------------------------------------------------------

/** Runs a batch against a registry of `tools`, sending events to `sink`. */
export const runBatch = <R = never>(
  message: AssistantMessage,
  tools: ReadonlyArray<RegisteredTool>,
  sink: EventSink.EventSinkShape,
  options: ToolExecutionOptions<R> = {}
): Effect.Effect<ToolBatchResult, never, R> =>
  executeToolCalls(message, options).pipe(
    Effect.provide(ToolRegistry.fromEntries(tools)),
    Effect.provideService(EventSink.EventSink, sink),
    Effect.orDie
  )

// ---------------------------------------------------------------------------------------------------------
// Invariants (TE 10) every batch must satisfy
// ---------------------------------------------------------------------------------------------------------

/**
 * Checks the invariants that hold for any completed batch: per call exactly one start, end, message_start
 * and message_end, in that order, with updates between start and end; result messages in source order,
 * equal (same objects) to the returned list; message_start immediately followed by its message_end; no
 * event after the last message event. Duplicate ids are matched by occurrence.
 */
export const assertBatchInvariants = (
  events: ReadonlyArray<AgentEvent>,
  calls: ReadonlyArray<ToolCall>,
  messages: ReadonlyArray<ToolResultMessage>
): void => {
  const ends = events.filter((e) => e.type === "message_end").map((e) => (e as { message: ToolResultMessage }).message)
  assert.strictEqual(ends.length, calls.length, "one message_end per call")
  assert.strictEqual(messages.length, calls.length, "one returned message per call")
  ends.forEach((m, i) => assert.strictEqual(messages[i], m, `returned message ${i} is the announced one`))
  assert.deepStrictEqual(messages.map((m) => m.toolCallId), calls.map((c) => c.id), "messages in source order")
  assert.deepStrictEqual(messages.map((m) => m.toolName), calls.map((c) => c.name), "message tool names")
  if (calls.length > 0) {
    assert.strictEqual(events[events.length - 1]!.type, "message_end", "no event after the last message event")
  } else {
    assert.strictEqual(events.length, 0, "an empty batch emits nothing")
  }
  events.forEach((e, i) => {
    if (e.type === "message_start") {
      const next = events[i + 1]
      assert.isDefined(next)
      assert.strictEqual(next!.type, "message_end", "message_start is followed by message_end")
      assert.strictEqual((next as { message: unknown }).message, e.message, "same message in start and end")
    }
  })
  const seen = new Map<string, number>()
  for (const call of calls) {
    const k = seen.get(call.id) ?? 0
    seen.set(call.id, k + 1)
    const positions = (type: AgentEvent["type"]) =>
      events.flatMap((e, i) =>
        e.type === type &&
          ((e as { toolCallId?: string }).toolCallId ??
              (e as { message?: { toolCallId?: string } }).message?.toolCallId) ===
            call.id
          ? [i]
          : []
      )
    const occurrences = calls.filter((c) => c.id === call.id).length
    const starts = positions("tool_execution_start")
    const endsAt = positions("tool_execution_end")
    const mStarts = positions("message_start")
    const mEnds = positions("message_end")
    assert.strictEqual(starts.length, occurrences, `starts of ${call.id}`)
    assert.strictEqual(endsAt.length, occurrences, `ends of ${call.id}`)
    assert.strictEqual(mStarts.length, occurrences, `message_starts of ${call.id}`)
    assert.strictEqual(mEnds.length, occurrences, `message_ends of ${call.id}`)
    assert.isTrue(starts[k]! < endsAt[k]!, `start < end for ${call.id}`)
    assert.isTrue(endsAt[k]! < mStarts[k]!, `end < message for ${call.id}`)
    if (occurrences === 1) {
      for (const u of positions("tool_execution_update")) {
        assert.isTrue(starts[0]! < u && u < endsAt[0]!, `update of ${call.id} between start and end`)
      }
    }
  }
}
