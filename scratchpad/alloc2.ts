// bytes allocated per call for flag sets (heapUsed delta with a huge young generation and no GC during the run).
// Usage: node --expose-gc --min-semi-space-size=256 --max-semi-space-size=256 alloc2.ts <mode:n[:hooks]> spec...
import * as A from "../bench/harness.ts"
import * as B from "./harness-exp.ts"
import { setFast } from "./bench-src/ToolExecution.ts"
import { PerformanceObserver } from "node:perf_hooks"
let gcs = 0
new PerformanceObserver((l) => { gcs += l.getEntries().length }).observe({ entryTypes: ["gc"] })
const gc = (globalThis as any).gc
const [cfg, ...specs] = process.argv.slice(2)
const [mode, ns, h] = cfg!.split(":"); const n = Number(ns); const hooks = h === "hooks"
const ours = A.makeOurs({ toolCount: 1, delayMs: 0 }), exp = B.makeOurs({ toolCount: 1, delayMs: 0 }), pi = A.makePi({ toolCount: 1, delayMs: 0 })
const sideOf = (spec: string) => spec === "src" ? ours : spec === "pi" ? pi : exp
const m = A.makeMessage(n, 1)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
for (const spec of specs) { setFast(spec === "src" || spec === "pi" ? "" : spec); for (let i = 0; i < 20; i++) await sideOf(spec).run(A.makeMessage(300, 1), { mode: mode as any, hooks }) }
console.log(`${cfg}: bytes allocated per call (min of 5)`)
for (const spec of specs) {
  setFast(spec === "src" || spec === "pi" ? "" : spec)
  const xs: number[] = []
  for (let r = 0; r < 5; r++) {
    gc(); gc(); await sleep(20)
    const g0 = gcs; const h0 = process.memoryUsage().heapUsed
    await sideOf(spec).run(m, { mode: mode as any, hooks })
    const h1 = process.memoryUsage().heapUsed
    await sleep(20)
    if (gcs === g0) xs.push((h1 - h0) / n)
  }
  console.log(`  ${spec.padEnd(28)} ${xs.length ? Math.min(...xs).toFixed(0).padStart(6) : "  (gc)"} B`)
}
