import { Duration, Effect, Layer, Schema, Fiber, Exit } from "effect"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry, entry } from "../src/ToolRegistry.ts"
import * as EventSink from "../src/EventSink.ts"
import { executeToolCalls } from "../src/ToolExecution.ts"
import { emptyUsage, type AssistantMessage } from "../src/Message.ts"
console.log(Duration.format(Duration.seconds(1)), Duration.format(Duration.millis(1500)), Duration.format(Duration.minutes(2)))
const P = Schema.Struct({ a: Schema.Number, b: Schema.Number, opts: Schema.Struct({ depth: Schema.Number }), items: Schema.Array(Schema.String) })
const T = Tool.make("t", { description: "", parameters: P })
const R = Tool.make("r", { description: "", parameters: Schema.Struct({ from: Schema.Number, to: Schema.Number }).check(Schema.makeFilter((v) => v.from <= v.to || "from must not exceed to")) })
const msg = (calls: Array<[string, string, unknown]>): AssistantMessage => ({
  role: "assistant", api: "x", provider: "x", model: "x", usage: emptyUsage, stopReason: "toolUse", timestamp: 0,
  content: calls.map(([id, name, args]) => ({ type: "toolCall", id, name, arguments: args as any }))
})
const main = Effect.gen(function*() {
  const r = yield* executeToolCalls(msg([["1", "t", { a: "x", opts: { depth: "deep" }, items: ["a", {}] }], ["2", "r", { from: 5, to: 1 }], ["3", "r", "str"]]))
  for (const m of r.messages) console.log(JSON.stringify(m.content[0]), "\n---\n", (m.content[0] as any).text)
}).pipe(Effect.provide(ToolRegistry.fromEntries([entry(T, () => Effect.succeed(Tool.textResult("ok"))), entry(R, () => Effect.succeed(Tool.textResult("ok")))])))
Effect.runPromise(main)
