#!/usr/bin/env node
// The installed package runs the compiled code in dist/. A clone of the repository has no dist/ until
// `npm run build`, so there the TypeScript sources run directly (Node 22.18+ strips types; it refuses to
// inside node_modules, which is why an installed package needs dist/).
import { existsSync } from "node:fs"

const compiled = new URL("../dist/cli/main.js", import.meta.url)
const entry = existsSync(compiled) ? compiled.href : new URL("../src/cli/main.ts", import.meta.url).href
const { runAsProcess } = await import(entry)
runAsProcess()
