/**
 * Sending a run's spans and metrics (see `Telemetry.ts`) to an OpenTelemetry collector over OTLP/HTTP, with
 * `@effect/opentelemetry`'s Node SDK layer. The command line (and `serve`) provide
 * {@link layerFromEnvironment}: nothing is installed unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or one of the
 * per-signal endpoints) is set, so a plain run keeps Effect's native tracer and records nothing.
 *
 * The rules are `docs/telemetry.md` (OT 6).
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/** Where and how to export. */
export interface ExportOptions {
  /** The OTLP/HTTP traces URL (e.g. `http://127.0.0.1:4318/v1/traces`); none: no trace export. */
  readonly tracesUrl?: string | undefined
  /** The OTLP/HTTP metrics URL (e.g. `http://127.0.0.1:4318/v1/metrics`); none: no metric export. */
  readonly metricsUrl?: string | undefined
  /** `service.name` of the resource. Default `effect-agent` (`OTEL_SERVICE_NAME` overrides it). */
  readonly serviceName?: string | undefined
  readonly serviceVersion?: string | undefined
  /** How often metrics are exported while running; they are always exported once more at shutdown. */
  readonly metricsInterval?: Duration.Input | undefined
  /**
   * How long one export, and each of the two shutdown steps (traces, then metrics), may take. Default 2.5
   * seconds, so an unreachable collector delays the end by at most about 5 seconds (OT 6.2).
   */
  readonly shutdownTimeout?: Duration.Input | undefined
  /** Record prompts, messages and tool contents as attributes (OT 4.1). Default `false`. */
  readonly contents?: boolean | undefined
}

/**
 * Installs the OpenTelemetry tracer and metric reader for the layer's lifetime; closing the layer flushes
 * every buffered span and a last metric export, bounded by the shutdown timeout (OT 6.2). The SDK is loaded
 * when the layer is built, so a process that exports nothing never loads it.
 */
export const layer = (options: ExportOptions): Layer.Layer<never> =>
  Layer.unwrap(Effect.map(Effect.promise(() => import("./internal/otlpSdk.ts")), (sdk) => sdk.sdkLayer(options)))

const optionalString = (name: string) => Config.option(Config.String(name))

/** `base` + `/v1/<signal>`, as the OTLP exporter specification builds it from the common endpoint. */
const signalUrl = (base: string, signal: "traces" | "metrics") =>
  `${base.endsWith("/") ? base : `${base}/`}v1/${signal}`

/**
 * The export options from the standard environment variables (OT 6.1): `OTEL_EXPORTER_OTLP_ENDPOINT`
 * (`/v1/traces` and `/v1/metrics` appended), or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
 * `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (used as given); `OTEL_SERVICE_NAME`;
 * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` for contents. `None` when no endpoint is set.
 *
 * @internal
 */
export const optionsFromEnvironment: Effect.Effect<Option.Option<ExportOptions>, Config.ConfigError> = Effect.gen(
  function*() {
    const base = yield* optionalString("OTEL_EXPORTER_OTLP_ENDPOINT")
    const traces = yield* optionalString("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    const metrics = yield* optionalString("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    const serviceName = yield* optionalString("OTEL_SERVICE_NAME")
    const contents = yield* optionalString("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
    const nonEmpty = (o: Option.Option<string>) => Option.filter(o, (s) => s.trim() !== "")
    const baseUrl = nonEmpty(base)
    const tracesUrl = Option.orElse(nonEmpty(traces), () => Option.map(baseUrl, (b) => signalUrl(b, "traces")))
    const metricsUrl = Option.orElse(nonEmpty(metrics), () => Option.map(baseUrl, (b) => signalUrl(b, "metrics")))
    if (Option.isNone(tracesUrl) && Option.isNone(metricsUrl)) return Option.none()
    return Option.some({
      tracesUrl: Option.getOrUndefined(tracesUrl),
      metricsUrl: Option.getOrUndefined(metricsUrl),
      serviceName: Option.getOrUndefined(nonEmpty(serviceName)),
      contents: Option.getOrUndefined(contents)?.trim().toLowerCase() === "true"
    })
  }
)

/**
 * The export configured by the environment (see {@link optionsFromEnvironment}), or nothing at all when no
 * endpoint is set (OT 6.1).
 */
export const layerFromEnvironment = (
  defaults: Pick<ExportOptions, "serviceName" | "serviceVersion"> = {}
): Layer.Layer<never, Config.ConfigError> =>
  Layer.unwrap(
    Effect.map(optionsFromEnvironment, (options) =>
      Option.isNone(options) ? Layer.empty : layer({
        ...defaults,
        ...options.value,
        serviceName: options.value.serviceName ?? defaults.serviceName
      }))
  )
