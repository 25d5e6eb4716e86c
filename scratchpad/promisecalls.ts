// Instant tool calls in parallel through executeToolCalls, by handler shape: wall time and peak RSS.
// Usage: npx node --expose-gc scratchpad/promisecalls.ts <shape> <N>
import { Effect, Schema } from "effect"
import * as EventSink from "../src/EventSink.ts"
import { emptyUsage } from "../src/Message.ts"
import * as Tool from "../src/Tool.ts"
import { executeToolCalls } from "../src/ToolExecution.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"

let lastStart = 0
let firstDone: number | undefined
const shape = process.argv[2] ?? "succeed"
const n = Number(process.argv[3] ?? 50_000)
const T = Tool.make("t", { description: "", parameters: Schema.Struct({ x: Schema.Number }) })
const result = (x: number) => ({ content: [{ type: "text" as const, text: String(x) }], details: undefined })
const handlers: Record<string, Tool.Handler<{ readonly x: number }>> = {
  succeed: ({ x }) => Effect.succeed(result(x)),
  sync: ({ x }) => Effect.sync(() => result(x)),
  tryPromise: ({ x }) => Effect.tryPromise(async () => result(x)),
  tryPromiseSignal: ({ x }) => Effect.tryPromise(async (_signal) => result(x)),
  promise: ({ x }) => Effect.promise(async () => result(x)),
  toolTryPromise: ({ x }) => Tool.tryPromise(async (_signal) => result(x)),
  sleep: ({ x }) => {
    lastStart = performance.now()
    return Effect.as(
      Effect.tap(Effect.sleep(10), () =>
        Effect.sync(() => {
          firstDone ??= performance.now()
        })),
      result(x)
    )
  }
}
const msg = {
  role: "assistant" as const,
  api: "",
  provider: "",
  model: "",
  usage: emptyUsage,
  stopReason: "toolUse" as const,
  timestamp: 0,
  content: Array.from(
    { length: n },
    (_, i) => ({ type: "toolCall" as const, id: String(i), name: "t", arguments: { x: i } })
  )
}
const registry = Effect.runSync(
  Effect.gen(function*() {
    return yield* ToolRegistry
  }).pipe(Effect.provide(ToolRegistry.fromEntries([{ tool: T, handler: handlers[shape] }])))
)
// HOOKS=void|sync: both hooks as Effect.void or as Effect.sync.
const hook = process.env.HOOKS === "sync"
  ? () => Effect.sync(() => undefined)
  : process.env.HOOKS === "void"
  ? () => Effect.void
  : undefined
const runBatch = () =>
  Effect.runPromise(
    executeToolCalls(msg, hook === undefined ? {} : { beforeToolCall: hook, afterToolCall: hook }).pipe(
      Effect.provideService(ToolRegistry, registry),
      Effect.provideService(EventSink.EventSink, EventSink.fromCallback(() => {}))
    )
  )
// WARM=k: k untimed batches first, so the timed one runs on warm code.
for (let k = 0; k < Number(process.env.WARM ?? 0); k++) await runBatch()
let peak = 0
const sample = () => {
  peak = Math.max(peak, process.memoryUsage().rss)
}
const timer = setInterval(sample, 5)
;(globalThis as any).gc?.()
const rss0 = process.memoryUsage().rss
const t0 = performance.now()
const c0 = process.cpuUsage()
firstDone = undefined
const r = await runBatch()
const ms = performance.now() - t0
const cpu = process.cpuUsage(c0)
sample()
clearInterval(timer)
const errors = r.messages.filter((m) => m.isError).length
console.log(JSON.stringify({
  shape,
  hooks: process.env.HOOKS ?? "none",
  n,
  ms: Math.round(ms),
  cpuMs: Math.round((cpu.user + cpu.system) / 1000),
  peakRssMB: Math.round(peak / 2 ** 20),
  rssDeltaMB: Math.round((peak - rss0) / 2 ** 20),
  errors,
  ...(shape === "sleep" ? { lastStartMs: Math.round(lastStart - t0), firstDoneMs: Math.round(firstDone! - t0) } : {})
}))
