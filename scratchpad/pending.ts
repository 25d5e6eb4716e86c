// What a parallel batch holds per pending call: N calls whose tools each wait one setImmediate, through each
// side's agentLoop; the heap after a full GC when the first tool is called and when the last is (every
// earlier call pending), per call. SNAP=1 also writes /tmp/pend0 and /tmp/pend1 .heapsnapshot for
// snapsum.mjs: npx node --expose-gc scratchpad/pending.ts [ours|pi]
import { agentLoop as piAgentLoop } from "@mariozechner/pi-agent-core"
import { Type } from "@mariozechner/pi-ai"
import { Effect, Layer, Schema } from "effect"
import * as v8 from "node:v8"
import { callsMessage, FINAL, ourModel, piConvert, piModel, piStreamFn, PROMPT } from "../bench/loop.ts"
import { agentLoopAsyncIterable } from "../src/AgentLoop.ts"
import { Model } from "../src/Model.ts"
import * as Tool from "../src/Tool.ts"
import { entry, ToolRegistry } from "../src/ToolRegistry.ts"
const n = 2000
const side = process.argv[2] ?? "ours"
let measure = false
const heaps: Record<number, number> = {}
const mark = (x: number) => {
  if (measure && (x === 0 || x === n - 1)) {
    ;(globalThis as any).gc()
    heaps[x] = v8.getHeapStatistics().used_heap_size
    if (process.env.SNAP) v8.writeHeapSnapshot(`/tmp/pend${x === 0 ? "0" : "1"}.heapsnapshot`)
  }
}
const nextTurn = <A>(v: A): Promise<A> => new Promise((r) => setImmediate(() => r(v)))
const result = (x: number) => ({ content: [{ type: "text" as const, text: "ok" }], details: { x } })
const tool = Tool.make("tool", { description: "t", parameters: Schema.Struct({ x: Schema.Number }) })
const registry = ToolRegistry.fromEntries([entry(tool, (args: { readonly x: number }) =>
  Effect.promise(() => {
    mark(args.x)
    return nextTurn(result(args.x))
  }))])
const piTool = {
  name: "tool",
  label: "tool",
  description: "t",
  parameters: Type.Object({ x: Type.Number() }),
  execute: async (_id: string, p: any) => {
    mark(p.x)
    return nextTurn(result(p.x))
  }
}
const run = async () => {
  if (side === "ours") {
    const layer = Layer.merge(Layer.succeed(Model, ourModel([callsMessage(n), FINAL])), registry)
    for await (
      const _ of agentLoopAsyncIterable(
        [PROMPT],
        { systemPrompt: "", messages: [] },
        { toolExecution: "parallel" },
        layer
      )
    ) {
      // consumed
    }
  } else {
    const s = piAgentLoop(
      [PROMPT as any],
      { systemPrompt: "", messages: [], tools: [piTool as any] },
      { model: piModel, convertToLlm: piConvert, toolExecution: "parallel" } as any,
      undefined,
      piStreamFn([callsMessage(n), FINAL]) as any
    )
    for await (const _ of s as any) {
      // consumed
    }
  }
}
for (let i = 0; i < 5; i++) await run()
measure = true
await run()
console.log(side, "bytes per pending call:", ((heaps[n - 1]! - heaps[0]!) / (n - 1)).toFixed(0))
