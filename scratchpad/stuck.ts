import { Effect, Layer, Schema } from "effect"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import * as EventSink from "../src/EventSink.ts"
import { executeToolCalls } from "../src/ToolExecution.ts"
import { emptyUsage } from "../src/Message.ts"
const T = Tool.make("a", { description: "", parameters: Schema.Struct({}) })
let stuck = false
const sink: EventSink.EventSinkShape = {
  emit: (e) => Effect.suspend(() => {
    console.log(Date.now() % 100000, "emit", e.type, (e as any).toolCallId ?? "")
    if (e.type === "tool_execution_end") stuck = true
    return stuck ? Effect.never : Effect.void
  })
}
const msg = { role: "assistant" as const, api: "", provider: "", model: "", usage: emptyUsage, stopReason: "toolUse" as const, timestamp: 0,
  content: [{ type: "toolCall" as const, id: "1", name: "a", arguments: {} }, { type: "toolCall" as const, id: "2", name: "a", arguments: {} }] }
const ac = new AbortController()
setTimeout(() => { console.log("ABORT"); ac.abort() }, 100)
Effect.runPromise(executeToolCalls(msg, { signal: ac.signal, abandonAfter: 200 }).pipe(
  Effect.provide(ToolRegistry.layer(T).pipe(Layer.provide(T.toLayer(() => Effect.succeed(Tool.textResult("ok")))))),
  Effect.provideService(EventSink.EventSink, sink)
)).then((r) => console.log("done", r.aborted, r.messages.map((m) => m.content)))
