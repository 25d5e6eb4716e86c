/**
 * Approval previews on hostile input (docs/cli.md CLI 12.1): the diff of a call that rewrites a big file is
 * bounded, so the question reaches the screen at once instead of after minutes of diffing.
 */
import { describe, expect, it } from "vitest"
import { preview } from "../../src/cli/Approval.ts"

const lines = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${i}`).join("\n") + "\n"

describe("approval preview (CLI 12.1)", () => {
  it("a write replacing 20 000 lines by 20 000 others is summarised, not diffed line by line", () => {
    const started = performance.now()
    const shown = preview(
      { toolName: "write", toolCallId: "w", args: { path: "big.txt", content: lines("b", 20_000) } },
      lines("a", 20_000),
      { color: false }
    )
    // Unbounded, this took 90 s on the shared machine; bounded it is a fraction of a second.
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(shown).toEqual(["overwrite big.txt", "  (too many changes to show: 20000 lines now, 20000 lines after)"])
  })

  it("a small edit of a big file is still a diff with its context", () => {
    const before = lines("a", 20_000)
    const shown = preview(
      { toolName: "edit", toolCallId: "e", args: { path: "big.txt", oldText: "a500\n", newText: "x\n" } },
      before,
      { color: false }
    )
    expect(shown).toEqual(["edit big.txt", "  …", "  a497", "  a498", "  a499", "- a500", "+ x", "  a501", "  a502", "  a503", "  …"])
  })
})
