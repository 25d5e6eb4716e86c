/**
 * Durable runs on the command line (issue 12 item 5): `--durable` prints the run id (a `run_start` JSON
 * line with `--json`) and stores the run in `$EFFECT_AGENT_HOME/runs.db`; `runs` lists it with its status;
 * `resume <run-id>` of a finished run does not run it again.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { parseJsonLines, runCli, tempDir, TEST_TIMEOUT_MS } from "./support.ts"

const home = tempDir("durable-home")
const workspace = tempDir("durable-ws")
afterAll(() => {
  home.cleanup()
  workspace.cleanup()
})

describe("effect-agent --durable, runs, resume", () => {
  it("runs the demo durably, lists it as completed, and resumes it without running it again", async () => {
    const env = { EFFECT_AGENT_HOME: home.dir }
    const first = await runCli(["--durable", "--json", "--workspace", workspace.dir], { env })
    assert.strictEqual(first.code, 0, first.stderr)
    const lines = parseJsonLines(first.stdout)
    assert.strictEqual(lines[0].type, "run_start")
    const runId: string = lines[0].runId
    assert.match(runId, /^run-/)
    assert.strictEqual(lines.at(-1).type, "agent_end")
    assert.isTrue(existsSync(join(home.dir, "runs.db")))

    const runs = await runCli(["runs", "--json"], { env })
    assert.strictEqual(runs.code, 0, runs.stderr)
    const listed = parseJsonLines(runs.stdout)
    assert.deepStrictEqual(listed.map((r) => [r.runId, r.status]), [[runId, "completed"]])

    const resumed = await runCli(["resume", runId, "--workspace", workspace.dir], { env })
    assert.strictEqual(resumed.code, 0, resumed.stderr)
    assert.include(resumed.stdout, `run: ${runId}`)
    assert.include(resumed.stdout, `run ${runId} had already finished`)

    // DR 3.2: `abort` leaves a finished run as it is, and refuses an id the store does not hold.
    const finished = await runCli(["abort", runId], { env })
    assert.strictEqual(finished.code, 0, finished.stderr)
    assert.include(finished.stdout, `run ${runId} had already finished (completed)`)
    const unknown = await runCli(["abort", "run-nope"], { env })
    assert.strictEqual(unknown.code, 1)
    assert.include(unknown.stderr, "no run run-nope in the store")
    // A hostile id is echoed cut, in one line.
    const hostile = await runCli(["abort", `run-${"x".repeat(20_000)}\u001b[2J`], { env })
    assert.strictEqual(hostile.code, 1)
    assert.isBelow(hostile.stderr.length, 400)
    assert.notInclude(hostile.stderr, "\u001b")
    assert.deepStrictEqual(parseJsonLines((await runCli(["runs", "--json"], { env })).stdout).map((r) => r.status), [
      "completed"
    ])
  }, TEST_TIMEOUT_MS)
})
