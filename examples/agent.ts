// A stateful agent on the scripted model: one tool turn, a steering message, then a follow-up.
import { Effect, Layer, Schema, SubscriptionRef } from "effect"
import { Agent, Message, Tool, ToolRegistry } from "effect-agent"
import { ScriptedModel } from "effect-agent/testing"

const Add = Tool.make("add", {
  description: "Add two numbers",
  parameters: Schema.Struct({ a: Schema.Finite, b: Schema.Finite })
})
const Tools = ToolRegistry.ToolRegistry.layer(Add).pipe(
  Layer.provide(Add.toLayer(({ a, b }) => Effect.succeed(Tool.textResult(String(a + b)))))
)

// The model replays a script; a step may also be a function of the request it receives.
const Model = ScriptedModel.layer([
  ScriptedModel.callTools([ScriptedModel.toolCall("call-1", "add", { a: 2, b: 3 })], "Let me add those."),
  ScriptedModel.say("2 + 3 = 5."),
  (request) => ScriptedModel.say(`You asked ${request.messages.filter((m) => m.role === "user").length} questions.`)
])

export const program = Effect.gen(function*() {
  const agent = yield* Agent.make({ systemPrompt: "You are a calculator." })
  yield* agent.subscribe((event) =>
    Effect.sync(() => {
      if (event.type === "message_end" && Message.isMessage(event.message)) {
        console.log(`${event.message.role}: ${Message.textOf(event.message)}`)
      }
    })
  )
  yield* agent.followUp("How many questions did I ask?") // read when the agent would otherwise stop
  yield* agent.prompt("What is 2 + 3?")
  const state = yield* SubscriptionRef.get(agent.state)
  console.log(`${state.messages.length} messages, streaming: ${state.isStreaming}`)
}).pipe(Effect.provide([Tools, Model]))

if (import.meta.main) Effect.runPromise(program)
