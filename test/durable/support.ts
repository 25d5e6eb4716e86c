/**
 * Test support for durable runs: one run of the durable workflow on the in-memory engine, returning what
 * `runLoop` (test/support/loop.ts) returns for the in-memory loop, so the two can be compared.
 */
import { Effect, Layer } from "effect"
import { WorkflowEngine } from "effect/workflow"
import * as DurableAgent from "../../src/durable/DurableAgent.ts"
import { RunIndex, StartLedger } from "../../src/durable/RunState.ts"
import * as EventSink from "../../src/EventSink.ts"
import type { Message } from "../../src/Message.ts"
import { Model, type ModelShape } from "../../src/Model.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import { type RegisteredTool, ToolRegistry } from "../../src/ToolRegistry.ts"
import { makeRecorder, type Recorder, type RunResult, standardTools, user } from "../support/loop.ts"

export interface DurableRunOptions {
  readonly script: ReadonlyArray<ScriptedModel.Step>
  readonly prompts?: ReadonlyArray<Message>
  readonly systemPrompt?: string
  readonly config?: DurableAgent.DurableRunConfig
  readonly tools?: ReadonlyArray<RegisteredTool>
  readonly recorder?: Recorder
}

/** The services of durable runs on `WorkflowEngine.layerMemory`, with this model and these tools. */
export const memoryServices = (
  model: ModelShape,
  tools: ReadonlyArray<RegisteredTool> = standardTools,
  config: DurableAgent.DurableRunConfig = {}
) =>
  DurableAgent.layer(config).pipe(
    Layer.provideMerge(WorkflowEngine.layerMemory),
    Layer.provideMerge(Layer.mergeAll(StartLedger.layerMemory, RunIndex.layerMemory)),
    Layer.provide(Layer.succeed(Model, model)),
    Layer.provide(Layer.orDie(ToolRegistry.fromEntries(tools)))
  )

/** One durable run on `WorkflowEngine.layerMemory` with a scripted model. */
export const runDurable = (options: DurableRunOptions) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.make(options.script)
    const recorder = options.recorder ?? makeRecorder()
    const result = yield* DurableAgent.run({
      prompts: options.prompts ?? [user("hi")],
      systemPrompt: options.systemPrompt ?? "You are a test."
    }).pipe(
      Effect.provideService(EventSink.EventSink, recorder.sink),
      Effect.provide(memoryServices(model, options.tools, options.config))
    )
    return { events: recorder.events, messages: result.messages, requests: yield* model.requests } satisfies RunResult
  })
