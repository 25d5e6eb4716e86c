/**
 * CLI 5.1–5.3 (docs/cli.md): tokens, cost and context share from the assistant messages' usage and the
 * model catalogue, and the one-line form `↑ in ↓ out $cost ctx n%`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Tally from "../../src/cli/Usage.ts"
import type { AgentMessage, AssistantMessage, Usage } from "../../src/Message.ts"
import { emptyUsage } from "../../src/Message.ts"

const assistant = (model: string, usage: Partial<Usage>): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "text", text: "ok" }],
  api: "test",
  provider: "test",
  model,
  usage: { ...emptyUsage, ...usage },
  stopReason: "stop",
  timestamp: 0
})

describe("Usage", () => {
  it("CLI 5.1: counts every assistant message once and ignores the others", () => {
    const messages: Array<AgentMessage> = [
      { role: "user", content: "hi", timestamp: 0 },
      assistant("unknown-model", { input: 100, output: 20, cacheRead: 50 }),
      { role: "toolResult", toolCallId: "1", toolName: "ls", content: [], isError: false, timestamp: 0 },
      assistant("unknown-model", { input: 200, output: 30, cacheWrite: 10 }),
      { role: "note", text: "custom" }
    ]
    const tally = Tally.ofMessages(messages)
    assert.strictEqual(tally.requests, 2)
    assert.strictEqual(tally.input, 100 + 50 + 200 + 10)
    assert.strictEqual(tally.output, 50)
    assert.strictEqual(tally.cacheRead, 50)
    assert.strictEqual(tally.cacheWrite, 10)
    // The context is the last request's prompt and answer.
    assert.strictEqual(tally.contextTokens, 240)
    assert.isUndefined(tally.contextWindow)
  })

  it("CLI 5.2: the provider's cost wins; a message without one is priced from the catalogue", () => {
    const priced = assistant("claude-sonnet-4-5", {
      input: 1000,
      output: 100,
      cost: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 }
    })
    assert.strictEqual(Tally.costOf(priced), 2)
    // claude-sonnet-4-5: $3 in, $15 out, $0.3 cache read, $3.75 cache write per million.
    const unpriced = assistant("claude-sonnet-4-5-20250929", {
      input: 1_000_000,
      output: 100_000,
      cacheRead: 1_000_000,
      cacheWrite: 100_000
    })
    assert.closeTo(Tally.costOf(unpriced), 3 + 1.5 + 0.3 + 0.375, 1e-9)
    assert.strictEqual(Tally.costOf(assistant("no-such-model", { input: 1_000_000 })), 0)
  })

  it("CLI 5.2: the context window comes from the catalogue of the last request's model", () => {
    const tally = Tally.ofMessages([
      assistant("gpt-4o", { input: 10_000, output: 2_800 }),
      assistant("unknown", { input: 1, output: 1 }),
      assistant("gpt-4o", { input: 12_000, output: 800 })
    ])
    assert.strictEqual(tally.contextWindow, 128_000)
    assert.closeTo(Tally.contextPercent(tally)!, 10, 1e-9)
  })

  it("CLI 5.3: one line with arrows, dollars and the context share", () => {
    const tally = Tally.ofMessages([assistant("gpt-4o", { input: 12_000, output: 800 })])
    assert.strictEqual(
      Tally.format(tally),
      `↑ 12k ↓ 800 ${Tally.formatCost(Tally.costOf(assistant("gpt-4o", { input: 12_000, output: 800 })))} ctx 10%`
    )
    assert.strictEqual(Tally.format(Tally.empty), "↑ 0 ↓ 0 $0.0000")
    assert.strictEqual(
      Tally.format(Tally.ofMessages([assistant("gpt-4o", { input: 640, output: 0 })])),
      "↑ 640 ↓ 0 $0.0016 ctx 0.5%"
    )
    assert.strictEqual(Tally.formatTokens(1234), "1.2k")
    assert.strictEqual(Tally.formatTokens(1_250_000), "1.25M")
    assert.strictEqual(Tally.formatCost(12.345), "$12.35")
  })

  it("CLI 5.1: add keeps the earlier context when the later tally made no request", () => {
    const first = Tally.ofMessages([assistant("gpt-4o", { input: 100, output: 10 })])
    const sum = Tally.add(first, Tally.empty)
    assert.deepStrictEqual(sum, first)
  })
})
