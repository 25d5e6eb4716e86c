/**
 * Shared set-up of the MCP tests: the real servers from npm (`@modelcontextprotocol/server-everything`,
 * `@modelcontextprotocol/server-filesystem`, installed as dev dependencies) and our misbehaving fixture, all
 * run on the project's Node 22; a process spawner that remembers every process it started, so a test can
 * check that none is left running; and a helper to tell whether a process is alive.
 */
import { NodeServices } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { ChildProcessSpawner } from "effect/process"
import { spawn } from "node:child_process"
import { join } from "node:path"
import * as McpServers from "../../src/mcp/McpServers.ts"
import { NODE, ROOT } from "../cli/support.ts"

export { NODE, ROOT }

const packageFile = (name: string, ...path: ReadonlyArray<string>) =>
  join(ROOT, "node_modules", "@modelcontextprotocol", name, ...path)

/** The everything server's entry point (`stdio` or `streamableHttp` as its argument). */
export const EVERYTHING = packageFile("server-everything", "dist", "index.js")
/** The filesystem server's entry point (the allowed folders as its arguments). */
export const FILESYSTEM = packageFile("server-filesystem", "dist", "index.js")
/** Our own stdio server that misbehaves on purpose: its `crash` tool makes it exit during the call. */
export const MISBEHAVING = join(import.meta.dirname, "fixtures", "misbehaving-server.mjs")
/** The preload that makes an HTTP server listen on 127.0.0.1 and a free port, and print it. */
export const LOOPBACK = join(import.meta.dirname, "fixtures", "loopback.mjs")

/** The everything server over stdio. */
export const everything = () => McpServers.stdio(NODE, [EVERYTHING, "stdio"])
/** The filesystem server over stdio, allowed to work in `root`. */
export const filesystem = (root: string) => McpServers.stdio(NODE, [FILESYSTEM, root])
/** The misbehaving fixture over stdio. */
export const misbehaving = McpServers.stdio(NODE, [MISBEHAVING])

/** A process spawner (Node's) that records the id of every process it starts. */
export const recordingSpawner = () => {
  const pids: Array<number> = []
  const layer = Layer.effect(
    ChildProcessSpawner.ChildProcessSpawner,
    Effect.gen(function*() {
      const node = yield* ChildProcessSpawner.ChildProcessSpawner
      return ChildProcessSpawner.make((command) =>
        Effect.tap(node.spawn(command), (handle) => Effect.sync(() => void pids.push(handle.pid)))
      )
    })
  ).pipe(Layer.provide(NodeServices.layer))
  return { pids, layer }
}

/** Whether a process with this id is running. */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * The everything server over streamable HTTP, started for the scope on 127.0.0.1 and a free port (the
 * server itself only takes a fixed port: the loopback preload changes that). Killed when the scope closes,
 * which waits until it has exited.
 */
export const everythingOverHttp = Effect.acquireRelease(
  Effect.callback<{ readonly url: string; readonly pid: number; readonly exited: Promise<void> }, Error>((resume) => {
    const child = spawn(NODE, ["--import", LOOPBACK, EVERYTHING, "streamableHttp"], {
      cwd: ROOT,
      env: { ...process.env, PORT: "0" },
      stdio: ["ignore", "ignore", "pipe"]
    })
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    let stderr = ""
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (chunk: string) => {
      stderr += chunk
      const found = /LISTENING (\d+)/.exec(stderr)
      if (found !== null) resume(Effect.succeed({ url: `http://127.0.0.1:${found[1]}/mcp`, pid: child.pid!, exited }))
    })
    child.on("exit", (code) => resume(Effect.fail(new Error(`the HTTP server exited (${code}): ${stderr}`))))
    return Effect.promise(() => {
      child.kill("SIGKILL")
      return exited
    })
  }),
  (server) =>
    Effect.promise(() => {
      process.kill(server.pid, "SIGKILL")
      return server.exited
    }).pipe(Effect.ignore)
)
