/**
 * A durable run in a process of its own, for the crash tests (crash.test.ts): the test kills it with
 * SIGKILL at a chosen point, then starts it again on the same store to resume the run.
 *
 * Usage: node runner.ts <store file> <work folder> <run id> <scenario>
 *
 * Prints one line per fact the test waits for or checks: `event <label>` per agent event,
 * `model-request <n>` per model call (n = assistant messages already in the request), `approval <id>` per
 * approval asked, and `RESULT <json>` with the run's new messages at the end. Every tool appends to
 * `<work folder>/out.txt`, so the test can count what ran.
 *
 * Scenarios:
 * - `batch`: one parallel batch of `append` calls (bash-like, not idempotent): c1..c3 finish at once, c4
 *   appends `c4-start` then sleeps for a minute; plus `probe` (idempotent), which logs its attempt and key and
 *   hangs on its first attempt. Then a final answer, streamed slowly enough to be killed in the middle.
 * - `approval`: two quick `append` calls, each needing an approval; with RUNNER_APPROVAL=hang the approval
 *   of c2 never comes.
 * - `hang`: one `append` call that sleeps for a minute, then a final answer (for an abort from outside).
 * - `inbox`: like `hang`, on a run that reads steering and follow-ups (`inbox: true`); the model answers
 *   every later request with the text of the last user message.
 * - `budget`: a run limited to 3 tool calls (and, to exercise the stored clock, one hour) whose model asks
 *   for one `append` call per turn forever: `b0` at once, `b1-start` then a minute's sleep, `b2` at once.
 * - `deadline`: a run limited to 2 seconds whose model asks for one `append` call per turn forever, the
 *   first (`d0-start`) sleeping a minute.
 *
 * The store's shard lease is ten minutes (DR 5.3): a resume that waited for the dead process's lease would
 * not finish within the tests' bounds.
 */
import { Effect, Layer, Schema, Stream } from "effect"
import { appendFileSync } from "node:fs"
import { join } from "node:path"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import * as DurableAgent from "../../src/durable/DurableAgent.ts"
import * as DurableStore from "../../src/durable/DurableStore.ts"
import { ToolAttempt } from "../../src/durable/ToolAttempt.ts"
import * as EventSink from "../../src/EventSink.ts"
import { Model, type ModelRequest, type ModelShape } from "../../src/Model.ts"
import type * as RunLimits from "../../src/RunLimits.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import * as Tool from "../../src/Tool.ts"
import { ToolRegistry } from "../../src/ToolRegistry.ts"

const [store, work, runId, scenario] = process.argv.slice(2) as [string, string, string, string]
const out = join(work, "out.txt")
const say = (line: string) =>
  process.stdout.write((process.env.RUNNER_TIMES ? `${performance.now().toFixed(0)} ` : "") + line + "\n")

/** The event labels of test/support/loop.ts (not imported: it pulls in pi, which is slow to load). */
const labelOf = (event: AgentEvent): string => {
  const e = event as any
  switch (e.type) {
    case "message_start":
    case "message_end":
      return `${e.type}:${e.message.role}${e.message.role === "assistant" ? `:${e.message.stopReason}` : ""}${
        e.message.role === "toolResult" ? `:${e.message.toolCallId}` : ""
      }`
    case "message_update":
      return `message_update:${e.assistantMessageEvent?.type}`
    case "tool_execution_start":
    case "tool_execution_update":
    case "tool_execution_end":
      return `${e.type}:${e.toolCallId}`
    default:
      return e.type
  }
}

const AppendParams = Schema.Struct({ line: Schema.String, sleepMillis: Schema.Number })
const append = Tool.make("append", { description: "Appends a line to out.txt, then sleeps", parameters: AppendParams })
const probe = Object.assign(
  Tool.make("probe", { description: "Logs its attempt; hangs on the first", parameters: Schema.Struct({}) }),
  { idempotent: true }
)

const tools = ToolRegistry.fromEntries([
  {
    tool: append,
    handler: ({ line, sleepMillis }: typeof AppendParams.Type) =>
      Effect.sync(() => appendFileSync(out, line + "\n")).pipe(
        Effect.andThen(Effect.sleep(sleepMillis)),
        Effect.as(Tool.textResult(`appended ${line}`))
      )
  },
  {
    tool: probe,
    handler: () =>
      Effect.gen(function*() {
        const info = yield* ToolAttempt
        appendFileSync(out, `probe attempt=${info?.attempt} key=${info?.idempotencyKey}\n`)
        if (info?.attempt === 1) yield* Effect.never
        return Tool.textResult(`probe ran on attempt ${info?.attempt}`)
      })
  }
])

const call = (id: string, line: string, sleepMillis = 0) => ScriptedModel.toolCall(id, "append", { line, sleepMillis })

const stepFor = (turn: number): ScriptedModel.Step => {
  if (scenario === "batch") {
    return turn === 0
      ? ScriptedModel.callTools([
        call("c1", "c1"),
        call("c2", "c2"),
        call("c3", "c3"),
        call("c4", "c4-start", 60_000),
        ScriptedModel.toolCall("p1", "probe", {})
      ])
      // Slow enough to be killed while it streams.
      : ScriptedModel.say("all done: c1, c2 and c3 ran, c4 was cut by the crash", { delay: "100 millis" })
  }
  if (scenario === "budget") {
    return ScriptedModel.callTools([call(`b${turn}`, turn === 1 ? "b1-start" : `b${turn}`, turn === 1 ? 60_000 : 0)])
  }
  if (scenario === "deadline") return ScriptedModel.callTools([call(`d${turn}`, `d${turn}-start`, 60_000)])
  if (scenario === "hang" || scenario === "inbox") {
    return turn === 0 ? ScriptedModel.callTools([call("c1", "c1-start", 60_000)]) : ScriptedModel.say("answered")
  }
  return turn === 0
    ? ScriptedModel.callTools([call("c1", "c1"), call("c2", "c2")])
    : ScriptedModel.say("approved and done")
}

const lastUserText = (request: ModelRequest) => {
  const last = [...request.messages].reverse().find((m) => m.role === "user")
  return typeof last?.content === "string" ? last.content : ""
}

/** A scripted model that answers by turn (so a new process continues where the run is). */
const model: ModelShape = {
  info: { api: "scripted", provider: "scripted", model: "scripted-model" },
  stream: (request: ModelRequest) =>
    Stream.unwrap(Effect.gen(function*() {
      const turn = request.messages.filter((m) => m.role === "assistant").length
      say(`model-request ${turn}`)
      const step = scenario === "inbox" && turn > 0 ? ScriptedModel.say(`re: ${lastUserText(request)}`) : stepFor(turn)
      const scripted = yield* ScriptedModel.make([step], { chunkSize: 4 })
      return scripted.stream(request)
    }))
}

const approvals = scenario === "approval"
  ? {
    beforeToolCall: ({ toolCall }: { toolCall: { id: string } }) =>
      Effect.gen(function*() {
        say(`approval ${toolCall.id}`)
        if (toolCall.id === "c2" && process.env.RUNNER_APPROVAL === "hang") yield* Effect.never
        return undefined
      })
  }
  : {}

const limits: { readonly limits?: RunLimits.RunLimits } = scenario === "budget"
  ? { limits: { maxToolCalls: 3, maxDuration: "1 hour" } }
  : scenario === "deadline"
  ? { limits: { maxDuration: "2 seconds" } }
  : {}

const services = DurableAgent.layer({
  ...approvals,
  ...limits,
  inbox: scenario === "inbox",
  abortPollInterval: "100 millis"
})
  .pipe(
    Layer.provide([Layer.succeed(Model, model), Layer.orDie(tools)]),
    Layer.provideMerge(DurableStore.layer({ filename: store, timings: { shardLockExpiration: "10 minutes" } }))
  )

// A later process continues the run by its id alone: the stored payload is used.
const program = (process.env.RUNNER_RESUME === "1"
  ? DurableAgent.resume(runId)
  : DurableAgent.run({ runId, prompts: [{ role: "user", content: "go", timestamp: 0 }] })).pipe(
    Effect.provideService(EventSink.EventSink, EventSink.fromCallback((event) => say(`event ${labelOf(event)}`))),
    Effect.provide(services)
  )

Effect.runPromise(program).then(
  (result) => {
    say(`RESULT ${JSON.stringify(result.messages)}`)
    process.exit(0)
  },
  (error) => {
    process.stderr.write(`runner failed: ${String(error)} ${JSON.stringify(error, null, 1)?.slice(0, 3000)}\n`)
    process.exit(1)
  }
)
