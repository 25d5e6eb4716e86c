/**
 * Import to first event, in a fresh process: CPU time and wall time from just before the library is imported
 * to the first event of a one-turn run through the public `agentLoop` (iterated). Like with like: ours is
 * imported from the JavaScript the package publishes (`dist/index.js`, built by `buildPackage` with the
 * package's own `tsconfig.build.json`), pi from its published JavaScript (`@mariozechner/pi-agent-core` and
 * `pi-ai`). `ours-src` imports our TypeScript sources through Node's type stripping instead (what a
 * contributor running from the repository pays), reported as a separate row.
 *
 *   node --experimental-strip-types bench/startup.ts <ours|ours-src|pi>
 */
import { execFile } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { promisify } from "node:util"
import type * as Lib from "../src/index.ts"

const here = dirname(fileURLToPath(import.meta.url))

/** Which library a startup probe loads. */
export type Side = "ours" | "ours-src" | "pi"

export interface StartupResult {
  readonly side: Side
  readonly cpu_ms: number
  readonly wall_ms: number
  readonly first_event: string
}

const measure = async (side: Side): Promise<StartupResult> => {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  let first: string
  const message = {
    role: "assistant" as const,
    content: [{ type: "text" as const, text: "hi" }],
    api: "bench",
    provider: "bench",
    model: "bench",
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
    },
    stopReason: "stop" as const,
    timestamp: 0
  }
  const prompt = { role: "user" as const, content: [{ type: "text" as const, text: "go" }], timestamp: 0 }
  if (side !== "pi") {
    const lib: typeof Lib = side === "ours"
      ? await import(join(here, "..", "dist", "index.js"))
      : await import("../src/index.ts")
    // Module paths, as the library itself imports them: the "effect" barrel would load every module.
    const Layer = await import("effect/Layer")
    const Stream = await import("effect/Stream")
    const layer = Layer.merge(
      Layer.succeed(lib.Model.Model, {
        info: { api: "bench", provider: "bench", model: "bench" },
        stream: () => Stream.succeed({ type: "done" as const, reason: "stop" as const, message })
      }),
      lib.ToolRegistry.ToolRegistry.fromEntries([])
    )
    const iterator = lib.AgentLoop.agentLoopAsyncIterable([prompt], { systemPrompt: "", messages: [] }, {}, layer)[
      Symbol.asyncIterator
    ]()
    first = (await iterator.next()).value!.type
    await iterator.return?.()
  } else {
    const pi = await import("@mariozechner/pi-agent-core")
    const ai = await import("@mariozechner/pi-ai")
    const stream = pi.agentLoop(
      [prompt],
      { systemPrompt: "", messages: [], tools: [] },
      {
        model: {
          id: "bench",
          name: "bench",
          api: "bench",
          provider: "bench",
          baseUrl: "http://localhost",
          reasoning: false,
          input: ["text"],
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
          contextWindow: 1000,
          maxTokens: 100
        },
        convertToLlm: (messages) => messages as never
      },
      undefined,
      () => {
        const s = ai.createAssistantMessageEventStream()
        s.push({ type: "done", reason: "stop", message: message as never })
        s.end()
        return s
      }
    )
    const iterator = stream[Symbol.asyncIterator]()
    first = (await iterator.next()).value!.type
  }
  const cpu = process.cpuUsage(cpu0)
  return {
    side,
    cpu_ms: Math.round((cpu.user + cpu.system) / 100) / 10,
    wall_ms: Math.round((performance.now() - t0) * 10) / 10,
    first_event: first
  }
}

const run = promisify(execFile)

/** Builds `dist/` the way `npm pack` does (`tsc -p tsconfig.build.json`), so `ours` loads what users install. */
export const buildPackage = async (): Promise<void> => {
  const root = join(here, "..")
  await run(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], {
    cwd: root,
    maxBuffer: 16 << 20
  })
}

/** Runs the probe in a fresh Node process with this process's flags. */
export const spawnStartup = async (side: Side): Promise<StartupResult> => {
  const { stdout } = await run(process.execPath, [...process.execArgv, join(here, "startup.ts"), side], {
    maxBuffer: 1 << 20
  })
  return JSON.parse(stdout.trim().split("\n").pop()!) as StartupResult
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const side = process.argv[2]
  if (side !== "ours" && side !== "ours-src" && side !== "pi") {
    console.error("usage: startup.ts <ours|ours-src|pi>")
    process.exit(2)
  }
  process.stdout.write(JSON.stringify(await measure(side)) + "\n")
}
