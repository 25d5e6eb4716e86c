import { Effect, Layer, Schema } from "effect"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import * as EventSink from "../src/EventSink.ts"
import { executeToolCalls } from "../src/ToolExecution.ts"
import { emptyUsage } from "../src/Message.ts"
const T = Tool.make("par", { description: "", parameters: Schema.Struct({}), executionMode: "sequential" })
const ac = new AbortController()
const sink: EventSink.EventSinkShape = { emit: (e) => Effect.sync(() => { console.log("emit", e.type); if (e.type === "tool_execution_update") ac.abort() }) }
const msg = { role: "assistant" as const, api: "", provider: "", model: "", usage: emptyUsage, stopReason: "toolUse" as const, timestamp: 0,
  content: [{ type: "toolCall" as const, id: "1", name: "par", arguments: {} }] }
const handler = (_: unknown, ctx: Tool.ToolContext) => Effect.gen(function*() {
  console.log("body begins")
  yield* Effect.sleep(50)
  yield* ctx.update(Tool.textResult("p") as any)
  console.log("after update")
  return yield* Effect.never
}).pipe(Effect.onInterrupt(() => Effect.sync(() => console.log("TOOL INTERRUPTED"))))
Effect.runPromise(executeToolCalls(msg, { signal: ac.signal }).pipe(
  Effect.provide(ToolRegistry.layer(T).pipe(Layer.provide(T.toLayer(handler)))),
  Effect.provideService(EventSink.EventSink, sink)
)).then((r) => { console.log("done", r.aborted); setTimeout(() => console.log("exit check"), 100) })
