/**
 * Ctrl-C during a run: SIGINT sent to the command when the demo's `demo-check` bash call reports its first
 * progress. The run is aborted, every started call still gets its end event and result message, the
 * session holds every completed message, no process of the check is left, and the exit code is 130.
 * SIGTERM (`kill`) and SIGHUP (the terminal was closed) get the same clean shutdown (issue 16 item 7), with
 * the exit code a shell gives for them (128 + the signal's number).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  defaultSessionFiles,
  endedMessages,
  loadSessionOrThrow,
  parseJsonLines,
  processesIn,
  processGroupMembers,
  resultText,
  runCli,
  type RunResult,
  tempDir,
  TEST_TIMEOUT_MS
} from "./support.ts"

const SIGNALS: ReadonlyArray<readonly [NodeJS.Signals, number]> = [["SIGINT", 130], ["SIGTERM", 143], ["SIGHUP", 129]]

interface Observed {
  readonly run: RunResult
  readonly events: Array<any>
  readonly sent: boolean
  readonly checkPid: number | undefined
  /** Processes left in the workspace / in the check's process group right after the command exited. */
  readonly leftInWorkspace: Array<{ pid: number; args: string }>
  readonly leftInGroup: Array<string>
}

/** Runs the demo in `dir` and sends `signal` when the check reports its first progress. */
const observe = async (signal: NodeJS.Signals, dir: string): Promise<Observed> => {
  let sent = false
  let checkPid: number | undefined
  const run = await runCli(["--json", "--yes", "--workspace", dir], {
    onLine: (line, child) => {
      if (sent || line.trim() === "") return
      const event = JSON.parse(line)
      if (event.type === "tool_execution_update" && event.toolCallId === "demo-check") {
        checkPid = event.partialResult?.details?.pid
        sent = true
        child.kill(signal)
      }
    }
  })
  // Look at once, before anything the check started could finish on its own.
  const leftInWorkspace = processesIn(dir)
  const leftInGroup = checkPid === undefined ? [] : processGroupMembers(checkPid)
  return { run, events: parseJsonLines(run.stdout), sent, checkPid, leftInWorkspace, leftInGroup }
}

const workspaces = new Map(SIGNALS.map(([signal]) => [signal, tempDir(signal.toLowerCase())]))
const observations = new Map<NodeJS.Signals, Promise<Observed>>()
// The runs go at once: each mostly waits on the demo's pacing, so together they take about as long as one.
beforeAll(() => {
  for (const [signal] of SIGNALS) {
    const observation = observe(signal, workspaces.get(signal)!.dir)
    observation.catch(() => {}) // reported by the describe that awaits it, not as an unhandled rejection
    observations.set(signal, observation)
  }
})
afterAll(() => workspaces.forEach((ws) => ws.cleanup()))

for (const [signal, exitCode] of SIGNALS) {
  describe(`${signal} during the demo's check`, () => {
    const ws = workspaces.get(signal)!
    let run: RunResult
    let events: Array<any>
    let sent = false
    let checkPid: number | undefined
    let leftInWorkspace: Array<{ pid: number; args: string }> = []
    let leftInGroup: Array<string> = []

    beforeAll(async () => {
      ;({ run, events, sent, checkPid, leftInWorkspace, leftInGroup } = await observations.get(signal)!)
    }, TEST_TIMEOUT_MS)

    it("was sent during the check", () => {
      expect(sent).toBe(true)
      expect(typeof checkPid).toBe("number")
    })

    it(`exits with code ${exitCode} and says the run was interrupted`, () => {
      expect(run.signal).toBeNull()
      expect(run.code).toBe(exitCode)
      expect(run.stderr).toContain(`interrupted (${signal})`)
      expect(run.stderr).not.toMatch(/\bat file:\/\//)
    })

    it("ends every started call with an end event and a result message, and ends the run", () => {
      expect(events[0].type).toBe("agent_start")
      expect(events.at(-1).type).toBe("agent_end")
      const started = events.filter((e) => e.type === "tool_execution_start").map((e) => e.toolCallId)
      expect(started).toContain("demo-check")
      for (const id of started) {
        const ends = events.filter((e) => e.type === "tool_execution_end" && e.toolCallId === id)
        expect(ends, id).toHaveLength(1)
        const results = endedMessages(events).filter((m) => m.role === "toolResult" && m.toolCallId === id)
        expect(results, id).toHaveLength(1)
        expect(results[0].isError, id).toBe(ends[0].isError)
      }
      const check = events.find((e) => e.type === "tool_execution_end" && e.toolCallId === "demo-check")
      expect(check.isError).toBe(true)
      expect(resultText(check.result)).toMatch(/interrupted/i)
      // The check never finished its loop (the grep that ends it did not run).
      expect(resultText(check.result)).not.toContain("return a + b")
      // No turn was started after the interruption, and the model did not answer again.
      expect(events.filter((e) => e.type === "turn_start")).toHaveLength(3)
      expect(endedMessages(events).filter((m) => m.role === "assistant" && m.stopReason === "stop")).toHaveLength(0)
    })

    it("saved every completed message in the session file", async () => {
      const files = defaultSessionFiles(ws.dir)
      expect(files).toHaveLength(1)
      const loaded = await loadSessionOrThrow(files[0])
      const ended = endedMessages(events)
      expect(JSON.parse(JSON.stringify(loaded))).toEqual(ended)
      // user, 3 assistant responses, 9 results (the interrupted check included)
      expect(loaded).toHaveLength(13)
      expect(loaded.at(-1)).toMatchObject({ role: "toolResult", toolCallId: "demo-check", isError: true })
    })

    it("leaves no process of the check behind (no sleep, no shell)", () => {
      expect(leftInGroup).toEqual([])
      expect(leftInWorkspace).toEqual([])
      const sleeps = leftInWorkspace.filter((p) => /\bsleep\b/.test(p.args))
      expect(sleeps).toEqual([])
    })
  })
}
