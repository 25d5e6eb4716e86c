/**
 * Hostile pasted text in a real pseudo-terminal (tmux), CLI 1.3 and 1.7: escape sequences and NUL in a
 * paste are text, never obeyed by the terminal.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { needs, tmux } from "../support/components.ts"
import { lastUserText, openScreen, type Screen, startStub, type Stub } from "./interactiveSupport.ts"
import { tempDir, TEST_TIMEOUT_MS } from "./support.ts"

describe("a hostile paste", () => {
  needs(tmux)
  const home = tempDir("paste-home")
  const workspace = tempDir("paste-ws")
  let stub: Stub
  const screens: Array<Screen> = []
  beforeAll(async () => {
    stub = await startStub((body) => ({ text: `got ${lastUserText(body).length} characters` }))
  })
  afterAll(async () => {
    for (const screen of screens) screen.stop()
    await stub?.close()
    home.cleanup()
    workspace.cleanup()
  })

  it(
    "is kept as text: an erase, a title and a NUL are shown or dropped, never obeyed; 1 MB does not hang (CLI 1.3, 1.7)",
    async () => {
      const s = openScreen(
        ["--provider", "openai-compatible", "--base-url", stub.url, "--model", "stub-a", "-w", workspace.dir],
        { EFFECT_AGENT_HOME: home.dir, OPENAI_API_KEY: "test-key" },
        workspace.dir
      )
      screens.push(s)
      const log = join(home.dir, "pane-output")
      s.tmux("pipe-pane", "-o", "-t", "main", `cat >> '${log}'`)
      await s.waitFor("›")
      const paste = (text: string) => {
        const file = join(home.dir, "paste")
        writeFileSync(file, text) // through a file: a NUL cannot be an argument
        s.tmux("load-buffer", "-b", "h", file)
        s.tmux("paste-buffer", "-p", "-b", "h", "-t", "main")
      }
      // The terminal hands over no characters for an escape sequence (only its decoded key), so those are
      // dropped; every other control is kept as text and shown as its control picture.
      paste("A\x1b[2JB\x1b]0;pwned\x07C\x00D")
      await s.waitFor("› AB0;pwned␇C␀D")
      s.keys("Enter")
      await s.waitFor("got 13 characters")
      expect(stub.requests.map(lastUserText)).toEqual(["AB0;pwned\x07C\x00D"])
      expect(s.tmux("display-message", "-p", "-t", "main", "#{pane_title}")).not.toContain("pwned")
      const output = readFileSync(log, "latin1")
      expect(output).not.toContain("\x1b]0;pwned")
      expect(output).not.toContain("\x1b[2J")
      expect(output).not.toContain("\x07")
      expect(output).not.toContain("\x00")

      // A 1 MB paste is taken whole and sent (it used to be laid out again for every few hundred characters
      // read: minutes of a frozen terminal).
      const big = ("0123456789abcdef".repeat(63) + "\n").repeat(1040)
      paste(big)
      s.keys("Enter")
      await s.waitFor(`got ${big.length} characters`, 60_000)
      expect(lastUserText(stub.requests.at(-1))).toBe(big)
    },
    TEST_TIMEOUT_MS
  )
})
