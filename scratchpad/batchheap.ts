// What a batch holds per call near its end: a heap snapshot taken by the handler of the last of N instant
// calls (sequential: every earlier call is done; parallel: every earlier call has at least executed), and
// one by the first call's handler (`out` with `.first` before `.heapsnapshot`),
// through agentLoopAsyncIterable, after a few warm runs.
// npx node --expose-gc scratchpad/batchheap.ts <parallel|sequential> N out.heapsnapshot, then
// npx node scratchpad/snapsum.mjs out.heapsnapshot out.first.heapsnapshot: what the batch holds per call
import { Effect, Layer, Schema } from "effect"
import * as v8 from "node:v8"
import { callsMessage, FINAL, ourModel, PROMPT } from "../bench/loop.ts"
import { agentLoopAsyncIterable } from "../src/AgentLoop.ts"
import { Model } from "../src/Model.ts"
import * as Tool from "../src/Tool.ts"
import { entry, ToolRegistry } from "../src/ToolRegistry.ts"

const mode = (process.argv[2] ?? "sequential") as "parallel" | "sequential"
const n = Number(process.argv[3] ?? 10_000)
const out = process.argv[4] ?? "/tmp/batch.heapsnapshot"
let snapshot = false
const tool = Tool.make("tool", { description: "t", parameters: Schema.Struct({ x: Schema.Number }) })
const registry = ToolRegistry.fromEntries([entry(tool, (args: { readonly x: number }) =>
  Effect.sync(() => {
    if (snapshot && (args.x === 0 || args.x === n - 1)) {
      ;(globalThis as { gc?: () => void }).gc?.()
      const h = v8.getHeapStatistics().used_heap_size
      console.log(`used heap at call ${args.x}: ${(h / 1e6).toFixed(1)} MB`)
      v8.writeHeapSnapshot(args.x === 0 ? out.replace(/\.heapsnapshot$/, ".first.heapsnapshot") : out)
    }
    return { content: [{ type: "text" as const, text: "ok" }], details: { x: args.x } }
  }))])
const run = async () => {
  const layer = Layer.merge(Layer.succeed(Model, ourModel([callsMessage(n), FINAL])), registry)
  for await (
    const _ of agentLoopAsyncIterable([PROMPT], { systemPrompt: "", messages: [] }, { toolExecution: mode }, layer)
  ) {
    // consumed
  }
}
for (let i = 0; i < 3; i++) await run()
;(globalThis as { gc?: () => void }).gc?.()
console.log(`used heap before: ${(v8.getHeapStatistics().used_heap_size / 1e6).toFixed(1)} MB`)
snapshot = true
await run()
