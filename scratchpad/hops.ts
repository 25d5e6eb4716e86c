// Counts setImmediate / setTimeout / queueMicrotask calls per model call of a turnprof workload:
// npx node scratchpad/hops.ts <workload> [runs]
import { turnWorkload } from "./workload.ts"

const [wl = "loop500", runsArg = "3"] = process.argv.slice(2)
const counts = { setImmediate: 0, setTimeout: 0, queueMicrotask: 0 }
const g = globalThis as unknown as Record<keyof typeof counts, (...args: Array<unknown>) => unknown>
for (const name of Object.keys(counts) as Array<keyof typeof counts>) {
  const original = g[name]
  g[name] = (...args: Array<unknown>) => {
    counts[name]++
    return original(...args)
  }
}
const { once, side, turns } = turnWorkload(wl)
await once()
for (const name of Object.keys(counts) as Array<keyof typeof counts>) counts[name] = 0
const runs = Number(runsArg)
for (let i = 0; i < runs; i++) await once()
const per = (n: number) => (n / runs / (turns + 1)).toFixed(2)
console.log(
  `${wl}: per model call setImmediate ${per(counts.setImmediate)}, setTimeout ${
    per(counts.setTimeout)
  }, queueMicrotask ${per(counts.queueMicrotask)}`
)
await side.agent.dispose()
