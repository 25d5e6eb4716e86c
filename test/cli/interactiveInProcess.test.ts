/**
 * The interactive mode in this process, on a test `Terminal` (keys in, displayed text out) and a stub
 * OpenAI-compatible provider on 127.0.0.1: the mode touches no `process` stream, so it runs on the test
 * layers of `runCliInProcess` (docs/cli.md CLI 9.1, 9.4). The pseudo-terminal tests (interactive.test.ts)
 * keep covering the real terminal.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lastUserText, startStub, type Stub } from "./interactiveSupport.ts"
import { runCliInProcess, tempDir, TEST_TIMEOUT_MS, testTerminal } from "./support.ts"

const respond = (body: any) => {
  const text = lastUserText(body)
  if (text.includes("slow please")) return { text: "word ".repeat(400), delayMs: 40, chunk: 5 }
  return { text: `You said: ${text.replace(/\n/g, " / ")}` }
}

describe("interactive mode on a test terminal", () => {
  const home = tempDir("tty-home")
  const workspace = tempDir("tty-ws")
  let stub: Stub
  const run = (terminal: ReturnType<typeof testTerminal>, env: Record<string, string> = {}) =>
    runCliInProcess(
      ["--provider", "openai-compatible", "--base-url", stub.url, "--model", "stub-a", "-w", workspace.dir],
      { env: { EFFECT_AGENT_HOME: home.dir, OPENAI_API_KEY: "test-key", ...env }, terminal }
    )

  beforeAll(async () => {
    stub = await startStub(respond)
  })
  afterAll(async () => {
    await stub?.close()
    home.cleanup()
    workspace.cleanup()
  })

  it(
    "keys in, answers out: Enter sends, a pasted newline is text, Esc stops an answer and the session goes on, two Ctrl-C leave",
    async () => {
      const terminal = testTerminal()
      const done = run(terminal)
      await terminal.waitFor("›")
      // CLI 1.1: Enter sends what was typed.
      terminal.type("hello there")
      terminal.press("return")
      await terminal.waitFor("You said: hello there")
      // CLI 1.3: a newline in pasted text is a new line of the entry, not Enter; Enter then sends both lines.
      terminal.paste("one\ntwo")
      await terminal.waitFor("two")
      expect(stub.requests.map(lastUserText)).not.toContain("one")
      terminal.press("return")
      await terminal.waitFor("You said: one / two")
      // CLI 1.3, 9.4: a paste holding Ctrl-D and Ctrl-C stays whole (the command line's terminal ends its
      // input at no key), and the paste's end is seen: Enter after it sends.
      terminal.paste("ctl\x04mid\x03end")
      await terminal.waitFor("␃end")
      terminal.press("return")
      await terminal.waitFor("You said: ctl")
      // CLI 1.5: Esc stops the answer, and the session goes on.
      terminal.type("slow please")
      terminal.press("return")
      await terminal.waitFor("word word")
      terminal.press("escape")
      await terminal.waitFor("answer stopped; the session goes on")
      terminal.type("after the stop")
      terminal.press("return")
      await terminal.waitFor("You said: after the stop")
      // CLI 1.6: Ctrl-C at an empty prompt (once the answer is over: during it, Ctrl-C stops it) warns, the
      // second exits with code 0.
      await terminal.waitFor("›")
      terminal.press("c", { ctrl: true })
      await terminal.waitFor("Press Ctrl-C again to exit")
      terminal.press("c", { ctrl: true })
      const result = await done
      expect(result.code).toBe(0)
      expect(stub.requests.map(lastUserText)).toEqual([
        "hello there",
        "one\ntwo",
        "ctl\x04mid\x03end",
        "slow please",
        "after the stop"
      ])
      // CLI 1.2, 12.9: the history lives in the state folder given through Config, never in the workspace.
      const history = readdirSync(join(home.dir, "history"))
      expect(history).toHaveLength(1)
      const entries = readFileSync(join(home.dir, "history", history[0]!), "utf8").trim().split("\n").map((line) =>
        JSON.parse(line)
      )
      expect(entries).toEqual(["hello there", "one\ntwo", "ctl\x04mid\x03end", "slow please", "after the stop"])
      expect(readdirSync(workspace.dir)).not.toContain("history")
      // The prompt is coloured (NO_COLOR unset).
      expect(terminal.output()).toContain("\x1b[1;36m›")
    },
    TEST_TIMEOUT_MS
  )

  it(
    "on a terminal that ends its input at Esc and Ctrl-C (as NodeTerminal.layer does), the session reads on",
    async () => {
      const terminal = testTerminal({ endsInputAtQuitKeys: true })
      const done = run(terminal)
      await terminal.waitFor("›")
      // CLI 9.4: the input ends after this Esc; the mode reads it again, and the next keys reach the editor.
      terminal.press("escape")
      await terminal.reading()
      terminal.type("still here")
      terminal.press("return")
      await terminal.waitFor("You said: still here")
      terminal.type("slow please")
      terminal.press("return")
      await terminal.waitFor("word word")
      terminal.press("c", { ctrl: true })
      await terminal.waitFor("answer stopped; the session goes on")
      await terminal.reading()
      terminal.type("/quit")
      terminal.press("return")
      expect((await done).code).toBe(0)
      expect(stub.requests.map(lastUserText).slice(-2)).toEqual(["still here", "slow please"])
    },
    TEST_TIMEOUT_MS
  )

  it("the editor follows the terminal's size as it is resized", async () => {
    const terminal = testTerminal({ size: { columns: 100, rows: 40 } })
    const done = run(terminal)
    await terminal.waitFor("›")
    // 70 characters after the 2-cell prompt: one row of 100 columns.
    terminal.type("x".repeat(70))
    await terminal.waitFor(`› ${"x".repeat(70)}`)
    // CLI 9.1: the size comes from the Terminal and follows its resizes; at 50 columns the entry takes two
    // rows (47 characters after the prompt, the rest below it, indented as the prompt).
    await terminal.resize({ columns: 50, rows: 20 })
    terminal.type("y")
    await terminal.waitFor(/› x{47}\n {2}x{23}y/)
    terminal.end()
    expect((await done).code).toBe(0)
  }, TEST_TIMEOUT_MS)

  it(
    "the end of the terminal's input ends the session as /quit does; NO_COLOR from Config turns colours off",
    async () => {
      const terminal = testTerminal()
      const done = run(terminal, { NO_COLOR: "1" })
      await terminal.waitFor("›")
      terminal.type("half typed")
      await terminal.waitFor("half typed")
      // CLI 1.9: no one can type any more; the entry is not sent and the command ends cleanly.
      terminal.end()
      const result = await done
      expect(result.code).toBe(0)
      expect(stub.requests.map(lastUserText)).not.toContain("half typed")
      // The terminal is given back: bracketed paste off again, after it was turned on.
      const output = terminal.output()
      expect(output.lastIndexOf("\x1b[?2004l")).toBeGreaterThan(output.indexOf("\x1b[?2004h"))
      expect(output.indexOf("\x1b[?2004h")).toBeGreaterThanOrEqual(0)
      // CLI 9.1: NO_COLOR is read through Config: no colour anywhere on screen.
      expect(terminal.output()).not.toMatch(/\x1b\[[0-9;]*m/)
    },
    TEST_TIMEOUT_MS
  )
})
