/**
 * A durable run without a crash is the in-memory loop (issue 12 item 1): the same scripts give the same
 * events, in the same order, and the same transcript, whether run by `runAgentLoop` or as the durable
 * workflow (here on the in-memory engine). Timestamps are left out of the comparison: they are clock reads.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { ToolCall } from "../../src/Message.ts"
import * as ResourceAccess from "../../src/ResourceAccess.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import * as Tool from "../../src/Tool.ts"
import type { RegisteredTool } from "../../src/ToolRegistry.ts"
import {
  assertBalanced,
  assertMessagesMatchEvents,
  assertOneAgentEnd,
  assertWellFormed,
  customTool,
  runLoop,
  scenarioCall,
  standardTools,
  withoutTimestamps
} from "../support/loop.ts"
import { runDurable } from "./support.ts"

const CallKind = Schema.Literals(["ok", "fail", "die", "unknown", "invalid", "terminate", "slow", "echo", "plain"])
type CallKind = typeof CallKind.Type
const StepKind = Schema.Literals(["say", "tools", "tools", "length", "errorEvent", "errorFail", "toolUseNoCalls"])
const Scenario = Schema.Struct({
  steps: Schema.Array(Schema.Struct({ kind: StepKind, calls: Schema.Array(CallKind).check(Schema.isMaxLength(4)) }))
    .check(Schema.isMaxLength(5)),
  mode: Schema.Literals(["parallel", "sequential"]),
  approve: Schema.Boolean
})
type Scenario = typeof Scenario.Type

const callOf = scenarioCall

const tools = [
  ...standardTools,
  // A result whose details are `undefined`: JSON cannot hold that, the store must still take it.
  customTool("plain", () => Effect.succeed(Tool.textResult("plain"))),
  customTool("die", () => Effect.die(new Error("tool defect"))),
  customTool("slow", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      return { content: [{ type: "text" as const, text: "slow done" }], details: { n: 5 } }
    }))
]

const scriptOf = (scenario: Scenario): Array<ScriptedModel.Step> => [
  ...scenario.steps.map((step, turn): ScriptedModel.Step => {
    const calls = step.calls.map((kind, i) => callOf(kind, `t${turn}_${i}`))
    switch (step.kind) {
      case "tools":
        return ScriptedModel.callTools(calls, calls.length === 0 ? `nothing to call ${turn}` : undefined)
      case "length":
        return { ...ScriptedModel.callTools(calls, "cut"), stopReason: "length" }
      case "errorEvent":
        return { fail: `model error ${turn}`, as: "event", content: calls }
      case "errorFail":
        return { fail: `model failure ${turn}`, as: "error", content: calls }
      case "toolUseNoCalls":
        return ScriptedModel.say(`no calls ${turn}`, { stopReason: "toolUse" })
      default:
        return ScriptedModel.say(`answer ${turn}`)
    }
  }),
  ScriptedModel.say("final")
]

const configOf = (scenario: Scenario) => ({
  toolExecution: scenario.mode,
  // Refuses every echo call: approvals go through the durable path too.
  ...(scenario.approve
    ? {
      beforeToolCall: ({ toolCall }: { toolCall: ToolCall }) =>
        Effect.succeed(toolCall.name === "echo" ? { block: true, reason: `refused ${toolCall.id}` } : undefined)
    }
    : {})
})

describe("durable run parity", () => {
  it.effect.prop(
    "the same script gives the same events and transcript durably and in memory (DR 1.3, 4.1)",
    { scenario: Scenario },
    ({ scenario }) =>
      Effect.gen(function*() {
        const plain = yield* runLoop({ script: scriptOf(scenario), tools, config: configOf(scenario) })
        const durable = yield* runDurable({ script: scriptOf(scenario), tools, config: configOf(scenario) })
        assertOneAgentEnd(durable.events)
        assertBalanced(durable.events)
        // DR 4.1: step results and the transcript are stored faithfully, so they are compared as they are
        // (a key holding `undefined`, e.g. the details of a plain result, is still there).
        assertMessagesMatchEvents(durable.events, durable.messages)
        assertWellFormed(durable.messages)
        assert.deepStrictEqual(withoutTimestamps(durable.events), withoutTimestamps(plain.events))
        assert.deepStrictEqual(withoutTimestamps(durable.messages), withoutTimestamps(plain.messages))
        assert.strictEqual(durable.requests.length, plain.requests.length)
      }),
    { timeout: 60_000, arbitrary: { runs: 60 } }
  )

  it.effect("what calls touch schedules a durable batch as it does the in-memory one (TE 11, DR 1.3)", () =>
    Effect.gen(function*() {
      // A plain-object entry: its handler carries the declaration (Tool.withResources).
      const note: RegisteredTool = {
        tool: Tool.make("note", {
          description: "appends to a note",
          parameters: Schema.Struct({ name: Schema.String })
        }),
        handler: Tool.withResources(
          ({ name }: { readonly name: string }) =>
            Effect.gen(function*() {
              for (let i = 0; i < 5; i++) yield* Effect.yieldNow
              return Tool.textResult(`noted in ${name}`)
            }),
          ({ name }) => [ResourceAccess.write(`notes/${name}`)]
        )
      }
      const script = (): Array<ScriptedModel.Step> => [
        ScriptedModel.callTools([
          ScriptedModel.toolCall("n1", "note", { name: "todo" }),
          ScriptedModel.toolCall("n2", "note", { name: "todo" })
        ]),
        ScriptedModel.say("done")
      ]
      const plain = yield* runLoop({ script: script(), tools: [note] })
      const durable = yield* runDurable({ script: script(), tools: [note] })
      const waiting = durable.events.filter((event) => event.type === "tool_execution_waiting")
      assert.deepStrictEqual(waiting, [
        { type: "tool_execution_waiting", toolCallId: "n2", toolName: "note", waitingFor: ["n1"] }
      ])
      assert.deepStrictEqual(withoutTimestamps(durable.events), withoutTimestamps(plain.events))
    }))

  it.live(
    "timeouts (the tool's own, the run's, one abandoned) give the in-memory loop's events and results (DR 4.2)",
    () =>
      Effect.gen(function*() {
        const own: RegisteredTool = {
          tool: Tool.make("own", {
            description: "hangs; has its own timeout",
            parameters: Schema.Struct({}),
            // Long enough for `add`'s durable step to end first even on a loaded machine (20 ms was not).
            timeout: "150 millis"
          }),
          handler: () => Effect.never
        }
        const stubborn: RegisteredTool = {
          tool: Tool.make("stubborn", {
            description: "ignores cancellation for a while",
            parameters: Schema.Struct({}),
            timeout: "700 millis"
          }),
          handler: () => Effect.uninterruptible(Effect.as(Effect.sleep("1500 millis"), Tool.textResult("late")))
        }
        const tools = [...standardTools, own, stubborn, customTool("hang", () => Effect.never)]
        const script = (): Array<ScriptedModel.Step> => [
          ScriptedModel.callTools([
            ScriptedModel.toolCall("t1", "own", {}),
            ScriptedModel.toolCall("t2", "hang", {}),
            ScriptedModel.toolCall("t3", "stubborn", {}),
            ScriptedModel.toolCall("t4", "add", { a: 1, b: 2 })
          ]),
          ScriptedModel.say("done")
        ]
        // Far apart, so the calls end in the same order on both sides even on a loaded machine.
        const config = { timeout: "450 millis", abandonAfter: "50 millis" } as const
        const plain = yield* runLoop({ script: script(), tools, config })
        const durable = yield* runDurable({ script: script(), tools, config })
        const details = plain.messages.flatMap((
          m
        ) => (m.role === "toolResult" ? [(m as { details?: unknown }).details] : []))
        assert.deepStrictEqual(details.slice(0, 3), [
          { timedOut: true, abandoned: false },
          { timedOut: true, abandoned: false },
          { timedOut: true, abandoned: true }
        ])
        assert.deepStrictEqual(withoutTimestamps(durable.events), withoutTimestamps(plain.events))
        assert.deepStrictEqual(withoutTimestamps(durable.messages), withoutTimestamps(plain.messages))
      }),
    30_000
  )
})
