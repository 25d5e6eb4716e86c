/**
 * CLI 8.1, 8.2 and 10.1-10.3 (docs/cli.md): where the task comes from (words, --prompt, standard input) and
 * the files a task names with `@path`, attached to it. In-process, on a test `Stdio`.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option, Stdio, Stream } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { UsageError } from "../../src/cli/startup.ts"
import { attachFiles, resolveTask, STDIN_MAX_BYTES } from "../../src/cli/Task.ts"

const stdinOf = (...chunks: ReadonlyArray<string>) =>
  Stdio.layerTest({ stdin: Stream.fromIterable(chunks.map((c) => new TextEncoder().encode(c))) })

/** A stdin that fails the test if it is read at all. */
const untouchedStdin = Stdio.layerTest({ stdin: Stream.die("standard input was read") })

const PNG_BYTES = Uint8Array.from([
  0x89,
  0x50,
  0x4e,
  0x47,
  0x0d,
  0x0a,
  0x1a,
  0x0a,
  0,
  0,
  0,
  0x0d,
  0x49,
  0x48,
  0x44,
  0x52
])

describe("resolveTask", () => {
  it.effect("CLI 8.1: the words after the flags, joined by spaces, are the task; stdin is then left alone", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* resolveTask(["fix", "the", "bug"], Option.none(), "other"), "fix the bug")
      assert.strictEqual(yield* resolveTask([], Option.some("from the flag"), "other"), "from the flag")
    }).pipe(Effect.provide(untouchedStdin)))

  it.effect("CLI 8.1: words and --prompt together, or a blank task, are a UsageError", () =>
    Effect.gen(function*() {
      const twice = yield* Effect.exit(resolveTask(["a"], Option.some("b"), "terminal"))
      assert.isTrue(Exit.isFailure(twice))
      const error = Exit.isFailure(twice) ? (twice.cause.reasons[0] as any).error : undefined
      assert.instanceOf(error, UsageError)
      assert.include(error.message, "given twice")
      const blank = yield* Effect.exit(resolveTask(["  "], Option.none(), "terminal"))
      assert.isTrue(Exit.isFailure(blank))
    }).pipe(Effect.provide(untouchedStdin)))

  it.effect("CLI 8.2: with no task, a piped standard input is the task (trimmed); empty input is no task", () =>
    Effect.gen(function*() {
      assert.strictEqual(
        yield* resolveTask([], Option.none(), "piped").pipe(Effect.provide(stdinOf("  explain ", "this\n"))),
        "explain this"
      )
      assert.strictEqual(
        yield* resolveTask([], Option.none(), "other").pipe(Effect.provide(stdinOf("from a socket"))),
        "from a socket"
      )
      assert.isUndefined(yield* resolveTask([], Option.none(), "piped").pipe(Effect.provide(stdinOf("\n \n"))))
      assert.isUndefined(yield* resolveTask([], Option.none(), "terminal").pipe(Effect.provide(untouchedStdin)))
    }))

  it.effect("CLI 8.2: a task and a piped input: the input follows the task in a <stdin> block", () =>
    Effect.gen(function*() {
      const task = yield* resolveTask(["review", "this"], Option.none(), "piped").pipe(
        Effect.provide(stdinOf("diff --git a b\n+x\n"))
      )
      assert.strictEqual(task, "review this\n\n<stdin>\ndiff --git a b\n+x\n</stdin>")
    }))

  it.effect("CLI 8.2: more than the limit on standard input is refused, not cut", () =>
    Effect.gen(function*() {
      const big = "x".repeat(1024 * 1024)
      const chunks = Array.from({ length: STDIN_MAX_BYTES / big.length + 1 }, () => big)
      const exit = yield* Effect.exit(resolveTask([], Option.none(), "piped").pipe(Effect.provide(stdinOf(...chunks))))
      assert.isTrue(Exit.isFailure(exit))
    }))
})

describe("attachFiles", () => {
  const withWorkspace = <A, E>(body: (root: string) => Effect.Effect<A, E, any>) =>
    Effect.acquireUseRelease(
      Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-attach-")))),
      (root) => body(root),
      (root) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
    ).pipe(Effect.provide(NodeServices.layer)) as Effect.Effect<A, E>

  it.effect("CLI 10.1: a text file named with @path follows the prompt in a <file> block; the mention stays", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        mkdirSync(join(root, "src"))
        writeFileSync(join(root, "src", "a.ts"), "export const a = 1\n")
        const prompt = yield* attachFiles("explain @src/a.ts, please", root)
        assert.deepStrictEqual(prompt.attached, ["src/a.ts"])
        assert.strictEqual(
          prompt.text,
          "explain @src/a.ts, please\n\n<file path=\"src/a.ts\">\nexport const a = 1\n</file>"
        )
        assert.deepStrictEqual(prompt.images, [])
      })
    ))

  it.effect("CLI 10.1: an image is attached as an image, told by its content and not its name", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        writeFileSync(join(root, "shot.dat"), PNG_BYTES)
        writeFileSync(join(root, "fake.png"), "just text\n")
        const prompt = yield* attachFiles("what is in @shot.dat and @fake.png?", root)
        assert.deepStrictEqual(prompt.attached, ["shot.dat", "fake.png"])
        assert.strictEqual(prompt.images.length, 1)
        assert.strictEqual(prompt.images[0].mimeType, "image/png")
        assert.strictEqual(prompt.images[0].data, Buffer.from(PNG_BYTES).toString("base64"))
        assert.include(prompt.text, "<file path=\"fake.png\">\njust text\n</file>")
      })
    ))

  it.effect("CLI 10.3: mentions that are no file in the workspace are left alone; a file is attached once", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        writeFileSync(join(root, "a.md"), "A\n")
        mkdirSync(join(root, "dir"))
        const text = "mail me@example.com, see @types/node, @dir, @../outside.txt, @/etc/passwd, @a.md and @a.md"
        const prompt = yield* attachFiles(text, root)
        assert.deepStrictEqual(prompt.attached, ["a.md"])
        assert.strictEqual(prompt.text, `${text}\n\n<file path="a.md">\nA\n</file>`)
      })
    ))
})
