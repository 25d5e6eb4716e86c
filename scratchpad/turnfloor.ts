// The floor Effect's runtime sets for one turn of the loop's shape, with nothing of the library in it: read a
// one-event model Stream with `Stream.runForEachWhile`, then run one tool call through `Effect.forEach`
// (unbounded) in a forked fiber awaited by the turn (the batch's supervision), in a loop of N turns; against
// the same steps as plain promises (an async iterator of one event, `Promise.all` over one call). CPU µs per
// turn, warm: `npx node scratchpad/turnfloor.ts 500`. What no Effect loop of this shape can go below (issue 24).
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"

const turns = Number(process.argv[2] ?? 500)
const event = { type: "done" as const }

const effectTurn = Effect.gen(function*() {
  let seen = 0
  yield* Stream.runForEachWhile(Stream.succeed(event), () => Effect.sync(() => ++seen < 1))
  const batch = Effect.forEach([1], (x) => Effect.succeed(x + seen), { concurrency: "unbounded", discard: true })
  const fiber = yield* Effect.forkDetach(batch)
  yield* Fiber.await(fiber)
})
const effectRun = Effect.gen(function*() {
  for (let i = 0; i < turns; i++) yield* effectTurn
})

async function* oneEvent() {
  yield event
}
const promiseTurn = async () => {
  let seen = 0
  for await (const _ of oneEvent()) if (++seen >= 1) break
  await Promise.all([1].map(async (x) => x + seen))
}
const promiseRun = async () => {
  for (let i = 0; i < turns; i++) await promiseTurn()
}

const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}
for (const [name, run] of [["effect", () => Effect.runPromise(effectRun)], ["promises", promiseRun]] as const) {
  for (let i = 0; i < 20; i++) await run()
  const t0 = cpu()
  let runs = 0
  const end = Date.now() + 2000
  while (Date.now() < end) {
    await run()
    runs++
  }
  console.log(name, turns, "turns", ((cpu() - t0) / runs / turns).toFixed(2), "µs/turn")
}
