/**
 * The session picker on hostile or unusual text (docs/cli.md CLI 12.10, 7.3): each row fits its width in
 * display cells, never splits a character, and the folder's name cannot send escape sequences.
 */
import { describe, expect, it } from "vitest"
import { displayWidth } from "../../src/cli/interactive/internal/text.ts"
import * as SessionStore from "../../src/cli/SessionStore.ts"

const session = (firstPrompt: string): SessionStore.SessionSummary => ({
  path: "/s/x.jsonl",
  modified: 0,
  bytes: 10,
  messages: 2,
  firstPrompt
})

describe("session picker rows (CLI 12.10)", () => {
  it("a first prompt of wide characters is cut by display width, with no character split", () => {
    const line = SessionStore.describe(session("漢字".repeat(100)), 80)
    expect(displayWidth(line)).toBeLessThanOrEqual(80)
    expect(line.endsWith("…")).toBe(true)
    const emoji = SessionStore.describe(session("👩‍👩‍👧".repeat(100)), 60)
    expect(displayWidth(emoji)).toBeLessThanOrEqual(60)
    // No lone surrogate left at the cut.
    expect(emoji).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/)
  })

  it("control characters in the prompt and in the folder's path are shown, not obeyed", () => {
    expect(SessionStore.describe(session("hi\x1b]0;pwned\x07"), 100)).not.toMatch(/[\x00-\x1f\x7f-\x9f]/)
    const message = SessionStore.pickerMessage("/tmp/evil\x1b[2Jdir", "--resume")
    expect(message).not.toMatch(/[\x00-\x1f\x7f-\x9f]/)
    expect(message).toBe("Pick a session of /tmp/evil␛[2Jdir (continued in place)")
  })
})
