/**
 * Telemetry over random scripted conversations (docs/telemetry.md OT 1.3, 2.1-2.3, 5.5): random tool calls
 * (failures, defects, unknown tools, invalid arguments, terminating, slow and run-aborting tools), model
 * errors, `length` stops, both modes and aborts at random events, run once with no tracer and once with a
 * recording tracer and metrics. Whatever happens: the events are the same; every span ends exactly once and
 * before its parent; one tool span per tool call, one turn span per turn, one chat span per model call;
 * no call is left counted in flight.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Metric, Option, Schema, Tracer } from "effect"
import type { AgentEvent } from "../src/AgentEvent.ts"
import * as Metrics from "../src/internal/telemetry.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import {
  assertBalanced,
  assertOneAgentEnd,
  customTool,
  makeRecorder,
  runLoop,
  scenarioCall,
  skeleton,
  standardTools,
  within
} from "./support/loop.ts"

const CallKind = Schema.Literals(["ok", "fail", "die", "unknown", "invalid", "terminate", "slow", "abort"])
type CallKind = typeof CallKind.Type

const Scenario = Schema.Struct({
  steps: Schema.Array(Schema.Struct({
    kind: Schema.Literals(["say", "tools", "tools", "length", "errorEvent", "errorFail"]),
    calls: Schema.Array(CallKind).check(Schema.isMaxLength(4))
  })).check(Schema.isMaxLength(5)),
  mode: Schema.Literals(["parallel", "sequential"]),
  /** Abort after this event (none when past the end). */
  abortAt: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 80 }))
})
type Scenario = typeof Scenario.Type

const callOf = scenarioCall

const scriptOf = (scenario: Scenario): Array<ScriptedModel.Step> => [
  ...scenario.steps.map((step, turn): ScriptedModel.Step => {
    const calls = step.calls.map((kind, i) => callOf(kind, `t${turn}_${i}`))
    switch (step.kind) {
      case "say":
        return ScriptedModel.say(`answer ${turn}`)
      case "tools":
        return ScriptedModel.callTools(calls, calls.length === 0 ? `nothing ${turn}` : undefined)
      case "length":
        return { ...ScriptedModel.callTools(calls, "cut"), stopReason: "length" }
      case "errorEvent":
        return { fail: `model error ${turn}`, as: "event", content: calls }
      case "errorFail":
        return { fail: `model failure ${turn}`, as: "error", content: calls }
    }
  }),
  ScriptedModel.say("final")
]

/** One run of the scenario; `wrap` installs (or not) the tracer. */
const runScenario = (scenario: Scenario, wrap: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const controller = new AbortController()
    const model = yield* ScriptedModel.make(scriptOf(scenario))
    const tools = [
      ...standardTools,
      customTool("die", () => Effect.die(new Error("tool defect"))),
      customTool("slow", () =>
        Effect.gen(function*() {
          for (let i = 0; i < 5; i++) yield* Effect.yieldNow
          return { content: [{ type: "text" as const, text: "slow done" }], details: {} }
        })),
      customTool("abort", () => Effect.sync(() => controller.abort()).pipe(Effect.andThen(Effect.never)))
    ]
    const recorder = makeRecorder((_event, index) => {
      if (index === scenario.abortAt) controller.abort()
    })
    const result = yield* wrap(within(
      runLoop({
        script: [],
        model,
        tools,
        recorder,
        config: { signal: controller.signal, toolExecution: scenario.mode, abandonAfter: "50 millis" }
      }),
      "the run ends"
    ))
    return result
  })

interface Recorded {
  readonly span: Tracer.NativeSpan
  ends: number
  closed: number | undefined
}

const recordingTracer = () => {
  const spans: Array<Recorded> = []
  let sequence = 0
  const tracer = Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      const recorded: Recorded = { span, ends: 0, closed: undefined }
      const end = span.end.bind(span)
      span.end = (time, exit) => {
        recorded.ends++
        recorded.closed = sequence++
        end(time, exit)
      }
      spans.push(recorded)
      return span
    }
  })
  return { tracer, spans }
}

const countOf = (events: ReadonlyArray<AgentEvent>, type: AgentEvent["type"]) =>
  events.filter((e) => e.type === type).length

describe("Telemetry properties", () => {
  it.effect.prop(
    "OT 1.3, 2.1-2.3, 5.5: random runs: same events, every span ends once before its parent, one span per call, turn and model call",
    { scenario: Scenario },
    ({ scenario }) =>
      Effect.gen(function*() {
        const plain = yield* runScenario(scenario, (effect) => effect)
        const { tracer, spans } = recordingTracer()
        const registry = new Map()
        const traced = yield* runScenario(scenario, (effect) =>
          effect.pipe(Effect.withTracer(tracer), Effect.provideService(Metric.MetricRegistry, registry)))
        assertOneAgentEnd(traced.events)
        assertBalanced(traced.events)
        assert.deepStrictEqual(skeleton(traced.events), skeleton(plain.events), "the same events with a tracer")

        for (const r of spans) {
          assert.strictEqual(r.ends, 1, `${r.span.name} ends exactly once`)
          const parent = Option.getOrUndefined(r.span.parent) as Tracer.Span | undefined
          const parentRecord = parent === undefined ? undefined : spans.find((p) =>
            p.span === parent
          )
          if (parentRecord !== undefined) {
            assert.isTrue(r.closed! < parentRecord.closed!, `${r.span.name} ends before its parent`)
          }
        }
        const named = (prefix: string) => spans.filter((r) => r.span.name.startsWith(prefix))
        assert.strictEqual(named("invoke_agent").length, 1)
        assert.strictEqual(named("turn").length, countOf(traced.events, "turn_start"))
        assert.strictEqual(named("chat ").length, traced.requests.length)
        const started = traced.events.flatMap((e) => e.type === "tool_execution_start" ? [e.toolCallId] : [])
        const toolSpans = named("execute_tool ")
        assert.deepStrictEqual(
          toolSpans.map((r) => r.span.attributes.get("gen_ai.tool.call.id")).sort(),
          [...started].sort(),
          "one tool span per tool call"
        )
        const turnSpans = new Set<Tracer.AnySpan>(named("turn").map((r) => r.span))
        for (const r of toolSpans) {
          assert.isTrue(turnSpans.has(Option.getOrThrow(r.span.parent)), "a tool span's parent is a turn")
        }
        const inFlight = yield* Metric.value(Metrics.toolCallsInFlight).pipe(
          Effect.provideService(Metric.MetricRegistry, registry)
        )
        assert.strictEqual(inFlight.value, 0, "no call left in flight")
      }),
    { timeout: 60_000, arbitrary: { runs: 150, size: 20 } }
  )
})
