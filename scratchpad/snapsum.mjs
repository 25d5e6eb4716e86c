// Heap-snapshot diff by constructor: node scratchpad/snapsum.mjs after.heapsnapshot [before.heapsnapshot]
import { readFileSync } from "node:fs"
const load = (file) => {
  const snap = JSON.parse(readFileSync(file, "utf8"))
  const m = snap.snapshot.meta, f = m.node_fields, nf = f.length
  const types = m.node_types[0], strings = snap.strings, nodes = snap.nodes
  const iType = f.indexOf("type"), iName = f.indexOf("name"), iSize = f.indexOf("self_size")
  const agg = new Map()
  for (let i = 0; i < nodes.length; i += nf) {
    const t = types[nodes[i + iType]]
    let name = strings[nodes[i + iName]]
    if (t === "string" || t === "concatenated string" || t === "sliced string") name = "(string)"
    else if (t === "closure") name = "closure " + name
    else if (t !== "object") name = `(${t}) ${t === "code" || t === "hidden" ? "" : name}`.slice(0, 60)
    const a = agg.get(name) ?? [0, 0]
    a[0]++
    a[1] += nodes[i + iSize]
    agg.set(name, a)
  }
  return agg
}
const after = load(process.argv[2])
const before = process.argv[3] ? load(process.argv[3]) : new Map()
const diff = [...after].map(([k, [c, s]]) => [k, [c - (before.get(k)?.[0] ?? 0), s - (before.get(k)?.[1] ?? 0)]])
let total = 0
for (const [, [, s]] of diff) total += s
console.log("total delta", (total / 1024 / 1024).toFixed(2), "MB")
for (const [k, [c, s]] of diff.sort((a, b) => b[1][1] - a[1][1]).slice(0, 30)) {
  console.log(String(c).padStart(8), (s / 1024).toFixed(0).padStart(7) + " KB", k)
}
