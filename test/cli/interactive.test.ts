/**
 * The interactive mode driven through a real pseudo-terminal (tmux): keys in, the screen read back, a
 * stub OpenAI-compatible provider on 127.0.0.1 answering. Rules: docs/cli.md, CLI 1.x, 2.x, 4.x.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { needs, tmux } from "../support/components.ts"
import { lastUserText, openScreen, type Screen, startStub, type Stub } from "./interactiveSupport.ts"
import { loadSessionOrThrow, processesIn, tempDir, TEST_TIMEOUT_MS } from "./support.ts"

const MARKDOWN =
  "# Findings\n\nThe bug is *here* and **there**.\n\n- first item\n- second item\n\n| name | 幅 |\n|---|---|\n| ab | 漢字 |\n\n```ts\nconst answer: number = 42\n```\n"
const SLOW = "word ".repeat(400)

const respond = (body: any) => {
  const messages: Array<any> = body.messages
  const last = messages.at(-1)
  const text = lastUserText(body)
  if (last.role === "tool") return { text: `Tool said: ${String(last.content).slice(0, 60).replace(/\s+/g, " ")}` }
  if (text.startsWith("Summarise the conversation")) return { text: "SUMMARY: we talked about markdown." }
  if (text.includes("markdown please")) return { text: MARKDOWN }
  if (text.includes("think first")) return { text: "Thought about it.", firstDelayMs: 1500 }
  if (text.includes("slow please")) return { text: SLOW, delayMs: 40, chunk: 5 }
  if (text.includes("edit one")) {
    return { toolCalls: [{ id: "e1", name: "edit", args: { path: "notes.txt", oldText: "beta", newText: "BETA" } }] }
  }
  if (text.includes("edit two")) {
    return { toolCalls: [{ id: "e2", name: "edit", args: { path: "notes.txt", oldText: "gamma", newText: "GAMMA" } }] }
  }
  if (text.includes("run sleep")) {
    return { toolCalls: [{ id: "s1", name: "bash", args: { command: "echo started; sleep 30" } }] }
  }
  if (text.includes("run bash")) return { toolCalls: [{ id: "b1", name: "bash", args: { command: "echo from-bash" } }] }
  return { text: `You said: ${text.replace(/\n/g, " / ")}` }
}

describe("interactive mode in a pseudo-terminal", () => {
  needs(tmux)
  const home = tempDir("tui-home")
  const historyHome = tempDir("tui-history")
  const workspace = tempDir("tui-ws")
  let stub: Stub
  const screens: Array<Screen> = []
  const open = (stateHome = home.dir) => {
    const screen = openScreen(
      ["--provider", "openai-compatible", "--base-url", stub.url, "--model", "stub-a", "-w", workspace.dir],
      { EFFECT_AGENT_HOME: stateHome, OPENAI_API_KEY: "test-key" },
      workspace.dir
    )
    screens.push(screen)
    return screen
  }
  const userTexts = () => stub.requests.map(lastUserText)

  beforeAll(async () => {
    stub = await startStub(respond)
    writeFileSync(join(workspace.dir, "notes.txt"), "alpha\nbeta\ngamma\n")
  })
  afterAll(async () => {
    for (const screen of screens) screen.stop()
    await stub?.close()
    home.cleanup()
    historyHome.cleanup()
    workspace.cleanup()
  })

  it(
    "edits, renders and runs commands: multi-line, paste, markdown, Tab, /help, unknown, !command, /model, /session, /compact, /clear, /quit",
    async () => {
      const s = open()
      await s.waitFor("›")

      // CLI 1.1: Alt-Enter and a backslash before Enter add lines; Enter sends the whole text.
      s.type("first line")
      s.keys("M-Enter")
      s.type("second line\\")
      s.keys("Enter")
      s.type("third line")
      s.keys("Enter")
      await s.waitFor("You said: first line / second line / third line")
      expect(userTexts().at(-1)).toBe("first line\nsecond line\nthird line")

      // CLI 1.3: a pasted newline is text, not Enter.
      s.paste("pasted one\npasted two")
      await s.waitFor("pasted two")
      expect(stub.requests.length).toBe(1)
      s.keys("Enter")
      await s.waitFor("You said: pasted one / pasted two")

      // A long paste (10 kB, 200 lines) arrives whole.
      const long = Array.from({ length: 200 }, (_, i) => `line ${String(i).padStart(3, "0")} ${"x".repeat(40)}`).join(
        "\n"
      )
      s.paste(long)
      await s.waitFor("line 199")
      s.keys("Enter")
      await s.waitFor("You said: line 000")
      expect(userTexts().at(-1)).toBe(long)

      // CLI 1.7: markdown rendered, not shown raw.
      s.type("markdown please")
      s.keys("Enter")
      let screen = await s.waitFor("const answer")
      expect(screen).toMatch(/\* first item/)
      expect(screen).toMatch(/│ ab\s+│ 漢字 │/) // the table, its columns measured by display width
      expect(screen).not.toContain("**there**")
      expect(screen).not.toContain("```")

      // CLI 2.1, 2.3: Tab completes a command; /help lists them.
      const before = stub.requests.length
      s.type("/he")
      s.keys("Tab")
      await s.waitFor("› /help")
      s.keys("Enter")
      await s.waitFor("Commands (Tab completes)")

      // CLI 2.2: an unknown command gets a hint and is not sent.
      s.type("/frobnicate")
      s.keys("Enter")
      await s.waitFor("Unknown command /frobnicate")

      // CLI 2.9: !command runs in the workspace for the person, not the model.
      s.type("!cat notes.txt && echo shell-$((6*7))")
      s.keys("Enter")
      await s.waitFor("shell-42")
      await s.waitFor("✓ exit 0")
      expect(stub.requests.length).toBe(before)

      // CLI 2.5: /session.
      s.type("/session")
      s.keys("Enter")
      screen = await s.waitFor("tokens:")
      expect(screen).toMatch(/messages: 8 in context \(4 prompts\)/)
      expect(screen).toMatch(/tokens:\s+↑ 4\.8k ↓ 136/)

      // CLI 2.4: /model switches the model of the next requests.
      s.type("/model stub-b")
      s.keys("Enter")
      await s.waitFor("openai-compatible / stub-b")
      s.type("hello b")
      s.keys("Enter")
      await s.waitFor("You said: hello b")
      expect(stub.requests.at(-1).model).toBe("stub-b")

      // CLI 2.7: /compact summarises the older turns through the model and keeps the latest turn.
      s.type("/compact")
      s.keys("Enter")
      await s.waitFor("Compacted 8 older messages")
      expect(userTexts().at(-1)).toMatch(/^Summarise the conversation/)
      s.type("after compact")
      s.keys("Enter")
      await s.waitFor("You said: after compact")
      const compacted = stub.requests.at(-1).messages.filter((m: any) => m.role !== "system")
      expect(compacted[0].content).toContain("SUMMARY: we talked about markdown.")
      expect(compacted.map((m: any) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"])

      // CLI 2.6: /clear empties the model's context.
      s.type("/clear")
      s.keys("Enter")
      await s.waitFor("Context cleared")
      s.type("fresh start")
      s.keys("Enter")
      await s.waitFor("You said: fresh start")
      expect(stub.requests.at(-1).messages.filter((m: any) => m.role !== "system").length).toBe(1)

      // CLI 1.3, 9.4: a paste holding Ctrl-D and Ctrl-C (keys that end a prompt's input) stays whole, and
      // Enter after it still sends (the keys after them used to be lost, and the paste never ended).
      s.paste("ctl\x04mid\x03end\nlast")
      await s.waitFor("last")
      s.keys("Enter")
      await s.waitFor("You said: ctl")
      expect(userTexts().at(-1)).toBe("ctl\x04mid\x03end\nlast")

      // CLI 2.10
      s.type("/quit")
      s.keys("Enter")
      await s.waitFor("[exit 0]")
    },
    TEST_TIMEOUT_MS
  )

  it("keeps history across runs, stops an answer with Esc and goes on, and exits on a second Ctrl-C", async () => {
    // CLI 1.2: a first run's entries come back in the next run, newest first; Down comes back to the draft.
    const first = open(historyHome.dir)
    await first.waitFor("›")
    first.type("remember me")
    first.keys("M-Enter")
    first.type("on two lines")
    first.keys("Enter")
    await first.waitFor("You said: remember me / on two lines")
    first.type("/quit")
    first.keys("Enter")
    await first.waitFor("[exit 0]")
    const s = open(historyHome.dir)
    await s.waitFor("›")
    s.type("draft")
    s.keys("Up")
    await s.waitFor("› /quit")
    s.keys("Up")
    await s.waitFor(/› remember me\n\s+on two lines/)
    s.keys("Down", "Down")
    await s.waitFor(/› draft\s*$/)
    s.keys("C-u")
    let screen = s.capture()
    const files = readdirSync(join(historyHome.dir, "history"))
    expect(files.length).toBe(1)
    expect(readFileSync(join(historyHome.dir, "history", files[0]!), "utf8")).toBe(
      JSON.stringify("remember me\non two lines") + "\n" + JSON.stringify("/quit") + "\n"
    )
    expect(existsSync(join(workspace.dir, ".effect-agent", "history"))).toBe(false)

    // CLI 1.8: while the model has said nothing yet, a line says we wait; it goes when the answer comes.
    s.type("think first")
    s.keys("Enter")
    await s.waitFor(/waiting for the model[^\n]*\(Esc stops\)/)
    screen = await s.waitFor("Thought about it.")
    expect(screen).not.toContain("waiting for the model")

    // CLI 1.5: Esc stops the answer; the session goes on.
    s.type("slow please")
    s.keys("Enter")
    await s.waitFor("word word word")
    s.keys("Escape")
    await s.waitFor("answer stopped; the session goes on")
    s.type("still here?")
    s.keys("Enter")
    await s.waitFor("You said: still here?")

    // CLI 1.5: Esc while a tool call runs: the call is settled (its result is in the session), no process is left.
    s.type("run sleep")
    s.keys("Enter")
    await s.waitFor("Allow bash?")
    s.type("y")
    await s.waitFor("│ started")
    s.keys("Escape")
    screen = await s.waitFor(/› run sleep[\s\S]*answer stopped; the session goes on[\s\S]*›/)
    const sessionPath = /session:\s+(\S+\.jsonl)/.exec(screen)![1]!
    const saved = await loadSessionOrThrow(sessionPath)
    const result = saved.find((m) => m.role === "toolResult" && m.toolCallId === "s1")
    expect(result).toBeDefined()
    expect(processesIn(workspace.dir).filter((p) => p.args.includes("sleep 30"))).toEqual([])
    s.type("and now?")
    s.keys("Enter")
    await s.waitFor("You said: and now?")

    // CLI 1.6: Ctrl-C clears a typed line; at an empty prompt it warns once and exits the second time.
    s.type("not sent")
    s.keys("C-c")
    await s.waitFor(/›\s*$/)
    s.keys("C-c")
    await s.waitFor("Press Ctrl-C again to exit")
    s.keys("C-c")
    await s.waitFor("[exit 0]")
  }, TEST_TIMEOUT_MS)

  it(
    "approvals: a diff for edit, `a` remembered for the session, `e` tells the model why, /undo puts files back",
    async () => {
      const s = open()
      await s.waitFor("›")
      // CLI 4.1: the diff of the edit against the file as it is.
      s.type("edit one")
      s.keys("Enter")
      let screen = await s.waitFor("[e]xplain")
      expect(screen).toContain("edit notes.txt")
      expect(screen).toMatch(/- beta\n\+ BETA/)
      // CLI 4.3: `a` allows edit for the rest of the session.
      s.type("a")
      await s.waitFor("Tool said:")
      expect(readFileSync(join(workspace.dir, "notes.txt"), "utf8")).toBe("alpha\nBETA\ngamma\n")
      s.type("edit two")
      s.keys("Enter")
      await s.waitFor(/Tool said:[^\n]*\n[\s\S]*Tool said:/)
      screen = s.capture()
      expect(screen.match(/Allow edit\?/g)?.length).toBe(1)
      expect(readFileSync(join(workspace.dir, "notes.txt"), "utf8")).toBe("alpha\nBETA\nGAMMA\n")

      // CLI 4.1, 4.4: bash shows its command; `e` and a reason: the model gets the reason as the result.
      s.type("run bash")
      s.keys("Enter")
      screen = await s.waitFor("Allow bash?")
      expect(screen).toContain("$ echo from-bash")
      s.type("e")
      await s.waitFor("why?")
      s.type("not on a Friday")
      s.keys("Enter")
      await s.waitFor(/Tool said: The user declined/)
      const toolMessage = stub.requests.at(-1).messages.at(-1)
      expect(toolMessage.role).toBe("tool")
      expect(String(toolMessage.content)).toContain("The user said: not on a Friday")

      // CLI 4.6: Esc at the question refuses the call and stops the answer.
      s.type("run bash")
      s.keys("Enter")
      await s.waitFor(/Allow bash\?[^\n]*\n[\s\S]*Allow bash\?/)
      s.keys("Escape")
      await s.waitFor("answer stopped; the session goes on")
      expect(stub.requests.at(-1).messages.at(-1).role).toBe("user") // no request after the refusal

      // CLI 2.8: /undo reverts the newest turn that changed files, then the one before.
      s.type("/undo")
      s.keys("Enter")
      await s.waitFor("restored notes.txt")
      expect(readFileSync(join(workspace.dir, "notes.txt"), "utf8")).toBe("alpha\nBETA\ngamma\n")
      s.type("/undo")
      s.keys("Enter")
      await s.waitFor(/restored notes.txt[\s\S]*restored notes.txt/)
      expect(readFileSync(join(workspace.dir, "notes.txt"), "utf8")).toBe("alpha\nbeta\ngamma\n")
      s.keys("C-d")
      await s.waitFor("[exit 0]")
    },
    TEST_TIMEOUT_MS
  )
})
