/**
 * The live view: end to end on a pseudo-terminal (`script` from util-linux) and with EFFECT_AGENT_LIVE=1,
 * plain lines without a terminal, and unit tests of `renderTimeline`, `keyArgument` and `LiveView.make`.
 */
import { assert, describe as effectDescribe, it as effectIt } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import * as LiveView from "../../src/cli/LiveView.ts"
import * as Usage from "../../src/cli/Usage.ts"
import { type AssistantMessage, emptyUsage, type ToolResultMessage } from "../../src/Message.ts"
import { needs, SCRIPT, script } from "../support/components.ts"
import {
  assistantMessage,
  MAIN,
  NODE,
  plainText,
  runCliInProcess,
  runProcess,
  type RunResult,
  sessionFolder,
  shellQuote,
  stderrBesidesSandboxNotice,
  stripAnsi,
  tempDir,
  TEST_TIMEOUT_MS
} from "./support.ts"

const ESC = "\x1b"
/** Output as lines with escape codes and carriage returns removed. */
const plainLines = (text: string) => plainText(text).split("\n")

/** The checks every rendering of the demo passes, live or not. */
const assertDemoRendering = (output: string) => {
  const lines = plainLines(output)
  // No error printed by the command itself.
  expect(output).not.toMatch(/\bERROR\b|Error:|at file:\/\//)
  // Each call's finished line.
  for (const call of ["ls .", "find **/*.ts", "grep TODO", "read src/math.ts", "edit src/math.ts"]) {
    expect(lines.some((l) => l.startsWith(`✓ ${call}`)), call).toBe(true)
  }
  expect(lines.some((l) => l.startsWith("✗ read notes/todo.md"))).toBe(true)
  expect(lines.some((l) => l.startsWith("✗ bash sudo rm -rf /tmp/calc-cache"))).toBe(true)
  expect(lines.some((l) => /^✓ bash for i in 1 2 3/.test(l))).toBe(true)

  // A timeline after each of the three tool batches, each followed by one bar line per call.
  const timelines = lines.flatMap((l, i) => /^ {2}timeline \d+(\.\d+)?(ms|s)$/.test(l) ? [i] : [])
  expect(timelines).toHaveLength(3)
  const barCounts = [4, 3, 2]
  timelines.forEach((at, n) => {
    const bars = lines.slice(at + 1, at + 1 + barCounts[n])
    for (const bar of bars) expect(bar, `timeline ${n + 1}`).toMatch(/^ {2}\S.* │[ █]*█[ █]*│ \d+(\.\d+)?(ms|s)$/)
  })

  // The output ends with the last timeline, then the summary, then where the session was saved.
  const lastTimeline = timelines.at(-1)!
  const summary = lines.findIndex((l) => l.startsWith("Done. I ran 9 tool calls; 2 of them ended with an error"))
  expect(summary).toBeGreaterThan(lastTimeline)
  expect(lines.slice(lastTimeline + 3, summary).every((l) => l.trim() === "")).toBe(true)
  expect(lines.slice(summary).join("\n")).toContain("- The check ran and found the fixed line.")
  const rest = lines.slice(summary).filter((l) => l.trim() !== "")
  expect(rest.at(-1)).toMatch(/^session saved: .*\.jsonl$/)
}

describe("live view on a pseudo-terminal (script)", () => {
  const hasScript = needs(script)
  const ws = tempDir("live-pty")
  let run: RunResult
  beforeAll(async () => {
    if (!hasScript) return
    const command = [NODE, MAIN, "--workspace", ws.dir, "--yes"].map(shellQuote).join(" ")
    // -q quiet, -f flush, -e child's exit code, -c command; the typescript goes to /dev/null and the
    // session to our stdout.
    run = await runProcess(SCRIPT, ["-qfec", command, "/dev/null"])
  }, TEST_TIMEOUT_MS)
  afterAll(() => ws.cleanup())

  it("exits 0 and renders with ANSI sequences (colours, in-place redraws)", () => {
    expect(run.code).toBe(0)
    expect(stderrBesidesSandboxNotice(run.stderr)).toBe("")
    expect(run.stdout).toContain(ESC + "[")
    expect(run.stdout).toContain(`${ESC}[32m✓${ESC}[0m`) // green tick
    expect(run.stdout).toContain(`${ESC}[31m✗${ESC}[0m`) // red cross
    expect(run.stdout).toMatch(/\x1b\[\d+A\r\x1b\[J/) // clearing the live region
    expect(run.stdout).toContain(`${ESC}[2K`) // lane lines redrawn
  })

  it("renders the demo, ending with the timeline and the summary", () => {
    assertDemoRendering(run.stdout)
  })
})

describe("live view forced with EFFECT_AGENT_LIVE=1 (no terminal)", () => {
  const ws = tempDir("live-env")
  let run: RunResult
  beforeAll(async () => {
    run = await runCliInProcess(["--workspace", ws.dir, "--yes"], { env: { EFFECT_AGENT_LIVE: "1" } })
  }, TEST_TIMEOUT_MS)
  afterAll(() => ws.cleanup())

  it("exits 0, redraws lanes with ANSI sequences, and ends with the timeline and the summary", () => {
    expect(stderrBesidesSandboxNotice(run.stderr)).toBe("")
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/\x1b\[\d+A\r\x1b\[J/)
    expect(run.stdout).toContain(`${ESC}[36m█`) // a cyan bar in a timeline
    expect(run.stdout).toContain(`${ESC}[31m█`) // the refused sudo call's red bar
    assertDemoRendering(run.stdout)
  })
})

describe("plain lines without a terminal", () => {
  const ws = tempDir("plain")
  let run: RunResult
  beforeAll(async () => {
    run = await runCliInProcess(["--workspace", ws.dir, "--yes"])
  }, TEST_TIMEOUT_MS)
  afterAll(() => ws.cleanup())

  it("exits 0 and writes no escape codes", () => {
    expect(stderrBesidesSandboxNotice(run.stderr)).toBe("")
    expect(run.code).toBe(0)
    expect(run.stdout).not.toContain(ESC)
    expect(run.stdout).not.toContain("\r")
  })

  it("prints a start line per call, progress lines, and the timeline", () => {
    const lines = run.stdout.split("\n")
    for (const call of ["ls .", "find **/*.ts", "grep TODO", "read src/math.ts", "edit src/math.ts"]) {
      expect(lines, call).toContain(`▶ ${call}`)
    }
    expect(lines).toContain("  │ check 1/3")
    // TE 11: the second edit of src/math.ts waits for the first, and says so.
    expect(lines).toContain("  ⋯ edit src/math.ts waits for edit src/math.ts")
    expect(lines[0]).toBe(`workspace: ${ws.dir} (sample project, scripted demo model)`)
    // CLI 7.1: the session is kept in the state folder, never in the workspace.
    expect(lines[1].startsWith(`session:   ${sessionFolder(ws.dir)}/`)).toBe(true)
    expect(lines[1]).toMatch(/\.jsonl$/)
    assertDemoRendering(run.stdout)
  })
})

// ---------------------------------------------------------------------------------------------------------
// Units
// ---------------------------------------------------------------------------------------------------------

/** The columns of a bar line that are filled. */
const filled = (line: string): Set<number> => {
  const bar = stripAnsi(line).split("│")[1]
  const columns = new Set<number>()
  ;[...bar].forEach((ch, i) => {
    if (ch === "█") columns.add(i)
  })
  return columns
}
const barWidth = (line: string) => [...stripAnsi(line).split("│")[1]].length

describe("renderTimeline", () => {
  it("renders nothing for no spans", () => {
    expect(LiveView.renderTimeline([], { columns: 100, color: false })).toEqual([])
  })

  it("gives overlapping spans shared columns and disjoint spans none", () => {
    const lines = LiveView.renderTimeline([
      { label: "read a", start: 1000, end: 1100, isError: false },
      { label: "read b", start: 1050, end: 1150, isError: false },
      { label: "grep c", start: 1160, end: 1200, isError: false }
    ], { columns: 100, color: false })
    expect(lines).toHaveLength(4)
    expect(lines[0]).toBe("  timeline 200ms")
    const [a, b, c] = lines.slice(1).map(filled)
    expect([...a].some((col) => b.has(col))).toBe(true)
    expect([...a].some((col) => c.has(col))).toBe(false)
    expect([...b].some((col) => c.has(col))).toBe(false)
    // Each bar starts where its span starts, relative to the batch.
    expect(Math.min(...a)).toBe(0)
    expect(Math.min(...b)).toBeGreaterThan(0)
    expect(Math.max(...c)).toBe(barWidth(lines[3]) - 1)
    // All bars have the same width, labels padded to the same column, durations at the end.
    expect(new Set(lines.slice(1).map(barWidth)).size).toBe(1)
    expect(lines[1]).toMatch(/^ {2}read a │[█ ]+│ 100ms$/)
    expect(lines[3]).toMatch(/^ {2}grep c │[█ ]+│ 40ms$/)
  })

  it("paints an error span red and the others cyan, only with colour", () => {
    const spans = [
      { label: "bash ok", start: 0, end: 10, isError: false },
      { label: "bash bad", start: 0, end: 5, isError: true }
    ]
    const coloured = LiveView.renderTimeline(spans, { columns: 80, color: true })
    expect(coloured[1]).toContain("\x1b[36m█")
    expect(coloured[2]).toContain("\x1b[31m█")
    expect(coloured[2]).not.toContain("\x1b[36m")
    const plain = LiveView.renderTimeline(spans, { columns: 80, color: false })
    for (const line of plain) expect(line).not.toContain(ESC)
    expect(plain.map(stripAnsi)).toEqual(coloured.map(stripAnsi))
  })

  it("fills the whole bar for a single span", () => {
    const lines = LiveView.renderTimeline([{ label: "ls .", start: 500, end: 2000, isError: false }], {
      columns: 100,
      color: false
    })
    expect(lines).toHaveLength(2)
    const bar = stripAnsi(lines[1]).split("│")[1]
    expect(bar).toMatch(/^█+$/)
    expect(bar.length).toBeGreaterThanOrEqual(10)
    expect(bar.length).toBeLessThanOrEqual(48)
    expect(lines[1]).toMatch(/ 1\.5s$/)
  })

  it("shows a zero-length span as a visible bar", () => {
    const lines = LiveView.renderTimeline([{ label: "bash sudo", start: 7, end: 7, isError: true }], {
      columns: 100,
      color: false
    })
    expect(lines[0]).toMatch(/^ {2}timeline [01]ms$/) // the axis is at least 1ms long
    expect(filled(lines[1]).size).toBeGreaterThanOrEqual(1)
    expect(lines[1]).toMatch(/ 0ms$/)
    expect(
      LiveView.renderTimeline([{ label: "x", start: 0, end: 1500, isError: false }], { columns: 100, color: false })[0]
    )
      .toBe("  timeline 1.5s")
  })

  it("keeps every line within the terminal width and shortens long labels", () => {
    const long = "bash " + "x".repeat(80)
    const lines = LiveView.renderTimeline([
      { label: long, start: 0, end: 10, isError: false },
      { label: "ls", start: 5, end: 10, isError: false }
    ], { columns: 60, color: false })
    for (const line of lines) expect([...line].length, line).toBeLessThanOrEqual(60)
    expect(lines[1]).toContain("…")
    expect(lines[1]).not.toContain(long)
  })
})

describe("keyArgument", () => {
  it("prefers path, pattern, command, query, file, url in that order", () => {
    expect(LiveView.keyArgument({ content: "hello", path: "src/a.ts" })).toBe("src/a.ts")
    expect(LiveView.keyArgument({ command: "ls", path: "p" })).toBe("p")
    expect(LiveView.keyArgument({ command: "echo hi", pattern: "TODO" })).toBe("TODO")
    expect(LiveView.keyArgument({ url: "http://x", query: "q" })).toBe("q")
    expect(LiveView.keyArgument({ url: "http://x" })).toBe("http://x")
  })

  it("falls back to the first string argument, skipping non-strings", () => {
    expect(LiveView.keyArgument({ limit: 3, path: 7, name: "n", other: "o" })).toBe("n")
    expect(LiveView.keyArgument({ limit: 3 })).toBe("")
    expect(LiveView.keyArgument({})).toBe("")
  })

  it("is empty for non-objects", () => {
    for (const value of [undefined, null, 42, "path", true]) expect(LiveView.keyArgument(value)).toBe("")
  })

  it("collapses whitespace and shortens to the width with an ellipsis", () => {
    expect(LiveView.keyArgument({ command: "for i in 1 2\ndo\n  echo $i\ndone" })).toBe("for i in 1 2 do echo $i done")
    const short = LiveView.keyArgument({ command: "abcdefghijklmnop" }, 10)
    expect(short).toBe("abcdefghi…")
    expect(short.length).toBe(10)
    expect(LiveView.keyArgument({ command: "abcdefghij" }, 10)).toBe("abcdefghij")
    expect(LiveView.keyArgument({ command: "x".repeat(100) })).toHaveLength(40)
  })
})

// LiveView.make, fed events by hand under the TestClock.

const assistant = (content: AssistantMessage["content"]): AssistantMessage => assistantMessage(content)
const toolResult = (id: string, name: string, textValue: string, isError: boolean): ToolResultMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName: name,
  content: [{ type: "text", text: textValue }],
  isError,
  timestamp: 0
})

effectDescribe("LiveView.make", () => {
  effectIt.effect(
    "with live: false writes plain lines only, with a timeline after the batch",
    () =>
      Effect.scoped(Effect.gen(function*() {
        let out = ""
        const view = yield* LiveView.make({ live: false, color: false, columns: 100, write: (t) => void (out += t) })
        const partial = assistant([{ type: "text", text: "Let me look." }])
        const events: Array<AgentEvent> = [
          {
            type: "message_update",
            message: partial,
            assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "Let me ", partial }
          },
          {
            type: "message_update",
            message: partial,
            assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "look.", partial }
          },
          {
            type: "message_update",
            message: partial,
            assistantMessageEvent: { type: "thinking_delta", contentIndex: 1, delta: "hmm", partial }
          },
          { type: "tool_execution_start", toolCallId: "a", toolName: "read", args: { path: "src/a.ts" } },
          { type: "tool_execution_start", toolCallId: "b", toolName: "bash", args: { command: "make test" } }
        ]
        for (const event of events) yield* view.handle(event)
        yield* TestClock.adjust("50 millis")
        yield* view.handle({
          type: "tool_execution_update",
          toolCallId: "b",
          toolName: "bash",
          args: { command: "make test" },
          partialResult: { content: [{ type: "text", text: "compiling\nrunning tests" }] }
        })
        yield* view.handle({
          type: "tool_execution_end",
          toolCallId: "a",
          toolName: "read",
          result: { content: [{ type: "text", text: "line one\nline two" }] },
          isError: false
        })
        yield* TestClock.adjust("1950 millis")
        yield* view.handle({
          type: "tool_execution_end",
          toolCallId: "b",
          toolName: "bash",
          result: { content: [{ type: "text", text: "1 test failed" }] },
          isError: true
        })
        yield* view.handle({
          type: "turn_end",
          message: assistant([]),
          toolResults: [toolResult("a", "read", "line one", false), toolResult("b", "bash", "1 test failed", true)]
        })
        yield* view.close

        assert.notInclude(out, ESC)
        assert.notInclude(out, "\r")
        assert.deepStrictEqual(out.split("\n"), [
          "Let me look.hmm",
          "▶ read src/a.ts",
          "▶ bash make test",
          "  │ running tests",
          "✓ read src/a.ts 50ms → line one",
          "✗ bash make test 2.0s → 1 test failed",
          "  timeline 2.0s",
          // 50ms of 2000ms on a 48-column axis: ceil(1.2) = 2 columns
          "  read src/a.ts  │██                                              │ 50ms",
          "  bash make test │████████████████████████████████████████████████│ 2.0s",
          ""
        ])
      }))
  )

  effectIt.effect(
    "prints no timeline for a turn without tool results, and a stopped run's error",
    () =>
      Effect.scoped(Effect.gen(function*() {
        let out = ""
        const view = yield* LiveView.make({ live: false, color: false, columns: 100, write: (t) => void (out += t) })
        yield* view.handle({ type: "turn_end", message: assistant([]), toolResults: [] })
        yield* view.handle({
          type: "message_end",
          message: { ...assistant([]), stopReason: "aborted", errorMessage: "Request was aborted" }
        })
        yield* view.close
        assert.strictEqual(out, "✗ aborted: Request was aborted\n")
      }))
  )

  effectIt.effect(
    "with live: true redraws the lanes in place and clears them when calls end",
    () =>
      Effect.scoped(Effect.gen(function*() {
        let out = ""
        const view = yield* LiveView.make({ live: true, color: true, columns: 100, write: (t) => void (out += t) })
        yield* view.handle({ type: "tool_execution_start", toolCallId: "a", toolName: "read", args: { path: "x" } })
        yield* TestClock.adjust("300 millis") // the ticker redraws
        yield* view.handle({
          type: "tool_execution_end",
          toolCallId: "a",
          toolName: "read",
          result: { content: [{ type: "text", text: "ok" }] },
          isError: false
        })
        yield* view.close
        assert.include(out, "\x1b[2K")
        assert.include(out, "\x1b[1A\r\x1b[J")
        assert.include(stripAnsi(out), "read x")
        assert.include(stripAnsi(out), "✓ read x 300ms → ok")
        assert.isTrue(out.endsWith("→ ok\x1b[0m\n"), JSON.stringify(out.slice(-40)))
      }))
  )
})

effectDescribe("LiveView.make: bash output and usage", () => {
  effectIt.effect(
    "CLI 10.4: a finished bash call with several lines keeps its last lines under it",
    () =>
      Effect.scoped(Effect.gen(function*() {
        let out = ""
        const view = yield* LiveView.make({ live: false, color: false, columns: 100, write: (t) => void (out += t) })
        yield* view.handle({
          type: "tool_execution_start",
          toolCallId: "b",
          toolName: "bash",
          args: { command: "npm test" }
        })
        const lines = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join("\n")
        yield* view.handle({
          type: "tool_execution_end",
          toolCallId: "b",
          toolName: "bash",
          result: { content: [{ type: "text", text: `${lines}\n\n` }] },
          isError: true
        })
        const tail = Array.from(
          { length: LiveView.BASH_TAIL_LINES },
          (_, i) => `  │ line ${10 - LiveView.BASH_TAIL_LINES + i + 1}`
        )
        assert.deepStrictEqual(out.split("\n"), ["▶ bash npm test", "✗ bash npm test 0ms", ...tail, ""])
      }))
  )

  effectIt.effect(
    "CLI 5.4: after each run, its usage and the session's total (resumed usage included)",
    () =>
      Effect.scoped(Effect.gen(function*() {
        let out = ""
        const before = { ...Usage.empty, input: 1000, output: 100, cost: 0.5, requests: 1 }
        const view = yield* LiveView.make({
          live: false,
          color: false,
          columns: 100,
          write: (t) => void (out += t),
          usageBefore: before
        })
        const answer = {
          ...assistant([{ type: "text", text: "hi" }]),
          model: "gpt-4o",
          usage: { ...emptyUsage, input: 12_000, output: 800 }
        }
        yield* view.handle({ type: "agent_start" })
        yield* view.handle({ type: "message_end", message: answer })
        yield* view.handle({ type: "agent_end", messages: [answer] })
        const turn = Usage.ofMessage(answer)
        assert.strictEqual(out, LiveView.usageLine(turn, Usage.add(before, turn)) + "\n")
        assert.match(out, /^↑ 12k ↓ 800 \$0\.0380 ctx 10% · total ↑ 13k ↓ 900 \$0\.5380 ctx 10%\n$/)
        // A run without a model request, or whose model reported no tokens, prints no usage line.
        out = ""
        yield* view.handle({ type: "agent_start" })
        yield* view.handle({ type: "agent_end", messages: [] })
        const silent = assistant([{ type: "text", text: "hi" }])
        yield* view.handle({ type: "agent_start" })
        yield* view.handle({ type: "message_end", message: silent })
        yield* view.handle({ type: "agent_end", messages: [silent] })
        assert.strictEqual(out, "")
      }))
  )

  effectIt.effect(
    "TE 11: a call that waits says for what, and its elapsed time and its bar start when the wait ends",
    () =>
      Effect.scoped(Effect.gen(function*() {
        let out = ""
        const view = yield* LiveView.make({ live: false, color: false, columns: 100, write: (t) => void (out += t) })
        const start = (id: string) =>
          view.handle({ type: "tool_execution_start", toolCallId: id, toolName: "edit", args: { path: "a.ts" } })
        const end = (id: string) =>
          view.handle({
            type: "tool_execution_end",
            toolCallId: id,
            toolName: "edit",
            result: { content: [{ type: "text", text: `done ${id}` }], details: {} },
            isError: false
          })
        yield* start("1")
        yield* start("2")
        yield* view.handle({ type: "tool_execution_waiting", toolCallId: "2", toolName: "edit", waitingFor: ["1"] })
        yield* TestClock.adjust("100 millis")
        yield* end("1")
        yield* TestClock.adjust("50 millis")
        yield* end("2")
        yield* view.handle({
          type: "turn_end",
          message: assistant([]),
          toolResults: [toolResult("1", "edit", "done 1", false), toolResult("2", "edit", "done 2", false)]
        })
        const lines = out.split("\n")
        assert.deepStrictEqual(lines.slice(0, 5), [
          "▶ edit a.ts",
          "▶ edit a.ts",
          "  ⋯ edit a.ts waits for edit a.ts",
          "✓ edit a.ts 100ms → done 1",
          "✓ edit a.ts 50ms → done 2"
        ])
        assert.strictEqual(lines[5], "  timeline 150ms")
        const [first, second] = [filled(lines[6]!), filled(lines[7]!)]
        assert.isFalse([...first].some((col) => second.has(col)), "the bars do not overlap")
        assert.isTrue(Math.min(...second) > Math.max(...first) - 1)
      }))
  )
})
