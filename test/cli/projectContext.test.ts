/**
 * CLI 6.1-6.5 (docs/cli.md): the context files of the workspace and its parents, the system prompt built
 * from them with the working folder, date and tools, the two system prompt flags, and the start-up line.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"
import * as ProjectContext from "../../src/cli/ProjectContext.ts"

const withTree = <A, E>(body: (base: string) => Effect.Effect<A, E, any>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-context-")))),
    (base) => body(base),
    (base) => Effect.sync(() => rmSync(base, { recursive: true, force: true }))
  ).pipe(Effect.provide(NodeServices.layer)) as Effect.Effect<A, E>

describe("ProjectContext.load", () => {
  it.effect("CLI 6.1: the state folder's AGENTS.md, then the parents outermost first, the workspace last", () =>
    withTree((base) =>
      Effect.gen(function*() {
        const state = join(base, "state")
        const root = join(base, "repo", "packages", "app")
        mkdirSync(state)
        mkdirSync(root, { recursive: true })
        writeFileSync(join(state, "AGENTS.md"), "mine\n")
        writeFileSync(join(base, "repo", "AGENTS.md"), "repo rules\n")
        writeFileSync(join(base, "repo", "CLAUDE.md"), "repo claude\n")
        writeFileSync(join(root, "CLAUDE.md"), "app rules\n")
        const files = yield* ProjectContext.load(root, state)
        assert.deepStrictEqual(files.map((f) => relative(base, f.path)), [
          "state/AGENTS.md",
          "repo/AGENTS.md",
          "repo/CLAUDE.md",
          "repo/packages/app/CLAUDE.md"
        ])
        assert.deepStrictEqual(files.map((f) => f.text), ["mine", "repo rules", "repo claude", "app rules"])
      })
    ))

  it.effect("CLI 6.2: a link to a file already taken, a copy of its text, an empty file and a folder are skipped", () =>
    withTree((base) =>
      Effect.gen(function*() {
        writeFileSync(join(base, "AGENTS.md"), "same rules\n")
        symlinkSync(join(base, "AGENTS.md"), join(base, "CLAUDE.md"))
        const root = join(base, "sub")
        mkdirSync(root)
        writeFileSync(join(root, "AGENTS.md"), "  same rules  \n")
        mkdirSync(join(root, "CLAUDE.md"))
        const inner = join(root, "inner")
        mkdirSync(inner)
        writeFileSync(join(inner, "AGENTS.md"), "\n\n")
        const files = yield* ProjectContext.load(inner)
        assert.deepStrictEqual(files.map((f) => relative(base, f.path)), ["AGENTS.md"])
      })
    ))

  it.effect("CLI 6.3: a very long file is cut and marked", () =>
    withTree((base) =>
      Effect.gen(function*() {
        writeFileSync(join(base, "AGENTS.md"), "x".repeat(ProjectContext.CONTEXT_FILE_MAX_CHARS + 10))
        const [file] = (yield* ProjectContext.load(base)).filter((f) => f.path.startsWith(base))
        assert.isTrue(file.truncated)
        assert.strictEqual(file.text.length, ProjectContext.CONTEXT_FILE_MAX_CHARS)
      })
    ))
})

describe("ProjectContext.systemPrompt", () => {
  const parts: ProjectContext.SystemPromptParts = {
    contextFiles: [
      { path: "/repo/AGENTS.md", text: "Use tabs.", truncated: false },
      { path: "/repo/app/CLAUDE.md", text: "Run npm test.", truncated: true }
    ],
    workspace: "/repo/app",
    now: Date.UTC(2026, 11, 3, 23, 59),
    tools: [{ name: "read", description: "Read the contents of a file. More words." }, {
      name: "bash",
      description: "Run a command"
    }]
  }

  it("CLI 6.4: instructions, the context files in order, the folder, the date and the tools", () => {
    const prompt = ProjectContext.systemPrompt(parts)
    assert.isTrue(prompt.startsWith(ProjectContext.DEFAULT_INSTRUCTIONS))
    const order = [
      "# Project context",
      "## /repo/AGENTS.md\n\nUse tabs.",
      "## /repo/app/CLAUDE.md\n\nRun npm test.\n\n[cut",
      "# Environment"
    ]
      .map((piece) => prompt.indexOf(piece))
    assert.isTrue(order.every((at, i) => at > 0 && (i === 0 || at > order[i - 1])), `in order: ${order}`)
    assert.include(
      prompt,
      "Working folder: /repo/app\nDate: 2026-12-03\nTools:\n- read: Read the contents of a file.\n- bash: Run a command"
    )
  })

  it("CLI 6.4: --system-prompt replaces only the instructions; --append-system-prompt comes last", () => {
    const prompt = ProjectContext.systemPrompt({ ...parts, instructions: "Be terse.", append: "Answer in French." })
    assert.isTrue(prompt.startsWith("Be terse.\n\n# Project context"))
    assert.notInclude(prompt, ProjectContext.DEFAULT_INSTRUCTIONS)
    assert.include(prompt, "Working folder: /repo/app")
    assert.isTrue(prompt.endsWith("\n\nAnswer in French."))
    const none = ProjectContext.systemPrompt({ ...parts, contextFiles: [] })
    assert.notInclude(none, "# Project context")
  })

  it("CLI 6.5: the start-up line names each file and the flags, or is absent", () => {
    const line = ProjectContext.describeLoaded((p) => relative("/repo/app", p), parts.contextFiles, {
      instructions: true,
      append: false
    })
    assert.strictEqual(line, "context:   ../AGENTS.md, CLAUDE.md (cut), custom system prompt")
    assert.isUndefined(ProjectContext.describeLoaded((p) => p, [], { instructions: false, append: false }))
  })
})
