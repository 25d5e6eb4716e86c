/**
 * What durability costs per tool call: the same scripted runs through the in-memory loop and as durable
 * runs on the embedded SQLite store.
 *
 * - parallel: one turn with a batch of 100 parallel calls of a trivial tool, then a final answer;
 * - sequential: 100 turns of one call each, then a final answer.
 *
 * Overhead per call = (durable time - in-memory time) / 100. Run: `npx node bench/durable.ts [repeats]`.
 * Each durable run uses a new run id in one store file, so later runs see a store that already holds runs.
 */
import { Effect, Layer, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runAgentLoop } from "../src/AgentLoop.ts"
import * as DurableAgent from "../src/durable/DurableAgent.ts"
import * as DurableStore from "../src/durable/DurableStore.ts"
import { Model } from "../src/Model.ts"
import * as ScriptedModel from "../src/ScriptedModel.ts"
import * as Tool from "../src/Tool.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"

const N = 100
const repeats = Number(process.argv[2] ?? 3)

const noop = Tool.make("noop", { description: "Does nothing", parameters: Schema.Struct({ i: Schema.Number }) })
const tools = Layer.orDie(ToolRegistry.fromEntries([{
  tool: noop,
  handler: ({ i }: { i: number }) => Effect.succeed(Tool.textResult(`ok ${i}`))
}]))

const parallelScript = (): Array<ScriptedModel.Step> => [
  ScriptedModel.callTools(Array.from({ length: N }, (_, i) => ScriptedModel.toolCall(`c${i}`, "noop", { i }))),
  ScriptedModel.say("done")
]
const sequentialScript = (): Array<ScriptedModel.Step> => [
  ...Array.from({ length: N }, (_, i) => ScriptedModel.callTools([ScriptedModel.toolCall(`c${i}`, "noop", { i })])),
  ScriptedModel.say("done")
]

const prompt = [{ role: "user" as const, content: "go", timestamp: 0 }]

/** Wall time of `effect`; the process CPU time it used is added to `cpu` (to tell work from waiting). */
const cpu = { ms: 0 }
const time = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = performance.now()
    const startCpu = process.cpuUsage()
    yield* effect
    const used = process.cpuUsage(startCpu)
    cpu.ms = (used.user + used.system) / 1000
    return performance.now() - start
  })

const inMemory = (script: Array<ScriptedModel.Step>) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.make(script)
    return yield* time(
      runAgentLoop(prompt, { systemPrompt: "", messages: [] }).pipe(
        Effect.provideService(Model, model),
        Effect.provide(tools)
      )
    )
  })

const durable = (file: string, synchronous: "full" | "normal", script: () => Array<ScriptedModel.Step>) =>
  Effect.gen(function*() {
    // A model per run, reached through a layer built once: the script cursor restarts with each run.
    let current = yield* ScriptedModel.make(script())
    const model = Layer.succeed(Model, { info: current.info, stream: (request) => current.stream(request) })
    const services = DurableAgent.layer().pipe(
      Layer.provide([model, tools]),
      Layer.provideMerge(DurableStore.layer({ filename: file, synchronous }))
    )
    return yield* Effect.gen(function*() {
      const times: Array<number> = []
      const cpus: Array<number> = []
      for (let i = 0; i < repeats; i++) {
        current = yield* ScriptedModel.make(script())
        times.push(yield* time(DurableAgent.run({ prompts: prompt })))
        cpus.push(cpu.ms)
      }
      return { times, cpus }
    }).pipe(Effect.provide(services))
  })

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const main = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "effect-agent-bench-durable-"))
  try {
    const rows: Array<Record<string, string>> = []
    for (const [shape, script] of [["parallel x100", parallelScript], ["sequential x100", sequentialScript]] as const) {
      const memory: Array<number> = []
      for (let i = 0; i < repeats; i++) memory.push(yield* inMemory(script()))
      const memoryMs = median(memory)
      for (const synchronous of ["full", "normal"] as const) {
        const measured = yield* durable(join(dir, `${synchronous}.db`), synchronous, script)
        const durableMs = median(measured.times)
        rows.push({
          shape,
          synchronous,
          "in-memory ms": memoryMs.toFixed(1),
          "durable ms": durableMs.toFixed(1),
          "durable cpu ms": median(measured.cpus).toFixed(1),
          "overhead ms/call": ((durableMs - memoryMs) / N).toFixed(2)
        })
      }
    }
    console.table(rows)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

Effect.runPromise(main).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
