import { Effect, Layer, Schema, Stream } from "effect"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import { agentLoop } from "../src/AgentLoop.ts"

const Add = Tool.make("add", { description: "add", parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }) })
const Hang = Tool.make("hang", { description: "hang", parameters: Schema.Struct({}) })
const tools = ToolRegistry.layer(Add, Hang).pipe(Layer.provide([
  Add.toLayer(({ a, b }) => Effect.succeed(Tool.textResult(String(a + b)))),
  Hang.toLayer(() => Effect.never)
]))
const script = [
  ScriptedModel.callTools([ScriptedModel.toolCall("c1", "add", { a: 1, b: 2 }), ScriptedModel.toolCall("c2", "add", { a: "3", b: 4 })], "Let me add."),
  ScriptedModel.say("The answers are 3 and 7.")
]
const show = (e: any) => e.type + (e.toolCallId ? ` ${e.toolCallId}` : "") + (e.message ? ` ${e.message.role}${e.message.stopReason ? ":" + e.message.stopReason : ""}` : "") + (e.assistantMessageEvent ? ` ${e.assistantMessageEvent.type}` : "")
const user = { role: "user" as const, content: "add", timestamp: 0 }
const main = Effect.gen(function*() {
  const events = yield* Stream.runCollect(agentLoop([user], { systemPrompt: "s", messages: [] }))
  console.log(events.map(show).join("\n"))
  console.log("---- abort during hang")
  const ac = new AbortController()
  setTimeout(() => ac.abort(), 100)
  const ev2 = yield* Stream.runCollect(agentLoop([user], { systemPrompt: "s", messages: [] }, { signal: ac.signal }).pipe(
    Stream.provide(ScriptedModel.layer([ScriptedModel.callTools([ScriptedModel.toolCall("h", "hang", {})])]))))
  console.log(ev2.map(show).join("\n"))
  console.log("---- abort during slow stream")
  const ac3 = new AbortController()
  setTimeout(() => ac3.abort(), 100)
  const ev3 = yield* Stream.runCollect(agentLoop([user], { systemPrompt: "s", messages: [] }, { signal: ac3.signal }).pipe(
    Stream.provide(ScriptedModel.layer([{ ...ScriptedModel.callTools([ScriptedModel.toolCall("h", "add", {a:1,b:1})], "hello there my friend"), delay: 30 }]))))
  console.log(ev3.map(show).join("\n"))
}).pipe(Effect.provide([tools, ScriptedModel.layer(script)]))
Effect.runPromise(main).then(() => console.log("done"), (e) => console.error("FAILED", e))
