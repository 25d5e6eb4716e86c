/**
 * The command line as a person and a program use it every day (docs/cli.md), in-process where the process
 * itself is not the point and as a real subprocess for a real pipe, a pseudo-terminal and the RPC mode:
 * the task from a pipe and from words (CLI 8.1, 8.2), `--print` (CLI 8.3), context files on the start-up
 * line (CLI 6.5), sessions in the state folder (CLI 7.1), `--continue` (CLI 7.2), the picker of a bare
 * `--resume` on a pseudo-terminal (CLI 7.3), `--fork` (CLI 7.4), and the RPC mode (CLI 11.x).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { needs, script } from "../support/components.ts"
import {
  defaultSessionFiles,
  endedMessages,
  type InProcessStdin,
  loadSessionOrThrow,
  MAIN,
  NODE,
  parseJsonLines,
  plainText,
  RUN_TIMEOUT_MS,
  runCliInProcess,
  runProcess,
  sessionFolder,
  shellQuote,
  spawnOnTerminal,
  tempDir,
  TEST_TIMEOUT_MS
} from "./support.ts"

const textOfMessage = (message: any): string =>
  typeof message.content === "string"
    ? message.content
    : message.content.filter((b: any) => b.type === "text").map((b: any) => b.text).join(" ")

describe("the task from a pipe, --print", () => {
  const ws = tempDir("print")
  afterAll(() => ws.cleanup())

  it("CLI 8.2, 8.3: a piped task runs; --print writes only the final answer's text", async () => {
    const command = `printf 'Task from a pipe\\n' | ${
      [NODE, MAIN, "--print", "-y", "-w", ws.dir].map(shellQuote).join(" ")
    }`
    const run = await runProcess("sh", ["-c", command])
    expect(run.code, run.stderr).toBe(0)
    const [file] = defaultSessionFiles(ws.dir)
    const messages = await loadSessionOrThrow(file)
    expect(messages[0].role).toBe("user")
    expect(textOfMessage(messages[0])).toBe("Task from a pipe")
    const last = messages.findLast((m) => m.role === "assistant")!
    expect(run.stdout).toBe(textOfMessage(last) + "\n")
    expect(run.stdout).not.toContain("workspace:")
    expect(run.stdout).not.toContain("session")
  }, TEST_TIMEOUT_MS)
})

describe("sessions: words as the task, context files, --continue, the picker, --fork", () => {
  const ws = tempDir("daily")
  afterAll(() => ws.cleanup())
  let first = ""

  it(
    "CLI 8.1, 7.1: words after the flags are the task; the session is in the state folder, not the workspace",
    async () => {
      const run = await runCliInProcess(["--json", "-y", "-w", ws.dir, "Fix", "the", "add", "function"])
      expect(run.code, run.stderr).toBe(0)
      const events = parseJsonLines(run.stdout)
      expect(textOfMessage(endedMessages(events)[0])).toBe("Fix the add function")
      const files = defaultSessionFiles(ws.dir)
      expect(files).toHaveLength(1)
      first = files[0]
      expect(existsSync(join(ws.dir, ".effect-agent"))).toBe(false)
    },
    TEST_TIMEOUT_MS
  )

  it("CLI 7.2, 6.5: --continue appends to that session; the start-up line names the context files", async () => {
    const before = (await loadSessionOrThrow(first)).length
    writeFileSync(join(ws.dir, "AGENTS.md"), "Always run the tests.\n")
    const run = await runCliInProcess(["--continue", "-y", "-w", ws.dir, "Second task"])
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout.split("\n")
    expect(lines).toContain(`session:   ${first} (continued, ${before} messages)`)
    expect(lines).toContain("context:   AGENTS.md")
    const after = await loadSessionOrThrow(first)
    expect(after.length).toBeGreaterThan(before)
    expect(textOfMessage(after[before])).toBe("Second task")
    expect(defaultSessionFiles(ws.dir)).toEqual([first])
  }, TEST_TIMEOUT_MS)

  describe("on a terminal", () => {
    needs(script)
    it(
      "CLI 7.3: a bare --resume on a terminal opens the picker; Enter continues the latest",
      async () => {
        const before = (await loadSessionOrThrow(first)).length
        const child = spawnOnTerminal(["--resume", "-y", "-w", ws.dir, "Third task"])
        let raw = ""
        let answered = false
        const timer = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS)
        child.stdout.setEncoding("utf8")
        child.stdout.on("data", (chunk: string) => {
          raw += chunk
          const text = plainText(raw)
          // The picker lists the session with its first prompt: pick it.
          if (!answered && text.includes("Pick a session") && text.includes("msg  Fix the a")) {
            answered = true
            child.stdin.write("\r")
          }
        })
        const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)))
        clearTimeout(timer)
        const text = plainText(raw)
        expect(answered, text.slice(-2000)).toBe(true)
        expect(code, text.slice(-2000)).toBe(0)
        expect(text).toContain(`session:   ${first} (resumed, ${before} messages)`)
        const after = await loadSessionOrThrow(first)
        expect(textOfMessage(after[before])).toBe("Third task")
      },
      TEST_TIMEOUT_MS
    )
  })

  it("CLI 7.3: without a terminal a bare --resume is refused with one line, and nothing is written", async () => {
    const size = readFileSync(first, "utf8")
    const run = await runCliInProcess(["--resume", "-y", "-w", ws.dir, "Nope"])
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain("--resume without a file opens a picker, which needs a terminal")
    expect(readFileSync(first, "utf8")).toBe(size)
    expect(defaultSessionFiles(ws.dir)).toEqual([first])
  }, TEST_TIMEOUT_MS)

  it("CLI 7.4: --fork=FILE starts a new session from the old one and leaves the old one as it was", async () => {
    const old = readFileSync(first, "utf8")
    const run = await runCliInProcess([`--fork=${first}`, "--json", "-y", "-w", ws.dir, "Fourth task"])
    expect(run.code, run.stderr).toBe(0)
    expect(readFileSync(first, "utf8")).toBe(old)
    const files = defaultSessionFiles(ws.dir)
    expect(files).toHaveLength(2)
    const forked = files.find((f) => f !== first)!
    expect(readFileSync(forked, "utf8").startsWith(old)).toBe(true)
    expect(readdirSync(sessionFolder(ws.dir)).filter((f) => f.endsWith(".lock"))).toEqual([])
  }, TEST_TIMEOUT_MS)
})

describe("--mode rpc", () => {
  const ws = tempDir("rpc")
  afterAll(() => ws.cleanup())

  it(
    "CLI 11.1-11.4: commands in, one response each, the run's events, clear error lines; exits when stdin ends",
    async () => {
      const lines: Array<any> = []
      let sentAfterRun = false
      const send = (stdin: InProcessStdin, line: string) => stdin.write(line + "\n")
      const run = await runCliInProcess(["--mode", "rpc", "-y", "-w", ws.dir], {
        stdin: "open",
        onStart: (stdin) => {
          send(stdin, JSON.stringify({ type: "get_state", id: "s0" }))
          send(stdin, "this is not json")
          send(stdin, JSON.stringify({ type: "dance", id: "d1" }))
          send(stdin, JSON.stringify({ type: "prompt", id: "bad" }))
          send(stdin, JSON.stringify({ type: "prompt", id: "p1", message: "Fix the add function" }))
        },
        onLine: (text, stdin) => {
          const line = JSON.parse(text)
          lines.push(line)
          if (line.type === "response" && line.id === "p1") {
            // While the run goes: a second prompt is refused, a steer is queued.
            send(stdin, JSON.stringify({ type: "prompt", id: "p2", message: "again" }))
            send(stdin, JSON.stringify({ type: "steer", id: "st", message: "also check the README" }))
          }
          if (line.type === "agent_end" && !sentAfterRun) {
            sentAfterRun = true
            send(stdin, JSON.stringify({ type: "get_state", id: "s1" }))
            send(stdin, JSON.stringify({ type: "abort", id: "a1" }))
            stdin.end()
          }
        }
      })
      const { code, stderr, stdout } = run
      expect(code, stderr).toBe(0)
      expect(stdout.endsWith("\n")).toBe(true)
      const responses = lines.filter((l) => l.type === "response")
      const byId = (id: string) => responses.find((r) => r.id === id)
      expect(byId("s0")).toMatchObject({
        command: "get_state",
        success: true,
        data: { isStreaming: false, messageCount: 0 }
      })
      const errors = responses.filter((r) => !r.success && r.id !== "p2")
      expect(errors.map((r) => r.error)).toEqual([
        "line 2: not valid JSON",
        "line 3: unknown command type \"dance\" (known: prompt, steer, follow_up, abort, get_state)",
        "line 4: \"prompt\" needs a \"message\" string"
      ])
      expect(byId("d1")).toMatchObject({ command: "dance", success: false })
      expect(byId("p1")).toMatchObject({ command: "prompt", success: true })
      expect(byId("p2")).toMatchObject({ command: "prompt", success: false })
      expect(byId("p2").error).toContain("a run is active")
      expect(byId("st")).toMatchObject({ command: "steer", success: true })
      // The response to the prompt comes before the run it started.
      expect(lines.indexOf(byId("p1"))).toBeLessThan(lines.findIndex((l) => l.type === "agent_start"))
      expect(lines.some((l) => l.type === "tool_execution_end")).toBe(true)
      const state = byId("s1")
      expect(state).toMatchObject({ command: "get_state", success: true, data: { isStreaming: false } })
      expect(state.data.messageCount).toBeGreaterThan(2)
      expect(state.data.sessionFile.startsWith(sessionFolder(ws.dir))).toBe(true)
      expect(byId("a1")).toMatchObject({ command: "abort", success: true, data: { aborted: false } })
      expect(await loadSessionOrThrow(state.data.sessionFile)).toHaveLength(state.data.messageCount)
    },
    TEST_TIMEOUT_MS
  )
})
