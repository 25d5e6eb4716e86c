/**
 * Differential conformance: every [pi] rule of `docs/tool-execution.md` is checked by running the
 * same scenario through pi's agent loop (`@mariozechner/pi-agent-core` 0.73.1, the oracle) and through our
 * `executeToolCalls`, then comparing the normalized traces exactly (see `test/support/piOracle.ts`):
 * event types and order, tool call ids and names, args, partial results, results (content, details,
 * isError, terminate), the result messages (without timestamps), the arguments each tool received, what
 * the hooks saw, and whether the batch asked the loop to stop.
 *
 * The only normalization besides timestamps and `undefined`-valued keys: in validation-failure texts the
 * issue lines are replaced by a placeholder, because pi words them with typebox's messages and we with
 * Effect Schema's, by design. Header and `Received arguments` block are compared exactly, and for type
 * errors the issue paths are compared too.
 *
 * The second half is executable documentation of where we deliberately differ from pi 0.73.1 ([pi later]
 * and [ours] rules), each case showing pi's observed behaviour and ours side by side. A third table records
 * differences the spec does not mention, found by this suite.
 */
import { describe, expect, it } from "vitest"
import {
  type AfterOverride,
  type BeforeDecision,
  type Behaviour,
  completingInSourceOrder,
  issuePaths,
  labels,
  P,
  runBoth,
  runOurs,
  runPi,
  type RunResult,
  type Scenario,
  type ScenarioCall,
  type ScenarioTool,
  textOf,
  type TraceEvent,
  withNormalizedValidation
} from "../support/piOracle.ts"

// ---------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------

const num: ScenarioTool = { name: "num", parameters: P.object({ n: P.number }) }
const seqTool: ScenarioTool = { name: "seq", parameters: P.object({ n: P.number }), executionMode: "sequential" }
const parTool: ScenarioTool = { name: "par", parameters: P.object({ n: P.number }), executionMode: "parallel" }

const call = (id: string, name = "num", args: Record<string, unknown> = { n: 1 }): ScenarioCall => ({
  id,
  name,
  arguments: args
})

/** Everything both implementations must agree on. */
const expectSameBatch = (pi: RunResult, ours: RunResult) => {
  expect(pi.crash, "pi crashed").toBeUndefined()
  expect(pi.hung, "pi did not finish").toBe(false)
  expect(ours.hung, "ours did not finish").toBe(false)
  expect(ours.events).toStrictEqual(pi.events)
  expect(ours.messages).toStrictEqual(pi.messages)
  expect(ours.terminate).toBe(pi.terminate)
  expect(ours.executions).toStrictEqual(pi.executions)
  expect(ours.hookCalls).toStrictEqual(pi.hookCalls)
  // Neither implementation mutates the raw arguments in the assistant message.
  expect(ours.argumentsAfter).toStrictEqual(pi.argumentsAfter)
  // Announced messages are the returned ones, in the same order, with non-decreasing timestamps.
  for (const run of [pi, ours]) {
    expect(run.events.filter((e) => e.type === "message_end").map((e) => (e as any).message)).toStrictEqual(
      run.messages
    )
    expect([...run.timestamps].sort((a, b) => a - b)).toStrictEqual(run.timestamps)
  }
}

/**
 * Runs a scenario through both and requires the same batch. Completion order is made explicit (source
 * order) unless the scenario sets one, and validation issue lines are normalized (see the file header).
 */
const conform = async (scenario: Scenario): Promise<{ pi: RunResult; ours: RunResult }> => {
  const runs = await runBoth(completingInSourceOrder(scenario))
  expectSameBatch(withNormalizedValidation(runs.pi), withNormalizedValidation(runs.ours))
  return runs
}

const ends = (events: ReadonlyArray<TraceEvent>) =>
  events.filter((e): e is Extract<TraceEvent, { type: "tool_execution_end" }> => e.type === "tool_execution_end")

const endOf = (run: RunResult, id: string) => {
  const found = ends(run.events).filter((e) => e.toolCallId === id)
  expect(found).toHaveLength(1)
  return found[0]
}

const sequentialShape = (ids: ReadonlyArray<string>) =>
  ids.flatMap((id) => [`start:${id}`, `end:${id}`, `msg_start:${id}`, `msg_end:${id}`])

/** Which ordering rule a trace follows (TE 6): each call's messages before the next start, or all starts first. */
const orderingOf = (events: ReadonlyArray<TraceEvent>): "sequential" | "parallel" | "neither" => {
  const l = labels(events)
  const ids = [...new Set(l.filter((x) => x.startsWith("start:")).map((x) => x.slice(6)))]
  const sequential = ids.every((id, k) => k === 0 || l.indexOf(`msg_end:${ids[k - 1]}`) < l.indexOf(`start:${id}`))
  const lastStart = Math.max(...ids.map((id) => l.indexOf(`start:${id}`)))
  const parallel = lastStart < l.findIndex((x) => x.startsWith("msg_start:"))
  return sequential ? "sequential" : parallel ? "parallel" : "neither"
}

const parallelShape = (ids: ReadonlyArray<string>, endOrder: ReadonlyArray<string> = ids) => [
  ...ids.map((id) => `start:${id}`),
  ...endOrder.map((id) => `end:${id}`),
  ...ids.flatMap((id) => [`msg_start:${id}`, `msg_end:${id}`])
]

// ---------------------------------------------------------------------------------------------------------
// The oracle itself can tell batches apart
// ---------------------------------------------------------------------------------------------------------

describe("the differential oracle", () => {
  it("detects a difference: pi in parallel vs ours in sequential mode", async () => {
    const scenario: Scenario = { tools: [num], calls: [call("a"), call("b")] }
    const pi = await runPi(scenario)
    const ours = await runOurs({ ...scenario, mode: "sequential" })
    expect(labels(pi.events)).toStrictEqual(parallelShape(["a", "b"]))
    expect(labels(ours.events)).toStrictEqual(sequentialShape(["a", "b"]))
    expect(ours.events).not.toStrictEqual(pi.events)
  })

  it("controls completion order identically in both: a different release order is a different trace", async () => {
    const gated: Behaviour = { steps: [{ gate: true }] }
    const scenario: Scenario = { tools: [num], calls: [call("a"), call("b")], behaviours: { a: gated, b: gated } }
    const pi = await runPi({ ...scenario, release: { order: ["b", "a"], afterAllArrived: true } })
    const ours = await runOurs({ ...scenario, release: { order: ["a", "b"], afterAllArrived: true } })
    expect(labels(pi.events)).toStrictEqual(parallelShape(["a", "b"], ["b", "a"]))
    expect(labels(ours.events)).toStrictEqual(parallelShape(["a", "b"], ["a", "b"]))
  })

  it("detects a difference in a result text", async () => {
    const scenario: Scenario = { tools: [num], calls: [call("a")] }
    const pi = await runPi({ ...scenario, behaviours: { a: { outcome: { succeed: { text: "x" } } } } })
    const ours = await runOurs({ ...scenario, behaviours: { a: { outcome: { succeed: { text: "y" } } } } })
    expect(ours.events).not.toStrictEqual(pi.events)
  })
})

// ---------------------------------------------------------------------------------------------------------
// [pi] rules: both must produce the same trace
// ---------------------------------------------------------------------------------------------------------

describe("[pi] TE 1 choosing the mode", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly mode?: "sequential" | "parallel"
    readonly tools: ReadonlyArray<ScenarioTool>
    readonly calls: ReadonlyArray<ScenarioCall>
    readonly expected: "sequential" | "parallel"
  }> = [
    { name: "default is parallel", tools: [num], calls: [call("a"), call("b")], expected: "parallel" },
    {
      name: "config sequential",
      mode: "sequential",
      tools: [num],
      calls: [call("a"), call("b")],
      expected: "sequential"
    },
    {
      name: "config parallel explicitly",
      mode: "parallel",
      tools: [num],
      calls: [call("a"), call("b")],
      expected: "parallel"
    },
    {
      name: "one call names a sequential tool",
      tools: [num, seqTool],
      calls: [call("a"), call("b", "seq")],
      expected: "sequential"
    },
    {
      name: "a sequential tool wins over config parallel",
      mode: "parallel",
      tools: [num, seqTool],
      calls: [call("a", "seq"), call("b")],
      expected: "sequential"
    },
    {
      name: "a tool's parallel cannot override config sequential",
      mode: "sequential",
      tools: [parTool],
      calls: [call("a", "par"), call("b", "par")],
      expected: "sequential"
    },
    {
      name: "a registered but uncalled sequential tool does not matter",
      tools: [num, seqTool],
      calls: [call("a"), call("b")],
      expected: "parallel"
    },
    {
      name: "unknown tool names do not affect the choice",
      tools: [num],
      calls: [call("a"), call("b", "seq")],
      expected: "parallel"
    }
  ]
  it.each(cases)("$name", async ({ calls, expected, mode, tools }) => {
    const { ours } = await conform({ tools, calls, ...(mode !== undefined ? { mode } : {}) })
    expect(orderingOf(ours.events)).toBe(expected)
  })
})

describe("[pi] TE 2 prepare", () => {
  it("emits start with the raw arguments before prepare; an unknown tool is `Tool <name> not found`", async () => {
    const { ours } = await conform({ tools: [num], calls: [call("a", "nope", { n: "1", extra: [1] })] })
    expect(ours.events[0]).toStrictEqual({
      type: "tool_execution_start",
      toolCallId: "a",
      toolName: "nope",
      args: { n: "1", extra: [1] }
    })
    expect(endOf(ours, "a")).toMatchObject({
      isError: true,
      result: { content: [{ type: "text", text: "Tool nope not found" }] }
    })
  })

  describe("validation failure: `Validation failed for tool \"<name>\"`, issue lines normalized", () => {
    const tool: ScenarioTool = {
      name: "shape",
      parameters: P.object({
        path: P.string,
        opts: P.object({ depth: P.number, tags: P.array(P.string) }),
        limit: P.integer
      }, ["limit"])
    }
    const cases: ReadonlyArray<{ name: string; args: Record<string, unknown>; samePaths: boolean }> = [
      { name: "wrong top-level types", args: { path: ["x"], opts: 3 }, samePaths: true },
      {
        name: "wrong nested types",
        args: { path: "x", opts: { depth: "deep", tags: ["a", {}] } },
        samePaths: true
      },
      {
        name: "non-numeric string for an optional integer",
        args: { path: "x", opts: { depth: 1, tags: [] }, limit: "many" },
        samePaths: true
      },
      // pi reports all missing keys of an object on one line (`must have required properties path, opts`)
      // at the first key's path; we report one line per key. Only header and received block compare.
      { name: "missing keys", args: {}, samePaths: false }
    ]
    it.each(cases)("$name", async ({ args, samePaths }) => {
      const runs = await runBoth({ tools: [tool], calls: [call("a", "shape", args)] })
      for (const run of [runs.pi, runs.ours]) {
        const end = endOf(run, "a")
        expect(end.isError).toBe(true)
        expect(textOf(end.result)).toMatch(/^Validation failed for tool "shape":\n {2}- /)
        expect(textOf(end.result)).toContain(`\n\nReceived arguments:\n${JSON.stringify(args, null, 2)}`)
      }
      if (samePaths) {
        expect(issuePaths(textOf(endOf(runs.ours, "a").result))).toStrictEqual(
          issuePaths(textOf(endOf(runs.pi, "a").result))
        )
      }
      expectSameBatch(withNormalizedValidation(runs.pi), withNormalizedValidation(runs.ours))
      expect(runs.ours.executions).toStrictEqual([])
    })

    const rootCases: ReadonlyArray<{ name: string; shimmed: unknown; received: string }> = [
      { name: "a string", shimmed: "str", received: `"str"` },
      { name: "an array", shimmed: [1], received: "[\n  1\n]" },
      { name: "null", shimmed: null, received: "null" },
      { name: "undefined", shimmed: undefined, received: "undefined" }
    ]
    it.each(rootCases)(
      "`root` is the path of the top value (prepareArguments returns $name)",
      async ({ received, shimmed }) => {
        const unwrap: ScenarioTool = {
          name: "unwrap",
          parameters: P.object({ n: P.number }),
          prepareArguments: () => shimmed
        }
        const { ours, pi } = await conform({ tools: [unwrap], calls: [call("a", "unwrap", { n: 1 })] })
        for (const run of [pi, ours]) {
          expect(textOf(endOf(run, "a").result)).toMatch(
            new RegExp(
              `^Validation failed for tool "unwrap":\n  - root: [^\n]+\n\nReceived arguments:\n${
                received.replace(/[[\]]/g, "\\$&")
              }$`
            )
          )
        }
      }
    )

    it("shows the arguments after prepareArguments in `Received arguments`", async () => {
      const shimmed: ScenarioTool = {
        name: "shim",
        parameters: P.object({ path: P.string }),
        prepareArguments: (raw: any) => ({ path: raw.file })
      }
      // the shim's output is coerced too (42 → "42")
      const runs = await runBoth({ tools: [shimmed], calls: [call("a", "shim", { file: 42 })] })
      expect(textOf(endOf(runs.pi, "a").result)).toBe(`{"path":"42"}`)
      const bad = await runBoth({ tools: [shimmed], calls: [call("a", "shim", { file: { x: 1 } })] })
      for (const run of [bad.pi, bad.ours]) {
        expect(textOf(endOf(run, "a").result)).toMatch(
          /^Validation failed for tool "shim":\n {2}- path: .*\n\nReceived arguments:\n\{\n {2}"path": \{\n {4}"x": 1\n {2}\}\n\}$/
        )
      }
      expectSameBatch(withNormalizedValidation(bad.pi), withNormalizedValidation(bad.ours))
      expectSameBatch(runs.pi, runs.ours)
    })
  })

  describe("coercion: a fresh value, raw arguments untouched", () => {
    const tool: ScenarioTool = {
      name: "mixed",
      parameters: P.object({
        n: P.number,
        i: P.integer,
        b: P.boolean,
        s: P.string,
        list: P.array(P.number),
        nested: P.object({ flag: P.boolean, label: P.string }, ["flag", "label"])
      }, ["i", "b", "s", "list", "nested"])
    }
    const cases: ReadonlyArray<{ name: string; args: Record<string, unknown>; received: Record<string, unknown> }> = [
      { name: "numeric string to number", args: { n: "42" }, received: { n: 42 } },
      { name: "negative decimal string", args: { n: "-3.5" }, received: { n: -3.5 } },
      { name: "exponent string", args: { n: "1e3" }, received: { n: 1000 } },
      { name: "padded numeric string", args: { n: " 7 " }, received: { n: 7 } },
      { name: "integer string", args: { n: 1, i: "12" }, received: { n: 1, i: 12 } },
      { name: "\"true\" / \"false\" to booleans", args: { n: 1, b: "false" }, received: { n: 1, b: false } },
      { name: "number to string", args: { n: 1, s: 5 }, received: { n: 1, s: "5" } },
      { name: "inside arrays", args: { n: 1, list: ["1", 2, "3.5"] }, received: { n: 1, list: [1, 2, 3.5] } },
      {
        name: "inside nested objects",
        args: { n: "0", nested: { flag: "true", label: 12 } },
        received: { n: 0, nested: { flag: true, label: "12" } }
      },
      { name: "valid values pass unchanged", args: { n: 2, b: true, s: "x" }, received: { n: 2, b: true, s: "x" } }
    ]
    it("a tool that mutates what it received never mutates the assistant message's arguments", async () => {
      const mutating: ScenarioTool = {
        name: "mutating",
        parameters: P.object({ tags: P.array(P.string), opts: P.object({ x: P.number }), payload: P.unknown }),
        behaviour: { steps: [{ mutateArgs: true }] }
      }
      const args = { tags: ["x"], opts: { x: 1 }, payload: { deep: [1], flag: "y" } }
      const { ours, pi } = await conform({
        tools: [mutating],
        calls: [call("a", "mutating", args), call("b", "mutating", args)]
      })
      expect(pi.argumentsAfter).toStrictEqual([args, args])
      expect(ours.argumentsAfter).toStrictEqual([args, args])
    })

    it.each(cases)("$name", async ({ args, received }) => {
      const { ours } = await conform({ tools: [tool], calls: [call("a", "mixed", args)] })
      expect(ours.executions).toStrictEqual([{ toolCallId: "a", args: received }])
      expect(ours.argumentsAfter).toStrictEqual([args])
      expect(ours.events[0]).toMatchObject({ type: "tool_execution_start", args })
    })
  })

  describe("prepareArguments", () => {
    const shimmed: ScenarioTool = {
      name: "read",
      parameters: P.object({ path: P.string, limit: P.number }, ["limit"]),
      prepareArguments: (raw: any) =>
        raw && typeof raw === "object" && "file" in raw ? { path: raw.file, limit: raw.max } : raw
    }
    it("maps an older argument shape before validation; start keeps the raw arguments", async () => {
      const { ours } = await conform({ tools: [shimmed], calls: [call("a", "read", { file: "a.txt", max: "3" })] })
      expect(ours.executions).toStrictEqual([{ toolCallId: "a", args: { path: "a.txt", limit: 3 } }])
    })
    it("a shim that throws becomes an error result with its message", async () => {
      const throwing: ScenarioTool = {
        name: "read",
        parameters: P.object({ path: P.string }),
        prepareArguments: () => {
          throw new Error("cannot read these arguments")
        }
      }
      const { ours } = await conform({ tools: [throwing], calls: [call("a", "read", { path: "x" })] })
      expect(textOf(endOf(ours, "a").result)).toBe("cannot read these arguments")
    })
  })

  describe("beforeToolCall", () => {
    const blockCases: ReadonlyArray<{ name: string; decision: BeforeDecision; text: string }> = [
      { name: "block with a reason", decision: { block: true, reason: "not allowed here" }, text: "not allowed here" },
      { name: "block without a reason", decision: { block: true }, text: "Tool execution was blocked" },
      { name: "block with an empty reason", decision: { block: true, reason: "" }, text: "Tool execution was blocked" }
    ]
    it.each(blockCases)("$name", async ({ decision, text }) => {
      const { ours } = await conform({
        tools: [num],
        calls: [call("a", "num", { n: "5" }), call("b")],
        beforeToolCall: (ctx) => ctx.toolCallId === "a" ? decision : undefined,
        afterToolCall: () => undefined
      })
      expect(endOf(ours, "a")).toMatchObject({
        isError: true,
        result: { content: [{ type: "text", text }], details: {} }
      })
      expect(ours.executions.map((e) => e.toolCallId)).toStrictEqual(["b"])
      expect(ours.hookCalls.filter((c) => c.hook === "after").map((c) => c.toolCallId)).toStrictEqual(["b"])
    })

    it("runs after validation and sees the validated arguments; `block: false` lets the call run", async () => {
      const { ours } = await conform({
        tools: [num],
        calls: [call("a", "num", { n: "5" }), call("b", "num", { n: "x" }), call("c", "nope")],
        beforeToolCall: () => ({ block: false, reason: "ignored" })
      })
      expect(ours.hookCalls).toStrictEqual([{ hook: "before", toolCallId: "a", args: { n: 5 } }])
    })

    it("a hook that throws becomes an error result with its message, and the tool does not run", async () => {
      const { ours } = await conform({
        tools: [num],
        calls: [call("a"), call("b")],
        beforeToolCall: (ctx) => {
          if (ctx.toolCallId === "a") throw new Error("policy engine down")
          return undefined
        }
      })
      expect(textOf(endOf(ours, "a").result)).toBe("policy engine down")
      expect(ours.executions.map((e) => e.toolCallId)).toStrictEqual(["b"])
    })
  })
})

describe("[pi] TE 3 execute", () => {
  it("success is isError: false, with the tool's content and details", async () => {
    const { ours } = await conform({
      tools: [num],
      calls: [call("a")],
      behaviours: { a: { outcome: { succeed: { text: "ok", details: { lines: 3, nested: [1, { x: null }] } } } } }
    })
    expect(endOf(ours, "a")).toStrictEqual({
      type: "tool_execution_end",
      toolCallId: "a",
      toolName: "num",
      result: { content: [{ type: "text", text: "ok" }], details: { lines: 3, nested: [1, { x: null }] } },
      isError: false
    })
  })

  const errorCases: ReadonlyArray<{ name: string; behaviour: Behaviour; text: string }> = [
    {
      name: "an Error (typed failure for us)",
      behaviour: { outcome: { throws: new Error("disk full") } },
      text: "disk full"
    },
    {
      name: "an Error (defect for us)",
      behaviour: { outcome: { throws: new Error("null pointer"), as: "die" } },
      text: "null pointer"
    },
    { name: "a string", behaviour: { outcome: { throws: "plain string failure" } }, text: "plain string failure" },
    {
      name: "an Error after updates",
      behaviour: { steps: [{ update: { text: "50%" } }], outcome: { throws: new Error("half way") } },
      text: "half way"
    }
  ]
  it.each(errorCases)(
    "a tool that throws $name gives an error result with its message",
    async ({ behaviour, text }) => {
      const { ours } = await conform({ tools: [num], calls: [call("a"), call("b")], behaviours: { a: behaviour } })
      expect(endOf(ours, "a")).toMatchObject({
        isError: true,
        result: { content: [{ type: "text", text }], details: {} }
      })
      expect(endOf(ours, "b").isError).toBe(false)
    }
  )

  it("updates: `tool_execution_update` with the raw args, before the call's end (sequential)", async () => {
    const { ours } = await conform({
      mode: "sequential",
      tools: [num],
      calls: [call("a", "num", { n: "1" }), call("b")],
      behaviours: {
        a: { steps: [{ update: { text: "10%" } }, { update: { text: "90%", details: { p: 0.9 } } }] },
        b: { steps: [{ update: { text: "only" } }] }
      }
    })
    expect(labels(ours.events)).toStrictEqual([
      "start:a",
      "update:a",
      "update:a",
      "end:a",
      "msg_start:a",
      "msg_end:a",
      "start:b",
      "update:b",
      "end:b",
      "msg_start:b",
      "msg_end:b"
    ])
    expect(ours.events[2]).toStrictEqual({
      type: "tool_execution_update",
      toolCallId: "a",
      toolName: "num",
      args: { n: "1" },
      partialResult: { content: [{ type: "text", text: "90%" }], details: { p: 0.9 } }
    })
  })

  it("updates in parallel, interleaved by gates", async () => {
    const { ours } = await conform({
      tools: [num],
      calls: [call("a"), call("b")],
      behaviours: {
        a: { steps: [{ update: { text: "a1" } }, { gate: true }, { update: { text: "a2" } }] },
        b: { steps: [{ update: { text: "b1" } }, { gate: true }, { update: { text: "b2" } }] }
      },
      release: { order: ["b", "a"], afterAllArrived: true }
    })
    expect(labels(ours.events)).toStrictEqual([
      "start:a",
      "start:b",
      "update:a",
      "update:b",
      "update:b",
      "end:b",
      "update:a",
      "end:a",
      "msg_start:a",
      "msg_end:a",
      "msg_start:b",
      "msg_end:b"
    ])
  })
})

describe("[pi] TE 4 afterToolCall", () => {
  const executed: Behaviour = { outcome: { succeed: { text: "original", details: { v: 1 }, terminate: false } } }
  const failing: Behaviour = { outcome: { throws: new Error("original failure") } }
  const cases: ReadonlyArray<{ name: string; behaviour: Behaviour; override: AfterOverride | undefined }> = [
    { name: "returns undefined: result unchanged", behaviour: executed, override: undefined },
    { name: "returns {}: result unchanged", behaviour: executed, override: {} },
    { name: "content only", behaviour: executed, override: { content: [{ type: "text", text: "redacted" }] } },
    { name: "empty content", behaviour: executed, override: { content: [] } },
    { name: "details only, replaced in full (no deep merge)", behaviour: executed, override: { details: { w: 2 } } },
    { name: "isError on a success", behaviour: executed, override: { isError: true } },
    { name: "isError false on a failure", behaviour: failing, override: { isError: false } },
    { name: "content of a failure", behaviour: failing, override: { content: [{ type: "text", text: "softened" }] } },
    { name: "terminate only", behaviour: executed, override: { terminate: true } },
    {
      name: "every field",
      behaviour: executed,
      override: { content: [{ type: "text", text: "all" }], details: [1, 2], isError: true, terminate: true }
    }
  ]
  it.each(cases)("$name", async ({ behaviour, override }) => {
    const { ours } = await conform({
      tools: [num],
      calls: [call("a", "num", { n: "3" })],
      behaviours: { a: behaviour },
      afterToolCall: () => override
    })
    expect(ours.hookCalls).toHaveLength(1)
    expect(ours.hookCalls[0]).toMatchObject({ hook: "after", toolCallId: "a", args: { n: 3 } })
  })

  it("a hook that throws gives an error result with its message", async () => {
    const { ours } = await conform({
      tools: [num],
      calls: [call("a"), call("b")],
      afterToolCall: (ctx) => {
        if (ctx.toolCallId === "a") throw new Error("audit log unavailable")
        return undefined
      }
    })
    expect(endOf(ours, "a")).toMatchObject({
      isError: true,
      result: { content: [{ type: "text", text: "audit log unavailable" }], details: {} }
    })
  })

  it("runs only for executed calls, never for immediate outcomes", async () => {
    const { ours } = await conform({
      tools: [num],
      calls: [call("a"), call("b", "nope"), call("c", "num", { n: "x" }), call("d"), call("e")],
      beforeToolCall: (ctx) => ctx.toolCallId === "d" ? { block: true } : undefined,
      afterToolCall: () => ({ details: "after" })
    })
    expect(ours.hookCalls.filter((c) => c.hook === "after").map((c) => c.toolCallId)).toStrictEqual(["a", "e"])
  })
})

describe("[pi] TE 5 end event and tool-result message", () => {
  const valid: ReadonlyArray<{ name: string; result: unknown }> = [
    {
      name: "image content",
      result: { content: [{ type: "image", data: "AAAA", mimeType: "image/png" }], details: { a: 1 } }
    },
    { name: "no details", result: { content: [{ type: "text", text: "x" }] } },
    { name: "empty content", result: { content: [], details: {} } },
    {
      name: "a text signature",
      result: { content: [{ type: "text", text: "x", textSignature: "sig" }], details: null }
    },
    {
      name: "unknown extra fields",
      result: { content: [{ type: "text", text: "x", extra: 1 }], details: {}, extraTop: 1 }
    }
  ]
  it.each(valid)("a valid tool result passes through as it is: $name", async ({ result }) => {
    const { ours } = await conform({
      tools: [num],
      calls: [call("a")],
      behaviours: { a: { outcome: { returns: result } } }
    })
    expect(endOf(ours, "a")).toMatchObject({ isError: false, result })
  })

  it("the message carries content, details, isError but not terminate", async () => {
    const { ours } = await conform({
      tools: [num],
      calls: [call("a")],
      behaviours: { a: { outcome: { succeed: { text: "bye", details: { d: 1 }, terminate: true } } } }
    })
    expect(endOf(ours, "a").result).toStrictEqual({
      content: [{ type: "text", text: "bye" }],
      details: { d: 1 },
      terminate: true
    })
    expect(ours.messages).toStrictEqual([
      {
        role: "toolResult",
        toolCallId: "a",
        toolName: "num",
        content: [{ type: "text", text: "bye" }],
        details: { d: 1 },
        isError: false
      }
    ])
  })
})

describe("[pi] TE 6 ordering", () => {
  it("sequential: each call completes (end, message) before the next starts, whatever its outcome", async () => {
    const { ours } = await conform({
      mode: "sequential",
      tools: [num],
      calls: [call("a"), call("b", "nope"), call("c", "num", { n: "x" }), call("d"), call("e")],
      behaviours: { a: { steps: [{ update: { text: "u" } }] }, e: { outcome: { throws: new Error("boom") } } },
      beforeToolCall: (ctx) => ctx.toolCallId === "d" ? { block: true, reason: "no d" } : undefined
    })
    expect(labels(ours.events)).toStrictEqual([
      "start:a",
      "update:a",
      "end:a",
      "msg_start:a",
      "msg_end:a",
      ...sequentialShape(["b", "c", "d", "e"])
    ])
    expect(ours.executions.map((e) => e.toolCallId)).toStrictEqual(["a", "e"])
  })

  const orders: ReadonlyArray<ReadonlyArray<string>> = [["a", "b", "c"], ["c", "a", "b"], ["c", "b", "a"], [
    "b",
    "c",
    "a"
  ]]
  it.each(orders)("parallel: end events in completion order (%s %s %s), messages in source order", async (...order) => {
    const gated: Behaviour = { steps: [{ gate: true }] }
    const { ours } = await conform({
      tools: [num],
      calls: [call("a"), call("b"), call("c")],
      behaviours: { a: gated, b: gated, c: gated },
      release: { order, afterAllArrived: true }
    })
    expect(labels(ours.events)).toStrictEqual(parallelShape(["a", "b", "c"], order))
    expect(ours.messages.map((m) => m.toolCallId)).toStrictEqual(["a", "b", "c"])
  })

  it("parallel preflight: immediate outcomes end right away, before later calls start", async () => {
    const gated: Behaviour = { steps: [{ gate: true }] }
    const { ours } = await conform({
      tools: [num],
      calls: [call("a"), call("b", "nope"), call("c", "num", { n: "x" }), call("d"), call("e"), call("f")],
      behaviours: { a: gated, e: gated, f: { steps: [{ gate: true }], outcome: { throws: new Error("f failed") } } },
      release: { order: ["f", "e", "a"] },
      beforeToolCall: (ctx) => ctx.toolCallId === "d" ? { block: true, reason: "no d" } : undefined,
      afterToolCall: () => undefined
    })
    expect(labels(ours.events)).toStrictEqual([
      "start:a",
      "start:b",
      "end:b",
      "start:c",
      "end:c",
      "start:d",
      "end:d",
      "start:e",
      "start:f",
      "end:f",
      "end:e",
      "end:a",
      ...["a", "b", "c", "d", "e", "f"].flatMap((id) => [`msg_start:${id}`, `msg_end:${id}`])
    ])
    expect(ours.executions.map((e) => e.toolCallId)).toStrictEqual(["a", "e", "f"])
  })
})

describe("[pi] TE 7 early termination (executed results)", () => {
  const terminating: Behaviour = { outcome: { echo: true, terminate: true } }
  const cases: ReadonlyArray<{ name: string; scenario: Omit<Scenario, "tools">; terminate: boolean }> = [
    {
      name: "every result terminates",
      scenario: { calls: [call("a"), call("b")], behaviours: { a: terminating, b: terminating } },
      terminate: true
    },
    {
      name: "one does not",
      scenario: { calls: [call("a"), call("b")], behaviours: { a: terminating } },
      terminate: false
    },
    {
      name: "one says terminate: false",
      scenario: {
        calls: [call("a"), call("b")],
        behaviours: { a: terminating, b: { outcome: { echo: true, terminate: false } } }
      },
      terminate: false
    },
    {
      name: "afterToolCall sets terminate on every call",
      scenario: { calls: [call("a"), call("b")], afterToolCall: () => ({ terminate: true }) },
      terminate: true
    },
    {
      name: "afterToolCall clears one terminate",
      scenario: {
        calls: [call("a"), call("b")],
        behaviours: { a: terminating, b: terminating },
        afterToolCall: (ctx) => ctx.toolCallId === "b" ? { terminate: false } : undefined
      },
      terminate: false
    },
    {
      name: "an immediate outcome never terminates",
      scenario: { calls: [call("a"), call("b", "nope")], behaviours: { a: terminating } },
      terminate: false
    },
    {
      name: "sequential mode, every result terminates",
      scenario: { mode: "sequential", calls: [call("a"), call("b")], behaviours: { a: terminating, b: terminating } },
      terminate: true
    }
  ]
  it.each(cases)("$name", async ({ scenario, terminate }) => {
    const { ours, pi } = await conform({ tools: [num], ...scenario })
    expect(pi.terminate).toBe(terminate)
    expect(ours.terminate).toBe(terminate)
  })
})

// ---------------------------------------------------------------------------------------------------------
// Deliberate differences ([pi later] and [ours]): pi 0.73.1's observed behaviour and ours, side by side
// ---------------------------------------------------------------------------------------------------------

interface Difference {
  readonly rule: string
  readonly tag: "[pi later]" | "[ours]" | "[pi] in the spec, absent from pi 0.73.1"
  readonly scenario: Scenario
  readonly options?: Parameters<typeof runBoth>[1]
  /** pi 0.73.1, as observed. */
  readonly pi: (run: RunResult) => void
  /** Ours, as the spec requires. */
  readonly ours: (run: RunResult) => void
}

const gatedAbortingSequential: Scenario = {
  mode: "sequential",
  tools: [num],
  calls: [call("a"), call("b"), call("c")],
  behaviours: { b: { steps: [{ abortRun: true }, { gate: true }] } },
  release: { order: ["b"] }
}

const DIFFERENCES: ReadonlyArray<Difference> = [
  {
    rule: "TE 2.4/TE 7 a blocked call carries the block's `terminate`",
    tag: "[pi later]",
    scenario: {
      tools: [num],
      calls: [call("a"), call("b")],
      beforeToolCall: () => ({ block: true, reason: "stop", terminate: true })
    },
    pi: (run) => {
      // pi 0.73.1 reads only `block` and `reason`: no terminate on the result, the loop calls the model again.
      expect(endOf(run, "a").result).toStrictEqual({ content: [{ type: "text", text: "stop" }], details: {} })
      expect(run.terminate).toBe(false)
      expect(run.modelCalls).toBe(2)
    },
    ours: (run) => {
      expect(endOf(run, "a").result).toStrictEqual({
        content: [{ type: "text", text: "stop" }],
        details: {},
        terminate: true
      })
      expect(run.terminate).toBe(true)
      // still not stored in the message
      expect(run.messages[0]).not.toHaveProperty("terminate")
    }
  },
  {
    rule: "TE 2.4 beforeToolCall may hand back replacement arguments, passed as given (no re-validation)",
    tag: "[pi] in the spec, absent from pi 0.73.1",
    scenario: {
      tools: [num],
      calls: [call("a", "num", { n: "1" })],
      beforeToolCall: () => ({ args: { n: "not re-validated" } })
    },
    pi: (run) => {
      // pi 0.73.1's BeforeToolCallResult has no `args`; the tool gets the validated arguments.
      expect(run.executions).toStrictEqual([{ toolCallId: "a", args: { n: 1 } }])
    },
    ours: (run) => {
      expect(run.executions).toStrictEqual([{ toolCallId: "a", args: { n: "not re-validated" } }])
      expect(endOf(run, "a").isError).toBe(false)
    }
  },
  {
    rule: "TE 2.5 aborted while preparing (parallel): the call ends as aborted, not started",
    tag: "[pi later]",
    scenario: { tools: [num], calls: [call("a"), call("b")], abortInBeforeToolCallOf: "a" },
    pi: (run) => {
      // pi does not look at the signal between prepare and execute: both tools run.
      expect(run.executions.map((e) => e.toolCallId)).toStrictEqual(["a", "b"])
      expect(ends(run.events).every((e) => !e.isError)).toBe(true)
      expect(run.modelCalls).toBe(2)
    },
    ours: (run) => {
      expect(run.executions).toStrictEqual([])
      for (const id of ["a", "b"]) {
        expect(endOf(run, id).isError).toBe(true)
        expect(textOf(endOf(run, id).result)).toBe("Tool num was not executed: the run was aborted before it started.")
      }
      // The abort lands in a's hook: a's prepare sees it once the hook returns, and b's before its own
      // checks, so each call ends as an immediate outcome in the preflight's order (TE 6.2.1).
      expect(labels(run.events)).toStrictEqual([
        "start:a",
        "end:a",
        "start:b",
        "end:b",
        "msg_start:a",
        "msg_end:a",
        "msg_start:b",
        "msg_end:b"
      ])
      expect(run.aborted).toBe(true)
    }
  },
  {
    rule: "TE 2.5 aborted while preparing (sequential)",
    tag: "[pi later]",
    scenario: { mode: "sequential", tools: [num], calls: [call("a"), call("b")], abortInBeforeToolCallOf: "a" },
    pi: (run) => {
      expect(run.executions.map((e) => e.toolCallId)).toStrictEqual(["a", "b"])
      expect(labels(run.events)).toStrictEqual(sequentialShape(["a", "b"]))
    },
    ours: (run) => {
      expect(run.executions).toStrictEqual([])
      expect(labels(run.events)).toStrictEqual(sequentialShape(["a", "b"]))
      expect(ends(run.events).map((e) => textOf(e.result))).toStrictEqual([
        "Tool num was not executed: the run was aborted before it started.",
        "Tool num was not executed: the run was aborted before it started."
      ])
      expect(run.aborted).toBe(true)
    }
  },
  {
    rule: "TE 8 abort during execution (sequential): later calls never run, the running call is interrupted",
    tag: "[ours]",
    scenario: gatedAbortingSequential,
    pi: (run) => {
      // The cooperative tool rejects on abort (its own error text); pi then executes c anyway.
      expect(run.executions.map((e) => e.toolCallId)).toStrictEqual(["a", "b", "c"])
      expect(textOf(endOf(run, "b").result)).toBe("Aborted by signal")
      expect(endOf(run, "c").isError).toBe(false)
      expect(run.modelCalls).toBe(2) // the loop asks the model again (the scripted model answers "aborted")
    },
    ours: (run) => {
      expect(run.executions.map((e) => e.toolCallId)).toStrictEqual(["a", "b"])
      expect(labels(run.events)).toStrictEqual(sequentialShape(["a", "b", "c"]))
      expect(endOf(run, "a").isError).toBe(false)
      expect(textOf(endOf(run, "b").result)).toBe(
        "Tool num was interrupted after it started: the run was aborted. It may have had side effects."
      )
      expect(endOf(run, "b").result).toMatchObject({ details: { aborted: true, started: true } })
      expect(textOf(endOf(run, "c").result)).toBe("Tool num was not executed: the run was aborted before it started.")
      expect(run.aborted).toBe(true)
    }
  },
  {
    rule: "TE 8 abort during execution (parallel): running calls interrupted, one end and message each",
    tag: "[ours]",
    scenario: {
      tools: [num],
      calls: [call("a"), call("b"), call("c", "nope")],
      behaviours: { a: { steps: [{ hang: true }] }, b: { steps: [{ abortRun: true }, { hang: true }] } }
    },
    pi: (run) => {
      // Both running tools are cooperative and reject on abort: their own error texts are the results,
      // nothing says the run was aborted, and the loop asks the model again.
      expect(textOf(endOf(run, "a").result)).toBe("Aborted by signal")
      expect(textOf(endOf(run, "b").result)).toBe("Aborted by signal")
      expect(run.modelCalls).toBe(2)
    },
    ours: (run) => {
      expect(labels(run.events)).toStrictEqual([
        "start:a",
        "start:b",
        "start:c",
        "end:c",
        "end:a",
        "end:b",
        ...["a", "b", "c"].flatMap((id) => [`msg_start:${id}`, `msg_end:${id}`])
      ])
      for (const id of ["a", "b"]) {
        expect(textOf(endOf(run, id).result)).toBe(
          "Tool num was interrupted after it started: the run was aborted. It may have had side effects."
        )
        expect(endOf(run, id).result).toMatchObject({ details: { aborted: true, started: true, abandoned: false } })
      }
      expect(textOf(endOf(run, "c").result)).toBe("Tool nope not found")
      expect(run.aborted).toBe(true)
    }
  },
  {
    rule: "TE 8 a tool that ignores cancellation is abandoned after the grace period",
    tag: "[ours]",
    scenario: {
      tools: [num],
      calls: [call("a"), call("b")],
      behaviours: { a: { steps: [{ abortRun: true }, { hang: true }], onAbort: "ignore" } }
    },
    options: { pi: { timeoutMs: 300 }, ours: { abandonAfter: 50 } },
    pi: (run) => {
      // pi waits for the tool forever: b ended, a never does, no result message at all.
      expect(run.hung).toBe(true)
      expect(labels(run.events)).toStrictEqual(["start:a", "start:b", "end:b"])
    },
    ours: (run) => {
      expect(run.hung).toBe(false)
      // a was abandoned after the grace period; b, aborted before it could execute, never ran.
      expect(labels(run.events)).toStrictEqual(parallelShape(["a", "b"]))
      expect(textOf(endOf(run, "a").result)).toMatch(/It did not stop when cancelled and was abandoned\.$/)
      expect(endOf(run, "a").result).toMatchObject({ details: { aborted: true, started: true, abandoned: true } })
      expect(textOf(endOf(run, "b").result)).toBe("Tool num was not executed: the run was aborted before it started.")
      expect(run.executions.map((e) => e.toolCallId)).toStrictEqual(["a"])
      expect(run.aborted).toBe(true)
    }
  },
  {
    rule: "TE 6.2 a configured concurrency limit for parallel execution",
    tag: "[ours]",
    scenario: {
      tools: [num],
      calls: [call("a"), call("b"), call("c")],
      behaviours: { a: { steps: [{ sleepMs: 20 }] }, b: { steps: [{ sleepMs: 20 }] }, c: { steps: [{ sleepMs: 20 }] } }
    },
    options: { ours: { concurrency: 1 } },
    pi: (run) => {
      // pi has no limit: every prepared call executes at once
      expect(run.maxConcurrent).toBe(3)
    },
    ours: (run) => {
      expect(run.maxConcurrent).toBe(1)
      // still the parallel rules: preflight first, messages in source order
      expect(labels(run.events)).toStrictEqual(parallelShape(["a", "b", "c"]))
    }
  },
  {
    rule: "TE 9 duplicate tool call ids: the first runs, a later duplicate gets an error result",
    tag: "[ours]",
    scenario: { tools: [num], calls: [call("a", "num", { n: 1 }), call("a", "num", { n: 2 })] },
    pi: (run) => {
      expect(run.executions).toStrictEqual([{ toolCallId: "a", args: { n: 1 } }, { toolCallId: "a", args: { n: 2 } }])
      expect(run.messages.map((m) => m.isError)).toStrictEqual([false, false])
    },
    ours: (run) => {
      expect(run.executions).toStrictEqual([{ toolCallId: "a", args: { n: 1 } }])
      expect(run.messages.map((m) => m.isError)).toStrictEqual([false, true])
      expect(textOf(run.messages[1])).toContain(`"a"`)
      expect(textOf(run.messages[1])).toMatch(/duplicate/)
      // the duplicate ends during preflight, before the first call executes and ends
      expect(labels(run.events)).toStrictEqual([
        "start:a",
        "start:a",
        "end:a",
        "end:a",
        "msg_start:a",
        "msg_end:a",
        "msg_start:a",
        "msg_end:a"
      ])
    }
  },
  {
    rule: "TE 3 a tool result that is not `{ content, details }` (undefined) becomes an error result",
    tag: "[ours]",
    scenario: { tools: [num], calls: [call("a"), call("b")], behaviours: { a: { outcome: { returns: undefined } } } },
    options: { pi: { driver: "runAgentLoop" } },
    pi: (run) => {
      // pi emits an end with `result: undefined`, then crashes building the message: no result messages.
      expect(run.crash).toMatch(/^TypeError: Cannot read properties of undefined \(reading 'content'\)/)
      expect(run.messages).toStrictEqual([])
      expect(
        run.rawEvents.some((e: any) =>
          e.type === "tool_execution_end" && e.toolCallId === "a" && e.result === undefined
        )
      ).toBe(true)
    },
    ours: (run) => {
      expect(textOf(endOf(run, "a").result)).toMatch(/^Tool num returned an invalid result: /)
      expect(endOf(run, "a").isError).toBe(true)
      expect(run.messages.map((m) => m.isError)).toStrictEqual([true, false])
    }
  },
  {
    rule: "TE 3 a tool result whose content is not an array becomes an error result",
    tag: "[ours]",
    scenario: {
      tools: [num],
      calls: [call("a")],
      behaviours: { a: { outcome: { returns: { content: "hello", details: {} } } } }
    },
    pi: (run) => {
      // passed through: the transcript gets a message whose content is a string
      expect(run.messages).toStrictEqual([
        { role: "toolResult", toolCallId: "a", toolName: "num", content: "hello", details: {}, isError: false }
      ])
    },
    ours: (run) => {
      expect(textOf(run.messages[0])).toMatch(/^Tool num returned an invalid result: /)
      expect(run.messages[0].isError).toBe(true)
    }
  },
  {
    rule: "TE 3 timeouts: execution is interrupted and the call ends as timed out",
    tag: "[ours]",
    scenario: { tools: [num], calls: [call("a"), call("b")], behaviours: { a: { steps: [{ sleepMs: 150 }] } } },
    options: { ours: { timeout: 30 } },
    pi: (run) => {
      // pi has no timeout: the slow call completes normally
      expect(endOf(run, "a").isError).toBe(false)
    },
    ours: (run) => {
      expect(endOf(run, "a")).toMatchObject({ isError: true, result: { details: { timedOut: true } } })
      expect(textOf(endOf(run, "a").result)).toBe("Tool num timed out after 30ms")
      expect(endOf(run, "b").isError).toBe(false)
      expect(labels(run.events)).toStrictEqual(parallelShape(["a", "b"], ["b", "a"]))
    }
  },
  {
    rule: "TE 3 an update after the call settled is ignored",
    tag: "[pi later]",
    scenario: {
      tools: [num],
      calls: [call("a"), call("b")],
      behaviours: { a: { steps: [{ gate: true }], lateUpdate: { text: "too late" } }, b: { steps: [{ gate: true }] } },
      release: { order: ["a", "b"] }
    },
    pi: (run) => {
      // pi emits it after the call's end event
      expect(labels(run.events)).toStrictEqual([
        "start:a",
        "start:b",
        "end:a",
        "update:a",
        "end:b",
        "msg_start:a",
        "msg_end:a",
        "msg_start:b",
        "msg_end:b"
      ])
    },
    ours: (run) => {
      expect(labels(run.events)).toStrictEqual(parallelShape(["a", "b"]))
    }
  },
  {
    rule: "TE 9 a failing event subscriber never breaks a batch",
    tag: "[ours]",
    // pi: the `Agent`'s subscriber throws on a's end event; ours: the EventSink dies on the same event.
    scenario: { tools: [num], calls: [call("a"), call("b")] },
    options: {
      pi: { driver: "agent", subscriberThrowsOn: (e) => e.type === "tool_execution_end" && e.toolCallId === "a" },
      ours: { subscriberFailsOn: (e) => e.type === "tool_execution_end" && e.toolCallId === "a" }
    },
    pi: (run) => {
      // The run fails: no tool-result message for either call, the Agent records the error.
      expect(run.crash).toBe("subscriber failed")
      expect(run.messages).toStrictEqual([])
      expect(labels(run.events)).toStrictEqual(["start:a", "start:b", "end:a", "end:b"])
    },
    ours: (run) => {
      expect(labels(run.events)).toStrictEqual(parallelShape(["a", "b"]))
      expect(run.messages.map((m) => m.isError)).toStrictEqual([false, false])
    }
  }
]

describe("deliberate differences from pi 0.73.1", () => {
  it.each(DIFFERENCES.map((d) => [`${d.tag} ${d.rule}`, d] as const))("%s", async (_name, difference) => {
    const { pi, ours } = await runBoth(difference.scenario, difference.options)
    difference.pi(pi)
    difference.ours(ours)
    // and the observable outcome really differs (`aborted` / `modelCalls` exist on one side only: left out)
    const observable = (run: RunResult) => ({
      events: run.events,
      messages: run.messages,
      executions: run.executions,
      terminate: run.terminate,
      maxConcurrent: run.maxConcurrent,
      hung: run.hung,
      crash: run.crash
    })
    expect(observable(ours)).not.toStrictEqual(observable(pi))
  })
})

// ---------------------------------------------------------------------------------------------------------
// Differences the spec does not mention, found by this suite (pi 0.73.1 observed vs ours)
// ---------------------------------------------------------------------------------------------------------

describe("differences the spec does not mention", () => {
  const mixed: ScenarioTool = {
    name: "mixed",
    parameters: P.object({ n: P.number, i: P.integer, b: P.boolean, s: P.string }, ["n", "i", "b", "s"])
  }
  // typebox's Value.Convert (pi) coerces more than the three coercions of the spec.
  const coercions: ReadonlyArray<{ name: string; args: Record<string, unknown>; pi: Record<string, unknown> }> = [
    { name: "hex string to a number", args: { n: "0x10" }, pi: { n: 16 } },
    { name: "fractional string truncated for an integer", args: { i: "2.5" }, pi: { i: 2 } },
    { name: "1 / 0 to booleans", args: { b: 1 }, pi: { b: true } },
    { name: "\"TRUE\" to a boolean", args: { b: "TRUE" }, pi: { b: true } },
    { name: "boolean to a string", args: { s: true }, pi: { s: "true" } }
  ]
  it.each(coercions)("pi coerces $name, we reject it", async ({ args, pi: received }) => {
    const { pi, ours } = await runBoth({ tools: [mixed], calls: [call("a", "mixed", args)] })
    expect(pi.executions).toStrictEqual([{ toolCallId: "a", args: received }])
    expect(ours.executions).toStrictEqual([])
    expect(textOf(endOf(ours, "a").result)).toMatch(/^Validation failed for tool "mixed":/)
  })

  // Issue 16 item 3: models write null for "not given"; for an optional property that cannot be null we read
  // it as the property left out, where pi converts it to the type's zero value.
  const nulls: ReadonlyArray<{ name: string; args: Record<string, unknown>; pi: Record<string, unknown> }> = [
    { name: "null to 0 for an optional number", args: { n: null }, pi: { n: 0 } },
    { name: "null to false for an optional boolean", args: { b: null }, pi: { b: false } }
  ]
  it.each(nulls)("pi coerces $name, we read it as left out", async ({ args, pi: received }) => {
    const { pi, ours } = await runBoth({ tools: [mixed], calls: [call("a", "mixed", args)] })
    expect(pi.executions).toStrictEqual([{ toolCallId: "a", args: received }])
    expect(ours.executions).toStrictEqual([{ toolCallId: "a", args: {} }])
  })

  it("pi passes properties the schema does not declare through to the tool, we drop them", async () => {
    const { pi, ours } = await runBoth({ tools: [num], calls: [call("a", "num", { n: 1, extra: true })] })
    expect(pi.executions).toStrictEqual([{ toolCallId: "a", args: { n: 1, extra: true } }])
    expect(ours.executions).toStrictEqual([{ toolCallId: "a", args: { n: 1 } }])
  })

  it("afterToolCall `details: null`: like pi (`??`), null keeps the executed details", async () => {
    const { pi, ours } = await runBoth({
      tools: [num],
      calls: [call("a")],
      behaviours: { a: { outcome: { succeed: { text: "x", details: { keep: 1 } } } } },
      afterToolCall: () => ({ details: null })
    })
    expect(endOf(pi, "a").result).toMatchObject({ details: { keep: 1 } })
    expect(endOf(ours, "a").result).toMatchObject({ details: { keep: 1 } })
  })
})
