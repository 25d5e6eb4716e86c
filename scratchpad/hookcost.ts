// Which hook costs what in parallel mode: warm marginal CPU µs per call ((run of 30 calls − run of 10) / 20)
// through agentLoopAsyncIterable, with `promise` handlers and no hook, only beforeToolCall, only
// afterToolCall, or both (each `Effect.promise(async () => { await null })`).
// Then the cost of one wait alone. npx node scratchpad/hookcost.ts [parallel|sequential] [seconds per case]
import { Effect, Layer, Schema } from "effect"
import { callsMessage, FINAL, ourModel, PROMPT } from "../bench/loop.ts"
import { cpuNow } from "../bench/measure.ts"
import { agentLoopAsyncIterable, type AgentLoopConfig } from "../src/AgentLoop.ts"
import { Model } from "../src/Model.ts"
import * as Tool from "../src/Tool.ts"
import { entry, ToolRegistry } from "../src/ToolRegistry.ts"

const mode = (process.argv[2] ?? "parallel") as "parallel" | "sequential"
const seconds = Number(process.argv[3] ?? 2)
const tool = Tool.make("tool", { description: "t", parameters: Schema.Struct({ x: Schema.Number }) })
const handler = (args: { readonly x: number }) =>
  Effect.promise(async () => {
    await null
    return { content: [{ type: "text" as const, text: "ok" }], details: { x: args.x } }
  })
const registry = ToolRegistry.fromEntries([entry(tool, handler)])
const hook = () =>
  Effect.promise(async () => {
    await null
  })
const cases: Record<string, Partial<AgentLoopConfig>> = {
  none: {},
  before: { beforeToolCall: hook },
  after: { afterToolCall: hook },
  both: { beforeToolCall: hook, afterToolCall: hook }
}
const run = async (n: number, config: Partial<AgentLoopConfig>) => {
  const script = [callsMessage(n), FINAL]
  const layer = Layer.merge(Layer.succeed(Model, ourModel(script)), registry)
  for await (
    const _ of agentLoopAsyncIterable(
      [PROMPT],
      { systemPrompt: "", messages: [] },
      { toolExecution: mode, ...config },
      layer
    )
  ) {
    // consumed
  }
}
const perRun = async (n: number, config: Partial<AgentLoopConfig>) => {
  for (let i = 0; i < 200; i++) await run(n, config)
  const until = performance.now() + seconds * 1000
  let runs = 0
  const t0 = cpuNow()
  while (performance.now() < until) {
    await run(n, config)
    runs++
  }
  return (cpuNow() - t0) / runs
}
for (const [name, config] of Object.entries(cases)) {
  const a = await perRun(10, config)
  const b = await perRun(30, config)
  console.log(`${mode} ${name}: marginal ${((b - a) / 20).toFixed(2)} µs per call, run of 10 ${a.toFixed(1)} µs`)
}

// And the cost of one wait itself: 200 000 awaits of `async () => { await null }` in one async function,
// and as `Effect.promise` in one fiber (each a suspension, a resume and an async-context capture).
const thunk = async () => {
  await null
}
const N = 200_000
const plain = async () => {
  for (let i = 0; i < N; i++) await thunk()
}
const inFiber = Effect.fnUntraced(function*() {
  for (let i = 0; i < N; i++) yield* Effect.promise(thunk)
})
for (let round = 0; round < 3; round++) {
  let t0 = cpuNow()
  await plain()
  const a = (cpuNow() - t0) / N
  t0 = cpuNow()
  await Effect.runPromise(inFiber())
  const b = (cpuNow() - t0) / N
  if (round === 2) console.log(`one wait: await ${a.toFixed(2)} µs, Effect.promise ${b.toFixed(2)} µs`)
}
