import { Effect, Layer, Schema } from "effect"
import { runAgentLoopPromise } from "../src/AgentLoop.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
const Wait = Tool.make("wait", { description: "", parameters: Schema.Struct({}) })
const tools = ToolRegistry.layer(Wait).pipe(Layer.provide(Wait.toLayer((_, ctx) => Effect.never.pipe(
  Effect.onInterrupt(() => Effect.sync(() => console.log("tool interrupted; signal aborted =", ctx.signal.aborted)))))))
const layer = Layer.merge(tools, ScriptedModel.layer([ScriptedModel.callTools([ScriptedModel.toolCall("w", "wait", {})])]))
const controller = new AbortController()
const messages = await runAgentLoopPromise([{ role: "user", content: "go", timestamp: 0 }], { systemPrompt: "", messages: [] }, { signal: controller.signal }, layer, (event) => {
  console.log("event", event.type)
  if (event.type === "tool_execution_start") queueMicrotask(() => controller.abort())
})
console.log(messages.map((m) => m.role))
