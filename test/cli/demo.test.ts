/**
 * The command line end to end (issue 5): the embedded demo run as a real subprocess with `--json`, checked
 * event by event, on the files it changed and on the session file it saved. Then the same demo without
 * `--yes` and without a terminal (in-process), where every call that needs approval is blocked.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SAMPLE_FILES } from "../../src/cli/Demo.ts"
import {
  defaultSessionFiles,
  endedMessages,
  loadSessionOrThrow,
  nonBlankLines,
  parseJsonLines,
  resultText,
  runCli,
  runCliInProcess,
  type RunResult,
  stderrBesidesSandboxNotice,
  tempDir,
  TEST_TIMEOUT_MS
} from "./support.ts"

const FIRST_BATCH = ["demo-ls", "demo-find", "demo-grep", "demo-read"]
const ALL_CALLS = [...FIRST_BATCH, "demo-edit", "demo-comment", "demo-notes", "demo-sudo", "demo-check"]

const FIXED_MATH = SAMPLE_FILES.find(([file]) => file === "src/math.ts")![1].replace(
  "export function add(a: number, b: number): number {\n  return a - b",
  "export function add(a: number, b: number): number {\n  return a + b"
).replace("// Arithmetic for the calculator.", "// Arithmetic for the calculator: add() and subtract().")

/** Index of the first event matching. */
const indexOf = (events: ReadonlyArray<any>, predicate: (e: any) => boolean): number => {
  const i = events.findIndex(predicate)
  if (i < 0) throw new Error("no matching event")
  return i
}
const startOf = (events: ReadonlyArray<any>, id: string) =>
  indexOf(events, (e) => e.type === "tool_execution_start" && e.toolCallId === id)
const endOf = (events: ReadonlyArray<any>, id: string) =>
  indexOf(events, (e) => e.type === "tool_execution_end" && e.toolCallId === id)
const resultMessageEndOf = (events: ReadonlyArray<any>, id: string) =>
  indexOf(events, (e) => e.type === "message_end" && e.message.role === "toolResult" && e.message.toolCallId === id)
const endEvent = (events: ReadonlyArray<any>, id: string) => events[endOf(events, id)]

/** The invariants every run keeps, whatever was allowed. */
const assertRunShape = (events: ReadonlyArray<any>) => {
  expect(events.length).toBeGreaterThan(0)
  expect(events[0].type).toBe("agent_start")
  expect(events.at(-1).type).toBe("agent_end")
  expect(events.filter((e) => e.type === "agent_start")).toHaveLength(1)
  expect(events.filter((e) => e.type === "agent_end")).toHaveLength(1)
  expect(events.filter((e) => e.type === "turn_start")).toHaveLength(4)
  expect(events.filter((e) => e.type === "turn_end")).toHaveLength(4)

  // Every call starts once, ends once, and its updates and result message come in between / after.
  for (const id of ALL_CALLS) {
    expect(events.filter((e) => e.type === "tool_execution_start" && e.toolCallId === id), id).toHaveLength(1)
    expect(events.filter((e) => e.type === "tool_execution_end" && e.toolCallId === id), id).toHaveLength(1)
    const start = startOf(events, id)
    const end = endOf(events, id)
    expect(start, id).toBeLessThan(end)
    events.forEach((e, i) => {
      if (e.type === "tool_execution_update" && e.toolCallId === id) {
        expect(i, `${id} update`).toBeGreaterThan(start)
        expect(i, `${id} update`).toBeLessThan(end)
      }
    })
    expect(resultMessageEndOf(events, id), id).toBeGreaterThan(end)
    const message = events[resultMessageEndOf(events, id)].message
    expect(message.isError, id).toBe(endEvent(events, id).isError)
  }
  expect(events.filter((e) => e.type === "tool_execution_start")).toHaveLength(ALL_CALLS.length)

  // The first batch ran in parallel: all four started before any of them ended.
  const lastFirstStart = Math.max(...FIRST_BATCH.map((id) => startOf(events, id)))
  const firstFirstEnd = Math.min(...FIRST_BATCH.map((id) => endOf(events, id)))
  expect(lastFirstStart).toBeLessThan(firstFirstEnd)
  for (const id of FIRST_BATCH) expect(endEvent(events, id).isError, id).toBe(false)

  // The edit batch ran in parallel, scheduled by what each call touches (TE 11): the two edits of
  // src/math.ts one after the other (the second waits for the first), the read of another file beside them.
  // Blocked edits (no one to approve them) end in prepare and never wait.
  const editsRan = !endEvent(events, "demo-edit").isError
  const editStarts = ["demo-edit", "demo-comment", "demo-notes"].map((id) => startOf(events, id))
  if (editsRan) expect(Math.max(...editStarts)).toBeLessThan(endOf(events, "demo-edit"))
  const waiting = events.filter((e) => e.type === "tool_execution_waiting")
  expect(waiting.map((e) => [e.toolCallId, e.waitingFor])).toEqual(
    editsRan ? [["demo-comment", ["demo-edit"]]] : []
  )
  expect(endOf(events, "demo-edit")).toBeLessThan(endOf(events, "demo-comment"))
  // bash is exclusive: the check waits for nothing (the refused sudo call never ran), and runs alone.
  expect(resultMessageEndOf(events, "demo-sudo")).toBeLessThan(resultMessageEndOf(events, "demo-check"))

  // The batches come in turns, in script order.
  const turnEnds = events.flatMap((e, i) => e.type === "turn_end" ? [i] : [])
  expect(endOf(events, "demo-read")).toBeLessThan(turnEnds[0])
  expect(startOf(events, "demo-edit")).toBeGreaterThan(turnEnds[0])
  expect(resultMessageEndOf(events, "demo-notes")).toBeLessThan(turnEnds[1])
  expect(startOf(events, "demo-sudo")).toBeGreaterThan(turnEnds[1])
  expect(resultMessageEndOf(events, "demo-check")).toBeLessThan(turnEnds[2])
  expect(events[turnEnds[3]].message.stopReason).toBe("stop")
  expect(events[turnEnds[0]].toolResults.map((r: any) => r.toolCallId)).toEqual(FIRST_BATCH)

  // The sudo call is refused by policy, whatever was allowed, and never runs (no progress).
  const sudo = endEvent(events, "demo-sudo")
  expect(sudo.isError).toBe(true)
  expect(resultText(sudo.result)).toMatch(/^Refused by policy: it asks for elevated privileges/)
  expect(events.some((e) => e.type === "tool_execution_update" && e.toolCallId === "demo-sudo")).toBe(false)

  // Reading the missing notes file fails.
  const notes = endEvent(events, "demo-notes")
  expect(notes.isError).toBe(true)
  expect(resultText(notes.result)).toContain("notes/todo.md")

  // agent_end lists exactly the messages the run added.
  const ended = endedMessages(events)
  expect(events.at(-1).messages).toEqual(ended)
  // user + 4 assistant + 9 tool results
  expect(ended.map((m) => m.role)).toEqual([
    "user",
    "assistant",
    ...FIRST_BATCH.map(() => "toolResult"),
    "assistant",
    "toolResult",
    "toolResult",
    "toolResult",
    "assistant",
    "toolResult",
    "toolResult",
    "assistant"
  ])
}

/** The session file in the workspace's default folder: one file, every line a message of the run. */
const assertSessionFile = async (workspace: string, events: ReadonlyArray<any>) => {
  const files = defaultSessionFiles(workspace)
  expect(files).toHaveLength(1)
  const lines = nonBlankLines(files[0])
  for (const line of lines) expect(() => JSON.parse(line)).not.toThrow()
  expect(readFileSync(files[0], "utf8").endsWith("\n")).toBe(true)
  const loaded = await loadSessionOrThrow(files[0])
  const ended = endedMessages(events)
  expect(loaded).toHaveLength(ended.length)
  expect(lines).toHaveLength(ended.length)
  expect(JSON.parse(JSON.stringify(loaded))).toEqual(ended)
}

const sampleFileContent = (workspace: string, file: string) => readFileSync(join(workspace, file), "utf8")

describe("demo --json --yes", () => {
  const ws = tempDir("demo-yes")
  let run: RunResult
  let events: Array<any>

  beforeAll(async () => {
    run = await runCli(["--json", "--yes", "--workspace", ws.dir])
    events = parseJsonLines(run.stdout)
  }, TEST_TIMEOUT_MS)
  afterAll(() => ws.cleanup())

  it("exits 0 with nothing on stderr, and prints only JSON lines", () => {
    expect(stderrBesidesSandboxNotice(run.stderr)).toBe("")
    expect(run.code).toBe(0)
    expect(events.length).toBe(run.stdout.split("\n").filter((l) => l.trim() !== "").length)
    for (const event of events) expect(typeof event.type).toBe("string")
  })

  it("has the demo's event structure: 4 turns, a parallel batch, sequential batches", () => {
    assertRunShape(events)
  })

  it("runs the edit and the streamed check", () => {
    const edit = endEvent(events, "demo-edit")
    expect(edit.isError).toBe(false)
    expect(resultText(edit.result)).toContain("src/math.ts")

    const check = endEvent(events, "demo-check")
    expect(check.isError).toBe(false)
    expect(resultText(check.result)).toContain("return a + b")
    const updates = events.filter((e) => e.type === "tool_execution_update" && e.toolCallId === "demo-check")
    expect(updates.length).toBeGreaterThanOrEqual(1)
    expect(resultText(updates[0].partialResult)).toContain("check 1/3")
    // Progress only grows, so after the first update each line carries only the added text (issue 16
    // item 10); rebuilt, each progress text extends the previous one.
    const progress = [resultText(updates[0].partialResult)]
    for (let i = 1; i < updates.length; i++) {
      expect(updates[i].partialResult.content, `update ${i}`).toBeUndefined()
      expect(typeof updates[i].textAppended, `update ${i}`).toBe("string")
      progress.push(progress[i - 1] + updates[i].textAppended)
      expect(progress[i].startsWith(progress[i - 1])).toBe(true)
    }
    expect(progress.join("\n")).toContain("check 3/3")

    const final = endedMessages(events).at(-1)
    expect(final.role).toBe("assistant")
    expect(final.stopReason).toBe("stop")
    expect(final.content[0].text).toContain("I ran 9 tool calls; 2 of them ended with an error")
    expect(final.content[0].text).toContain("it now returns `a + b`")
  })

  it("fixes add() in src/math.ts and leaves the other files untouched", () => {
    expect(sampleFileContent(ws.dir, "src/math.ts")).toBe(FIXED_MATH)
    expect(sampleFileContent(ws.dir, "src/math.ts")).toContain("return a + b")
    // subtract still subtracts
    expect(sampleFileContent(ws.dir, "src/math.ts")).toMatch(
      /subtract\(a: number, b: number\): number \{\n {2}return a - b/
    )
    for (const [file, content] of SAMPLE_FILES) {
      if (file !== "src/math.ts") expect(sampleFileContent(ws.dir, file), file).toBe(content)
    }
    // Nothing else appeared beside the sample project.
    expect(readdirSync(ws.dir).sort()).toEqual(["README.md", "src"]) // CLI 7.1: no session in the workspace
    expect(readdirSync(join(ws.dir, "src")).sort()).toEqual(["format.ts", "main.ts", "math.ts"])
    expect(existsSync(join(ws.dir, "notes"))).toBe(false)
  })

  it("saves the session as JSON lines, one valid message per completed message", async () => {
    await assertSessionFile(ws.dir, events)
  })
})

describe("demo --json without --yes and without a terminal", () => {
  const ws = tempDir("demo-noterm")
  let run: RunResult
  let events: Array<any>

  beforeAll(async () => {
    // stdin is a pipe (not a terminal) and stdout a pipe: no one can be asked.
    run = await runCliInProcess(["--json", "--workspace", ws.dir])
    events = parseJsonLines(run.stdout)
  }, TEST_TIMEOUT_MS)
  afterAll(() => ws.cleanup())

  it("still completes the run with exit code 0", () => {
    expect(stderrBesidesSandboxNotice(run.stderr)).toBe("")
    expect(run.code).toBe(0)
    assertRunShape(events)
  })

  it("blocks edit and bash with the no-terminal reason (sudo is refused by policy first)", () => {
    for (const [id, tool] of [["demo-edit", "edit"], ["demo-comment", "edit"], ["demo-check", "bash"]] as const) {
      const end = endEvent(events, id)
      expect(end.isError, id).toBe(true)
      expect(resultText(end.result), id).toBe(
        `${tool} needs the user's approval, but there is no terminal to ask. It was not run. The user can rerun with --yes to allow it.`
      )
      expect(events.some((e) => e.type === "tool_execution_update" && e.toolCallId === id), id).toBe(false)
    }
    expect(resultText(endEvent(events, "demo-sudo").result)).toMatch(/^Refused by policy/)
    // The read-only calls ran.
    for (const id of FIRST_BATCH) expect(endEvent(events, id).isError, id).toBe(false)
    const final = endedMessages(events).at(-1)
    expect(final.content[0].text).toContain("I ran 9 tool calls; 5 of them ended with an error")
    expect(final.content[0].text).toContain("could not be applied")
  })

  it("changes no file", () => {
    for (const [file, content] of SAMPLE_FILES) expect(sampleFileContent(ws.dir, file), file).toBe(content)
    expect(readdirSync(ws.dir).sort()).toEqual(["README.md", "src"]) // CLI 7.1: no session in the workspace
  })

  it("saves the session", async () => {
    await assertSessionFile(ws.dir, events)
  })
})
