// Prints the README's Performance tables from bench/results.json (so the README shows exactly what a run
// measured): npx node scratchpad/perftable.mjs [bench/results.json]
import { readFileSync } from "node:fs"

const r = JSON.parse(readFileSync(process.argv[2] ?? "bench/results.json", "utf8"))
const fmt = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2))
const sizes = [...new Set(r.rows.map((row) => row.n))].sort((a, b) => a - b)
const label = (n) => `N=${n.toLocaleString("en").replaceAll(",", " ")}`
console.log(`| mode | shape | hooks | ${sizes.map(label).join(" | ")} |`)
console.log(`|---|---|---|${sizes.map(() => "---").join("|")}|`)
for (const mode of ["parallel", "sequential"]) {
  for (const shape of ["succeed", "sync", "promise"]) {
    for (const hooks of [false, true]) {
      const cells = sizes.map((n) => {
        const row = r.rows.find((x) => x.mode === mode && x.shape === shape && x.hooks === hooks && x.n === n)
        return row === undefined
          ? "–"
          : `${fmt(row.ours_us_per_call)} / ${fmt(row.pi_us_per_call)} (**${row.ratio.toFixed(2)}**)`
      })
      if (cells.every((c) => c === "–")) continue
      console.log(`| ${mode} | ${shape} | ${hooks ? "yes" : "no"} | ${cells.join(" | ")} |`)
    }
  }
}
console.log("")
console.log("| workload (CPU per model call, µs) | through | ours | pi | ours ÷ pi |")
console.log("|---|---|---|---|---|")
for (const t of r.turns) {
  console.log(
    `| ${t.workload} | \`${t.api}\` | ${fmt(t.ours_us_per_turn)} | ${fmt(t.pi_us_per_turn)} | ${t.ratio.toFixed(2)} |`
  )
}
console.log("")
for (const c of r.callback) console.log(`callback ${c.mode} n=${c.n}: ${c.ratio}`)
for (const c of r.execute_tool_calls) console.log(`executeToolCalls ${c.mode} n=${c.n}: ${c.ratio}`)
for (const w of r.wall) console.log(`wall ${w.mode} ${w.n}: ${w.ours_ms} vs ${w.pi_ms} (${w.ratio})`)
for (const m of r.memory) {
  console.log(
    `memory ${m.mode}: heap ${m.ours_heap_delta_mb} vs ${m.pi_heap_delta_mb}, rss ${m.ours_rss_delta_mb} vs ${m.pi_rss_delta_mb}`
  )
}
const s = r.startup
console.log(`startup: ${s.ours_cpu_ms} vs ${s.pi_cpu_ms} (${s.cpu_ratio}); from sources ${s.ours_src_cpu_ms}`)
console.log(`machine: ${JSON.stringify(r.machine)} load at end ${r.load_average_at_end} elapsed ${r.elapsed_s}`)
for (const t of r.targets) console.log(`${t.met ? "met   " : "MISSED"} ${t.target}: ${t.actual}`)
