// The README's "Interactive mode" captures: a session against the stub provider in tmux, printed as text.
// Run: npx node scratchpad/interactive-capture.ts (CAPTURE_ANSI=1 keeps the colours, for scratchpad/ansi-to-svg.ts)
import { mkdirSync, mkdtempSync, writeFileSync, writeFileSync as w } from "node:fs"
import { lastUserText, openScreen, startStub } from "../test/cli/interactiveSupport.ts"
const base = mkdtempSync("/tmp/capture-")
const ws = base + "/calc"
mkdirSync(ws + "/src", { recursive: true })
const home = base + "/home"
writeFileSync(
  ws + "/src/math.ts",
  "// Arithmetic for the calculator.\nexport function add(a: number, b: number): number {\n  return a - b\n}\n\nexport function subtract(a: number, b: number): number {\n  return a - b\n}\n"
)
const answer =
  "## The bug\n\n`add()` in **src/math.ts** *subtracts*:\n\n| function | returns | should return |\n|---|---|---|\n| `add(2, 3)` | -1 | 5 |\n| `subtract(2, 3)` | -1 | -1 |\n\nThe fix is one character:\n\n```ts\nexport function add(a: number, b: number): number {\n  return a + b\n}\n```\n\nShall I apply it?"
const stub = await startStub((body) => {
  const t = lastUserText(body)
  const last = body.messages.at(-1)
  if (last.role === "tool") return { text: "Fixed: `add()` now **adds**. Run `npm test` to check." }
  if (t.includes("yes")) {
    return {
      toolCalls: [{
        id: "c1",
        name: "edit",
        args: {
          path: "src/math.ts",
          oldText: "export function add(a: number, b: number): number {\n  return a - b",
          newText: "export function add(a: number, b: number): number {\n  return a + b"
        }
      }]
    }
  }
  return { text: answer, delayMs: 15 }
})
const s = openScreen(["--provider", "openai-compatible", "--base-url", stub.url, "--model", "qwen3-coder", "-w", ws], {
  EFFECT_AGENT_HOME: home,
  OPENAI_API_KEY: "x",
  COLUMNS: "100"
}, ws)
const out: string[] = []
try {
  await s.waitFor("›")
  s.type("Why does add() give wrong answers?")
  s.keys("M-Enter")
  s.type("Look at src/math.ts.")
  await s.waitFor("src/math.ts.")
  s.keys("Enter")
  await s.waitFor("Shall I apply it?")
  await new Promise((r) => setTimeout(r, 300))
  out.push(s.capture())
  s.type("yes please")
  s.keys("Enter")
  await s.waitFor("[e]xplain")
  out.push(s.capture())
  s.type("y")
  await s.waitFor("npm test")
  s.type("/")
  s.keys("Tab")
  await new Promise((r) => setTimeout(r, 300))
  out.push(s.capture())
  s.keys("C-u")
  s.type("/session")
  s.keys("Enter")
  await s.waitFor("tokens:")
  out.push(s.capture())
} catch (e) {
  console.log(String(e))
} finally {
  s.stop()
  await stub.close()
}
const name = base.slice(1).replaceAll("/", "-")
console.log(
  out.join("\n=========\n").replaceAll(name + "-calc", "home-me-calc").replaceAll(home, "~/.effect-agent").replaceAll(
    base,
    "/home/me"
  )
)
