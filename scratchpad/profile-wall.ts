import { makeMessage, makeOurs as makeOursA, makePi } from "../bench/harness.ts"
import { makeOurs as makeOursB } from "./harness-exp.ts"
const [side, n, secs] = process.argv.slice(2)
const s = side === "pi" ? makePi({ toolCount: 1, delayMs: 10 }) : side === "exp" ? makeOursB({ toolCount: 1, delayMs: 10 }) : makeOursA({ toolCount: 1, delayMs: 10 })
const m = makeMessage(Number(n), 1)
const end = performance.now() + Number(secs) * 1000
let runs = 0; const t0 = performance.now()
while (performance.now() < end) { await s.run(m, { mode: "parallel", hooks: false }); runs++ }
console.log(side, n, "runs", runs, ((performance.now() - t0) / runs).toFixed(1), "ms/batch")
