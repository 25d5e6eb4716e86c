// Lists the modules a given import loads (Node 22 module.registerHooks), grouped by package folder.
import { registerHooks } from "node:module"
const seen = new Set()
registerHooks({
  load(url, context, next) {
    seen.add(url)
    return next(url, context)
  }
})
await import(process.argv[2])
const groups = {}
for (const u of seen) {
  const m = u.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?:dist\/)?([^/]*)/)
  const k = m ? m[1] + "/" + (m[1] === "effect" ? m[2] : "") : u.replace(/.*\/work\/main\//, "")
  groups[k] = (groups[k] ?? 0) + 1
}
console.log(seen.size, Object.entries(groups).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}:${v}`).join(" "))
