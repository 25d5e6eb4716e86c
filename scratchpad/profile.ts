// Usage: node --cpu-prof --cpu-prof-dir=scratchpad/prof scratchpad/profile.ts <ours|pi> <mode> <n> <seconds> [hooks] [src]
import { makeMessage, makeOurs as makeOursA, makePi } from "../bench/harness.ts"
import { makeOurs as makeOursB } from "./harness-exp.ts"
const [side, mode, n, secs, hooks] = process.argv.slice(2)
const s = side === "pi" ? makePi({ toolCount: 1, delayMs: 0 }) : side === "exp" ? makeOursB({ toolCount: 1, delayMs: 0 }) : makeOursA({ toolCount: 1, delayMs: 0 })
const m = makeMessage(Number(n), 1)
const end = performance.now() + Number(secs) * 1000
let runs = 0
const t0 = performance.now()
while (performance.now() < end) { await s.run(m, { mode: mode as any, hooks: hooks === "hooks" }); runs++ }
console.log(side, mode, n, "runs", runs, ((performance.now() - t0) * 1000 / (runs * Number(n))).toFixed(2), "us/call")
