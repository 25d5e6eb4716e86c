/**
 * Markdown from the model on a terminal that supports hyperlinks (docs/cli.md CLI 12.11, 1.7): a link always
 * shows its destination, never a clickable label hiding it; escape sequences and HTML entities for controls
 * in the text reach the terminal as nothing it obeys.
 */
import { beforeAll, describe, expect, it } from "vitest"

// supports-hyperlinks decides when it is loaded: as on iTerm, WezTerm, GNOME Terminal.
process.env.FORCE_HYPERLINK = "1"
const Markdown = await import("../../src/cli/interactive/Markdown.ts")
beforeAll(() => Markdown.load())

const SGR = /\x1b\[[0-9;]*m/g

const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/

describe("links and controls in markdown (CLI 12.11)", () => {
  it("a labelled link shows its destination and is no OSC 8 hyperlink", () => {
    const rows = Markdown.renderMarkdown("See [the docs](https://evil.example/x) now.", { columns: 80, color: true })
    const text = rows.join("\n")
    expect(text).not.toContain("\x1b]8;")
    expect(text.replace(SGR, "")).toBe("See the docs (https://evil.example/x) now.")
    const bare = Markdown.renderMarkdown("<https://a.example>", { columns: 80, color: false }).join("\n")
    expect(bare).toBe("https://a.example")
  })

  it("escape sequences, C1 controls and entities for them leave no control but colour codes", () => {
    const source = "\x1b]0;title\x07 \x9b2J &#27;[2J &#x9b;31m [x](http://a\x1b[2Jb) `\x1b[31m` ```\n\x1b[2J\n```"
    for (const color of [true, false]) {
      const text = Markdown.renderMarkdown(source, { columns: 80, color }).join("\n").replace(SGR, "")
      expect(text).not.toMatch(CONTROL)
    }
  })
})
