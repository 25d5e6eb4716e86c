/**
 * Approval previews on hostile input (docs/cli.md CLI 12.1): the diff of a call that rewrites a big file is
 * bounded, so the question reaches the screen at once instead of after minutes of diffing; the file it is
 * diffed against (CLI 12.4) is read without blocking, bounded, and only inside the workspace.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { currentFile, preview, PREVIEW_MAX_BYTES } from "../../src/cli/Approval.ts"

const lines = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}${i}`).join("\n") + "\n"

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
    expect(shown).toEqual([
      "edit big.txt",
      "  …",
      "  a497",
      "  a498",
      "  a499",
      "- a500",
      "+ x",
      "  a501",
      "  a502",
      "  a503",
      "  …"
    ])
  })
})

describe("the file a preview diffs against (CLI 12.4)", () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-preview-")))
  const root = join(base, "ws")
  mkdirSync(root)
  mkdirSync(join(base, "out"))
  afterAll(() => rmSync(base, { recursive: true, force: true }))

  it("a FIFO is not read (a blocking read froze the whole terminal)", () => {
    execFileSync("mkfifo", [join(root, "fifo")])
    expect(currentFile(root, { path: "fifo" })).toEqual({ unshown: "not a regular file" })
    const shown = preview({ toolName: "write", toolCallId: "w", args: { path: "fifo", content: "x\n" } }, {
      unshown: "not a regular file"
    }, {
      color: false
    })
    expect(shown).toEqual(["overwrite fifo", "  (the file now is not a regular file: not shown)", "+ x"])
  })

  it("a link out of the workspace is not shown, a missing file is a new file, a text file is its text", () => {
    writeFileSync(join(base, "out", "secret"), "TOKEN=1\n")
    symlinkSync(join(base, "out", "secret"), join(root, "link"))
    writeFileSync(join(root, "a.txt"), "a\n")
    expect(currentFile(root, { path: "link" })).toEqual({ unshown: "a link out of the workspace" })
    expect(currentFile(root, { path: "nothing.txt" })).toBeUndefined()
    expect(currentFile(root, { path: "a.txt" })).toBe("a\n")
  })

  it("a file larger than the bound and a binary file are not read whole", () => {
    writeFileSync(join(root, "big"), "x")
    truncateSync(join(root, "big"), 4 * 1024 * 1024 * 1024)
    expect(currentFile(root, { path: "big" })).toEqual({
      unshown: `a file of ${4 * 1024 * 1024 * 1024} bytes, too large to diff here`
    })
    writeFileSync(join(root, "bin"), Uint8Array.from([1, 0, 2]))
    expect(currentFile(root, { path: "bin" })).toEqual({ unshown: "a binary file" })
    writeFileSync(join(root, "edge"), "y".repeat(PREVIEW_MAX_BYTES))
    expect(currentFile(root, { path: "edge" })).toBe("y".repeat(PREVIEW_MAX_BYTES))
  })
})
