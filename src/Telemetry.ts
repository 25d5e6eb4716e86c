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
 * {@link RecordContents} is `true`. The rules are `docs/telemetry.md` (OT n.m), which names the metrics
 * (defined in `internal/telemetry.ts`, exported under their `effect_agent.*` names).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

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
