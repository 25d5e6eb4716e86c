/**
 * Issue 16 item 9: no terminal control sequence from a model or a tool reaches the terminal raw. The
 * sanitizer keeps newline and tab and makes every other C0/C1 control visible; the live and plain views
 * print model text, tool names, arguments, progress, results and errors only through it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { TestClock } from "effect/testing"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import { terminalSafe } from "../../src/cli/internal/terminalText.ts"
import * as LiveView from "../../src/cli/LiveView.ts"
import { type AssistantMessage, emptyUsage } from "../../src/Message.ts"

// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

const CLEAR_SCREEN = "\x1b[2J\x1b[H"
const SET_TITLE = "\x1b]0;pwned\x07"
const CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x07"
const C1_CSI = "\u009b2J"
const HOSTILE = `a${CLEAR_SCREEN}b${SET_TITLE}c${CLIPBOARD}d${C1_CSI}e\rf\x7f`

/** Text mixing arbitrary strings with control characters (plain random strings rarely hold any). */
const Mixed = Schema.Array(
  Schema.Union([
    Schema.String,
    Schema.Literals(["\x1b", "\x07", "\x9b", "\x85", "\r", "\n", "\t", "\x7f", "\x00", "\x1b]52;c;"])
  ])
)

describe("terminalSafe", () => {
  it("keeps newline and tab, and text without controls unchanged", () => {
    assert.strictEqual(terminalSafe("line one\n\tindented ünïcödé ✓ 😀"), "line one\n\tindented ünïcödé ✓ 😀")
  })

  it("makes ESC, BEL, DEL and C1 controls visible instead of passing them through", () => {
    assert.strictEqual(terminalSafe("\x1b[2J"), "␛[2J")
    assert.strictEqual(terminalSafe("\x1b]0;t\x07"), "␛]0;t␇")
    assert.strictEqual(terminalSafe("\x7f"), "␡")
    assert.strictEqual(terminalSafe("\u009b2J"), "\\x9b2J")
    assert.notMatch(terminalSafe(HOSTILE), FORBIDDEN)
  })

  it("drops the CR of a CRLF line ending but shows a CR that would overwrite the line", () => {
    assert.strictEqual(terminalSafe("one\r\ntwo\r"), "one\ntwo")
    assert.strictEqual(terminalSafe("safe\rEVIL"), "safe␍EVIL")
  })

  it.prop("leaves no control but newline and tab, whatever the text", [Mixed], ([parts]) => {
    const text = parts.join("")
    const safe = terminalSafe(text)
    assert.notMatch(safe, FORBIDDEN)
    // Text without a control character is left exactly as it was.
    if (!FORBIDDEN.test(text)) assert.strictEqual(safe, text)
  })
})

const assistant = (content: AssistantMessage["content"], extra: Partial<AssistantMessage> = {}): AssistantMessage => ({
  role: "assistant",
  content,
  api: "test",
  provider: "test",
  model: "test",
  usage: emptyUsage,
  stopReason: "toolUse",
  timestamp: 0,
  ...extra
})

/** Every place a view prints something a model or a tool chose, each carrying `hostile`. */
const hostileEvents = (hostile: string): Array<AgentEvent> => {
  const partial = assistant([{ type: "text", text: hostile }])
  return [
    {
      type: "message_update",
      message: partial,
      assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: hostile, partial }
    },
    {
      type: "message_update",
      message: partial,
      assistantMessageEvent: { type: "thinking_delta", contentIndex: 1, delta: hostile, partial }
    },
    {
      type: "message_update",
      message: partial,
      assistantMessageEvent: { type: "text_end", contentIndex: 0, content: hostile, partial }
    },
    { type: "tool_execution_start", toolCallId: "a", toolName: `bash${hostile}`, args: { command: hostile } },
    {
      type: "tool_execution_update",
      toolCallId: "a",
      toolName: `bash${hostile}`,
      args: { command: hostile },
      partialResult: { content: [{ type: "text", text: `progress ${hostile}` }] }
    },
    {
      type: "tool_execution_end",
      toolCallId: "a",
      toolName: `bash${hostile}`,
      result: { content: [{ type: "text", text: `result ${hostile}` }] },
      isError: true
    },
    { type: "turn_end", message: assistant([]), toolResults: [] },
    { type: "message_end", message: assistant([], { stopReason: "error", errorMessage: `failed ${hostile}` }) }
  ]
}

const render = (options: { readonly live: boolean; readonly color: boolean }, events: ReadonlyArray<AgentEvent>) =>
  Effect.scoped(Effect.gen(function*() {
    let out = ""
    const view = yield* LiveView.make({ ...options, columns: 200, write: (t) => void (out += t) })
    for (const event of events) {
      yield* view.handle(event)
      yield* TestClock.adjust("150 millis") // lets the live ticker redraw the lanes with the progress line
    }
    yield* view.close
    return out
  }))

describe("the views print no control sequence from a model or a tool", () => {
  it.effect("plain view: no control character at all but newline", () =>
    Effect.gen(function*() {
      const out = yield* render({ live: false, color: false }, hostileEvents(HOSTILE))
      assert.notMatch(out.replace(/\n/g, ""), FORBIDDEN)
      // What was said is still shown, made visible.
      assert.include(out, "a␛[2J␛[Hb␛]0;pwned␇c␛]52;c;cm0gLXJmIH4K␇d\\x9b2Je␍f␡")
      assert.include(out, "✗ error: failed a␛[2J")
      assert.include(out, "▶ bash")
    }))

  it.effect("live view in colour: only the view's own sequences, none of the model's or the tool's", () =>
    Effect.gen(function*() {
      const out = yield* render({ live: true, color: true }, hostileEvents(HOSTILE))
      for (const raw of [CLEAR_SCREEN, "\x1b]", "\x07", "\u009b", "\x7f", "e\rf"]) {
        assert.notInclude(out, raw, JSON.stringify(raw))
      }
      // Remove the view's own sequences (SGR colours, cursor up, erase line/below, carriage return at the
      // start of a redraw): nothing else is left.
      // eslint-disable-next-line no-control-regex
      const own = out.replace(/\x1b\[(\d+(;\d+)*)?[mAJK]/g, "").replace(/\r/g, "")
      assert.notMatch(own.replace(/\n/g, ""), FORBIDDEN)
      assert.include(own, "progress a␛[2J")
    }))

  it.effect.prop(
    "plain view: whatever the text, the output holds no control but newline",
    [Mixed],
    ([parts]) =>
      Effect.gen(function*() {
        const out = yield* render({ live: false, color: false }, hostileEvents(parts.join("")))
        assert.notMatch(out.replace(/\n/g, ""), FORBIDDEN)
      })
  )
})
