import { Effect, Schema } from "effect"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import * as EventSink from "../src/EventSink.ts"
import { executeToolCalls } from "../src/ToolExecution.ts"
import { emptyUsage } from "../src/Message.ts"
const T = Tool.make("t", { description: "", parameters: Schema.Struct({}) })
const sink: EventSink.EventSinkShape = {
  emit: (e) => Effect.gen(function*() {
    console.log("emit begin", e.type)
    yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
    console.log("emit done ", e.type)
  }).pipe(Effect.onInterrupt(() => Effect.sync(() => console.log("emit INTERRUPTED", e.type))))
}
const msg = { role: "assistant" as const, api: "", provider: "", model: "", usage: emptyUsage, stopReason: "toolUse" as const, timestamp: 0,
  content: [{ type: "toolCall" as const, id: "1", name: "t", arguments: {} }] }
import { Layer } from "effect"
Effect.runPromise(executeToolCalls(msg, { signal: AbortSignal.abort() }).pipe(
  Effect.provide(ToolRegistry.layer(T).pipe(Layer.provide(T.toLayer(() => Effect.succeed(Tool.textResult("x")))))),
  Effect.provideService(EventSink.EventSink, sink)
)).then((r) => console.log("aborted", r.aborted))
