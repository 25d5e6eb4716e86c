import * as M from "../src/cli/interactive/Markdown.ts"
const text = "# Plan\n\nSome *em* and **bold**.\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 漢字 |\n\n```ts\nconst x = 1\n```\n\nDone."
const s = M.stream({ columns: () => 60, rows: () => 30, color: true, write: (t) => process.stdout.write(t) })
for (let i = 0; i < text.length; i += 5) s.push(text.slice(i, i + 5))
s.end()
console.log("<end>")
