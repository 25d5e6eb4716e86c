/**
 * The OpenTelemetry Node SDK behind `TelemetryExport.layer`, in a module of its own so that it is loaded
 * only when something is exported.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import { RecordContents } from "../Telemetry.ts"
import type { ExportOptions } from "../TelemetryExport.ts"

/** See `TelemetryExport.layer`. */
export const sdkLayer = (options: ExportOptions): Layer.Layer<never> => {
  // The traces and the metrics each get the timeout (their finalizers run one after the other), and no
  // single export may outlast it: an unreachable collector costs at most twice the timeout at exit.
  const step = Duration.fromInputUnsafe(options.shutdownTimeout ?? Duration.millis(2500))
  const timeoutMillis = Math.max(1, Math.round(Duration.toMillis(step)))
  const sdk = NodeSdk.layer(() => ({
    resource: {
      serviceName: options.serviceName ?? "effect-agent",
      ...(options.serviceVersion !== undefined ? { serviceVersion: options.serviceVersion } : {})
    },
    spanProcessor: options.tracesUrl === undefined
      ? undefined
      : new BatchSpanProcessor(new OTLPTraceExporter({ url: options.tracesUrl, timeoutMillis }), {
        exportTimeoutMillis: timeoutMillis
      }),
    metricReader: options.metricsUrl === undefined ? undefined : new PeriodicExportingMetricReader({
      exporter: new OTLPMetricExporter({ url: options.metricsUrl, timeoutMillis }),
      exportIntervalMillis: Duration.toMillis(
        Duration.fromInputUnsafe(options.metricsInterval ?? Duration.seconds(60))
      ),
      exportTimeoutMillis: timeoutMillis
    }),
    shutdownTimeout: step
  }))
  const contents = options.contents === true ? Layer.succeed(RecordContents)(true) : Layer.empty
  // The SDK layer also outputs its `Resource`; it is not part of this layer's promise, hence the widening.
  return Layer.mergeAll(sdk, contents) as Layer.Layer<unknown> as Layer.Layer<never>
}
