import { makeOurs, makePi, makeMessage } from "../bench/harness.ts"
const o = makeOurs({ toolCount: 20, delayMs: 0 }), p = makePi({ toolCount: 20, delayMs: 0 })
for (const n of [1, 10, 1000]) for (const mode of ["parallel", "sequential"] as const) for (const hooks of [false, true]) {
  const m = makeMessage(n, 20)
  console.log(n, mode, hooks, await o.run(m, { mode, hooks }), await p.run(m, { mode, hooks }))
}
console.log("base", await o.baseline(), await p.baseline())
for (const n of [1000, 10000]) for (const side of [o, p]) {
  const m = makeMessage(n, 20)
  for (let i = 0; i < 5; i++) await side.run(m, { mode: "parallel", hooks: false })
  const t = performance.now(); await side.run(m, { mode: "parallel", hooks: false }); console.log(side.name, n, ((performance.now() - t) * 1000 / n).toFixed(2), "us/call")
}
