import { Effect, Layer, Schema } from "effect"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import * as EventSink from "../src/EventSink.ts"
import { executeToolCalls } from "../src/ToolExecution.ts"
import { emptyUsage } from "../src/Message.ts"
const T = Tool.make("t", { description: "", parameters: Schema.Struct({ i: Schema.Number }) })
for (const variant of ["sync-in-tool", "fn-body", "update-sub", "gen-in-tool"] as const) {
  for (const sinkKind of ["callback", "effect"] as const) {
    const ac = new AbortController()
    const ran: Array<number> = []
    const onEvent = (e: any) => { if (variant === "update-sub" && e.type === "tool_execution_update") ac.abort() }
    const sink: EventSink.EventSinkShape = sinkKind === "callback" ? EventSink.fromCallback(onEvent) : { emit: (e) => Effect.sync(() => onEvent(e)) }
    const handler = ({ i }: { i: number }, ctx: Tool.ToolContext) => {
      if (variant === "fn-body") { ran.push(i); if (i === 0) ac.abort(); return Effect.succeed(Tool.textResult("x")) }
      if (variant === "sync-in-tool") return Effect.sync(() => { ran.push(i); if (i === 0) ac.abort(); return Tool.textResult("x") })
      if (variant === "gen-in-tool") return Effect.gen(function*() { ran.push(i); if (i === 0) ac.abort(); return Tool.textResult("x") })
      return Effect.gen(function*() { ran.push(i); if (i === 0) yield* ctx.update(Tool.textResult("p") as any); return Tool.textResult("x") })
    }
    const msg = { role: "assistant" as const, api: "", provider: "", model: "", usage: emptyUsage, stopReason: "toolUse" as const, timestamp: 0,
      content: [0, 1, 2].map((i) => ({ type: "toolCall" as const, id: String(i), name: "t", arguments: { i } })) }
    const r = await Effect.runPromise(executeToolCalls(msg, { signal: ac.signal }).pipe(
      Effect.provide(ToolRegistry.layer(T).pipe(Layer.provide(T.toLayer(handler as any)))),
      Effect.provideService(EventSink.EventSink, sink)
    ))
    console.log(variant, sinkKind, "ran", ran, "aborted", r.aborted, r.messages.map((m) => (m.content[0] as any).text.slice(0, 40)))
  }
}
