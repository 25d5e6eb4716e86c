import { callWorkload } from "./workload.ts"
const [shape, m, h, ns, who = "ours", rounds = "4", per = "50"] = process.argv.slice(2) as any
const { side, work } = callWorkload(shape, m, h, Number(ns), who)
for (let i = 0; i < 300; i++) await side.loop(work, "iterate")
for (let r = 0; r < Number(rounds); r++) {
  await new Promise((resolve) => setTimeout(resolve, 20))
  console.log(`=== ROUND ${r} START`)
  ;(globalThis as any).gc()
  for (let i = 0; i < Number(per); i++) await side.loop(work, "iterate")
  console.log(`=== ROUND ${r} END`)
}
