/**
 * Durable runs on the embedded store (src/durable/DurableStore.ts, issue 12 items 3 and 4), in process:
 * the cluster engine over the SQLite file runs the loop to the same transcript as the in-memory loop, a
 * message sent before the run reads its inbox is not lost, and a store in use by one owner is refused to a
 * second one with a typed error.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Stream } from "effect"
import { RunnerAddress } from "effect/cluster"
import { SqlClient, SqlError } from "effect/sql"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as DurableAgent from "../../src/durable/DurableAgent.ts"
import * as DurableStore from "../../src/durable/DurableStore.ts"
import { SqliteClient } from "../../src/durable/SqliteClient.ts"
import * as EventSink from "../../src/EventSink.ts"
import type { ToolResultMessage } from "../../src/Message.ts"
import { Model, type ModelShape } from "../../src/Model.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import { type RegisteredTool, ToolRegistry } from "../../src/ToolRegistry.ts"
import {
  assertMessagesMatchEvents,
  assertWellFormed,
  customTool,
  makeRecorder,
  runLoop,
  standardTools,
  user,
  withoutTimestamps
} from "../support/loop.ts"

const tempStore = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "effect-agent-store-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => path.join(dir, "runs.db")))

const storeServices = (
  file: string,
  model: ModelShape,
  tools: ReadonlyArray<RegisteredTool>,
  config: DurableAgent.DurableRunConfig = {}
) =>
  DurableAgent.layer(config).pipe(
    Layer.provide([Layer.succeed(Model, model), Layer.orDie(ToolRegistry.fromEntries(tools))]),
    Layer.provideMerge(DurableStore.layer({ filename: file, synchronous: "normal" }))
  )

const script = (): Array<ScriptedModel.Step> => [
  ScriptedModel.callTools([
    ScriptedModel.toolCall("c1", "add", { a: 1, b: 2 }),
    ScriptedModel.toolCall("c2", "fail", { text: "x" }),
    ScriptedModel.toolCall("c3", "missing", {}),
    ScriptedModel.toolCall("c4", "echo", { text: "hello" })
  ]),
  ScriptedModel.callTools([ScriptedModel.toolCall("c5", "stop", { text: "bye" })], "stopping"),
  ScriptedModel.say("never reached")
]

describe("durable runs on the SQLite store", () => {
  it.live("give the events and transcript of the in-memory loop (DR 1.3, 5.2)", () =>
    Effect.gen(function*() {
      const file = yield* tempStore
      const plain = yield* runLoop({ script: script() })
      const model = yield* ScriptedModel.make(script())
      const recorder = makeRecorder()
      const result = yield* DurableAgent.run({ prompts: [user("hi")], systemPrompt: "You are a test." }).pipe(
        Effect.provideService(EventSink.EventSink, recorder.sink),
        Effect.provide(storeServices(file, model, standardTools))
      )
      assertWellFormed(result.messages)
      assertMessagesMatchEvents(recorder.events, result.messages)
      assert.deepStrictEqual(withoutTimestamps(recorder.events), withoutTimestamps(plain.events))
      assert.deepStrictEqual(withoutTimestamps(result.messages), withoutTimestamps(plain.messages))
    }), 60_000)

  it.live(
    "a steering message stored before the run reads its inbox is read at its start (DR 3.1)",
    () =>
      Effect.gen(function*() {
        const file = yield* tempStore
        const model = yield* ScriptedModel.make([ScriptedModel.say("answer")])
        const result = yield* Effect.gen(function*() {
          yield* DurableAgent.steer("run-early", user("sent before the run"))
          return yield* DurableAgent.run({ runId: "run-early", prompts: [user("hi")] })
        }).pipe(Effect.provide(storeServices(file, model, [], { inbox: true })))
        assert.deepStrictEqual(result.messages.map((m) => m.role === "user" ? m.content : m.role), [
          "hi",
          "sent before the run",
          "assistant"
        ])
        assert.strictEqual((yield* model.requests).length, 1)
      }),
    60_000
  )

  it.live(
    "a new owner lists the run and resuming it returns its stored transcript without calling the model (DR 1.4, 4.1)",
    () =>
      Effect.gen(function*() {
        const file = yield* tempStore
        const first = yield* ScriptedModel.make(script())
        const done = yield* DurableAgent.run({ runId: "run-r", prompts: [user("hi")] }).pipe(
          Effect.provide(storeServices(file, first, standardTools))
        )
        const second = yield* ScriptedModel.make([])
        const resumed = yield* Effect.gen(function*() {
          const status = yield* DurableAgent.status("run-r")
          const result = yield* DurableAgent.resume("run-r")
          return { status, result, runs: yield* DurableAgent.list() }
        }).pipe(Effect.provide(storeServices(file, second, standardTools)))
        assert.strictEqual(resumed.status, "completed")
        assert.deepStrictEqual(resumed.runs.map(({ runId, status, title }) => ({ runId, status, title })), [
          { runId: "run-r", status: "completed", title: "hi" }
        ])
        assert.deepStrictEqual(resumed.result.messages, done.messages)
        assert.strictEqual((yield* second.requests).length, 0)
      }),
    60_000
  )

  it.live(
    "abort from outside ends a run on the store and stops its running tool (DR 3.2)",
    () =>
      Effect.gen(function*() {
        const file = yield* tempStore
        const entered = yield* Deferred.make<void>()
        const stopped = yield* Deferred.make<void>()
        const hang = customTool("hang", () =>
          Deferred.succeed(entered, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(stopped, undefined))
          ))
        const model = yield* ScriptedModel.make([
          ScriptedModel.callTools([ScriptedModel.toolCall("c1", "hang", {})]),
          ScriptedModel.say("never asked")
        ])
        const result = yield* Effect.gen(function*() {
          const run = yield* Effect.forkChild(DurableAgent.run({ runId: "run-a", prompts: [user("hi")] }))
          yield* Deferred.await(entered)
          yield* DurableAgent.abort("run-a")
          const result = yield* Fiber.join(run)
          // The tool of an aborted run is stopped, not left running inside the engine.
          yield* Deferred.await(stopped)
          return result
        }).pipe(Effect.provide(storeServices(file, model, [hang], { abandonAfter: "100 millis" })))
        assert.deepStrictEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult"])
        assert.strictEqual((yield* model.requests).length, 1)
      }),
    60_000
  )

  it.live(
    "a run stopped by closing its process's services (Ctrl-C) is resumed by a new owner (DR 5.3, 5.4)",
    () =>
      Effect.gen(function*() {
        const file = yield* tempStore
        const entered = yield* Deferred.make<void>()
        const hang = customTool("hang", () => Deferred.succeed(entered, undefined).pipe(Effect.andThen(Effect.never)))
        const first = yield* ScriptedModel.make(
          script().slice(0, 0).concat([
            ScriptedModel.callTools([ScriptedModel.toolCall("c1", "hang", {})])
          ])
        )
        yield* Effect.gen(function*() {
          const run = yield* Effect.forkChild(DurableAgent.run({ runId: "run-c", prompts: [user("hi")] }))
          yield* Deferred.await(entered)
          yield* Fiber.interrupt(run)
        }).pipe(Effect.provide(storeServices(file, first, [hang])))
        const second = yield* ScriptedModel.make([ScriptedModel.say("resumed")])
        const resumed = yield* DurableAgent.resume("run-c").pipe(
          Effect.provide(storeServices(file, second, [customTool("hang", () => Effect.die("must not run again"))]))
        )
        assert.deepStrictEqual(resumed.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"])
        const result = resumed.messages[2]!
        assert.isTrue(result.role === "toolResult" && result.isError)
        assert.strictEqual((yield* second.requests).length, 1)
      }),
    60_000
  )

  it.live(
    "a tool timeout is stored as one: after a stop the resumed run has the in-memory loop's timeout result (DR 4.2)",
    () =>
      Effect.gen(function*() {
        const file = yield* tempStore
        const script = [
          ScriptedModel.callTools([ScriptedModel.toolCall("s1", "sleepy", {})]),
          ScriptedModel.say("after")
        ]
        const sleepy = customTool("sleepy", () => Effect.never)
        const plain = yield* runLoop({ script, tools: [sleepy], config: { timeout: "50 millis" } })
        const expected = plain.messages.find((m): m is ToolResultMessage => m.role === "toolResult")!
        assert.deepStrictEqual(expected.details, { timedOut: true, abandoned: false })

        // First process: the call times out, then the next model request never answers; the process stops.
        const asked = yield* Deferred.make<void>()
        const first = yield* ScriptedModel.make([script[0]!])
        const stalling: ModelShape = {
          info: first.info,
          stream: (request) =>
            request.messages.some((m) => m.role === "toolResult")
              ? Stream.unwrap(Effect.as(Deferred.succeed(asked, undefined), Stream.never))
              : first.stream(request)
        }
        yield* Effect.gen(function*() {
          const run = yield* Effect.forkChild(DurableAgent.run({ runId: "run-t", prompts: [user("hi")] }))
          yield* Deferred.await(asked)
          yield* Fiber.interrupt(run)
        }).pipe(Effect.provide(storeServices(file, stalling, [sleepy], { timeout: "50 millis" })))

        // Second process: the stored timeout is replayed; the tool is not run again.
        const second = yield* ScriptedModel.make([ScriptedModel.say("after")])
        const resumed = yield* DurableAgent.resume("run-t").pipe(
          Effect.provide(storeServices(file, second, [customTool("sleepy", () => Effect.die("must not run again"))], {
            timeout: "50 millis"
          }))
        )
        const result = resumed.messages.find((m) => m.role === "toolResult")!
        assert.deepStrictEqual(withoutTimestamps([result]), withoutTimestamps([expected]))
        assert.deepStrictEqual(resumed.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"])
        assert.strictEqual((yield* second.requests).length, 1)
      }),
    60_000
  )

  it.live(
    "engine() composes over any SqlClient with its own runner address, timings and table prefix (DR 5.1)",
    () =>
      Effect.gen(function*() {
        const file = yield* tempStore
        const model = yield* ScriptedModel.make(script())
        const services = DurableAgent.layer().pipe(
          Layer.provide([Layer.succeed(Model, model), Layer.orDie(ToolRegistry.fromEntries(standardTools))]),
          Layer.provideMerge(DurableStore.engine({
            runnerAddress: RunnerAddress.make("runner-a", 7001),
            timings: { shardLockExpiration: "20 seconds", shardsPerGroup: 4, entityMessagePollInterval: "200 millis" },
            tablePrefix: "custom"
          })),
          // A client that renames result columns: the engine and our tables must not depend on its names.
          Layer.provideMerge(SqliteClient.layer({
            filename: file,
            transformResultNames: (name) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())
          }))
        )
        const { result, tables, locks, runs } = yield* Effect.gen(function*() {
          const result = yield* DurableAgent.run({ runId: "run-e", prompts: [user("hi")] })
          const runs = yield* DurableAgent.list()
          const sql = yield* SqlClient.SqlClient
          const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`
          const locks = yield* sql<
            { address: string; n: number }
          >`SELECT address, count(*) AS n FROM custom_locks GROUP BY address`
          return { result, tables: tables.map((t) => t.name), locks: locks.map((l) => ({ ...l })), runs }
        }).pipe(Effect.provide(services))
        assert.deepStrictEqual(result.messages.map((m) => m.role), [
          "user",
          "assistant",
          "toolResult",
          "toolResult",
          "toolResult",
          "toolResult",
          "assistant",
          "toolResult"
        ])
        for (
          const table of [
            "custom_messages",
            "custom_replies",
            "custom_locks",
            "custom_runners",
            "effect_agent_step_starts",
            "effect_agent_runs"
          ]
        ) {
          assert.include(tables, table)
        }
        assert.deepStrictEqual(runs.map(({ runId, status, title }) => ({ runId, status, title })), [
          { runId: "run-e", status: "completed", title: "hi" }
        ])
        // The runner's leases name its address, over the shards configured.
        assert.deepStrictEqual(locks, [{ address: "runner-a:7001", n: 4 }])
      }),
    60_000
  )

  it.live("a store already owned is refused with a typed LockTimeoutError (DR 5.3)", () =>
    Effect.gen(function*() {
      const file = yield* tempStore
      const exit = yield* Effect.gen(function*() {
        return yield* Effect.exit(Layer.build(DurableStore.layer({ filename: file })))
      }).pipe(Effect.provide(DurableStore.layer({ filename: file })), Effect.scoped)
      assert.isTrue(Exit.isFailure(exit))
      const reason = Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail"
        ? exit.cause.reasons[0].error
        : undefined
      assert.isTrue(SqlError.isSqlError(reason))
      assert.strictEqual((reason as SqlError.SqlError).reason._tag, "LockTimeoutError")
      assert.match((reason as SqlError.SqlError).message, /in use by another process/)
    }), 60_000)
})
