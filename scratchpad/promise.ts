import { Effect, Layer, Schema } from "effect"
import { PromiseAgent, Tool, ToolRegistry, ScriptedModel } from "../src/index.ts"
const Add = Tool.make("add", { description: "add", parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }) })
const layer = Layer.merge(
  ToolRegistry.ToolRegistry.layer(Add).pipe(Layer.provide(Add.toLayer(({ a, b }) => Effect.succeed(Tool.textResult(String(a + b)))))),
  ScriptedModel.layer([ScriptedModel.callTools([ScriptedModel.toolCall("c1", "add", { a: 1, b: 2 })]), ScriptedModel.say("3")])
)
const agent = new PromiseAgent({ layer })
await agent.subscribe((e) => { if (e.type === "tool_execution_end") console.log("end", JSON.stringify(e.result)); if (e.type === "agent_end") throw new Error("sub boom") })
const p = agent.prompt("1+2?")
await agent.prompt("again").catch((e) => console.log("refused:", e._tag, e.message))
await p
console.log((await agent.state()).messages.map((m) => m.role))
await agent.dispose()
