/**
 * A throwaway PostgreSQL server for the cluster tests and the benchmark: `initdb` into a temporary folder,
 * `postgres` on a free loopback port, the folder removed at the end. The binaries are found on PATH, then in
 * `$POSTGRES_BIN`, then in the newest `/usr/lib/postgresql/<version>/bin` (Debian's `postgresql` package).
 * PostgreSQL refuses to run as root, so under root it runs as the `postgres` user the package creates.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"

/** The folder holding `initdb` and `postgres`, or undefined when PostgreSQL is not installed. */
export const findPostgresBin = (): string | undefined => {
  const candidates: Array<string> = []
  if (process.env.POSTGRES_BIN) candidates.push(process.env.POSTGRES_BIN)
  for (const dir of (process.env.PATH ?? "").split(delimiter)) if (dir !== "") candidates.push(dir)
  const debian = "/usr/lib/postgresql"
  if (existsSync(debian)) {
    const versions = readdirSync(debian).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))
    for (const version of versions) candidates.push(join(debian, version, "bin"))
  }
  const found = candidates.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "postgres")))
  // PATH may hold links to a few of the programs (e.g. /usr/local/bin/initdb): the real folder has them all.
  return found === undefined ? undefined : dirname(realpathSync(join(found, "initdb")))
}

/** A free loopback port (the kernel's choice; closed again before PostgreSQL binds it). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** A running PostgreSQL server. */
export interface Postgres {
  readonly url: string
  readonly port: number
  /** Stops the server and removes its folder. */
  readonly stop: () => Promise<void>
}

const owner = (): { uid: number; gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim())
  const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim())
  return { uid, gid }
}

/** Starts PostgreSQL in a new temporary folder; rejects with the server's output if it does not come up. */
export const startPostgres = async (): Promise<Postgres> => {
  const bin = findPostgresBin()
  if (bin === undefined) {
    throw new Error("PostgreSQL is not installed (no initdb found; install the Debian package postgresql)")
  }
  const root = mkdtempSync(join(tmpdir(), "effect-agent-pg-"))
  const data = join(root, "data")
  const user = owner()
  if (user !== undefined) {
    chmodSync(root, 0o755)
    chownSync(root, user.uid, user.gid)
  }
  const as = user === undefined ? {} : { uid: user.uid, gid: user.gid }
  execFileSync(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"], {
    ...as,
    stdio: "pipe"
  })
  const port = await freePort()
  const child: ChildProcess = spawn(join(bin, "postgres"), [
    "-D",
    data,
    "-p",
    String(port),
    "-k",
    root,
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    "fsync=off",
    "-c",
    "synchronous_commit=off",
    "-c",
    "full_page_writes=off",
    "-c",
    "max_connections=200"
  ], { ...as, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes("ready to accept connections")) resolve()
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.on("exit", (code) => reject(new Error(`postgres exited (${code}): ${output}`)))
  })
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGINT") // fast shutdown
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))])
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      await exited
    }
    rmSync(root, { recursive: true, force: true })
  }
  try {
    await Promise.race([
      ready,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`postgres did not start: ${output}`)), 20_000))
    ])
  } catch (error) {
    await stop()
    throw error
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, stop }
}
