// Summarises `--trace-deopt` output of scratchpad/deopts.ts: deopts inside the marked rounds, per function and reason.
import { readFileSync } from "node:fs"
const text = readFileSync(process.argv[2] ?? 0, "utf8")
const lines = text.split("\n")
let inRound = -1
const counts = new Map()
let total = 0
for (const line of lines) {
  const m = /=== ROUND (\d+) (START|END)/.exec(line)
  if (m) {
    inRound = m[2] === "START" ? Number(m[1]) : -1
    continue
  }
  if (inRound < 0) continue
  // [bailout (kind: deopt-eager): begin. deoptimizing 0x..., <JSFunction name (sfi = ...)>, opt id 12, node id 34, bytecode offset 5, deopt exit 3, FP to SP delta 88, caller SP 0x..., pc 0x...]
  const b = /\[bailout \(kind: ([^,)]*)(?:, reason: ([^)]*))?\): begin\. deoptimizing [^,]*, <JSFunction ([^ >]*)[^>]*>/
    .exec(line)
  if (b) {
    const key = `${inRound}\t${b[3]}\t${b[1]}\t${b[2] ?? ""}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
    total++
    continue
  }
  const w =
    /\[marking dependent code .*?<SharedFunctionInfo ?([^>]*)>\) \(opt id (\d+)\) for deoptimization, reason: ([^\]]*)\]/
      .exec(line)
  if (w) {
    const key = `${inRound}\t${w[1] || "(anonymous)"}\tdependent\t${w[3]}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
    total++
  }
}
const rows = [...counts].sort((a, b) => b[1] - a[1])
for (const [k, v] of rows.slice(0, Number(process.argv[3] ?? 200))) console.log(v + "\t" + k)
console.log("total", total)
