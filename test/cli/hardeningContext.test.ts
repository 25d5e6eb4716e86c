/**
 * Project context files on hostile input (docs/cli.md CLI 12.5, 6.2, 6.3): a huge (sparse) file is read only
 * up to its cut, a binary file, a FIFO and a link loop are skipped, and none of them stalls the start.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ProjectContext from "../../src/cli/ProjectContext.ts"

const withBase = <A, E>(body: (base: string) => Effect.Effect<A, E, any>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-context-")))),
    body,
    (base) => Effect.sync(() => rmSync(base, { recursive: true, force: true }))
  ).pipe(Effect.provide(NodeServices.layer)) as Effect.Effect<A, E>

describe("context files (CLI 12.5)", () => {
  it.effect("a 3 GB AGENTS.md is cut at 64 KB without being loaded; binary files, FIFOs and link loops are skipped", () =>
    withBase((base) =>
      Effect.gen(function*() {
        const state = join(base, "state")
        const ws = join(base, "a", "ws")
        mkdirSync(state)
        mkdirSync(ws, { recursive: true })
        writeFileSync(join(state, "AGENTS.md"), "rule\n".repeat(50_000))
        truncateSync(join(state, "AGENTS.md"), 3 * 1024 * 1024 * 1024)
        writeFileSync(join(base, "AGENTS.md"), Uint8Array.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 0x1b, 0x5b]))
        execFileSync("mkfifo", [join(base, "a", "AGENTS.md")])
        symlinkSync(join(base, "a", "loop"), join(base, "a", "CLAUDE.md"))
        symlinkSync(join(base, "a", "CLAUDE.md"), join(base, "a", "loop"))
        writeFileSync(join(ws, "AGENTS.md"), "inner\n")
        const files = (yield* ProjectContext.load(ws, state)).filter((f) => f.path.startsWith(base))
        assert.deepStrictEqual(files.map((f) => f.path), [join(state, "AGENTS.md"), join(ws, "AGENTS.md")])
        assert.isTrue(files[0].truncated)
        assert.strictEqual(files[0].text.length, ProjectContext.CONTEXT_FILE_MAX_CHARS)
        assert.isTrue(files[0].text.startsWith("rule\nrule\n"))
        assert.deepStrictEqual(files[1], { path: join(ws, "AGENTS.md"), text: "inner", truncated: false })
      })
    ))
})
