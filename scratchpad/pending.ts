// Live heap per pending async call: 1000 calls sleeping 50 ms, measured 20 ms in (after a full GC).
import * as A from "../bench/harness.ts"
import * as B from "./harness-exp.ts"
import { setFast } from "./bench-src/ToolExecution.ts"
const gc = (globalThis as any).gc
const n = 2000
const m = A.makeMessage(n, 1)
for (const [name, side, spec] of [["src", A.makeOurs({ toolCount: 1, delayMs: 50 }), ""], ["all", B.makeOurs({ toolCount: 1, delayMs: 50 }), "all"], ["pi", A.makePi({ toolCount: 1, delayMs: 50 }), ""]] as const) {
  setFast(spec)
  for (let i = 0; i < 3; i++) await side.run(A.makeMessage(100, 1), { mode: "parallel", hooks: false })
  const xs: number[] = []
  for (let r = 0; r < 3; r++) {
    gc(); gc()
    const h0 = process.memoryUsage().heapUsed
    let live = 0
    const t = setTimeout(() => { gc(); live = process.memoryUsage().heapUsed - h0 }, 30)
    await side.run(m, { mode: "parallel", hooks: false })
    clearTimeout(t)
    xs.push(live / n)
  }
  console.log(name, xs.map((x) => x.toFixed(0)).join(" "), "B live per pending call")
}
