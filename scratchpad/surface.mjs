// Counts the public names of the package: every name reachable from the entry points of package.json's
// "exports" (a namespace re-export counts itself and its members; a name both a type and a value counts once).
// Usage: npx node scratchpad/surface.mjs [-v]
import { readFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const verbose = process.argv.includes("-v")
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const cache = new Map()

/** The exported names of a source module, `Namespace.member` for namespace re-exports. */
const namesOf = (file) => {
  if (cache.has(file)) return cache.get(file)
  cache.set(file, [])
  // Declarations tagged @internal are stripped from the published declarations (stripInternal): not counted.
  const text = readFileSync(file, "utf8")
    .replace(/\/\*\*(?:(?!\*\/)[\s\S])*@internal[\s\S]*?\*\/\s*export\s[^\n]*/g, "")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/^\s*\/\/.*$/gm, "")
  const names = []
  const target = (spec) => join(dirname(file), spec)
  for (const m of text.matchAll(/export\s+\*\s+as\s+(\w+)\s+from\s+"([^"]+)"/g)) {
    names.push(m[1], ...namesOf(target(m[2])).map((n) => `${m[1]}.${n}`))
  }
  for (const m of text.matchAll(/export\s+\*\s+from\s+"([^"]+)"/g)) names.push(...namesOf(target(m[1])))
  for (const m of text.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}(?:\s+from\s+"([^"]+)")?/g)) {
    for (const item of m[1].split(",").map((s) => s.trim()).filter(Boolean)) {
      names.push(item.replace(/^type\s+/, "").split(/\s+as\s+/).pop())
    }
  }
  for (
    const m of text.matchAll(
      /export\s+(?:declare\s+)?(?:abstract\s+)?(?:const|let|function\*?|class|type|interface|enum|namespace)\s+(\w+)/g
    )
  ) {
    names.push(m[1])
  }
  const unique = [...new Set(names)]
  cache.set(file, unique)
  return unique
}

let total = 0
for (const [subpath, entry] of Object.entries(pkg.exports)) {
  const source = typeof entry === "object" ? entry["effect-agent-source"] : undefined
  if (source === undefined) continue
  let names
  try {
    names = namesOf(join(root, source))
  } catch {
    console.log(`${subpath}: missing ${source}`)
    continue
  }
  total += names.length
  console.log(`${subpath}: ${names.length}${verbose ? `\n  ${names.join("\n  ")}` : ""}`)
}
console.log(`total: ${total}`)
