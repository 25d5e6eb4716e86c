import { NodeServices } from "@effect/platform-node"
import { Effect, Stream, Duration } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { execFileSync } from "node:child_process"
const main = Effect.gen(function*() {
  const sp = yield* ChildProcessSpawner.ChildProcessSpawner
  let pid = 0
  const t0 = Date.now()
  const r = yield* Effect.scoped(Effect.gen(function*() {
    const h = yield* sp.spawn(ChildProcess.make("bash", ["-c", process.argv[2]], { stdin: "ignore", forceKillAfter: Duration.millis(1000) }))
    pid = h.pid
    yield* Effect.forkScoped(Stream.runForEach(h.all, (c) => Effect.sync(() => console.log(Date.now() - t0, "chunk", JSON.stringify(new TextDecoder().decode(c))))))
    yield* Effect.sleep(500)
    console.log(execFileSync("ps", ["-eo", "pid,ppid,pgid,stat,args"], {encoding: "utf8"}).split("\n").filter(l => l.includes(String(pid))).join("\n"))
    const t1 = Date.now()
    yield* Effect.addFinalizer(() => Effect.sync(() => console.log("finalizer after", Date.now() - t1)))
  }))
  console.log("done", Date.now() - t0)
  console.log(execFileSync("ps", ["-eo", "pid,ppid,pgid,stat,args"], {encoding: "utf8"}).split("\n").filter(l => l.includes(String(pid))).join("\n"))
})
Effect.runPromise(main.pipe(Effect.provide(NodeServices.layer)))
