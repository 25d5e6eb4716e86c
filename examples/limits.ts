// A run that cannot run away: a model that keeps calling a failing tool is stopped, and says why.
import { Effect, Layer, Schema, SubscriptionRef } from "effect"
import { Agent, Message, RunLimits, Tool, ToolRegistry } from "effect-agent"
import { ScriptedModel } from "effect-agent/testing"

const Deploy = Tool.make("deploy", { description: "Deploy the site", parameters: Schema.Struct({}) })
const Tools = ToolRegistry.ToolRegistry.layer(Deploy).pipe(
  Layer.provide(Deploy.toLayer(() => Effect.fail(new Error("the build is red"))))
)
// A model that tries again, and again.
const Model = ScriptedModel.layer(
  [(request) => ScriptedModel.callTools([ScriptedModel.toolCall(`try-${request.messages.length}`, "deploy", {})])],
  { whenExhausted: "repeat-last" }
)

export const program = Effect.gen(function*() {
  const agent = yield* Agent.make({
    limits: { maxTurns: 20, maxCost: 1, maxDuration: "5 minutes", maxRepeatedFailures: 3 }
  })
  yield* agent.prompt("Deploy the site.")
  const state = yield* SubscriptionRef.get(agent.state)
  if (state.limitReached !== undefined) console.log(`stopped: ${RunLimits.describe(state.limitReached)}`)
  const note = state.messages.at(-1)
  if (note !== undefined && Message.isMessage(note)) console.log(Message.textOf(note))
}).pipe(Effect.provide([Tools, Model]))

if (import.meta.main) Effect.runPromise(program)
