/**
 * Seeing runs in a tracing backend: `effect-agent/telemetry`. A run records its spans and metrics through
 * Effect's tracer whether or not this entry point is loaded; here are the switches (`Telemetry`: contents and
 * metrics) and the OTLP/HTTP export (`TelemetryExport`, which loads the OpenTelemetry SDK only when used). The
 * rules are docs/telemetry.md (OT n.m).
 *
 * @since 0.1.0
 */

/** OpenTelemetry spans and metrics of a run (GenAI semantic conventions): what is recorded. */
export * as Telemetry from "../Telemetry.ts"
/** Exporting them over OTLP/HTTP. */
export * as TelemetryExport from "../TelemetryExport.ts"
