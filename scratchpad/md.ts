import { Marked } from "marked"
import { markedTerminal } from "marked-terminal"
const m = new Marked()
m.use(markedTerminal({ width: 60, reflowText: true, tab: 2 }) as any)
const out = m.parse("# Title\n\nSome *em* and **bold** and `code`.\n\n- one\n- two 漢字\n\n| a | b |\n|---|---|\n| 1 | 漢字 |\n\n```ts\nconst x: number = 1\n```\n") as string
process.stdout.write(out)
console.log(JSON.stringify(out))
