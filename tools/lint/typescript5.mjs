import { createRequire, registerHooks } from "node:module"
import { pathToFileURL } from "node:url"

// In this process every TypeScript is the 5.x of this folder: npm hoists packages that do not pin it
// (@effect/eslint-plugin, which imports @typescript-eslint/utils without declaring it; ts-api-utils, whose peer
// range the project's TypeScript 7 satisfies) to the root node_modules, where `typescript` is 7 (no compiler API).
const require = createRequire(import.meta.url)
const fromHere = (specifier) =>
  specifier === "typescript" || specifier.startsWith("typescript/") || specifier.startsWith("@typescript-eslint/")
registerHooks({
  resolve: (specifier, context, next) => {
    if (!fromHere(specifier)) return next(specifier, context)
    const isImport = context.conditions?.includes("import") ?? false
    try {
      const url = isImport ? import.meta.resolve(specifier) : pathToFileURL(require.resolve(specifier)).href
      return { url, shortCircuit: true }
    } catch {
      return next(specifier, context) // not installed here: hoisted, and so free of TypeScript itself
    }
  }
})
