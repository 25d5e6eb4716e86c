/**
 * The interactive mode's parts without a terminal: the editor's keys and layout by display width, the
 * history file, streamed markdown against a small terminal model, approvals (a, e, the diff), the tool
 * time not counting the wait for the person, and /undo's snapshots. Rules: docs/cli.md, CLI 1.x, 2.x, 4.x.
 */
import { describe as effectDescribe, it as effectIt } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { approvalHook, type Decision, preview } from "../../src/cli/Approval.ts"
import * as Commands from "../../src/cli/interactive/Commands.ts"
import * as Editor from "../../src/cli/interactive/Editor.ts"
import * as History from "../../src/cli/interactive/History.ts"
import type { Key } from "../../src/cli/interactive/Keys.ts"
import * as Markdown from "../../src/cli/interactive/Markdown.ts"
import * as Undo from "../../src/cli/interactive/Undo.ts"
import * as LiveView from "../../src/cli/LiveView.ts"
import type { BeforeToolCallContext } from "../../src/ToolExecution.ts"
import { tempDir } from "./support.ts"

const key = (name: string | undefined, sequence = "", extra: Partial<Key> = {}): Key => ({
  name,
  sequence,
  ctrl: false,
  meta: false,
  shift: false,
  paste: false,
  ...extra
})
const typed = (text: string): Array<Key> =>
  Array.from(text, (ch) => key(ch.length === 1 && /[a-z]/.test(ch) ? ch : undefined, ch))

const context: Editor.EditorContext = { history: ["older", "newer"], complete: Commands.complete, cancelable: false }

/** The editor after these keys (it must not have ended). */
const run = (keys: ReadonlyArray<Key>, state = Editor.initial(context.history), ctx = context): Editor.EditorState => {
  for (const k of keys) {
    const next = Editor.step(state, k, ctx)
    if ("_tag" in next) throw new Error(`ended with ${next._tag}`)
    state = next
  }
  return state
}

describe("editor", () => {
  it("moves and deletes by grapheme: a combining mark goes with its letter, an emoji sequence is one (CLI 1.4)", () => {
    let state = run(typed("ae\u0301👍🏽b"))
    state = run([key("left"), key("left")], state)
    expect(state.text.slice(state.cursor)).toBe("👍🏽b")
    state = run([key("backspace")], state)
    expect(state.text).toBe("a👍🏽b")
    state = run([key("delete")], state)
    expect(state.text).toBe("ab")
  })

  it("wraps by display width: a wide character is never split and the cursor stands after it (CLI 1.4)", () => {
    const state = run(typed("漢字漢字漢字漢字"))
    // 12 columns: a 2-cell prompt, 10 usable cells, 11 with the last column kept free.
    const frame = Editor.render(state, { prompt: "› ", columns: 12, color: false })
    expect(frame.rows).toEqual(["› 漢字漢字", "  漢字漢字"])
    expect(frame.cursorRow).toBe(1)
    expect(frame.cursorColumn).toBe(10)
  })

  it("shows an entry taller than the screen as the rows around the cursor (CLI 1.1)", () => {
    const state = run(typed("a\nb\nc\nd\ne\nf"))
    const frame = Editor.viewport(Editor.render(state, { prompt: "› ", columns: 20, color: false }), 4)
    expect(frame).toEqual({ rows: ["  d", "  e", "  f"], cursorRow: 2, cursorColumn: 3 })
    const top = Editor.viewport(Editor.render({ ...state, cursor: 0 }, { prompt: "› ", columns: 20, color: false }), 4)
    expect(top.rows).toEqual(["› a", "  b", "  c"])
  })

  it("adds lines with Alt-Enter, Ctrl-J and a backslash before Enter; Enter sends the text as typed (CLI 1.1)", () => {
    let state = run([
      ...typed("a"),
      key("return", "\r", { meta: true }),
      ...typed("b"),
      key("enter", "\n"),
      ...typed("c\\")
    ])
    const next = Editor.step(state, key("return", "\r"), context)
    expect("_tag" in next).toBe(false)
    state = run(typed("d"), next as Editor.EditorState)
    expect(Editor.step(state, key("return", "\r"), context)).toEqual({ _tag: "Submit", text: "a\nb\nc\nd" })
  })

  it("takes a pasted newline as text, never as Enter (CLI 1.3)", () => {
    const state = run([key("return", "\r", { paste: true }), key(undefined, "x", { paste: true })])
    expect(state.text).toBe("\nx")
  })

  it("browses the history with Up and Down and gives the draft back past the newest entry (CLI 1.2)", () => {
    let state = run(typed("dr"))
    state = run([key("up")], state)
    expect(state.text).toBe("newer")
    state = run([key("up"), key("up")], state)
    expect(state.text).toBe("older")
    state = run([key("down"), key("down")], state)
    expect(state.text).toBe("dr")
  })

  it("Ctrl-C clears a typed entry, warns at an empty prompt, and exits the second time (CLI 1.6)", () => {
    const ctrlC = key("c", "\x03", { ctrl: true })
    let state = run([...typed("abc"), ctrlC])
    expect(state.text).toBe("")
    state = run([ctrlC], state)
    expect(state.hint).toMatch(/again to exit/)
    expect(Editor.step(state, ctrlC, context)).toEqual({ _tag: "Exit" })
    // Anything typed in between disarms it.
    state = run([ctrlC, ...typed("x"), key("backspace")])
    expect(Editor.step(state, ctrlC, context)).not.toEqual({ _tag: "Exit" })
  })

  it("completes commands with Tab: one candidate in full, several to their common prefix (CLI 2.1)", () => {
    expect(run([...typed("/he"), key("tab", "\t")]).text).toBe("/help ")
    const state = run([...typed("/"), key("tab", "\t")])
    expect(state.hint).toContain("/compact")
    expect(run([...typed("/model open"), key("tab", "\t")]).text).toBe("/model openai-")
    expect(Commands.parse("/Model  gpt-x ")).toEqual({ name: "/model", args: "gpt-x" })
    expect(Commands.parse("/nope with args")?.name).toBe("/nope")
    // A first word with another slash is a path: the line is a prompt.
    expect(Commands.parse("/etc/hosts looks wrong")).toBeUndefined()
    expect(Commands.parse("look at /tmp")).toBeUndefined()
  })
})

effectDescribe("editor on screen", () => {
  effectIt.effect(
    "draws a paste that arrives at once in one frame, and submits it whole (CLI 1.3)",
    () =>
      Effect.gen(function*() {
        const pasted = "x\ny".repeat(500)
        const queue = [
          ...Array.from(pasted, (ch) => key(ch === "\n" ? "enter" : undefined, ch, { paste: true })),
          key("return", "\r")
        ]
        const writes: Array<string> = []
        const keys = {
          take: Effect.sync(() => queue.shift()!),
          poll: Effect.sync(() => queue.shift()),
          discard: Effect.void
        }
        const result = yield* Editor.read(keys, {
          ...context,
          prompt: "› ",
          columns: () => 80,
          color: false,
          write: (t) => void writes.push(t)
        })
        expect(result).toEqual({ _tag: "Submit", text: pasted })
        expect(writes.length).toBe(2) // the empty prompt, then the submitted text
      })
  )

  effectIt.effect(
    "Ctrl-L clears the screen and draws the editor again, keeping its text (CLI 1.1)",
    () =>
      Effect.gen(function*() {
        const queue = [...typed("ab"), key("l", "\x0c", { ctrl: true }), key("return", "\r")]
        let out = ""
        const keys = {
          take: Effect.sync(() => queue.shift()!),
          poll: Effect.sync(() => undefined),
          discard: Effect.void
        }
        const result = yield* Editor.read(keys, {
          ...context,
          prompt: "› ",
          columns: () => 80,
          color: false,
          write: (t) => void (out += t)
        })
        expect(result).toEqual({ _tag: "Submit", text: "ab" })
        expect(out.slice(out.indexOf("\x1b[2J"))).toContain("› ab")
      })
  )
})

describe("history file (CLI 1.2)", () => {
  const home = tempDir("history-unit")
  afterAll(() => {
    home.cleanup()
  })

  it("keeps multi-line entries per project under the state folder, skips repeats and cut lines", () => {
    const project = "/some/project"
    const first = History.load(project, home.dir)
    first.add("one\ntwo")
    first.add("one\ntwo")
    first.add("  ")
    first.add("three")
    expect(first.file.startsWith(join(home.dir, "history"))).toBe(true)
    writeFileSync(first.file, readFileSync(first.file, "utf8") + "\"cut by a cra")
    expect(History.load(project, home.dir).entries()).toEqual(["one\ntwo", "three"])
    expect(History.load("/another/project", home.dir).entries()).toEqual([])
  })
})

/** A terminal model: enough of VT100 to replay what the view writes (text, \n, \r, CSI n A, CSI J, CSI K). */
const screenOf = (output: string): Array<string> => {
  const lines: Array<string> = [""]
  let row = 0
  let col = 0

  const tokens = output.replace(/\x1b\[\?2026[hl]/g, "").match(/\x1b\[\d*[A-Za-z]|\r|\n|[^\x1b\r\n]+/g) ?? []
  for (const token of tokens) {
    if (token === "\n") {
      row++
      col = 0
      while (lines.length <= row) lines.push("")
    } else if (token === "\r") col = 0
    else if (token.startsWith("\x1b[")) {
      const n = Number(token.slice(2, -1) || "1")
      const op = token.at(-1)
      if (op === "A") row = Math.max(0, row - n)
      if (op === "J") {
        lines[row] = lines[row]!.slice(0, col)
        lines.length = row + 1
      }
      if (op === "K") lines[row] = lines[row]!.slice(0, col)
    } else {
      const line = lines[row]!.padEnd(col)
      lines[row] = line.slice(0, col) + token + line.slice(col + token.length)
      col += token.length
    }
  }
  return lines
}

const ANSWER = [
  "# Report",
  "",
  "Plain *emphasis*, **strong** and `code`.",
  "",
  "1. first",
  "2. second",
  "",
  "| key | value |",
  "|-----|-------|",
  "| 幅  | 漢字  |",
  "",
  "> quoted",
  "",
  "```js",
  ...Array.from({ length: 30 }, (_, i) => `console.log(${i})`),
  "```",
  "",
  "The end."
].join("\n")

describe("markdown (CLI 1.7)", () => {
  beforeAll(() => Markdown.load())

  const streamed = (text: string, chunk: number, rows = 40) => {
    let out = ""
    const stream = Markdown.stream({ columns: () => 60, rows: () => rows, color: false, write: (t) => void (out += t) })
    for (let i = 0; i < text.length; i += chunk) stream.push(text.slice(i, i + chunk))
    stream.end()
    return { out, screen: screenOf(out) }
  }

  it("renders headings, emphasis, lists, tables and code, not the raw markup", () => {
    const screen = streamed(ANSWER, ANSWER.length).screen.join("\n")
    expect(screen).toContain("Report")
    expect(screen).not.toMatch(/\*\*strong\*\*|```|^# /m)
    expect(screen).toMatch(/1\. first/)
    expect(screen).toMatch(/│ 幅\s+│ 漢字\s+│/)
    expect(screen).toContain("console.log(29)")
  })

  it("leaves the same screen however the text arrives, even for a block taller than the screen", () => {
    const whole = streamed(ANSWER, ANSWER.length).screen
    for (const chunk of [1, 3, 7, 16, 50]) {
      expect(streamed(ANSWER, chunk).screen).toEqual(whole)
      expect(streamed(ANSWER, chunk, 12).screen).toEqual(whole)
    }
  })

  it("redraws only inside synchronized updates, and never what was printed for good", () => {
    const { out } = streamed(ANSWER, 5, 12)
    for (const frame of out.split(Markdown.SYNC_END).slice(0, -1)) {
      expect(frame.startsWith(Markdown.SYNC_BEGIN)).toBe(true)
    }
  })

  it("shows escape sequences from the model instead of obeying them", () => {
    const rows = Markdown.renderMarkdown("title \x1b]52;c;ZXZpbA==\x07 and \x1b[2J", { columns: 60, color: true })
    expect(rows.join("\n")).not.toMatch(/\x1b\]|\x1b\[2J/)
    expect(rows.join("\n")).toContain("␛")
  })
})

const callContext = (name: string, args: unknown, id = "c1"): BeforeToolCallContext => ({
  assistantMessage: {} as never,
  toolCall: { type: "toolCall", id, name, arguments: args as never },
  args,
  context: {} as never
})

effectDescribe("approvals", () => {
  effectIt.effect(
    "`a` allows the tool for the rest of the session without asking; the policy still refuses (CLI 4.3)",
    () =>
      Effect.gen(function*() {
        const asked: Array<string> = []
        const hook = approvalHook({
          _tag: "Judge",
          judge: (request) => Effect.sync((): Decision => (asked.push(request.toolName), { _tag: "AllowAlways" }))
        })
        expect(yield* hook(callContext("bash", { command: "ls" }))).toBeUndefined()
        expect(yield* hook(callContext("bash", { command: "echo hi" }, "c2"))).toBeUndefined()
        expect(asked).toEqual(["bash"])
        const refused = yield* hook(callContext("bash", { command: "rm -rf /" }, "c3"))
        expect(refused?.block).toBe(true)
        // Another tool is still asked about.
        yield* hook(callContext("write", { path: "a", content: "" }, "c4"))
        expect(asked).toEqual(["bash", "write"])
      })
  )

  effectIt.effect(
    "`e`: the reason becomes the blocked result; `n` blocks with the plain refusal (CLI 4.2, 4.4)",
    () =>
      Effect.gen(function*() {
        const answers: Array<Decision> = [{ _tag: "Deny", reason: "use the test folder" }, { _tag: "Deny" }]
        const hook = approvalHook({ _tag: "Judge", judge: () => Effect.succeed(answers.shift()!) })
        const first = yield* hook(callContext("edit", { path: "a", oldText: "x", newText: "y" }))
        expect(first).toEqual({
          block: true,
          reason: "The user declined this edit call. It was not run. The user said: use the test folder"
        })
        const second = yield* hook(callContext("edit", { path: "a", oldText: "x", newText: "y" }, "c2"))
        expect(second).toEqual({ block: true, reason: "The user declined this edit call. It was not run." })
      })
  )

  it("shows a coloured diff for edit and write and the command for bash (CLI 4.1)", () => {
    const before = Array.from({ length: 20 }, (_, i) => `line ${i}`).join("\n") + "\n"
    const edit = preview(
      { toolName: "edit", toolCallId: "c", args: { path: "f.txt", oldText: "line 10\n", newText: "LINE TEN\n" } },
      before,
      { color: true }
    )
    expect(edit[0]).toContain("edit f.txt")
    expect(edit).toContain("\x1b[31m- line 10\x1b[0m")
    expect(edit).toContain("\x1b[32m+ LINE TEN\x1b[0m")
    // Three lines of context each side, the rest left out.
    expect(edit.some((l) => l.includes("line 7"))).toBe(true)
    expect(edit.some((l) => l.includes("line 6"))).toBe(false)
    const created = preview(
      { toolName: "write", toolCallId: "c", args: { path: "n.txt", content: "a\nb\n" } },
      undefined,
      { color: false }
    )
    expect(created).toEqual(["new file n.txt", "+ a", "+ b"])
    const bash = preview({ toolName: "bash", toolCallId: "c", args: { command: "make\x1b[2J test" } }, undefined, {
      color: false
    })
    expect(bash).toEqual(["$ make␛[2J test"])
  })
})

effectDescribe("tool time", () => {
  effectIt.effect(
    "time spent waiting for the person is not counted in the call's duration (CLI 4.5)",
    () =>
      Effect.scoped(Effect.gen(function*() {
        let out = ""
        const view = yield* LiveView.make({ live: false, color: false, columns: 100, write: (t) => void (out += t) })
        yield* view.handle({ type: "tool_execution_start", toolCallId: "a", toolName: "edit", args: { path: "f" } })
        yield* view.pause(TestClock.adjust("5 seconds")) // the approval question
        yield* TestClock.adjust("30 millis")
        yield* view.handle({
          type: "tool_execution_end",
          toolCallId: "a",
          toolName: "edit",
          result: { content: [{ type: "text", text: "done" }] },
          isError: false
        })
        expect(out).toContain("✓ edit f 30ms")
      }))
  )
})

describe("/undo snapshots (CLI 2.8)", () => {
  const root = tempDir("undo-unit")
  afterAll(() => root.cleanup())

  it("restores the newest turn that changed files, then the one before; created files are removed", () => {
    const file = (name: string) => join(root.dir, name)
    mkdirSync(file("src"), { recursive: true })
    writeFileSync(file("src/a.ts"), "v1")
    const snapshots = Undo.make(root.dir)
    snapshots.beginTurn()
    snapshots.before("edit", { path: "src/a.ts" })
    writeFileSync(file("src/a.ts"), "v2")
    snapshots.beginTurn()
    snapshots.before("write", { path: "src/a.ts" })
    snapshots.before("write", { path: "new.ts" })
    snapshots.before("write", { path: "../outside.ts" })
    writeFileSync(file("src/a.ts"), "v3")
    snapshots.before("edit", { path: "src/a.ts" }) // a second change in the same turn keeps the first copy
    writeFileSync(file("src/a.ts"), "v4")
    writeFileSync(file("new.ts"), "created")
    snapshots.beginTurn() // a turn that changed nothing is skipped
    expect(snapshots.undo()).toEqual({ restored: ["src/a.ts"], removed: ["new.ts"], failed: [], changed: [] })
    expect(readFileSync(file("src/a.ts"), "utf8")).toBe("v2")
    expect(existsSync(file("new.ts"))).toBe(false)
    expect(snapshots.undo()?.restored).toEqual(["src/a.ts"])
    expect(readFileSync(file("src/a.ts"), "utf8")).toBe("v1")
    expect(snapshots.undo()).toBeUndefined()
  })
})
