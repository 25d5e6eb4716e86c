/**
 * The command line with an MCP server (MCP 4): `effect-agent --mcp "<command> <args>"` run in-process
 * against a scripted OpenAI-compatible endpoint on 127.0.0.1, the everything server (a real subprocess) as
 * the MCP server. Plus the flag parsing and the approval rule.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { execFileSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { approvalHook, NEEDS_APPROVAL } from "../../src/cli/Approval.ts"
import { httpServer, mcpServers, stdioServer } from "../../src/cli/mcp.ts"
import { emptyUsage } from "../../src/Message.ts"
import {
  parseJsonLines,
  resultText,
  runCliInProcess,
  shellQuote,
  stderrBesidesSandboxNotice,
  tempDir
} from "../cli/support.ts"
import { chunk, openAiSse, openAiTextStream, usageChunk } from "../providers/support/fixtures.ts"
import { startServer } from "../providers/support/server.ts"
import { EVERYTHING, NODE } from "./support.ts"

/** A streamed reply calling two tools at once. */
const callsTwoTools = openAiSse([
  chunk({ role: "assistant", content: "" }),
  chunk({
    tool_calls: [{
      index: 0,
      id: "call_sum",
      type: "function",
      function: { name: "get-sum", arguments: "{\"a\": 2, \"b\": 3}" }
    }]
  }),
  chunk({
    tool_calls: [{
      index: 1,
      id: "call_echo",
      type: "function",
      function: { name: "echo", arguments: "{\"message\": \"hi\"}" }
    }]
  }),
  chunk({}, "tool_calls"),
  usageChunk(10, 5)
])

/** The ids of running processes whose command line contains `marker`. */
const processesWith = (marker: string): Array<string> =>
  execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" }).split("\n").filter((row) =>
    row.includes(marker) && !row.includes("ps -eo")
  )

/** Runs the command once against a fresh scripted endpoint with the everything server as `--mcp`. */
const runWithMcp = (extra: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const endpoint = yield* startServer
    endpoint.replies = [{ body: callsTwoTools, headers: { "content-type": "text/event-stream" } }, {
      body: openAiTextStream("Both done."),
      headers: { "content-type": "text/event-stream" }
    }]
    // The everything server ignores arguments after its transport: this one marks its process.
    const marker = `mcp-cli-test-${randomUUID()}`
    const workspace = tempDir("mcp")
    yield* Effect.addFinalizer(() => Effect.sync(workspace.cleanup))
    let runningDuringCalls = false
    const run = yield* Effect.promise(() =>
      runCliInProcess([
        "--provider",
        "openai-compatible",
        "--base-url",
        endpoint.url,
        "--model",
        "test-model",
        "--api-key",
        "k",
        "--workspace",
        workspace.dir,
        "--json",
        "--prompt",
        "use the tools",
        "--mcp",
        [NODE, EVERYTHING, "stdio", marker].map(shellQuote).join(" "),
        ...extra
      ], {
        env: { OPENAI_API_KEY: undefined },
        // While the calls run, the server is a process of its own (so its absence afterwards means something).
        onLine: (line) => {
          if (line.includes("\"tool_execution_start\"")) runningDuringCalls ||= processesWith(marker).length > 0
        }
      })
    )
    return { run, endpoint, marker, runningDuringCalls }
  }).pipe(Effect.scoped)

const ends = (stdout: string) =>
  new Map(parseJsonLines(stdout).filter((e) => e.type === "tool_execution_end").map((e) => [e.toolCallId, e]))

describe("effect-agent --mcp", () => {
  it.live(
    "MCP 4.1, 4.3, 4.5: the server's tools join the workspace tools, run in one batch, and the server is stopped",
    () =>
      Effect.gen(function*() {
        const { endpoint, marker, run, runningDuringCalls } = yield* runWithMcp(["--yes"])
        assert.strictEqual(run.code, 0, run.stderr)
        // The model was offered the built-in tools and the server's, with the server's schema.
        const offered = endpoint.requests[0].body.tools.map((t: any) => t.function)
        const names = offered.map((f: any) => f.name)
        for (const name of ["read", "bash", "get-sum", "echo", "get-tiny-image"]) assert.include(names, name)
        assert.deepStrictEqual(offered.find((f: any) => f.name === "get-sum").parameters.required, ["a", "b"])
        const results = ends(run.stdout)
        assert.deepStrictEqual(
          [results.get("call_sum")?.isError, resultText(results.get("call_sum")?.result)],
          [false, "The sum of 2 and 3 is 5."]
        )
        assert.deepStrictEqual(
          [results.get("call_echo")?.isError, resultText(results.get("call_echo")?.result)],
          [false, "Echo: hi"]
        )
        // The model got the results and answered; then the command ended and took the server with it.
        assert.strictEqual(endpoint.requests.length, 2)
        assert.isTrue(runningDuringCalls)
        assert.deepStrictEqual(processesWith(marker), [])
      }),
    60_000
  )

  it.live(
    "MCP 4.4: without --yes and with no terminal to ask, MCP tool calls are blocked like bash",
    () =>
      Effect.gen(function*() {
        const { marker, run } = yield* runWithMcp([])
        assert.strictEqual(run.code, 0, run.stderr)
        const results = ends(run.stdout)
        for (const id of ["call_sum", "call_echo"]) {
          assert.isTrue(results.get(id)?.isError)
          assert.match(
            resultText(results.get(id)?.result),
            /needs the user's approval, but there is no terminal to ask/
          )
        }
        assert.deepStrictEqual(processesWith(marker), [])
      }),
    60_000
  )

  it.live(
    "MCP 1.3, 4.5: a --mcp server that does not start stops the command before the run, in one line",
    () =>
      Effect.gen(function*() {
        const endpoint = yield* startServer
        const workspace = tempDir("mcp-missing")
        yield* Effect.addFinalizer(() => Effect.sync(workspace.cleanup))
        const run = yield* Effect.promise(() =>
          runCliInProcess([
            "--provider",
            "openai-compatible",
            "--base-url",
            endpoint.url,
            "--model",
            "test-model",
            "--workspace",
            workspace.dir,
            "--json",
            "--prompt",
            "hi",
            "--mcp",
            "/nonexistent/mcp-server --stdio"
          ])
        )
        assert.strictEqual(run.code, 1)
        assert.strictEqual(run.stdout, "")
        assert.strictEqual(
          stderrBesidesSandboxNotice(run.stderr),
          `effect-agent: MCP server "/nonexistent/mcp-server --stdio" could not be started: Cannot spawn MCP server: NotFound: ChildProcess.spawn (/nonexistent/mcp-server --stdio)`
        )
        assert.strictEqual(endpoint.requests.length, 0)
      }).pipe(Effect.scoped),
    60_000
  )

  it.effect("MCP 4.4: the approval rule covers the MCP tools it is given and still the built-in ones", () =>
    Effect.gen(function*() {
      const hook = approvalHook({ _tag: "NoTerminal" }, new Set([...NEEDS_APPROVAL, "get-sum"]))
      const ask = (name: string) =>
        hook({
          assistantMessage: {
            role: "assistant",
            content: [],
            api: "a",
            provider: "p",
            model: "m",
            usage: emptyUsage,
            stopReason: "toolUse",
            timestamp: 0
          },
          toolCall: { type: "toolCall", id: "1", name, arguments: {} },
          args: {},
          context: { systemPrompt: "", messages: [] }
        })
      assert.isTrue((yield* ask("get-sum"))?.block)
      assert.isTrue((yield* ask("write"))?.block)
      assert.isUndefined(yield* ask("read"))
      // On a terminal the person is asked about the MCP call, with its arguments, and a no blocks it.
      const questions: Array<string> = []
      const asking = approvalHook(
        { _tag: "Ask", ask: (question) => Effect.sync(() => questions.push(question)).pipe(Effect.as(false)) },
        new Set([...NEEDS_APPROVAL, "get-sum"])
      )
      const declined = yield* asking({
        assistantMessage: {
          role: "assistant",
          content: [],
          api: "a",
          provider: "p",
          model: "m",
          usage: emptyUsage,
          stopReason: "toolUse",
          timestamp: 0
        },
        toolCall: { type: "toolCall", id: "1", name: "get-sum", arguments: { a: 1, b: 2 } },
        args: { a: 1, b: 2 },
        context: { systemPrompt: "", messages: [] }
      })
      assert.deepStrictEqual(questions, [`Allow get-sum ${JSON.stringify({ a: 1, b: 2 }, null, 2)}?`])
      assert.deepStrictEqual(declined, { block: true, reason: "The user declined this get-sum call. It was not run." })
    }))

  it.effect("MCP 4.1, 4.2: --mcp is split into words like a shell would; shell syntax and bad URLs are refused", () =>
    Effect.gen(function*() {
      const server = yield* stdioServer(`npx -y "@scope/server x" 'a b' c\\ d $HOME`)
      assert.deepStrictEqual([server.command, server.args], ["npx", ["-y", "@scope/server x", "a b", "c d", "$HOME"]])
      for (const line of ["server | tee log", "server > out", "server *.js", "", "a && b"]) {
        const exit = yield* Effect.exit(stdioServer(line))
        assert.isTrue(Exit.isFailure(exit), line)
      }
      const refused = yield* Effect.flip(stdioServer("server | tee log"))
      assert.strictEqual(
        refused.message,
        `--mcp "server | tee log": | is shell syntax; give one command and its arguments (quote the word if it is one).`
      )
      assert.strictEqual((yield* httpServer("http://127.0.0.1:9/mcp")).url, "http://127.0.0.1:9/mcp")
      const bad = yield* Effect.flip(httpServer("ftp://example/mcp"))
      assert.strictEqual(bad.message, `--mcp-url "ftp://example/mcp": not an http or https URL.`)
      const all = yield* mcpServers({ mcp: ["a b"], mcpUrl: ["https://example.com/mcp"] })
      assert.deepStrictEqual(all.map((s) => s._tag), ["Stdio", "Http"])
    }))
})
