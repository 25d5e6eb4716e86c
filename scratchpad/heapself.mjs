// Summarises a sampling heap profile (npx node --heap-prof --heap-prof-dir=DIR script) by allocating
// function: npx node scratchpad/heapself.mjs file.heapprofile [rows] [runs]. Shares of all sampled bytes (and bytes
// per run when the number of runs is given).
import { readFileSync } from "node:fs"
const p = JSON.parse(readFileSync(process.argv[2], "utf8"))
const top = Number(process.argv[3] ?? 40)
const self = new Map()
let total = 0
const walk = (n) => {
  const bytes = n.selfSize ?? 0
  total += bytes
  const cf = n.callFrame
  const key = `${cf.functionName || "(anon)"} ${
    cf.url.replace(/.*node_modules\//, "").replace(/.*\/(src|bench|test)\//, "$1/")
  }:${cf.lineNumber + 1}`
  self.set(key, (self.get(key) ?? 0) + bytes)
  for (const c of n.children ?? []) walk(c)
}
walk(p.head)
const runs = Number(process.argv[4] ?? 0)
for (const [k, b] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(
    (b / total * 100).toFixed(1).padStart(5) + "%  " + (runs ? `${(b / runs).toFixed(0).padStart(7)} B/run  ` : "") + k
  )
}
if (runs) console.log(`total ${(total / runs).toFixed(0)} B/run`)
