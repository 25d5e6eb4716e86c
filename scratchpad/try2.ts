import { makeOurs, makePi, makeMessage } from "../bench/harness.ts"
const o = makeOurs({ toolCount: 1, delayMs: 0 }), p = makePi({ toolCount: 1, delayMs: 0 })
for (const mode of ["parallel", "sequential"] as const)
for (const n of [1000, 10000, 30000, 100000]) for (const side of [o, p]) {
  const m = makeMessage(n, 1)
  await side.run(makeMessage(1000, 1), { mode, hooks: false })
  const t = performance.now(); await side.run(m, { mode, hooks: false }); console.log(mode, side.name, n, ((performance.now() - t) * 1000 / n).toFixed(2), "us/call")
}
