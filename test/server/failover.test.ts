/**
 * Failover of `effect-agent serve` on PostgreSQL as an operator runs it (docs/server.md, SV 4.2, 4.3, 4.6):
 * the real command twice (runners A and B, each with its own EFFECT_AGENT_HOME), a stub model that answers
 * a run's first request with a bash call that appends the run's line to its workspace and sleeps 3 s, and
 * "done" once the call has its result. 20 runs are submitted over both runners while the shards are still
 * moving (B has just joined) and every run is polled every 50 ms: the scenario of issue 26 item 4, where
 * runs got stuck forever in a release that never ended. Once every workspace has its line, the runner with
 * the most calls in flight is killed (SIGKILL). Every run completes; every workspace has its line exactly
 * once; a call the kill cut is settled as crashed by the survivor. A runner that exits by itself (the stall
 * exit of SV 4.5 / 4.6, code 75) is restarted, as systemd would.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { crashedCallText } from "../../src/durable/DurableAgent.ts"
import { childEnv, MAIN, NODE, ROOT } from "../cli/support.ts"
import { needs, postgresql } from "../support/components.ts"
import { lastUserText, startStub, type Stub } from "../support/stubProvider.ts"
import { type Postgres, startPostgres } from "./postgres.ts"

const TOKEN = "failover-token"
const RUNS = 20

/** A runner as its supervisor sees it: the current process, its HTTP base once it serves, how it exited. */
interface Runner {
  readonly name: string
  child: ChildProcess
  base: string | undefined
  output: string
  /** Exit codes (or signals) of its processes, in order. */
  readonly exits: Array<string>
  /** Killed by the test: not restarted. */
  killed: boolean
}

let pg: Postgres | undefined
let stub: Stub | undefined
let work = ""
let stopping = false
let polling = true
const runners: Array<Runner> = []
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const hasPostgres = needs(postgresql)
beforeAll(async () => {
  if (!hasPostgres) return
  work = mkdtempSync(join(tmpdir(), "effect-agent-serve-failover-"))
  mkdirSync(join(work, "workspaces"))
  pg = await startPostgres()
  stub = await startStub((body) => {
    const messages: ReadonlyArray<any> = body?.messages ?? []
    if (messages.some((m) => m.role === "tool")) return { text: "done" }
    const run = lastUserText(body)
    return { toolCalls: [{ id: `call_${run}`, name: "bash", args: { command: `echo ${run} >> line.txt && sleep 3` } }] }
  })
}, 40_000)

afterAll(async () => {
  stopping = true
  polling = false
  await Promise.all(runners.map((runner) =>
    new Promise<void>((resolve) => {
      const child = runner.child
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      child.on("exit", () => resolve())
      child.kill("SIGKILL")
    })
  ))
  await stub?.close()
  await pg?.stop()
  if (work !== "") rmSync(work, { recursive: true, force: true })
}, 20_000)

/** Starts (or restarts) the runner's process: the node binary itself, so that SIGKILL reaches the runner. */
const spawnRunner = (runner: Runner) => {
  const child = spawn(NODE, [
    MAIN,
    "serve",
    ...["--store", pg!.url, "--port", "0", "--runner-port", "0", "--name", runner.name, "--token", TOKEN],
    ...["--workspaces", join(work, "workspaces")],
    ...["--provider", "openai-compatible", "--base-url", stub!.url, "--model", "m"]
  ], {
    cwd: ROOT,
    env: childEnv({ EFFECT_AGENT_HOME: join(work, `home-${runner.name}`), OPENAI_API_KEY: "stub" }),
    stdio: ["ignore", "pipe", "pipe"]
  })
  runner.child = child
  runner.base = undefined
  child.stdout!.on("data", (chunk: Buffer) => {
    runner.output += chunk.toString()
    const listening = /\{"listening":"([^"]+)"\}/.exec(runner.output.slice(-2000))
    if (listening && runner.base === undefined) runner.base = listening[1]
  })
  child.stderr!.on("data", (chunk: Buffer) => (runner.output += chunk.toString()))
  child.on("exit", (code, signal) => {
    runner.base = undefined
    runner.exits.push(String(code ?? signal))
    // The supervisor: a runner that ended itself (the stall exit) is started again.
    if (!stopping && !runner.killed) spawnRunner(runner)
  })
}

const startRunner = (name: string): Runner => {
  const runner: Runner = { name, child: undefined as any, base: undefined, output: "", exits: [], killed: false }
  mkdirSync(join(work, `home-${name}`))
  runners.push(runner)
  spawnRunner(runner)
  return runner
}

/** A request to `runner`, or to any runner serving when it does not; undefined when none answered. */
const api = async (runner: Runner, method: string, path: string, body?: unknown): Promise<any> => {
  const base = runner.base ?? runners.find((r) => r.base !== undefined)?.base
  if (base === undefined) return undefined
  try {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return await response.json()
  } catch {
    // The runner is gone (killed, or exiting to be restarted): the next request goes elsewhere.
    return undefined
  }
}

const textOf = (message: any): string =>
  typeof message?.content === "string"
    ? message.content
    : (message?.content ?? []).map((c: any) => (c.type === "text" ? c.text : "")).join("")

const linesOf = (i: number): ReadonlyArray<string> => {
  const file = join(work, "workspaces", `w${i}`, "line.txt")
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter((l) => l !== "") : []
}

describe("serve: failover through the command", () => {
  it(
    "SV 4.2, 4.3, 4.6: 20 runs submitted while B joins, polled every 50 ms, the busier runner killed: all complete, each line once",
    async () => {
      const [a, b] = [startRunner("A"), startRunner("B")]
      for (const started = Date.now(); a.base === undefined || b.base === undefined; await sleep(50)) {
        if (Date.now() - started > 60_000) throw new Error(`runners did not start\nA: ${a.output}\nB: ${b.output}`)
      }
      const ids: Array<string> = []
      for (let i = 0; i < RUNS; i++) {
        const json = await api(i % 2 === 0 ? a : b, "POST", "/runs", {
          prompt: `run${i}`,
          workspace: `w${i}`,
          approve: "all"
        })
        assert.isString(json?.runId, JSON.stringify(json))
        ids.push(json.runId)
      }
      // Every run polled every 50 ms, over both runners, for the whole test (the load of item 4).
      const views = new Map<string, any>()
      const pollers = ids.map(async (id, i) => {
        while (polling) {
          const view = await api(runners[i % 2]!, "GET", `/runs/${id}`)
          if (view?.status !== undefined) views.set(id, view)
          await sleep(50)
        }
      })
      for (const started = Date.now(); !ids.every((_, i) => linesOf(i).length > 0); await sleep(100)) {
        if (Date.now() - started > 60_000) {
          throw new Error(
            `not every workspace had its line after 60 s: ${
              JSON.stringify(ids.map((id) => [views.get(id)?.status, views.get(id)?.messages?.length]))
            }\nexits A ${a.exits} B ${b.exits}`
          )
        }
      }
      // The calls in flight: a run whose last finished message is the response asking for the call.
      const inFlight = (runner: Runner) =>
        [...views.values()].filter((v) =>
          v.status === "running" && v.messages.at(-1)?.role === "assistant" && v.runners.at(-1) === runner.name
        ).map((v) => v.runId as string)
      const victim = inFlight(a).length >= inFlight(b).length ? a : b
      const survivor = victim === a ? b : a
      const cut = inFlight(victim)
      assert.isAbove(cut.length, 0, "calls in flight on the runner killed")
      victim.killed = true
      victim.child.kill("SIGKILL")
      const killedAt = Date.now()

      while (Date.now() - killedAt < 90_000 && !ids.every((id) => views.get(id)?.status === "completed")) {
        await sleep(100)
      }
      const statuses = ids.map((id) => views.get(id)?.status)
      assert.deepStrictEqual(
        statuses,
        ids.map(() => "completed"),
        `after 90 s: ${JSON.stringify(ids.map((id) => [views.get(id)?.messages?.length, views.get(id)?.runners]))}` +
          `\nexits A ${a.exits} B ${b.exits}\n${survivor.name}: ${survivor.output.slice(-3000)}`
      )
      console.log(
        `failover: all ${RUNS} runs completed ${
          Date.now() - killedAt
        } ms after the kill; exits A [${a.exits}] B [${b.exits}]`
      )
      polling = false
      await Promise.all(pollers)

      // Each workspace has its line exactly once: no call ran twice, none was lost before the kill.
      for (let i = 0; i < RUNS; i++) assert.deepStrictEqual(linesOf(i), [`run${i}`], `w${i}`)
      const restarted = runners.some((r) => r.exits.some((e) => e !== "SIGKILL"))
      let cutByKill = 0
      for (const id of ids) {
        const view = views.get(id)
        const results = view.messages.filter((m: any) => m.role === "toolResult")
        assert.strictEqual(results.length, 1, id)
        if (textOf(results[0]) === crashedCallText("bash")) {
          const runs: ReadonlyArray<string> = view.runners
          if (runs.some((name, i) => name === victim.name && runs[i + 1] === survivor.name)) cutByKill++
          // Cut by the kill and continued by the survivor. The run may have moved before its call started (B
          // joining rebalances the shards), so only its last two runners are known. A stall exit (SV 4.6) cuts
          // calls too, and whichever runner continues such a run settles its call, so then only a later
          // execution is known to have.
          if (!restarted) assert.deepStrictEqual(view.runners.slice(-2), [victim.name, survivor.name], id)
          else assert.isAtLeast(view.runners.length, 2, id)
        }
        assert.strictEqual(textOf(view.messages.at(-1)), "done", id)
      }
      assert.isAbove(cutByKill, 0, "calls cut by the kill settled as crashed by the survivor")
    },
    150_000
  )
})
