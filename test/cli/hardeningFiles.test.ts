/**
 * Files the command line reads but did not make, on hostile input (docs/cli.md CLI 12.2-12.3): `@path`
 * attachments whose real location is outside the workspace, huge, binary or not regular files; the bounded
 * reader under them, which never blocks on a FIFO.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { readBounded } from "../../src/cli/internal/files.ts"
import { attachFiles, ATTACHMENT_MAX_BYTES } from "../../src/cli/Task.ts"

const PNG_SIGNATURE = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

const withFolders = <A, E>(body: (root: string, outside: string) => Effect.Effect<A, E, any>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-harden-")))),
    (base) => {
      mkdirSync(join(base, "ws"))
      mkdirSync(join(base, "out"))
      return body(join(base, "ws"), join(base, "out"))
    },
    (base) => Effect.sync(() => rmSync(base, { recursive: true, force: true }))
  ).pipe(Effect.provide(NodeServices.layer)) as Effect.Effect<A, E>

describe("@path attachments (CLI 12.2)", () => {
  it.effect("a link inside the workspace that points outside attaches nothing", () =>
    withFolders((root, outside) =>
      Effect.gen(function*() {
        writeFileSync(join(outside, "id_rsa"), "SECRET KEY\n")
        symlinkSync(join(outside, "id_rsa"), join(root, "notes.md"))
        mkdirSync(join(root, "docs"))
        symlinkSync(outside, join(root, "docs", "up"))
        const text = "summarise @notes.md and @docs/up/id_rsa"
        const prompt = yield* attachFiles(text, root)
        assert.deepStrictEqual(prompt.attached, [])
        assert.strictEqual(prompt.text, text)
      })
    ))

  it.effect("a link inside the workspace to a file inside it is attached", () =>
    withFolders((root) =>
      Effect.gen(function*() {
        writeFileSync(join(root, "a.md"), "A\n")
        symlinkSync(join(root, "a.md"), join(root, "b.md"))
        const prompt = yield* attachFiles("see @b.md", root)
        assert.deepStrictEqual(prompt.attached, ["b.md"])
        assert.include(prompt.text, "<file path=\"b.md\">\nA\n</file>")
      })
    ))

  it.effect("a 3 GB text file is read only up to the limit and attached cut", () =>
    withFolders((root) =>
      Effect.gen(function*() {
        writeFileSync(join(root, "huge.log"), "line\n".repeat(1000))
        truncateSync(join(root, "huge.log"), 3 * 1024 * 1024 * 1024) // sparse: the rest reads as NUL bytes
        writeFileSync(join(root, "big.txt"), "y".repeat(ATTACHMENT_MAX_BYTES * 4))
        const prompt = yield* attachFiles("look at @big.txt", root)
        assert.deepStrictEqual(prompt.attached, ["big.txt"])
        assert.include(prompt.text, `${"y".repeat(1000)}`)
        assert.include(prompt.text, "[cut at 256 KB: read the file for the rest]")
        assert.isBelow(prompt.text.length, ATTACHMENT_MAX_BYTES + 500)
        const huge = yield* attachFiles("and @huge.log", root)
        // Its NUL bytes make it binary: it is named, not pasted.
        assert.deepStrictEqual(huge.attached, [])
        assert.include(huge.text, "<file path=\"huge.log\">\n[not attached: a binary file of 3.0 GB]\n</file>")
      })
    ))

  it.effect("a binary file is not pasted into the prompt as text", () =>
    withFolders((root) =>
      Effect.gen(function*() {
        writeFileSync(join(root, "a.out"), Uint8Array.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 0x1b, 0x5b]))
        const prompt = yield* attachFiles("why does @a.out crash", root)
        assert.deepStrictEqual(prompt.attached, [])
        assert.strictEqual(
          prompt.text,
          "why does @a.out crash\n\n<file path=\"a.out\">\n[not attached: a binary file of 9 B]\n</file>"
        )
      })
    ))

  it.effect("an image larger than 5 MB is not attached", () =>
    withFolders((root) =>
      Effect.gen(function*() {
        writeFileSync(join(root, "shot.png"), PNG_SIGNATURE)
        truncateSync(join(root, "shot.png"), 6 * 1024 * 1024)
        const prompt = yield* attachFiles("what is @shot.png", root)
        assert.deepStrictEqual(prompt.images, [])
        assert.deepStrictEqual(prompt.attached, [])
        assert.include(prompt.text, "[not attached: an image/png image of 6.0 MB, larger than 5.0 MB]")
      })
    ))

  it.effect("a FIFO, directly or through a link, is passed over without waiting for a writer", () =>
    withFolders((root) =>
      Effect.gen(function*() {
        execFileSync("mkfifo", [join(root, "pipe")])
        symlinkSync(join(root, "pipe"), join(root, "pipe.md"))
        const prompt = yield* attachFiles("read @pipe and @pipe.md", root)
        assert.deepStrictEqual(prompt.attached, [])
        assert.strictEqual(prompt.text, "read @pipe and @pipe.md")
      })
    ))
})

describe("readBounded (CLI 12.3)", () => {
  it("opening a FIFO does not block and reads nothing", () => {
    const base = mkdtempSync(join(tmpdir(), "effect-agent-harden-"))
    try {
      execFileSync("mkfifo", [join(base, "fifo")])
      assert.deepStrictEqual(readBounded(join(base, "fifo"), 10), { _tag: "NotAFile" })
      assert.strictEqual(readBounded(join(base, "missing"), 10)._tag, "Unreadable")
      writeFileSync(join(base, "f"), "0123456789abc")
      const read = readBounded(join(base, "f"), 10)
      assert.strictEqual(read._tag, "File")
      if (read._tag === "File") {
        assert.strictEqual(Buffer.from(read.bytes).toString(), "0123456789")
        assert.isTrue(read.truncated)
        assert.strictEqual(read.size, 13)
      }
    } finally {
      rmSync(base, { recursive: true, force: true })
    }
  })
})
