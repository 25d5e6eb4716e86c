/**
 * Durable runs survive `kill -9` (issue 12 items 1, 2 and the tests it asks for). A real process
 * (runner.ts) runs a durable run on a SQLite store and is killed with SIGKILL at a chosen point; a second
 * process on the same store resumes the run. Afterwards:
 * - every finished tool call ran exactly once (its line is in out.txt once) and its result was replayed;
 * - the non-idempotent call that was running is settled with the honest crash result and not run again;
 * - the idempotent call that was running is run again, with the same idempotency key and attempt 2;
 * - a model response that had finished is not requested again; one cut by the crash is requested once more;
 * - an approval that was given is not asked again; one that was pending is asked again;
 * - the run completes and its transcript is well formed;
 * - an abort, steering and follow-ups sent from another process (a client of the same store) reach the run,
 *   also while no process runs it (DR 3.1, 3.2).
 * The runner's shard lease is ten minutes: every resume here finishing proves it did not wait for it (DR 5.3).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as DurableAgent from "../../src/durable/DurableAgent.ts"
import { crashedCallText } from "../../src/durable/DurableAgent.ts"
import * as DurableStore from "../../src/durable/DurableStore.ts"
import type { Message, ToolResultMessage } from "../../src/Message.ts"
import { childEnv, NODE, ROOT } from "../cli/support.ts"
import { assertWellFormed } from "../support/loop.ts"

const RUNNER = join(ROOT, "test", "durable", "runner.ts")
const BOUND_MS = 90_000

interface Started {
  readonly child: ChildProcess
  readonly lines: Array<string>
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>
}

const start = (work: string, scenario: string, env: Record<string, string> = {}): Started => {
  const child = spawn(NODE, [RUNNER, join(work, "store.db"), work, "run-1", scenario], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ["ignore", "pipe", "pipe"]
  })
  const lines: Array<string> = []
  let pending = ""
  let stderr = ""
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    pending += chunk
    const parts = pending.split("\n")
    pending = parts.pop()!
    lines.push(...parts)
  })
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk
  })
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    child.on("close", (code, signal) => resolve({ code, signal, stderr }))
  })
  return { child, lines, done }
}

/** Waits (bounded, no timing assertion) until `ready` holds, checking whenever the child prints or 50 ms pass. */
const waitFor = (started: Started, ready: () => boolean, what: string) =>
  new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (ready()) {
        clearInterval(timer)
        clearTimeout(bound)
        resolve()
      }
    }, 50)
    const bound = setTimeout(() => {
      clearInterval(timer)
      started.child.kill("SIGKILL")
      reject(new Error(`timed out waiting for ${what}; output:\n${started.lines.join("\n")}`))
    }, BOUND_MS)
  })

const killHard = async (started: Started) => {
  started.child.kill("SIGKILL")
  const exit = await started.done
  assert.strictEqual(exit.signal, "SIGKILL")
}

const finish = async (started: Started) => {
  const exit = await Promise.race([
    started.done,
    new Promise<never>((_, reject) =>
      setTimeout(() => {
        started.child.kill("SIGKILL")
        reject(new Error(`the resumed run did not end; output:\n${started.lines.join("\n")}`))
      }, BOUND_MS)
    )
  ])
  assert.strictEqual(exit.code, 0, exit.stderr)
  const result = started.lines.find((line) => line.startsWith("RESULT "))
  assert.isDefined(result, started.lines.join("\n"))
  return JSON.parse(result!.slice("RESULT ".length)) as Array<Message>
}

const outLines = (work: string) =>
  existsSync(join(work, "out.txt"))
    ? readFileSync(join(work, "out.txt"), "utf8").split("\n").filter((l) => l !== "")
    : []

const count = (lines: ReadonlyArray<string>, line: string) => lines.filter((l) => l === line).length

const resultOf = (messages: ReadonlyArray<Message>, id: string) =>
  messages.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === id)

const textOf = (message: ToolResultMessage | undefined) =>
  message?.content.map((c) => (c.type === "text" ? c.text : "")).join("") ?? ""

/** Runs `effect` in this test process as a client of the store a runner process owns (DR 3.1). */
const fromOutside = <A>(work: string, effect: Effect.Effect<A, unknown, any>) =>
  Effect.runPromise(
    effect.pipe(Effect.provide(DurableStore.layerClient({ filename: join(work, "store.db") }))) as Effect.Effect<A>
  )

const withWork = (f: (work: string) => Promise<void>) => async () => {
  const work = mkdtempSync(join(tmpdir(), "effect-agent-durable-"))
  try {
    await f(work)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

describe("durable runs across kill -9", () => {
  it(
    "crash in a parallel batch, then in the next model stream: nothing finished is repeated (DR 1.1, 1.2, 2.1, 2.2, 5.3)",
    withWork(async (work) => {
      // 1. Killed while c4 (not idempotent) and the probe (idempotent) run; c1..c3 have finished.
      const first = start(work, "batch")
      await waitFor(first, () => {
        const out = outLines(work)
        return ["c1", "c2", "c3"].every((id) => first.lines.includes(`event tool_execution_end:${id}`)) &&
          out.includes("c4-start") && out.includes("probe attempt=1 key=run-1/p1")
      }, "c1..c3 finished, c4 and the probe running")
      await killHard(first)

      // 2. Resumed: the batch settles without running c1..c4 again; killed while the next answer streams.
      const second = start(work, "batch", { RUNNER_RESUME: "1" })
      await waitFor(second, () => second.lines.includes("event message_update:text_delta"), "the answer streaming")
      await killHard(second)
      assert.deepStrictEqual(second.lines.filter((l) => l.startsWith("model-request")), ["model-request 1"])

      // 3. Resumed again: only the cut response is asked for again; the run completes.
      const third = start(work, "batch", { RUNNER_RESUME: "1" })
      const messages = await finish(third)
      assert.deepStrictEqual(third.lines.filter((l) => l.startsWith("model-request")), ["model-request 1"])

      const out = outLines(work)
      for (const line of ["c1", "c2", "c3", "c4-start"]) assert.strictEqual(count(out, line), 1, `${line} ran once`)
      // The idempotent probe ran again once, with the same key and the next attempt number.
      assert.deepStrictEqual(out.filter((l) => l.startsWith("probe")), [
        "probe attempt=1 key=run-1/p1",
        "probe attempt=2 key=run-1/p1"
      ])
      for (const id of ["c1", "c2", "c3"]) {
        assert.strictEqual(textOf(resultOf(messages, id)), `appended ${id}`)
        assert.isFalse(resultOf(messages, id)!.isError)
      }
      assert.strictEqual(textOf(resultOf(messages, "c4")), crashedCallText("append"))
      assert.isTrue(resultOf(messages, "c4")!.isError)
      assert.strictEqual(textOf(resultOf(messages, "p1")), "probe ran on attempt 2")
      assert.deepStrictEqual(messages.map((m) => m.role), [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "toolResult",
        "toolResult",
        "toolResult",
        "assistant"
      ])
      assertWellFormed(messages)
    }),
    240_000
  )

  it(
    "crash during an approval: the approval given is not asked again, the pending one is (DR 2.3)",
    withWork(async (work) => {
      const first = start(work, "approval", { RUNNER_APPROVAL: "hang" })
      await waitFor(first, () => first.lines.includes("approval c2"), "the approval of c2 pending")
      await killHard(first)
      assert.deepStrictEqual(first.lines.filter((l) => l.startsWith("approval")), ["approval c1", "approval c2"])

      const second = start(work, "approval", { RUNNER_RESUME: "1" })
      const messages = await finish(second)
      assert.deepStrictEqual(second.lines.filter((l) => l.startsWith("approval")), ["approval c2"])
      assert.deepStrictEqual(outLines(work), ["c1", "c2"])
      assert.strictEqual(textOf(resultOf(messages, "c1")), "appended c1")
      assert.strictEqual(textOf(resultOf(messages, "c2")), "appended c2")
      assertWellFormed(messages)
    }),
    240_000
  )

  it(
    "an abort sent from another process reaches a run busy in a tool (DR 3.2)",
    withWork(async (work) => {
      const first = start(work, "hang")
      await waitFor(first, () => outLines(work).includes("c1-start"), "c1 running")
      await fromOutside(work, DurableAgent.abort("run-1"))
      const messages = await finish(first)
      assert.deepStrictEqual(messages.map((m) => m.role), ["user", "assistant", "toolResult"])
      assert.match(textOf(resultOf(messages, "c1")), /interrupted after it started: the run was aborted/)
      assert.deepStrictEqual(first.lines.filter((l) => l.startsWith("model-request")), ["model-request 0"])
      assert.deepStrictEqual(outLines(work), ["c1-start"])
      assertWellFormed(messages)
    }),
    240_000
  )

  it(
    "steering and a follow-up sent while no process runs the run are read when it resumes (DR 3.1)",
    withWork(async (work) => {
      const first = start(work, "inbox")
      await waitFor(first, () => outLines(work).includes("c1-start"), "c1 running")
      await killHard(first)
      await fromOutside(
        work,
        Effect.andThen(
          DurableAgent.steer("run-1", { role: "user", content: "steer me", timestamp: 1 }),
          DurableAgent.followUp("run-1", { role: "user", content: "follow me", timestamp: 2 })
        )
      )
      const second = start(work, "inbox", { RUNNER_RESUME: "1" })
      const messages = await finish(second)
      const shape = messages.map((m) =>
        m.role === "user" ? `user:${m.content}` : m.role === "assistant"
          ? `assistant:${m.content.map((c) => (c.type === "text" ? c.text : c.type)).join("")}`
          : `toolResult:${m.toolCallId}`
      )
      assert.deepStrictEqual(shape, [
        "user:go",
        "assistant:toolCall",
        "toolResult:c1",
        "user:steer me",
        "assistant:re: steer me",
        "user:follow me",
        "assistant:re: follow me"
      ])
      assert.strictEqual(textOf(resultOf(messages, "c1")), crashedCallText("append"))
      assert.deepStrictEqual(outLines(work), ["c1-start"])
      assertWellFormed(messages)
    }),
    240_000
  )

  it(
    "an abort sent while no process runs the run stops it at its first live step when it resumes (DR 3.2)",
    withWork(async (work) => {
      const first = start(work, "hang")
      await waitFor(first, () => outLines(work).includes("c1-start"), "c1 running")
      await killHard(first)
      await fromOutside(work, DurableAgent.abort("run-1"))
      const second = start(work, "hang", { RUNNER_RESUME: "1" })
      const messages = await finish(second)
      // The call the crash cut is settled as such; the abort then ends the run at the next response, which
      // ends `aborted` without the model being asked.
      assert.deepStrictEqual(messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"])
      const last = messages.at(-1)!
      assert.isTrue(last.role === "assistant" && last.stopReason === "aborted")
      assert.strictEqual(textOf(resultOf(messages, "c1")), crashedCallText("append"))
      assert.deepStrictEqual(second.lines.filter((l) => l.startsWith("model-request")), [])
      assert.deepStrictEqual(outLines(work), ["c1-start"])
      assertWellFormed(messages)
    }),
    240_000
  )

  it(
    "a run's limits count across the crash: its calls before the crash count, it stops at the same total (AL 5.5)",
    withWork(async (work) => {
      const first = start(work, "budget")
      await waitFor(first, () => outLines(work).includes("b1-start"), "b1 running")
      await killHard(first)
      const second = start(work, "budget", { RUNNER_RESUME: "1" })
      const messages = await finish(second)
      // b0 ran, b1 was cut (settled as such), b2 ran: 3 calls in all, then the note instead of a fourth
      // model call. Counted from the resume alone, the run would have gone on for three more.
      assert.deepStrictEqual(outLines(work), ["b0", "b1-start", "b2"])
      assert.strictEqual(textOf(resultOf(messages, "b1")), crashedCallText("append"))
      const note = messages.at(-1)!
      assert.isTrue(note.role === "assistant" && note.stopReason === "stop")
      assert.include(JSON.stringify(note.content), "the run used 3 tool calls; its limit is 3 tool calls")
      assert.deepStrictEqual(second.lines.filter((l) => l.startsWith("model-request")), ["model-request 2"])
      assert.include(second.lines, "event agent_end")
      assertWellFormed(messages)
    }),
    240_000
  )

  it(
    "a run's wall time counts from its first start, across the crash and the time no process ran it (AL 5.5)",
    withWork(async (work) => {
      const first = start(work, "deadline")
      await waitFor(first, () => outLines(work).includes("d0-start"), "d0 running")
      const startedAt = Date.now()
      await killHard(first)
      // Past the run's 2 s from its first start (the run started before d0 did).
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2_500 - (Date.now() - startedAt))))
      const second = start(work, "deadline", { RUNNER_RESUME: "1" })
      const messages = await finish(second)
      // The replay reads the stored start: the limit is past, so no new model call; the cut call is settled.
      assert.deepStrictEqual(second.lines.filter((l) => l.startsWith("model-request")), [])
      assert.deepStrictEqual(outLines(work), ["d0-start"])
      assert.strictEqual(textOf(resultOf(messages, "d0")), crashedCallText("append"))
      const note = messages.at(-1)!
      assert.isTrue(note.role === "assistant" && note.stopReason === "stop")
      assert.include(JSON.stringify(note.content), "its limit is 2s")
      assertWellFormed(messages)
    }),
    240_000
  )
})
