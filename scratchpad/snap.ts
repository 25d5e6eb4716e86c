// Heap snapshot at the batch's last event (ours), summarized by constructor: node scratchpad/snap.ts <parallel|sequential> [exp]
import { writeHeapSnapshot } from "node:v8"
import * as A from "../bench/harness.ts"
import * as B from "./harness-exp.ts"
const [mode, exp] = process.argv.slice(2)
const n = 10000
const side = exp ? B.makeOurs({ toolCount: 1, delayMs: 0 }) : A.makeOurs({ toolCount: 1, delayMs: 0 })
await side.run(A.makeMessage(100, 1), { mode: mode as any, hooks: false })
const msg = A.makeMessage(n, 1)
;(globalThis as any).gc(); writeHeapSnapshot("scratchpad/prof/before.heapsnapshot")
let k = 0; let file = ""
side.onEvent = () => { if (++k === 4 * n) (globalThis as any).gc(), file = writeHeapSnapshot("scratchpad/prof/ours.heapsnapshot") }
await side.run(msg, { mode: mode as any, hooks: false })
console.log(file)
