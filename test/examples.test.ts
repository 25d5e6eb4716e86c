import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterEach, beforeEach, vi } from "vitest"

// The README's examples are real files; these tests run them and check what they print.
describe("README examples", () => {
  let lines: Array<string> = []
  beforeEach(() => {
    lines = []
    vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => void lines.push(args.join(" ")))
  })
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it.live("examples/batch.ts runs the batch in both modes with results in source order", () =>
    Effect.gen(function*() {
      const { program } = yield* Effect.promise(() => import("../examples/batch.ts"))
      yield* program
      const parallel = lines.slice(0, lines.indexOf("sequential"))
      const sequential = lines.slice(lines.indexOf("sequential"))
      // Parallel: the instant conversion ends before the slow weather calls; results stay in source order.
      const ends = parallel.filter((l) => l.includes("tool_execution_end")).map((l) => l.trim().split(" ")[1])
      assert.deepStrictEqual(ends, ["c", "a", "b"])
      assert.deepStrictEqual(parallel.slice(-3).map((l) => l.trim()), [
        "a: Lisbon: 21°C",
        "b: Oslo: 21°C",
        "c: 69.80000000000001°F"
      ])
      // Sequential: each call ends before the next starts.
      const seqEvents = sequential.filter((l) => l.includes("tool_execution")).map((l) => l.trim())
      assert.deepStrictEqual(seqEvents, [
        "tool_execution_start a",
        "tool_execution_update a",
        "tool_execution_end a",
        "tool_execution_start b",
        "tool_execution_update b",
        "tool_execution_end b",
        "tool_execution_start c",
        "tool_execution_end c"
      ])
    }))

  it.live("examples/agent.ts runs a tool turn and the follow-up", () =>
    Effect.gen(function*() {
      const { program } = yield* Effect.promise(() => import("../examples/agent.ts"))
      yield* program
      assert.deepStrictEqual(lines, [
        "user: What is 2 + 3?",
        "assistant: Let me add those. [toolCall]",
        "toolResult: 5",
        "assistant: 2 + 3 = 5.",
        "user: How many questions did I ask?",
        "assistant: You asked 2 questions.",
        "6 messages, streaming: false"
      ])
    }))

  it.live("examples/schedule.ts runs the two edits of one note in order and the read of another beside them", () =>
    Effect.gen(function*() {
      const { program } = yield* Effect.promise(() => import("../examples/schedule.ts"))
      yield* program
      assert.deepStrictEqual(lines, ["2 waits for 1", "3 ended", "1 ended", "2 ended", "todo: milk, eggs, bread"])
    }))

  it.live("examples/limits.ts stops a model that repeats a failing call, and says why", () =>
    Effect.gen(function*() {
      const { program } = yield* Effect.promise(() => import("../examples/limits.ts"))
      yield* program
      const why =
        "the tool deploy failed 3 times with the same arguments and the same error (the limit is 3 times): the build is red"
      assert.deepStrictEqual(lines, [
        `stopped: ${why}`,
        `[The run was stopped before the task was done: ${why}.]`
      ])
    }))
})
