/**
 * TE 8.1 checked the way an application meets it, in real time (no TestClock): random batches of tools
 * written as applications write them (`Effect.tryPromise` around an async function, `Tool.tryPromise`,
 * `Effect.gen` with `Effect.sleep`, `Effect.sync`; cooperative or deaf to the signal; some never settle),
 * aborted from every place an abort can come from: before the batch, by a timer, in `beforeToolCall`, in a
 * tool's handler, as its body begins or after its first wait, in `afterToolCall`, and in a subscriber of any
 * event (synchronous or asynchronous), in both modes, under a concurrency limit, with and without a time
 * limit per call.
 *
 * "After the abort" means after `abort()` has returned. Every tool body records whether that had happened
 * when it began; no body may begin after it, except the body of the very call that raised the abort from
 * its own handler or body (its execute had begun: TE 8.1 lets it run to its first wait). Every call still
 * gets its one result message and the batch says it was aborted.
 *
 * `PROP_RUNS_FACTOR=<n>` multiplies the number of runs (15 for 3 000 cases).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import type { AgentEvent } from "../src/AgentEvent.ts"
import * as EventSink from "../src/EventSink.ts"
import { type AssistantMessage, emptyUsage } from "../src/Message.ts"
import * as Tool from "../src/Tool.ts"
import { executeToolCalls } from "../src/ToolExecution.ts"
import { ToolRegistry } from "../src/ToolRegistry.ts"

const Index = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 11 }))
const Millis = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 6 }))

/** How a tool is written, and whether it ever settles. */
const Kind = Schema.Literals(["tryPromise", "toolTryPromise", "effect", "sync", "neverPromise", "neverEffect"])

const CallCase = Schema.Struct({ kind: Kind, delay: Millis, cooperative: Schema.Boolean })

/** Where the abort comes from. `call` and `event` are taken modulo the batch's size. */
const Source = Schema.Union([
  Schema.TaggedStruct("BeforeBatch", {}),
  Schema.TaggedStruct("Timer", { ms: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 15 })) }),
  Schema.TaggedStruct("BeforeToolCall", { call: Index, async: Schema.Boolean }),
  Schema.TaggedStruct("Handler", { call: Index }),
  Schema.TaggedStruct("BodyBegin", { call: Index }),
  Schema.TaggedStruct("BodyAfterWait", { call: Index }),
  Schema.TaggedStruct("AfterToolCall", { call: Index, async: Schema.Boolean }),
  Schema.TaggedStruct("Subscriber", { event: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 40 })) })
])
type Source = typeof Source.Type

const AbortCase = Schema.Struct({
  mode: Schema.Literals(["parallel", "sequential"]),
  concurrency: Schema.Literals(["unbounded", 1, 2, 3]),
  calls: Schema.Array(CallCase).check(Schema.isMinLength(1), Schema.isMaxLength(12)),
  subscriber: Schema.Literals(["sync", "async"]),
  /** How a promise tool sends its update: forked and forgotten, or awaited. */
  update: Schema.Literals(["fork", "await"]),
  /** The batch's `timeout` in ms (a tool with a time limit runs in a fiber of its own), or none. */
  timeout: Schema.NullOr(Schema.Literals([3, 50])),
  source: Source
})
type AbortCase = typeof AbortCase.Type

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** What one case saw. */
interface Seen {
  /** Per body that began: its call and whether `abort()` had already returned. */
  readonly began: Array<{ readonly call: number; readonly afterAbort: boolean }>
  /** The call that raised the abort from its own handler or body, if one did. */
  raisedBy: number | undefined
  aborted: boolean
}

const message = (n: number): AssistantMessage => ({
  role: "assistant",
  content: Array.from({ length: n }, (_, i) => ({ type: "toolCall" as const, id: `c${i}`, name: "t", arguments: {} })),
  api: "test",
  provider: "test",
  model: "test",
  usage: emptyUsage,
  stopReason: "toolUse",
  timestamp: 0
})

const runCase = (c: AbortCase) =>
  Effect.gen(function*() {
    const n = c.calls.length
    const source: Source = "call" in c.source ? { ...c.source, call: c.source.call % n } : c.source
    const controller = new AbortController()
    const seen: Seen = { began: [], raisedBy: undefined, aborted: false }
    let returned = false
    const abort = (raisedBy?: number) => {
      if (controller.signal.aborted) return
      controller.abort()
      returned = true
      seen.aborted = true
      seen.raisedBy = raisedBy
    }
    const at = (tag: Source["_tag"], call: number) => source._tag === tag && "call" in source && source.call === call

    const T = Tool.make("t", { description: "a test tool", parameters: Schema.Struct({}) })
    const handlers = T.toLayer((_args, ctx) => {
      const i = Number(ctx.toolCallId.slice(1))
      const { kind, delay, cooperative } = c.calls[i]!
      if (at("Handler", i)) abort(i)
      const begin = () => {
        seen.began.push({ call: i, afterAbort: returned })
        if (at("BodyBegin", i)) abort(i)
      }
      const afterWait = () => {
        if (at("BodyAfterWait", i)) abort(i)
      }
      const wait = (ms: number) =>
        cooperative
          ? new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, ms)
            ctx.signal.addEventListener("abort", () => {
              clearTimeout(timer)
              resolve()
            })
          })
          : sleep(ms)
      const update = () => {
        const sent = ctx.update(Tool.textResult(`running ${i}`))
        return c.update === "await" ? Effect.runPromise(sent) : void Effect.runFork(sent)
      }
      switch (kind) {
        case "tryPromise":
          return Effect.tryPromise(async () => {
            begin()
            await update()
            await wait(delay)
            afterWait()
            return Tool.textResult(`done ${i}`)
          })
        case "toolTryPromise":
          return Tool.tryPromise(async () => {
            begin()
            await update()
            await wait(delay)
            afterWait()
            return Tool.textResult(`done ${i}`)
          })
        case "effect":
          return Effect.gen(function*() {
            begin()
            yield* ctx.update(Tool.textResult(`running ${i}`))
            yield* Effect.sleep(delay)
            afterWait()
            return Tool.textResult(`done ${i}`)
          })
        case "sync":
          return Effect.sync(() => {
            begin()
            afterWait()
            return Tool.textResult(`done ${i}`)
          })
        case "neverPromise":
          return Effect.tryPromise(() => {
            begin()
            void update()
            return new Promise<Tool.ToolResult>(() => {})
          })
        case "neverEffect":
          return Effect.gen(function*() {
            begin()
            yield* ctx.update(Tool.textResult(`running ${i}`))
            return yield* Effect.never
          })
      }
    })

    let events = 0
    const onEvent = (_event: AgentEvent) => {
      if (source._tag === "Subscriber" && events++ === source.event) abort()
    }
    const sink: EventSink.EventSinkShape = c.subscriber === "sync"
      ? EventSink.fromCallback(onEvent)
      : { emit: (event) => Effect.promise(() => sleep(0).then(() => onEvent(event))) }
    const hook =
      (tag: "BeforeToolCall" | "AfterToolCall") => (context: { readonly toolCall: { readonly id: string } }) => {
        const i = Number(context.toolCall.id.slice(1))
        if (!at(tag, i)) return Effect.void
        return "async" in source && source.async
          ? Effect.promise(() => sleep(1).then(() => abort()))
          : Effect.sync(() => abort())
      }

    if (source._tag === "BeforeBatch") abort()
    const timer = source._tag === "Timer" ? setTimeout(() => abort(), source.ms) : undefined
    // A source that never fires (an event past the last) must not leave a never-settling tool hanging.
    const fallback = setTimeout(() => abort(), 150)
    const result = yield* executeToolCalls(message(n), {
      toolExecution: c.mode,
      concurrency: c.concurrency,
      signal: controller.signal,
      abandonAfter: "20 millis",
      ...(c.timeout === null ? {} : { timeout: c.timeout }),
      beforeToolCall: hook("BeforeToolCall"),
      afterToolCall: hook("AfterToolCall")
    }).pipe(
      Effect.provide(ToolRegistry.layer(T).pipe(Layer.provide(handlers))),
      Effect.provideService(EventSink.EventSink, sink),
      Effect.ensuring(Effect.sync(() => {
        clearTimeout(timer)
        clearTimeout(fallback)
      }))
    )
    return { seen, result }
  })

describe("TE 8.1 in real time: no call begins after abort() returns", () => {
  it.live.prop(
    "from any source, at any time, in both modes, whatever the tools and subscribers",
    { c: AbortCase },
    ({ c }) =>
      Effect.gen(function*() {
        const { result, seen } = yield* runCase(c)
        const late = seen.began.filter((b) => b.afterAbort && b.call !== seen.raisedBy).map((b) => b.call)
        assert.deepStrictEqual(late, [], `calls that began after abort() returned (raised by ${seen.raisedBy})`)
        assert.strictEqual(result.messages.length, c.calls.length, "one result message per call")
        assert.deepStrictEqual(result.messages.map((m) => m.toolCallId), c.calls.map((_, i) => `c${i}`))
        if (seen.aborted) {
          const notExecuted = result.messages.filter((m) =>
            !seen.began.some((b) => `c${b.call}` === m.toolCallId) && m.isError
          )
          // A call that never began says so (TE 8.3), unless it was finalized before the abort.
          for (const m of notExecuted) {
            const text = m.content.map((p) => (p.type === "text" ? p.text : "")).join("")
            assert.match(text, /not executed|aborted/, `call ${m.toolCallId}: ${text}`)
          }
        }
        return true
      }),
    {
      timeout: 120_000,
      arbitrary: {
        runs: Math.max(1, Math.round(200 * Number(process.env.PROP_RUNS_FACTOR ?? 1))),
        ...(process.env.PROP_SEED !== undefined ? { seed: Number(process.env.PROP_SEED) } : {})
      }
    }
  )
})
