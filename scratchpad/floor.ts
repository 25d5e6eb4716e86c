// The floor Effect's runtime sets for N promise-shaped calls with both hooks run in parallel: Effect.forEach
// (unbounded) over three Effect.promise waits per call, nothing else. CPU µs per call, warm.
import * as Effect from "effect/Effect"
const n = Number(process.argv[2] ?? 1000)
const hooks = process.argv[3] !== "nohooks"
const p = () =>
  Effect.promise(async () => {
    await null
    return 1
  })
const one = hooks ? Effect.flatMap(p(), () => Effect.flatMap(p(), () => p())) : p()
const items = Array.from({ length: n }, (_, i) => i)
const batch = Effect.forEach(
  items,
  () => Effect.suspend(() => hooks ? Effect.flatMap(p(), () => Effect.flatMap(p(), () => p())) : p()),
  { concurrency: "unbounded", discard: true }
)
const promiseSide = async () => {
  const pp = async () => {
    await null
    return 1
  }
  await Promise.all(items.map(async () => {
    if (hooks) {
      await pp()
      await pp()
    }
    await pp()
  }))
}
const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}
for (const [name, run] of [["effect", () => Effect.runPromise(batch)], ["promises", promiseSide]] as const) {
  for (let i = 0; i < 50; i++) await run()
  const t0 = cpu()
  let runs = 0
  const end = Date.now() + 2000
  while (Date.now() < end) {
    await run()
    runs++
  }
  console.log(name, n, hooks ? "hooks" : "no hooks", ((cpu() - t0) / runs / n).toFixed(2), "µs/call")
}
void one
