/**
 * Spans and metrics of a run, following the OpenTelemetry GenAI semantic conventions: one `invoke_agent`
 * span per run, one `turn` span per turn, one `chat` span per model response and one `execute_tool` span per
 * tool call (with `tool.approval`, `tool.execution` and `tool.finalize` spans for the phases that take time).
 * They go through Effect's own tracer, so any installed Effect tracer (`@effect/opentelemetry`, a test's
 * recording tracer) sees them.
 *
 * When no tracer is installed (only Effect's native one, whose spans go nowhere) or tracing is disabled,
 * nothing is created: the loop and the batch each ask once whether to trace (`internal/telemetry.ts`, the
 * hooks they call), and every hook is then a test of `undefined`. Metrics follow the same switch unless
 * {@link RecordMetrics} says otherwise.
 *
 * Contents (system prompt, messages, tool arguments and results) are never attributes unless
 * {@link RecordContents} is `true`. The rules are `docs/telemetry.md` (OT n.m).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"

// ---------------------------------------------------------------------------------------------------------
// Switches
// ---------------------------------------------------------------------------------------------------------

/**
 * Whether prompts, messages, tool arguments and tool results are recorded as span attributes (OT 4.1).
 * Default `false`: they may hold secrets and personal data.
 */
export const RecordContents = Context.Reference<boolean>("effect-agent/Telemetry/RecordContents", {
  defaultValue: () => false
})

/**
 * Whether the metrics are recorded (OT 5.1): `"auto"` (the default) when a tracer is installed, `true`
 * always (e.g. metrics exported without traces), `false` never.
 */
export const RecordMetrics = Context.Reference<boolean | "auto">("effect-agent/Telemetry/RecordMetrics", {
  defaultValue: () => "auto"
})

/** Records contents as attributes in `effect` (see {@link RecordContents}). */
export const withContents = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, RecordContents, true)

// ---------------------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------------------

/** Seconds from a tool call's start event to its end event, by `gen_ai.tool.name` and outcome (OT 5.2). */
export const toolCallDuration = Metric.histogram("effect_agent.tool.call.duration", {
  description: "Duration of a tool call, from its start event to its end event, in seconds",
  boundaries: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300]
})

/** Tokens reported by model responses, by `gen_ai.request.model` and `gen_ai.token.type` (OT 5.3). */
export const modelTokens = Metric.counter("effect_agent.model.tokens", {
  description: "Tokens reported by model responses"
})

/** Seconds from a model call's start to its first content event, by `gen_ai.request.model` (OT 5.4). */
export const modelTimeToFirstToken = Metric.histogram("effect_agent.model.time_to_first_token", {
  description: "Time from a model request to its first content event, in seconds",
  boundaries: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60]
})

/** Tool calls started and not yet ended (OT 5.5). */
export const toolCallsInFlight = Metric.gauge("effect_agent.tool.calls_in_flight", {
  description: "Tool calls between their start and end events"
})
