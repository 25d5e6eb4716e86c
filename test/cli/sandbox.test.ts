/**
 * The command line's sandbox flags (issue 16, item 5), on real subprocesses: where bubblewrap does not work
 * (simulated with `--bwrap` naming a program that is not there) the command says so once, before the run,
 * and the demo still runs with `bash` unconfined; with `--sandbox=require` it refuses to start, in one line.
 * The sandboxed default is what the demo tests run.
 */
import { afterAll, describe, expect, it } from "vitest"
import { parseJsonLines, runCli, tempDir, TEST_TIMEOUT_MS } from "./support.ts"

const MISSING = "/nonexistent/effect-agent/bwrap"

describe("--sandbox, --bwrap", () => {
  const ws = tempDir("sandbox")
  afterAll(() => ws.cleanup())

  it("says once that bash runs unconfined when bubblewrap is missing, and the demo still runs", async () => {
    const run = await runCli(["--json", "--yes", "--bwrap", MISSING, "--workspace", ws.dir])
    expect(run.code, run.stderr).toBe(0)
    const notices = run.stderr.split("\n").filter((line) => line.includes("without a sandbox"))
    expect(notices).toEqual([
      `effect-agent: bash runs without a sandbox: ${MISSING} was not found (it comes with the bubblewrap package)`
    ])
    const events = parseJsonLines(run.stdout)
    const check = events.find((e) => e.type === "tool_execution_end" && e.toolCallId === "demo-check")
    expect(check.isError).toBe(false)
    expect(check.result.details.sandboxed).toBe(false)
  }, TEST_TIMEOUT_MS)

  it("--sandbox=require refuses to start without a working bubblewrap", async () => {
    const run = await runCli(["--json", "--yes", "--sandbox", "require", "--bwrap", MISSING, "--workspace", ws.dir])
    expect(run.code).toBe(1)
    expect(run.stdout).toBe("")
    expect(run.stderr.trim().split("\n")).toEqual([
      `effect-agent: The bash sandbox is required but bubblewrap does not work here: ${MISSING} was not found ` +
      "(it comes with the bubblewrap package)"
    ])
  }, TEST_TIMEOUT_MS)
})
