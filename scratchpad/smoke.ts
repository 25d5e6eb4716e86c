import { Effect, Layer, Schema } from "effect"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import * as EventSink from "../src/EventSink.ts"
import { executeToolCalls } from "../src/ToolExecution.ts"
import { emptyUsage, type AssistantMessage } from "../src/Message.ts"

const Add = Tool.make("add", { description: "add", parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }) })
const Hang = Tool.make("hang", { description: "hang", parameters: Schema.Struct({}) })
const Stubborn = Tool.make("stubborn", { description: "x", parameters: Schema.Struct({}) })
const layer = ToolRegistry.layer(Add, Hang, Stubborn).pipe(Layer.provide([
  Add.toLayer(({ a, b }) => Effect.succeed(Tool.textResult(String(a + b)))),
  Hang.toLayer((_, ctx) => Effect.promise(() => new Promise<never>(() => { ctx.signal.addEventListener("abort", () => console.log("  hang signal aborted")) }))),
  Stubborn.toLayer(() => Effect.uninterruptible(Effect.never))
]))
const msg = (calls: Array<[string, string, unknown]>): AssistantMessage => ({
  role: "assistant", api: "x", provider: "x", model: "x", usage: emptyUsage, stopReason: "toolUse", timestamp: 0,
  content: calls.map(([id, name, args]) => ({ type: "toolCall", id, name, arguments: args as any }))
})
const log = EventSink.fromCallback((e) => console.log(" ", e.type, (e as any).toolCallId ?? "", JSON.stringify((e as any).result?.content ?? (e as any).message?.content ?? "")))

const main = Effect.gen(function*() {
  console.log("parallel")
  const r1 = yield* executeToolCalls(msg([["1", "add", { a: "1", b: 2 }], ["2", "nope", {}], ["3", "add", { a: "x" }], ["1", "add", {a:1,b:1}]]))
  console.log(r1.messages.map((m) => m.content), r1.aborted)
  console.log("abort")
  const ac = new AbortController()
  setTimeout(() => ac.abort(), 50)
  const t0 = Date.now()
  const r2 = yield* executeToolCalls(msg([["1", "hang", {}], ["2", "stubborn", {}], ["3", "add", { a: 1, b: 2 }]]), { signal: ac.signal, abandonAfter: 200 })
  console.log(Date.now() - t0, "ms", r2.aborted, r2.messages.map((m) => m.content))
  console.log("timeout")
  const r3 = yield* executeToolCalls(msg([["1", "hang", {}]]), { timeout: 100 })
  console.log(r3.messages.map((m) => m.content))
  console.log("sequential abort")
  const ac2 = new AbortController()
  setTimeout(() => ac2.abort(), 50)
  const r4 = yield* executeToolCalls(msg([["1", "add", { a: 1, b: 2 }], ["2", "hang", {}], ["3", "add", { a: 1, b: 2 }]]), { signal: ac2.signal, toolExecution: "sequential" })
  console.log(r4.messages.map((m) => m.content))
}).pipe(Effect.provide(layer), Effect.provideService(EventSink.EventSink, log))

Effect.runPromise(main).then(() => console.log("done"), (e) => console.error("FAILED", e))
