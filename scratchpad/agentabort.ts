import { Deferred, Effect, Fiber, Layer, Schema } from "effect"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import * as Agent from "../src/Agent.ts"
const T = Tool.make("t", { description: "", parameters: Schema.Struct({}) })
const tools = ToolRegistry.layer(T).pipe(Layer.provide(T.toLayer(() => Effect.succeed(Tool.textResult("x")))))
const model = ScriptedModel.layer([{ ...ScriptedModel.callTools([ScriptedModel.toolCall("c1", "t", {})], "some text here"), delay: 10 }])
const main = Effect.gen(function*() {
  const agent = yield* Agent.make({})
  const seen = yield* Deferred.make<void>()
  yield* agent.subscribe((e) => e.type === "message_update" && e.assistantMessageEvent.type === "toolcall_start" ? Deferred.succeed(seen, undefined) : Effect.void)
  yield* agent.subscribe((e) => Effect.sync(() => { if (e.type !== "message_update") console.log("sub1", e.type) }))
  yield* agent.subscribe((e) => e.type === "message_update" ? Effect.void : Effect.promise(() => new Promise((r) => setTimeout(r, 3))).pipe(
    Effect.andThen(Effect.sync(() => console.log("  sub2 done", e.type))),
    Effect.onInterrupt(() => Effect.sync(() => console.log("  sub2 INTERRUPTED", e.type)))))
  const f = yield* Effect.forkChild(agent.prompt("go"))
  yield* Deferred.await(seen)
  yield* Fiber.interrupt(f)
  console.log("interrupted prompt")
}).pipe(Effect.provide([tools, model]))
Effect.runPromise(main)
