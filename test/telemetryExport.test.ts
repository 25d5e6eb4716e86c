/**
 * Which export the environment asks for (docs/telemetry.md OT 6.1). The export of a real run is
 * `test/cli/telemetryExport.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Option } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as TelemetryExport from "../src/TelemetryExport.ts"

const withEnv = (env: Record<string, string>) =>
  TelemetryExport.optionsFromEnvironment.pipe(
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
  )

describe("OT 6.1: the export from the environment", () => {
  it.effect("no endpoint: nothing is exported", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.isNone(yield* withEnv({})))
      assert.isTrue(Option.isNone(yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: " ", OTEL_SERVICE_NAME: "x" })))
    }))

  it.effect("the common endpoint gets /v1/traces and /v1/metrics appended, with or without a slash", () =>
    Effect.gen(function*() {
      const plain = yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })
      assert.deepStrictEqual(
        plain,
        Option.some({
          tracesUrl: "http://127.0.0.1:4318/v1/traces",
          metricsUrl: "http://127.0.0.1:4318/v1/metrics",
          serviceName: undefined,
          contents: false
        })
      )
      const slash = yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector/otlp/" })
      assert.strictEqual(Option.getOrThrow(slash).tracesUrl, "http://collector/otlp/v1/traces")
    }))

  it.effect("a per-signal endpoint is used as given, and alone exports only its signal", () =>
    Effect.gen(function*() {
      const traces = Option.getOrThrow(yield* withEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t/spans" }))
      assert.strictEqual(traces.tracesUrl, "http://t/spans")
      assert.isUndefined(traces.metricsUrl)
      const both = Option.getOrThrow(
        yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://m/x" })
      )
      assert.strictEqual(both.tracesUrl, "http://c/v1/traces")
      assert.strictEqual(both.metricsUrl, "http://m/x")
    }))

  it.effect("OTEL_SERVICE_NAME names the service; contents only with CAPTURE_MESSAGE_CONTENT=true (OT 4.1)", () =>
    Effect.gen(function*() {
      const base = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_SERVICE_NAME: "mine" }
      const plain = Option.getOrThrow(yield* withEnv(base))
      assert.strictEqual(plain.serviceName, "mine")
      assert.isFalse(plain.contents)
      const no = Option.getOrThrow(
        yield* withEnv({ ...base, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "false" })
      )
      assert.isFalse(no.contents)
      const yes = Option.getOrThrow(
        yield* withEnv({ ...base, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "TRUE" })
      )
      assert.isTrue(yes.contents)
    }))
})

describe("OT 6.2: a collector that never answers", () => {
  it.live(
    "closing the export layer is bounded by the shutdown timeout, and nothing fails",
    () =>
      Effect.gen(function*() {
        const requests: Array<string> = []
        // Accepts connections and reads requests but never answers them.
        const server = yield* Effect.acquireRelease(
          Effect.callback<ReturnType<typeof createServer>>((resume) => {
            const s = createServer((request) => void requests.push(request.url ?? ""))
            s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
          }),
          (s) =>
            Effect.callback<void>((resume) => {
              s.closeAllConnections()
              s.close(() => resume(Effect.void))
            })
        )
        const { port } = server.address() as AddressInfo
        const base = `http://127.0.0.1:${port}`
        const started = Date.now()
        yield* Effect.withSpan(Effect.void, "a span to flush").pipe(
          Effect.provide(TelemetryExport.layer({
            tracesUrl: `${base}/v1/traces`,
            metricsUrl: `${base}/v1/metrics`,
            shutdownTimeout: "300 millis"
          }))
        )
        const elapsed = Date.now() - started
        // Two steps of 300 ms, plus loading the SDK on a loaded machine: far below the exporter's own 10 s.
        assert.isBelow(elapsed, 6_000, `closed after ${elapsed} ms`)
        assert.include(requests, "/v1/traces", "the span was sent (and never answered)")
      }).pipe(Effect.scoped),
    20_000
  )
})
