/**
 * Issue 16 item 13: the `bin` entry runs in a clone without a build (no dist/), and the demo removes the
 * temporary folder it made unless `--keep` is given.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe as effectDescribe, it as effectIt } from "@effect/vitest"
import { Effect, FileSystem } from "effect"
import { copyFileSync, existsSync, mkdirSync, readdirSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import * as Demo from "../../src/cli/Demo.ts"
import {
  NODE,
  parseJsonLines,
  ROOT,
  runProcess,
  stderrBesidesSandboxNotice,
  tempDir,
  TEST_TIMEOUT_MS
} from "./support.ts"

effectDescribe("Demo.temporaryWorkspace", () => {
  effectIt.layer(NodeServices.layer)((it) => {
    it.effect("without keep: the sample project is removed with its folder when the scope closes", () =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const removed: Array<string> = []
        const root = yield* Effect.scoped(Effect.gen(function*() {
          const root = yield* Demo.temporaryWorkspace(
            false,
            (r, gone) => Effect.sync(() => void removed.push(`${gone} ${r}`))
          )
          for (const [file] of Demo.SAMPLE_FILES) assert.isTrue(yield* fs.exists(join(root, file)), file)
          yield* fs.writeFileString(join(root, "made-by-the-run.txt"), "x")
          return root
        }))
        assert.isFalse(yield* fs.exists(root))
        assert.deepStrictEqual(removed, [`true ${root}`])
      }))

    it.effect("with keep: the folder stays, and where it is is told", () =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const told: Array<string> = []
        const root = yield* Effect.scoped(
          Demo.temporaryWorkspace(true, (r, gone) => Effect.sync(() => void told.push(`${gone} ${r}`)))
        )
        assert.deepStrictEqual(told, [`false ${root}`])
        assert.isTrue(yield* fs.exists(join(root, "src/math.ts")))
        yield* fs.remove(root, { recursive: true })
      }))

    it.effect("an interrupted run removes it too", () =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        let root = ""
        yield* Effect.scoped(Effect.gen(function*() {
          root = yield* Demo.temporaryWorkspace(false, () => Effect.void)
          return yield* Effect.interrupt
        })).pipe(Effect.exit)
        assert.notStrictEqual(root, "")
        assert.isFalse(yield* fs.exists(root))
      }))
  })
})

describe("bin/effect-agent.js in a clone without dist/", () => {
  it("runs the demo from the sources, and leaves no temporary folder behind", async () => {
    // A clone as `npm install` leaves it, whether or not this checkout has been built: bin/, src/,
    // node_modules/ and package.json, and no dist/.
    const clone = tempDir("clone")
    const tmp = tempDir("bin")
    try {
      mkdirSync(join(clone.dir, "bin"))
      copyFileSync(join(ROOT, "bin", "effect-agent.js"), join(clone.dir, "bin", "effect-agent.js"))
      copyFileSync(join(ROOT, "package.json"), join(clone.dir, "package.json"))
      symlinkSync(join(ROOT, "src"), join(clone.dir, "src"))
      symlinkSync(join(ROOT, "node_modules"), join(clone.dir, "node_modules"))
      expect(existsSync(join(clone.dir, "dist"))).toBe(false)
      const run = await runProcess(NODE, [join(clone.dir, "bin", "effect-agent.js"), "--json", "--yes"], {
        env: { TMPDIR: tmp.dir }
      })
      expect(stderrBesidesSandboxNotice(run.stderr)).toBe("")
      expect(run.code).toBe(0)
      const events = parseJsonLines(run.stdout)
      expect(events.at(-1).type).toBe("agent_end")
      expect(readdirSync(tmp.dir)).toEqual([])
    } finally {
      tmp.cleanup()
      clone.cleanup()
    }
  }, TEST_TIMEOUT_MS)
})
