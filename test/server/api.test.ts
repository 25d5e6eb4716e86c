/**
 * The HTTP API of `effect-agent serve` (docs/server.md, SV rules), on one runner with the embedded SQLite
 * store, in this process: every route, the bearer token, bad bodies, unknown runs, workspace confinement,
 * the event stream (ids, reconnection with Last-Event-ID, a client leaving mid-stream), abort, steering,
 * follow-ups and the per-run approval mode.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { HttpServer } from "effect/http"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Engine from "../../src/server/Engine.ts"
import * as Server from "../../src/server/Server.ts"
import { modelLayer, tools } from "./support.ts"

const TOKEN = "test-token"
let base = ""
let root = ""
let work = ""
let scope: Scope.Closeable

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "effect-agent-serve-api-"))
  root = join(work, "workspaces")
  mkdirSync(root)
  mkdirSync(join(work, "outside"))
  symlinkSync(join(work, "outside"), join(root, "escape"))
  scope = await Effect.runPromise(Scope.make())
  const layer = Server.layer({
    port: 0,
    token: TOKEN,
    workspaces: root,
    runnerName: "api-test",
    systemPrompt: "test",
    model: modelLayer,
    tools,
    // A run with `approve: "none"` may not call `append`; with "all" it may.
    approval: (mode) => () =>
      Effect.succeed(mode === "all" ? undefined : { block: true, reason: "append needs approval" }),
    engine: Engine.single(join(work, "store.db")),
    pollInterval: "20 millis",
    httpLog: false
  })
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const address = Context.get(context, HttpServer.HttpServer).address
  base = `http://127.0.0.1:${"port" in address ? address.port : 0}`
})

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  if (work !== "") rmSync(work, { recursive: true, force: true })
})

const auth = { authorization: `Bearer ${TOKEN}` }

const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = auth) => {
  const response = await fetch(base + path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
  })
  const text = await response.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, json, text }
}

const create = async (body: unknown) => {
  const response = await call("POST", "/runs", body)
  assert.strictEqual(response.status, 201, response.text)
  return response.json.runId as string
}

const waitEnded = async (runId: string) => {
  for (let i = 0; i < 400; i++) {
    const view = await call("GET", `/runs/${runId}`)
    if (view.json.status !== "running") return view.json
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`run ${runId} did not end`)
}

interface SseEvent {
  readonly id: string | undefined
  readonly event: string
  readonly data: any
}

const parseSse = (text: string): Array<SseEvent> =>
  text.split("\n\n").filter((block) => block.trim() !== "").map((block) => {
    let id: string | undefined
    let event = "message"
    let data = ""
    for (const line of block.split("\n")) {
      if (line.startsWith("id: ")) id = line.slice(4)
      else if (line.startsWith("event: ")) event = line.slice(7)
      else if (line.startsWith("data: ")) data += line.slice(6)
    }
    return { id, event, data: JSON.parse(data) }
  })

/** Reads the event stream until `until` says stop (then leaves, as a client closing the tab) or it ends. */
const readEvents = async (
  runId: string,
  headers: Record<string, string> = {},
  until?: (e: SseEvent) => boolean,
  query = ""
) => {
  const controller = new AbortController()
  const response = await fetch(`${base}/runs/${runId}/events${query}`, {
    headers: { ...auth, ...headers },
    signal: controller.signal
  })
  assert.strictEqual(response.status, 200)
  assert.include(response.headers.get("content-type") ?? "", "text/event-stream")
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  while (true) {
    const { done, value } = await reader.read()
    if (done) break
    text += decoder.decode(value, { stream: true })
    const complete = text.slice(0, text.lastIndexOf("\n\n") + 2)
    if (until !== undefined && parseSse(complete).some(until)) {
      controller.abort()
      return parseSse(complete)
    }
  }
  return parseSse(text)
}

const textOf = (message: any): string =>
  typeof message?.content === "string"
    ? message.content
    : (message?.content ?? []).map((c: any) => (c.type === "text" ? c.text : "")).join("")

describe("serve: HTTP API", () => {
  it("SV 1.1: GET /health answers 200 without a token", async () => {
    const response = await call("GET", "/health", undefined, {})
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.json.status, "ok")
  })

  it("SV 1.2: every other route answers 401 without the token or with a wrong one", async () => {
    const runId = await create({ prompt: "say hi" })
    const routes: Array<[string, string, unknown?]> = [
      ["POST", "/runs", { prompt: "x" }],
      ["GET", `/runs/${runId}`],
      ["GET", `/runs/${runId}/events`],
      ["POST", `/runs/${runId}/messages`, { kind: "steer", text: "x" }],
      ["POST", `/runs/${runId}/abort`]
    ]
    for (const [method, path, body] of routes) {
      for (const headers of [{}, { authorization: "Bearer wrong-token" }, { authorization: TOKEN }]) {
        const response = await call(method, path, body, headers)
        assert.strictEqual(response.status, 401, `${method} ${path} ${JSON.stringify(headers)}`)
        assert.include(response.json.error, "bearer token")
      }
    }
  })

  it("SV 1.3: POST /runs starts a run in its workspace; GET /runs/:id gives its status and messages", async () => {
    const runId = await create({ prompt: "batch w 2 0", workspace: "team/a", approve: "all" })
    const view = await waitEnded(runId)
    assert.strictEqual(view.status, "completed")
    assert.strictEqual(view.workspace, join("team", "a"))
    assert.deepStrictEqual(view.runners, ["api-test"])
    assert.deepStrictEqual(view.messages.map((m: any) => m.role), [
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "assistant"
    ])
    assert.strictEqual(readFileSync(join(root, "team", "a", "out.txt"), "utf8"), "w:c1\nw:c2\n")
  })

  it("SV 1.4: bad bodies get 400 with a message saying what is wrong", async () => {
    const cases: Array<[string, unknown, string]> = [
      ["/runs", "{not json", "Bad request body"],
      ["/runs", { prompt: 5 }, "prompt"],
      ["/runs", { prompt: "" }, "prompt"],
      ["/runs", { prompt: "x", approve: "maybe" }, "approve"],
      ["/runs", {}, "prompt"]
    ]
    for (const [path, body, says] of cases) {
      const response = await call("POST", path, body)
      assert.strictEqual(response.status, 400, JSON.stringify(body))
      assert.include(response.json.error, says)
    }
    const runId = await create({ prompt: "say hi" })
    const bad = await call("POST", `/runs/${runId}/messages`, { kind: "shout", text: "x" })
    assert.strictEqual(bad.status, 400)
    assert.include(bad.json.error, "kind")
    const badId = await call("GET", `/runs/${runId}/events`, undefined, { ...auth, "last-event-id": "abc" })
    assert.strictEqual(badId.status, 400)
    assert.include(badId.json.error, "Last-Event-ID")
  })

  it("SV 1.5: a workspace outside the root is refused (.., absolute, through a symlink) and nothing runs", async () => {
    for (const workspace of ["../outside", "/tmp", "a/../../outside", "escape", "escape/deeper"]) {
      const response = await call("POST", "/runs", { prompt: "batch x 1 0", workspace, approve: "all" })
      assert.strictEqual(response.status, 400, workspace)
      assert.include(response.json.error, "workspace")
    }
    assert.isFalse(existsSync(join(work, "outside", "out.txt")))
    assert.isFalse(existsSync(join(work, "outside", "deeper")))
  })

  it("SV 1.6: an unknown run or route gets 404", async () => {
    for (
      const [method, path, body] of [
        ["GET", "/runs/run-nope"],
        ["GET", "/runs/run-nope/events"],
        ["POST", "/runs/run-nope/messages", { kind: "steer", text: "x" }],
        ["POST", "/runs/run-nope/abort"],
        ["GET", "/nowhere"]
      ] as Array<[string, string, unknown?]>
    ) {
      const response = await call(method, path, body)
      assert.strictEqual(response.status, 404, `${method} ${path}`)
      assert.isString(response.json.error)
    }
  })

  it("SV 2.1: the event stream numbers events from 1 and ends with run_end; Last-Event-ID resumes after it", async () => {
    const runId = await create({ prompt: "batch e 2 0", approve: "all" })
    const all = await readEvents(runId)
    const numbered = all.filter((e) => e.id !== undefined)
    assert.deepStrictEqual(numbered.map((e) => Number(e.id)), numbered.map((_, i) => i + 1))
    assert.strictEqual(numbered[0]!.event, "execution_start")
    assert.strictEqual(numbered[1]!.event, "agent_start")
    assert.strictEqual(numbered.at(-1)!.event, "agent_end")
    assert.deepStrictEqual(all.at(-1), { id: undefined, event: "run_end", data: { status: "completed" } })
    for (const e of numbered) assert.strictEqual(e.data.type, e.event)
    // Reconnecting after event k gives exactly the events after k.
    const k = 5
    const rest = await readEvents(runId, { "last-event-id": String(k) })
    assert.deepStrictEqual(rest.filter((e) => e.id !== undefined), numbered.slice(k))
    const query = await readEvents(runId, {}, undefined, `?after=${k}`)
    assert.deepStrictEqual(query, rest)
    assert.deepStrictEqual(await readEvents(runId), all)
  })

  it("TE 11 through serve: calls that write one note run in turn, and the later one says it waits", async () => {
    const runId = await create({ prompt: "notes n 2 20", approve: "all" })
    const events = (await readEvents(runId)).filter((e) => e.id !== undefined).map((e) => e.data)
    assert.deepStrictEqual(events.filter((e) => e.type === "tool_execution_waiting"), [
      { type: "tool_execution_waiting", toolCallId: "c2", toolName: "append", waitingFor: ["c1"] }
    ])
    const ends = events.filter((e) => e.type === "tool_execution_end").map((e) => e.toolCallId)
    assert.deepStrictEqual(ends, ["c1", "c2"])
    assert.strictEqual((await waitEnded(runId)).status, "completed")
  })

  it("SV 2.2: a client leaving mid-stream does not disturb the run; a reconnect gets the rest", async () => {
    const runId = await create({ prompt: "batch d 2 300", approve: "all" })
    const seen = await readEvents(runId, {}, (e) => e.event === "tool_execution_start")
    const lastSeen = Number(seen.filter((e) => e.id !== undefined).at(-1)!.id)
    const view = await waitEnded(runId)
    assert.strictEqual(view.status, "completed")
    assert.strictEqual(textOf(view.messages.at(-1)), "done d: batch d 2 300")
    const rest = await readEvents(runId, { "last-event-id": String(lastSeen) })
    assert.strictEqual(Number(rest[0]!.id), lastSeen + 1)
    assert.strictEqual(rest.at(-1)!.event, "run_end")
    assert.strictEqual(
      readFileSync(join(root, "out.txt"), "utf8").split("\n").filter((l) => l.startsWith("d:")).length,
      2
    )
  })

  it("SV 3.1: POST /runs/:id/abort ends a running run as aborted; a finished run answers 409", async () => {
    const runId = await create({ prompt: "batch a 1 60000", approve: "all" })
    await readEvents(runId, {}, (e) => e.event === "tool_execution_start")
    const started = Date.now()
    const response = await call("POST", `/runs/${runId}/abort`)
    assert.strictEqual(response.status, 202)
    const view = await waitEnded(runId)
    assert.isBelow(Date.now() - started, 10_000)
    assert.strictEqual(view.status, "aborted")
    const result = view.messages.find((m: any) => m.role === "toolResult")
    assert.isTrue(result.isError)
    assert.include(textOf(result), "aborted")
    const again = await call("POST", `/runs/${runId}/abort`)
    assert.strictEqual(again.status, 409)
  })

  it("SV 3.2: a steering message is read after the current batch; a follow-up when the run would stop", async () => {
    const steered = await create({ prompt: "batch s 1 400", approve: "all" })
    await readEvents(steered, {}, (e) => e.event === "tool_execution_start")
    assert.strictEqual(
      (await call("POST", `/runs/${steered}/messages`, { kind: "steer", text: "turn left" })).status,
      202
    )
    const view = await waitEnded(steered)
    assert.strictEqual(view.status, "completed")
    assert.strictEqual(textOf(view.messages.at(-1)), "done s: turn left")
    assert.strictEqual((await call("POST", `/runs/${steered}/messages`, { kind: "steer", text: "late" })).status, 409)

    const followed = await create({ prompt: "batch f 1 400", approve: "all" })
    await readEvents(followed, {}, (e) => e.event === "tool_execution_start")
    assert.strictEqual(
      (await call("POST", `/runs/${followed}/messages`, { kind: "followUp", text: "and then?" })).status,
      202
    )
    const after = await waitEnded(followed)
    const texts = after.messages.filter((m: any) => m.role === "assistant").map(textOf)
    assert.deepStrictEqual(texts.slice(-2), ["done f: batch f 1 400", "done f: and then?"])
  })

  it("SV 3.3: approve none refuses the calls that need approval; approve all lets them run", async () => {
    const refused = await create({ prompt: "batch n 1 0", workspace: "approvals" })
    const view = await waitEnded(refused)
    const result = view.messages.find((m: any) => m.role === "toolResult")
    assert.isTrue(result.isError)
    assert.include(textOf(result), "append needs approval")
    assert.isFalse(existsSync(join(root, "approvals", "out.txt")))
  })
})
