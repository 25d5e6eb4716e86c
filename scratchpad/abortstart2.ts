import { Effect, Fiber, Layer, Schema } from "effect"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import * as EventSink from "../src/EventSink.ts"
import { executeToolCalls } from "../src/ToolExecution.ts"
import { emptyUsage } from "../src/Message.ts"
const T = Tool.make("t", { description: "", parameters: Schema.Struct({ i: Schema.Number }) })
for (const variant of ["sync-in-tool", "fn-body", "update-sub", "before", "after"] as const) {
  for (const sinkKind of ["callback", "effect"] as const) {
   for (const conc of ["unbounded", 1, 2] as const) {
    let batchFiber: Fiber.Fiber<any, any> | undefined
    const abort = () => batchFiber!.interruptUnsafe()
    const ran: Array<number> = []
    const onEvent = (e: any) => { if (variant === "update-sub" && e.type === "tool_execution_update") abort() }
    const sink: EventSink.EventSinkShape = sinkKind === "callback" ? EventSink.fromCallback(onEvent) : { emit: (e) => Effect.sync(() => onEvent(e)) }
    const handler = ({ i }: { i: number }, ctx: Tool.ToolContext) => {
      if (variant === "fn-body") { ran.push(i); if (i === 0) abort(); return Effect.succeed(Tool.textResult("x")) }
      if (variant === "sync-in-tool") return Effect.sync(() => { ran.push(i); if (i === 0) abort(); return Tool.textResult("x") })
      return Effect.gen(function*() { ran.push(i); if (i === 0) yield* ctx.update(Tool.textResult("p") as any); return Tool.textResult("x") })
    }
    const msg = { role: "assistant" as const, api: "", provider: "", model: "", usage: emptyUsage, stopReason: "toolUse" as const, timestamp: 0,
      content: [0, 1, 2].map((i) => ({ type: "toolCall" as const, id: String(i), name: "t", arguments: { i } })) }
    const exit = await Effect.runPromise(Effect.flatMap(Effect.forkChild(Effect.withFiber((f) => { batchFiber = f; return executeToolCalls(msg, {
      concurrency: conc,
      beforeToolCall: variant === "before" ? (c) => Effect.sync(() => { if ((c.args as any).i === 1) abort() }) : undefined,
      afterToolCall: variant === "after" ? (c) => Effect.sync(() => { if ((c.args as any).i === 0) abort() }) : undefined,
    }) }).pipe(
      Effect.provide(ToolRegistry.layer(T).pipe(Layer.provide(T.toLayer(handler as any)))),
      Effect.provideService(EventSink.EventSink, sink)
    )), Fiber.await))
    console.log(variant, sinkKind, conc, "ran", ran, exit._tag)
   }
  }
}
