/** `--help` documents every flag of the command, each with a description; `--sequential` and the aliases work. */
import { beforeAll, describe, expect, it } from "vitest"
import { parseJsonLines, runCliInProcess, type RunResult, tempDir, TEST_TIMEOUT_MS } from "./support.ts"

const FLAGS: ReadonlyArray<{ readonly name: string; readonly alias?: string }> = [
  { name: "--provider" },
  { name: "--base-url" },
  { name: "--model" },
  { name: "--api-key" },
  { name: "--prompt", alias: "-p" },
  { name: "--workspace", alias: "-w" },
  { name: "--yes", alias: "-y" },
  { name: "--json" },
  { name: "--session" },
  { name: "--resume" },
  { name: "--sequential" },
  { name: "--tool-timeout" },
  { name: "--keep" },
  { name: "--sandbox" },
  { name: "--allow-network" },
  { name: "--bwrap" },
  { name: "--mcp" },
  { name: "--mcp-url" },
  { name: "--max-turns" },
  { name: "--max-tool-calls" },
  { name: "--max-input-tokens" },
  { name: "--max-output-tokens" },
  { name: "--max-cost" },
  { name: "--max-minutes" },
  { name: "--max-repeats" }
]

describe("--help", () => {
  let run: RunResult
  beforeAll(async () => {
    run = await runCliInProcess(["--help"])
  }, TEST_TIMEOUT_MS)

  it("exits 0 and prints the description", () => {
    expect(run.code).toBe(0)
    expect(run.stdout).toContain("effect-agent")
    expect(run.stdout).toMatch(/scripted demo/)
  })

  it("documents every flag (and its alias) with a description", () => {
    const lines = run.stdout.split("\n")
    for (const flag of FLAGS) {
      const line = lines.find((l) => new RegExp(`^\\s+${flag.name}\\b(?!-)`).test(l))
      expect(line, flag.name).toBeDefined()
      if (flag.alias !== undefined) expect(line, flag.name).toContain(`${flag.name}, ${flag.alias}`)
      // After the flag and its type, some words of description.
      const description = line!.replace(/^\s+\S+(, -\w)?(\s+(string|integer|choice))?\s+/, "")
      expect(description.split(/\s+/).length, flag.name).toBeGreaterThanOrEqual(3)
    }
    expect(run.stdout).toContain("openai-compatible")
    expect(run.stdout).toContain("anthropic")
  })
})

describe("--sequential (with the -w and -y aliases)", () => {
  it("runs the demo's first batch one call at a time", async () => {
    const ws = tempDir("sequential")
    try {
      const result = await runCliInProcess(["--json", "--sequential", "-y", "-w", ws.dir])
      expect(result.code).toBe(0)
      const events = parseJsonLines(result.stdout)
      const ids = ["demo-ls", "demo-find", "demo-grep", "demo-read"]
      const at = (pred: (e: any) => boolean) => events.findIndex(pred)
      for (let i = 1; i < ids.length; i++) {
        const previousResult = at((e) =>
          e.type === "message_end" && e.message.role === "toolResult" && e.message.toolCallId === ids[i - 1]
        )
        const start = at((e) => e.type === "tool_execution_start" && e.toolCallId === ids[i])
        expect(previousResult, ids[i]).toBeGreaterThanOrEqual(0)
        expect(previousResult, ids[i]).toBeLessThan(start)
      }
      // -y allowed the edit.
      const edit = events.find((e) => e.type === "tool_execution_end" && e.toolCallId === "demo-edit")
      expect(edit.isError).toBe(false)
    } finally {
      ws.cleanup()
    }
  }, TEST_TIMEOUT_MS)
})
