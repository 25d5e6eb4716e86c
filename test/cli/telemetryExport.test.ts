/**
 * The OTLP export of a real command-line run (docs/telemetry.md OT 6, with the span tree of OT 2): the
 * embedded demo runs in-process with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at an HTTP server of this
 * test, which receives the OTLP/HTTP JSON export; the test checks the span tree, the attributes, the
 * overlapping tool spans of the parallel batch, and the metrics.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCliInProcess, type RunResult, tempDir, TEST_TIMEOUT_MS } from "./support.ts"

interface Received {
  readonly path: string
  readonly contentType: string | undefined
  readonly body: any
}

/** An OTLP/HTTP receiver on a free loopback port that keeps every request's JSON body. */
const startReceiver = () =>
  new Promise<{ readonly server: Server; readonly url: string; readonly received: Array<Received> }>((resolve) => {
    const received: Array<Received> = []
    const server = createServer((request, response) => {
      let body = ""
      request.setEncoding("utf8")
      request.on("data", (chunk: string) => {
        body += chunk
      })
      request.on("end", () => {
        let parsed: unknown = undefined
        try {
          parsed = JSON.parse(body)
        } catch {
          parsed = { unparsed: body.slice(0, 200) }
        }
        received.push({ path: request.url ?? "", contentType: request.headers["content-type"], body: parsed })
        response.writeHead(200, { "content-type": "application/json" })
        response.end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({ server, url: `http://127.0.0.1:${port}`, received })
    })
  })

interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
  readonly status?: { readonly code?: number }
}

const spansOf = (received: ReadonlyArray<Received>): Array<OtlpSpan> =>
  received.filter((r) => r.path === "/v1/traces").flatMap((r) =>
    (r.body.resourceSpans ?? []).flatMap((rs: any) => (rs.scopeSpans ?? []).flatMap((ss: any) => ss.spans ?? []))
  )

const attr = (span: OtlpSpan, key: string): unknown => {
  const found = span.attributes.find((a) => a.key === key)
  if (found === undefined) return undefined
  const value = found.value
  if ("stringValue" in value) return value.stringValue
  if ("intValue" in value) return Number(value.intValue)
  if ("doubleValue" in value) return value.doubleValue
  if ("boolValue" in value) return value.boolValue
  if ("arrayValue" in value) return (value.arrayValue as any).values?.map((v: any) => v.stringValue ?? v.intValue)
  return value
}

const FIRST_BATCH = ["demo-ls", "demo-find", "demo-grep", "demo-read"]

describe("OT 6: export of a real command-line run over OTLP/HTTP", () => {
  const ws = tempDir("otel")
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  let run: RunResult
  let spans: Array<OtlpSpan>

  beforeAll(async () => {
    receiver = await startReceiver()
    run = await runCliInProcess(["--json", "--yes", "--workspace", ws.dir], {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "telemetry-test" }
    })
    spans = spansOf(receiver.received)
  }, TEST_TIMEOUT_MS)

  afterAll(async () => {
    await new Promise<void>((resolve) => receiver?.server.close(() => resolve()))
    ws.cleanup()
  })

  it("OT 6.1, 6.2: the run exits normally and its spans arrive as OTLP JSON at <endpoint>/v1/traces", () => {
    expect(run.code, run.stderr).toBe(0)
    const traces = receiver.received.filter((r) => r.path === "/v1/traces")
    expect(traces.length).toBeGreaterThan(0)
    expect(traces[0]!.contentType).toContain("application/json")
    const resource = traces[0]!.body.resourceSpans[0].resource.attributes
    expect(resource).toContainEqual({ key: "service.name", value: { stringValue: "telemetry-test" } })
    expect(spans.length).toBeGreaterThan(0)
  })

  it("OT 2.1-2.3: one invoke_agent span, four turns under it, a chat span per turn and a tool span per call", () => {
    const runs = spans.filter((s) => s.name === "invoke_agent effect-agent")
    expect(runs).toHaveLength(1)
    const agent = runs[0]!
    expect(attr(agent, "gen_ai.operation.name")).toBe("invoke_agent")
    expect(attr(agent, "gen_ai.request.model")).toBe("scripted-demo")
    expect(attr(agent, "gen_ai.provider.name")).toBe("demo")
    // One trace: the command's own span is the run's parent.
    for (const span of spans) expect(span.traceId).toBe(agent.traceId)

    const turns = spans.filter((s) => s.name === "turn" && s.parentSpanId === agent.spanId)
      .sort((a, b) => Number(attr(a, "effect_agent.turn.index")) - Number(attr(b, "effect_agent.turn.index")))
    expect(turns.map((t) => attr(t, "effect_agent.turn.index"))).toEqual([0, 1, 2, 3])
    for (const turn of turns) {
      const chats = spans.filter((s) => s.parentSpanId === turn.spanId && s.name === "chat scripted-demo")
      expect(chats).toHaveLength(1)
      expect(attr(chats[0]!, "gen_ai.operation.name")).toBe("chat")
      expect(chats[0]!.kind).toBe(3) // SPAN_KIND_CLIENT
    }

    const tools = spans.filter((s) => attr(s, "gen_ai.operation.name") === "execute_tool")
    expect(tools.map((s) => attr(s, "gen_ai.tool.call.id")).sort()).toEqual(
      [...FIRST_BATCH, "demo-edit", "demo-comment", "demo-notes", "demo-sudo", "demo-check"].sort()
    )
    const firstTurnTools = tools.filter((s) => s.parentSpanId === turns[0]!.spanId)
    expect(firstTurnTools.map((s) => attr(s, "gen_ai.tool.call.id")).sort()).toEqual([...FIRST_BATCH].sort())
    const ls = tools.find((s) => attr(s, "gen_ai.tool.call.id") === "demo-ls")!
    expect(ls.name).toBe("execute_tool ls")
    expect(attr(ls, "gen_ai.tool.name")).toBe("ls")
    expect(attr(ls, "effect_agent.tool.outcome")).toBe("success")
  })

  it("OT 2.3: the parallel batch's tool spans overlap under the one turn span", () => {
    const batch = spans.filter((s) => FIRST_BATCH.includes(String(attr(s, "gen_ai.tool.call.id"))))
    expect(batch).toHaveLength(4)
    expect(new Set(batch.map((s) => s.parentSpanId)).size).toBe(1)
    const lastStart = Math.max(...batch.map((s) => Number(BigInt(s.startTimeUnixNano) / 1000n)))
    const firstEnd = Math.min(...batch.map((s) => Number(BigInt(s.endTimeUnixNano) / 1000n)))
    expect(lastStart).toBeLessThanOrEqual(firstEnd)
    const turn = spans.find((s) => s.spanId === batch[0]!.parentSpanId)!
    for (const tool of batch) {
      expect(BigInt(tool.startTimeUnixNano) >= BigInt(turn.startTimeUnixNano)).toBe(true)
      expect(BigInt(tool.endTimeUnixNano) <= BigInt(turn.endTimeUnixNano)).toBe(true)
    }
  })

  it("OT 2.4: the bash calls that wait get an execution span under their tool span", () => {
    const check = spans.find((s) => attr(s, "gen_ai.tool.call.id") === "demo-check")!
    const phases = spans.filter((s) => s.parentSpanId === check.spanId).map((s) => s.name)
    expect(phases).toContain("tool.execution")
  })

  it("OT 4.1: no contents are exported by default", () => {
    for (const span of spans) {
      for (
        const key of [
          "gen_ai.input.messages",
          "gen_ai.output.messages",
          "gen_ai.tool.call.arguments",
          "gen_ai.tool.call.result"
        ]
      ) {
        expect(attr(span, key), `${span.name} ${key}`).toBeUndefined()
      }
    }
  })

  it("OT 5.2, 6.1: the metrics arrive at <endpoint>/v1/metrics with tool durations by tool", () => {
    const metrics = receiver.received.filter((r) => r.path === "/v1/metrics").flatMap((r) =>
      (r.body.resourceMetrics ?? []).flatMap((rm: any) =>
        (rm.scopeMetrics ?? []).flatMap((sm: any) => sm.metrics ?? [])
      )
    )
    const names = new Set(metrics.map((m: any) => m.name))
    expect(names).toContain("effect_agent.tool.call.duration")
    expect(names).toContain("effect_agent.tool.calls_in_flight")
    const duration = metrics.find((m: any) => m.name === "effect_agent.tool.call.duration")
    const points: Array<any> = duration.histogram.dataPoints
    const toolsSeen = new Set(
      points.map((p) => p.attributes.find((a: any) => a.key === "gen_ai.tool.name")?.value.stringValue)
    )
    for (const tool of ["ls", "find", "grep", "read", "edit", "bash"]) expect(toolsSeen).toContain(tool)
  })
})
