/**
 * Issue 16, item 8: a program that ran `bash` ends when the call ends, even when the command left a child
 * that detached itself with `setsid` and still holds the output pipes. Checked on a real process: it must
 * exit while that child is still alive (so it did not wait for it). No timing is asserted.
 */
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { NODE, ROOT, runProcess, tempDir, TEST_TIMEOUT_MS } from "../cli/support.ts"
import { isAlive } from "./helpers.ts"

const FIXTURE = join(ROOT, "test", "tools", "fixtures", "bashOnce.ts")
const ws = tempDir("detached")
const started: Array<number> = []

afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // already gone
    }
  }
  ws.cleanup()
})

describe("a detached child does not keep the program alive (item 8)", () => {
  it("unconfined: the program exits while the setsid child still runs", async () => {
    const run = await runProcess(NODE, [FIXTURE, "off", ws.dir, `setsid sleep 45 & echo "detached $!"`])
    const detached = Number(/detached (\d+)/.exec(run.stdout)?.[1])
    if (detached > 0) started.push(detached)
    expect(run.code, run.stderr).toBe(0)
    expect(detached).toBeGreaterThan(0)
    // It escaped the process group on purpose and was not waited for: it is still running now.
    expect(isAlive(detached)).toBe(true)
    expect(JSON.parse(run.stdout).details.sandboxed).toBe(false)
  }, TEST_TIMEOUT_MS)
})
