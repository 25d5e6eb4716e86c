// Attributes each CPU sample to the nearest frame of this repository's src/ (or bench/) on its stack:
// npx node scratchpad/srcself.mjs file.cpuprofile [rows]. Effect's runtime frames count for the src/ code that
// called them synchronously; continuations run from the scheduler show up under "(runtime)".
import { readFileSync } from "node:fs"
const p = JSON.parse(readFileSync(process.argv[2], "utf8"))
const top = Number(process.argv[3] ?? 40)
const byId = new Map(p.nodes.map((n) => [n.id, n]))
const parent = new Map()
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const dt = new Map()
for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0))
const out = new Map()
let total = 0
const label = (n) => {
  const cf = n.callFrame
  if (/\/(src|bench)\//.test(cf.url)) {
    return `${cf.functionName || "(anon)"} ${cf.url.replace(/.*\/(src|bench)\//, "$1/")}:${cf.lineNumber + 1}`
  }
  if (cf.functionName === "(garbage collector)" || cf.functionName === "(idle)" || cf.functionName === "(program)") {
    return cf.functionName
  }
  return undefined
}
for (const [id, t] of dt) {
  total += t
  let cur = id
  let key
  while (cur !== undefined) {
    key = label(byId.get(cur))
    if (key !== undefined) break
    cur = parent.get(cur)
  }
  key ??= "(runtime)"
  out.set(key, (out.get(key) ?? 0) + t)
}
for (const [k, t] of [...out].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log((t / total * 100).toFixed(1).padStart(5) + "%  " + k)
}
