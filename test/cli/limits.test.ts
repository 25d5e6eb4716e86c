/**
 * CLI 13 (docs/cli.md): each task's limits as flags, with defaults, the one line that says a task was
 * stopped, and the stop in every output mode. On the scripted demo (four model calls), in-process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { afterAll, expect, it as vitestIt } from "vitest"
import { DEFAULT_LIMITS, limitsOf, stoppedLine } from "../../src/cli/Limits.ts"
import * as RunLimits from "../../src/RunLimits.ts"
import {
  defaultSessionFiles,
  endedMessages,
  loadSessionOrThrow,
  parseJsonLines,
  runCliInProcess,
  tempDir,
  TEST_TIMEOUT_MS
} from "./support.ts"

const STOPPED = "stopped: the run used 2 model calls; its limit is 2 model calls (--max-turns changes it)"

describe("CLI 13 limits", () => {
  const ws = tempDir("limits")
  afterAll(() => ws.cleanup())

  vitestIt(
    "CLI 13.2: a task that reaches a limit stops before the next model call and says so in one line",
    async () => {
      const run = await runCliInProcess(["--max-turns", "2", "-y", "-w", ws.dir])
      expect(run.code, run.stderr).toBe(0)
      const lines = run.stdout.split("\n")
      expect(lines.filter((l) => l.startsWith("stopped:"))).toEqual([STOPPED])
      // The demo's third response (the bash check) was never asked for.
      expect(run.stdout).not.toContain("bash for i in")
      // The session holds the note that ends the run, so a resumed session knows why it stopped.
      const [file] = defaultSessionFiles(ws.dir)
      const messages = await loadSessionOrThrow(file)
      const last = messages.at(-1)!
      expect(last.role).toBe("assistant")
      expect(JSON.stringify(last.content)).toContain("[The run was stopped before the task was done: the run used 2")
    },
    TEST_TIMEOUT_MS
  )

  vitestIt("CLI 13.2: --json carries the reason on agent_end; --print says it on stderr", async () => {
    const json = await runCliInProcess(["--json", "--max-turns", "2", "-y", "-w", ws.dir])
    expect(json.code, json.stderr).toBe(0)
    const events = parseJsonLines(json.stdout)
    expect(events.at(-1)).toMatchObject({ type: "agent_end", limitReached: { _tag: "MaxTurns", limit: 2, used: 2 } })
    expect(endedMessages(events).at(-1).stopReason).toBe("stop")
    const print = await runCliInProcess(["--print", "--max-turns", "1", "-y", "-w", ws.dir, "hello"])
    expect(print.code, print.stderr).toBe(0)
    expect(print.stdout).toContain("[The run was stopped before the task was done: the run used 1 model call")
    expect(print.stderr).toContain(
      "effect-agent: stopped: the run used 1 model call; its limit is 1 model call (--max-turns changes it)"
    )
  }, TEST_TIMEOUT_MS)

  vitestIt("CLI 13.1: within the defaults the demo runs whole; 0 turns a limit off", async () => {
    const run = await runCliInProcess(["--json", "--max-turns", "0", "--max-cost", "0", "-y", "-w", ws.dir])
    expect(run.code, run.stderr).toBe(0)
    const end = parseJsonLines(run.stdout).at(-1)
    expect(end.type).toBe("agent_end")
    expect(end.limitReached).toBeUndefined()
  }, TEST_TIMEOUT_MS)

  it.effect("CLI 13.1: the flags make the run's limits; 0 is none; cost is priced as the usage line prices it", () =>
    Effect.gen(function*() {
      const limits = yield* limitsOf(DEFAULT_LIMITS)
      assert.strictEqual(limits.maxTurns, 100)
      assert.strictEqual(limits.maxToolCalls, undefined)
      assert.strictEqual(limits.maxCost, 5)
      assert.strictEqual(Duration.toMillis(Duration.fromInputUnsafe(limits.maxDuration!)), 3_600_000)
      assert.strictEqual(limits.maxRepeatedFailures, 3)
      // A model the catalogue prices, whose provider reported no cost.
      const message = {
        role: "assistant" as const,
        content: [],
        api: "x",
        provider: "openai",
        model: "gpt-4o",
        usage: {
          input: 1_000_000,
          output: 0,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 1_000_000,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
        },
        stopReason: "stop" as const,
        timestamp: 0
      }
      assert.isAbove(limits.costOf!(message), 0)
      const none = yield* limitsOf({ ...DEFAULT_LIMITS, maxTurns: 0, maxCost: 0, maxMinutes: 0, maxRepeats: 0 })
      assert.deepStrictEqual(
        [none.maxTurns, none.maxCost, none.maxDuration, none.maxRepeatedFailures],
        [undefined, undefined, undefined, undefined]
      )
    }))

  it("CLI 13.2: the stop line names the flag that moves each limit", () => {
    const reasons: ReadonlyArray<readonly [RunLimits.LimitReached, string]> = [
      [{ _tag: "MaxToolCalls", limit: 5, used: 6 }, "--max-tool-calls"],
      [{ _tag: "MaxCost", limit: 5, used: 5.25 }, "--max-cost"],
      [{ _tag: "MaxDuration", limit: 60_000, used: 61_000 }, "--max-minutes"],
      [{ _tag: "RepeatedFailure", limit: 3, used: 3, toolName: "bash", error: "exit 1" }, "--max-repeats"]
    ]
    for (const [reason, flag] of reasons) {
      assert.strictEqual(stoppedLine(reason), `stopped: ${RunLimits.describe(reason)} (${flag} changes it)`)
    }
    assert.strictEqual(
      RunLimits.describe(reasons[1]![0]),
      "the run used $5.25; its limit is $5"
    )
    assert.strictEqual(
      RunLimits.describe(reasons[3]![0]),
      "the tool bash failed 3 times with the same arguments and the same error (the limit is 3 times): exit 1"
    )
  })

  it("CLI 13.2: a tool's error on the stop line is one line with no control character a terminal acts on", () => {
    const error = "boom\n\u001b]52;c;ZXZpbA==\u0007\u001b[2Jdone\r\n"
    const line = stoppedLine({ _tag: "RepeatedFailure", limit: 3, used: 3, toolName: "bash\u001b[31m", error })
    assert.notMatch(line, /[\u0000-\u001f\u007f-\u009f]/)
    assert.strictEqual(
      line,
      "stopped: the tool bash\u241b[31m failed 3 times with the same arguments and the same error (the limit is 3 " +
        "times): boom \u241b]52;c;ZXZpbA==\u2407\u241b[2Jdone (--max-repeats changes it)"
    )
  })
})
