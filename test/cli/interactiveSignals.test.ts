/**
 * A signal sent to the interactive mode (CLI 1.6): SIGINT from `kill`, SIGTERM and SIGHUP, each while an
 * answer streams and while a `bash` call runs, in a real pseudo-terminal (tmux). The command exits with
 * 128 + the signal's number, gives the terminal back (raw mode and bracketed paste off), leaves no process
 * of the call behind, and its session file holds only whole lines.
 */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { needs, tmux } from "../support/components.ts"
import { lastUserText, openScreen, type Screen, startStub, type Stub } from "./interactiveSupport.ts"
import { defaultSessionFiles, tempDir, TEST_TIMEOUT_MS } from "./support.ts"

const SIGNALS: ReadonlyArray<readonly [NodeJS.Signals, number]> = [["SIGINT", 130], ["SIGTERM", 143], ["SIGHUP", 129]]
const PHASES = ["streaming", "tool"] as const
type Phase = typeof PHASES[number]

// The observations run at once: each signal's call sleeps for its own time, so that what one of them finds
// left behind is its own call's process, not the process of another observation still running (a streaming
// observation, which runs no call, looks for a sandbox in its own workspace).
const sleepOf = (signal: NodeJS.Signals) => `sleep 37.${SIGNALS.findIndex(([name]) => name === signal) + 1}`

const respond = (body: any) => {
  const last = body.messages.at(-1)
  if (last.role === "tool") return { text: "done" }
  const text = lastUserText(body)
  if (text.includes("run sleep")) {
    const signal = SIGNALS.find(([name]) => text.includes(name))?.[0] ?? "SIGINT"
    return { toolCalls: [{ id: "s1", name: "bash", args: { command: `echo started; ${sleepOf(signal)}` } }] }
  }
  return { text: "word ".repeat(2000), delayMs: 40, chunk: 5 }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The pids of processes whose command line includes `text`. */
const processesWith = (text: string): Array<string> =>
  execFileSync("ps", ["-eo", "pid=,stat=,args="], { encoding: "utf8" }).split("\n")
    .filter((row) => row.includes(text) && !/^\s*\d+\s+Z/.test(row))

interface Observed {
  readonly screen: string
  readonly stty: string
  readonly output: string
  readonly sessionText: string
  readonly leftBehind: Array<string>
  /** For the tool phase: whether the call's process was running when the signal was sent. */
  readonly callRan: boolean
}

let stub: Stub
const screens: Array<Screen> = []
const folders: Array<{ cleanup: () => void }> = []

const observe = async (signal: NodeJS.Signals, phase: Phase): Promise<Observed> => {
  const home = tempDir(`sig-home-${phase}`)
  const workspace = tempDir(`sig-ws-${phase}`)
  folders.push(home, workspace)
  const log = join(home.dir, "pane-output")
  const s = openScreen(
    ["--provider", "openai-compatible", "--base-url", stub.url, "--model", "stub-a", "--yes", "-w", workspace.dir],
    { EFFECT_AGENT_HOME: home.dir, OPENAI_API_KEY: "test-key" },
    workspace.dir
  )
  screens.push(s)
  // Every byte the command writes to its terminal, to see what it left switched on.
  s.tmux("pipe-pane", "-o", "-t", "main", `cat >> '${log}'`)
  await s.waitFor("›")
  const shellPid = s.tmux("display-message", "-p", "-t", "main", "#{pane_pid}").trim()
  const tty = s.tmux("display-message", "-p", "-t", "main", "#{pane_tty}").trim()
  const cliPid = Number(execFileSync("ps", ["-o", "pid=", "--ppid", shellPid], { encoding: "utf8" }).trim())
  if (phase === "streaming") {
    s.type(`stream please ${signal}`)
    s.keys("Enter")
    await s.waitFor("word word word")
  }
  let callRan = false
  if (phase === "tool") {
    s.type(`run sleep ${signal}`)
    s.keys("Enter")
    await s.waitFor("started")
    const deadline = Date.now() + 30_000
    while (processesWith(sleepOf(signal)).length === 0 && Date.now() < deadline) await sleep(50)
    callRan = processesWith(sleepOf(signal)).length > 0
  }
  process.kill(cliPid, signal)
  const screen = await s.waitFor(/\[exit \d+\]/)
  const [file] = defaultSessionFiles(workspace.dir, home.dir)
  return {
    screen,
    stty: execFileSync("stty", ["-a", "-F", tty], { encoding: "utf8" }),
    output: readFileSync(log, "latin1"),
    sessionText: file === undefined ? "" : readFileSync(file, "utf8"),
    leftBehind: processesWith(phase === "tool" ? sleepOf(signal) : `--chdir ${workspace.dir}`),
    callRan
  }
}

const observations = new Map<string, Promise<Observed>>()
const hasTmux = needs(tmux)
beforeAll(async () => {
  if (!hasTmux) return
  stub = await startStub(respond)
  for (const [signal] of SIGNALS) {
    for (const phase of PHASES) {
      const observation = observe(signal, phase)
      observation.catch(() => {}) // reported by the test that awaits it
      observations.set(`${signal} ${phase}`, observation)
    }
  }
}, TEST_TIMEOUT_MS)
afterAll(async () => {
  await Promise.allSettled(observations.values())
  for (const screen of screens) screen.stop()
  await stub?.close()
  for (const folder of folders) folder.cleanup()
})

for (const [signal, exitCode] of SIGNALS) {
  for (const phase of PHASES) {
    describe(`CLI 1.6: ${signal} while ${phase === "streaming" ? "an answer streams" : "a bash call runs"}`, () => {
      it(`exits ${exitCode}, terminal restored, nothing left behind, whole session lines`, async () => {
        const seen = await observations.get(`${signal} ${phase}`)!
        expect(seen.screen).toContain(`[exit ${exitCode}]`)
        // Raw mode off: the line discipline edits and echoes again.
        expect(seen.stty).toMatch(/(^|\s)icanon(\s|$)/)
        expect(seen.stty).toMatch(/(^|\s)echo(\s|$)/)
        // Bracketed paste was switched on, and switched off after the last time it was switched on.
        expect(seen.output).toContain("\x1b[?2004h")
        expect(seen.output.lastIndexOf("\x1b[?2004l")).toBeGreaterThan(seen.output.lastIndexOf("\x1b[?2004h"))
        if (phase === "tool") expect(seen.callRan).toBe(true)
        expect(seen.leftBehind).toEqual([])
        expect(seen.sessionText.endsWith("\n")).toBe(true)
        const lines = seen.sessionText.split("\n").filter((line) => line !== "")
        expect(lines.length).toBeGreaterThan(0)
        for (const line of lines) expect(() => JSON.parse(line)).not.toThrow()
      }, TEST_TIMEOUT_MS)
    })
  }
}
