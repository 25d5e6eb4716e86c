// In-process comparison of experimental flag sets (bench-src) against src and pi, interleaved.
// Usage: ab2.ts <mode:n[:hooks]> <reps> <spec1> <spec2> ...   (spec "" = bench-src unchanged; "src" = src/, "pi")
import * as A from "../bench/harness.ts"
import * as B from "./harness-exp.ts"
import { setFast } from "./bench-src/ToolExecution.ts"
const gc = (globalThis as any).gc ?? (() => {})
const [cfg, repsS, ...specs] = process.argv.slice(2)
const [mode, ns, h, d] = cfg!.split(":"); const n = Number(ns); const hooks = h === "hooks"; const delayMs = Number(d ?? 0)
const reps = Number(repsS)
const ours = A.makeOurs({ toolCount: 1, delayMs }), exp = B.makeOurs({ toolCount: 1, delayMs }), pi = A.makePi({ toolCount: 1, delayMs })
const sideOf = (spec: string) => spec === "src" ? ours : spec === "pi" ? pi : exp
const m = A.makeMessage(n, 1); const iters = delayMs > 0 ? 1 : Math.max(1, Math.round(3000 / n))
const med = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
for (const spec of specs) { setFast(spec === "src" || spec === "pi" ? "" : spec); for (let i = 0; i < (delayMs > 0 ? 3 : 30); i++) await sideOf(spec).run(A.makeMessage(200, 1), { mode: mode as any, hooks }) }
const cpu: Record<string, number[]> = {}, wall: Record<string, number[]> = {}
for (let r = 0; r < reps; r++) {
  const order = r % 2 ? [...specs].reverse() : specs
  for (const spec of order) {
    setFast(spec === "src" || spec === "pi" ? "" : spec)
    const side = sideOf(spec)
    gc()
    for (let i = 0; i < iters; i++) await side.run(m, { mode: mode as any, hooks })
    const c0 = process.cpuUsage(); const t0 = performance.now()
    for (let i = 0; i < iters; i++) await side.run(m, { mode: mode as any, hooks })
    const c = process.cpuUsage(c0); const w = performance.now() - t0
    ;(cpu[spec] ??= []).push((c.user + c.system) / iters / n); (wall[spec] ??= []).push(w * 1000 / iters / n)
  }
}
const ref = med(cpu["src"] ?? cpu[specs[0]!]!)
if (delayMs > 0) for (const spec of specs) console.log(`  ${spec.padEnd(12)} wall per batch: median ${(med(wall[spec]!) * n / 1000).toFixed(1)} ms, min ${(Math.min(...wall[spec]!) * n / 1000).toFixed(1)} ms`)
console.log(`${cfg} reps=${reps} iters=${iters}  (µs/call: cpu median | wall median | wall min; rel = cpu vs src)`)
for (const spec of specs) console.log(`  ${(spec || "(bench-src as is)").padEnd(28)} ${med(cpu[spec]!).toFixed(2).padStart(7)} | ${med(wall[spec]!).toFixed(2).padStart(7)} | ${Math.min(...wall[spec]!).toFixed(2).padStart(7)}  rel ${(med(cpu[spec]!) / ref).toFixed(2)}`)
