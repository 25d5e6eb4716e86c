import { Effect, Layer, Schema } from "effect"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import * as Agent from "../src/Agent.ts"

const Add = Tool.make("add", { description: "add", parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }) })
const tools = ToolRegistry.layer(Add).pipe(Layer.provide(Add.toLayer(({ a, b }) => Effect.succeed(Tool.textResult(String(a + b))))))
const script = [
  ScriptedModel.callTools([ScriptedModel.toolCall("c1", "add", { a: 1, b: 2 })]),
  ScriptedModel.say("3."),
  ScriptedModel.say("steered reply"),
  ScriptedModel.say("follow-up reply"),
]
const main = Effect.gen(function*() {
  const agent = yield* Agent.make({ systemPrompt: "You add." })
  yield* agent.subscribe((e) => Effect.sync(() => { if (e.type !== "message_update") console.log(e.type) }))
  yield* agent.subscribe((e) => e.type === "agent_end" ? Effect.fail("boom") : Effect.void)
  yield* agent.followUp("and then?")
  yield* agent.prompt("1+2?")
  const busy = yield* Effect.flip(agent.continue)
  console.log("continue from assistant:", busy.message)
  const s = yield* agent.state.get
  console.log(s.messages.map((m) => m.role).join(","), s.isStreaming)
}).pipe(Effect.provide([tools, ScriptedModel.layer(script)]))
Effect.runPromise(main).then(() => console.log("done"), (e) => console.error("FAILED", e))
