import { startStub, openScreen, lastUserText } from "../test/cli/interactiveSupport.ts"
import { mkdtempSync, writeFileSync } from "node:fs"
const ws = mkdtempSync("/tmp/tui-ws-"); const home = mkdtempSync("/tmp/tui-home-")
writeFileSync(ws + "/a.txt", "one\ntwo\nthree\n")
const stub = await startStub((body) => {
  const t = lastUserText(body)
  if (body.messages.at(-1).role === "tool") return { text: "Done. The file is **changed**." }
  if (t.includes("edit")) return { text: "I will edit.", toolCalls: [{ id: "c1", name: "edit", args: { path: "a.txt", oldText: "two", newText: "TWO" } }] }
  return { text: "# Heading\n\nSome *emphasis* and **bold**.\n\n- item one\n- item 漢字\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```ts\nconst x: number = 1\n```\n", delayMs: 20 }
})
const s = openScreen(["--provider", "openai-compatible", "--base-url", stub.url, "--model", "stub", "-w", ws], { EFFECT_AGENT_HOME: home, OPENAI_API_KEY: "x" }, ws)
try {
  await s.waitFor("›")
  s.type("hello there"); s.keys("Enter")
  await s.waitFor("$0.0")
  s.type("please edit"); s.keys("Enter")
  await s.waitFor("[e]xplain")
  console.log(s.capture())
  s.type("y")
  await s.waitFor("Done.")
  s.type("/ses"); s.keys("Tab"); s.keys("Enter")
  await s.waitFor("tokens:")
  console.log(s.capture())
} catch (e) { console.log(String(e)) } finally { s.stop(); await stub.close() }
