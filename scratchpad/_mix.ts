import { turnWorkload } from "./workload.ts"
const [wl = "loop10", rounds = "10", runs = "11", order = "both"] = process.argv.slice(2)
const ours = turnWorkload(wl, "ours"), pi = turnWorkload(wl, "pi")
const gc = (globalThis as { gc?: () => void }).gc!
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system }
for (let i = 0; i < 300; i++) { if (order !== "pi") await ours.once(); if (order !== "ours") await pi.once() }
const res: Record<string, Array<number>> = { ours: [], pi: [] }
for (let r = 0; r < Number(rounds); r++) {
  for (const [name, w] of [["ours", ours], ["pi", pi]] as const) {
    if (order !== "both" && order !== name) continue
    gc()
    console.log(`=== ROUND ${r} START`)
    const t0 = cpu()
    for (let i = 0; i < Number(runs); i++) await w.once()
    res[name]!.push((cpu() - t0) / Number(runs) / (w.turns + 1))
    console.log(`=== ROUND ${r} END`)
  }
}
const med = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
console.log(wl, "median µs per model call: ours", med(res.ours!)?.toFixed(1), "pi", med(res.pi!)?.toFixed(1))
await ours.side.agent.dispose(); await pi.side.agent.dispose()
