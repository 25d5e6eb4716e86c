import { Context, Effect, Layer } from "effect"
const N = 20000
class A extends Context.Service<A, { a: number }>()("A") {}
class B extends Context.Service<B, { b: number }>()("B") {}
const time = async (label: string, f: () => Promise<unknown>) => {
  for (let r = 0; r < 3; r++) {
    const t0 = process.cpuUsage()
    for (let i = 0; i < N; i++) await f()
    const t = process.cpuUsage(t0)
    if (r === 2) console.log(label, ((t.user + t.system) / N).toFixed(2), "µs")
  }
}
await time("runPromise(void)", () => Effect.runPromise(Effect.void))
await time("runPromise(provide(merge layer))", () => Effect.runPromise(Effect.void.pipe(Effect.provide(Layer.merge(Layer.succeed(A, { a: 1 }), Layer.succeed(B, { b: 1 }))))))
const ctx = Context.make(A, { a: 1 }).pipe(Context.add(B, { b: 1 }))
await time("runPromise(provide(context))", () => Effect.runPromise(Effect.void.pipe(Effect.provide(ctx))))
await time("runFork+observer", () => new Promise((resolve) => Effect.runFork(Effect.void).addObserver(resolve)))
