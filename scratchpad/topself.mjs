// node scratchpad/topself.mjs file.cpuprofile [top]
import { readFileSync } from "node:fs"
const p = JSON.parse(readFileSync(process.argv[2], "utf8"))
const top = Number(process.argv[3] ?? 40)
const dt = new Map()
for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0))
const self = new Map()
let total = 0
for (const n of p.nodes) {
  const t = dt.get(n.id) ?? 0
  total += t
  const cf = n.callFrame
  const key = `${cf.functionName || "(anon)"} ${
    cf.url.replace(/.*node_modules\//, "").replace(/.*\/(src|bench|test)\//, "$1/")
  }:${cf.lineNumber + 1}`
  self.set(key, (self.get(key) ?? 0) + t)
}
const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, top)
for (const [k, t] of rows) console.log((t / total * 100).toFixed(1).padStart(5) + "%  " + k)
