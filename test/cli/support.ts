/**
 * Shared set-up of the command-line tests: runs `src/cli/main.ts` as a real subprocess (on Node 22), makes
 * temporary workspaces, parses `--json` output and loads session files with `Session.load`.
 *
 * Nothing here asserts on timing: the machine may be loaded, so every wait is bounded only by a generous
 * timeout that kills the child (and fails the test) instead of hanging.
 */
import { NodeServices } from "@effect/platform-node"
import { Effect, Exit } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { projectSlug } from "../../src/cli/SessionStore.ts"
import type { Message } from "../../src/Message.ts"
import * as Session from "../../src/Session.ts"

/**
 * The project root (tests run with it as the working directory, but do not rely on that). The command's
 * entry can be overridden with EFFECT_AGENT_TEST_MAIN (e.g. to run these tests against a patched copy).
 */
export const ROOT = resolve(import.meta.dirname, "..", "..")
export const MAIN = process.env.EFFECT_AGENT_TEST_MAIN ?? join(ROOT, "src", "cli", "main.ts")

/**
 * The Node that runs the command: the project's Node 22 (the system one may be older and cannot strip
 * types), else the one running the tests.
 */
export const NODE = existsSync(join(ROOT, "node_modules", ".bin", "node"))
  ? join(ROOT, "node_modules", ".bin", "node")
  : process.execPath

/** A generous bound for one run of the command (the machine is often loaded). */
export const RUN_TIMEOUT_MS = 120_000
/** The vitest timeout of a test that runs the command once or twice. */
export const TEST_TIMEOUT_MS = 240_000

/**
 * The state folder of the children of one test file (`EFFECT_AGENT_HOME`): a temporary folder made on first
 * use, so sessions and run stores never land in the real `~/.effect-agent`. Removed when the process exits.
 */
let stateHome: string | undefined
export const testStateHome = (): string => {
  if (stateHome === undefined) {
    const made = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-cli-home-")))
    stateHome = made
    process.once("exit", () => rmSync(made, { recursive: true, force: true }))
  }
  return stateHome
}

/**
 * The environment of a child: ours without the switches that change how the command renders, with the
 * state folder of this test file unless `extra` names another.
 */
export const childEnv = (extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, EFFECT_AGENT_HOME: testStateHome() }
  delete env.EFFECT_AGENT_LIVE
  delete env.NO_COLOR
  delete env.FORCE_COLOR
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key]
    else env[key] = value
  }
  return env
}

export interface RunResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export interface RunOptions {
  readonly env?: Record<string, string | undefined>
  /** Called with each complete stdout line as it arrives, and the child (e.g. to send it a signal). */
  readonly onLine?: (line: string, child: ChildProcess) => void
  readonly timeoutMs?: number
}

/** Runs a program to completion, stdin a closed pipe (so never a terminal). */
export const runProcess = (command: string, args: ReadonlyArray<string>, options: RunOptions = {}) =>
  new Promise<RunResult>((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      env: childEnv(options.env),
      stdio: ["pipe", "pipe", "pipe"]
    })
    child.stdin.end()
    let stdout = ""
    let stderr = ""
    let pending = ""
    child.stdout.setEncoding("utf8")
    child.stderr.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => {
      stdout += chunk
      if (options.onLine === undefined) return
      pending += chunk
      let newline = pending.indexOf("\n")
      while (newline >= 0) {
        const line = pending.slice(0, newline)
        pending = pending.slice(newline + 1)
        options.onLine(line, child)
        newline = pending.indexOf("\n")
      }
    })
    child.stderr.on("data", (chunk: string) => {
      stderr += chunk
    })
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(
        new Error(
          `${command} ${args.join(" ")} did not finish in ${options.timeoutMs ?? RUN_TIMEOUT_MS}ms\n` +
            `stdout:\n${stdout}\nstderr:\n${stderr}`
        )
      )
    }, options.timeoutMs ?? RUN_TIMEOUT_MS)
    child.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resolvePromise({ code, signal, stdout, stderr })
    })
  })

/** Runs `effect-agent` with these arguments. */
export const runCli = (args: ReadonlyArray<string>, options: RunOptions = {}) =>
  runProcess(NODE, [MAIN, ...args], options)

/** Quotes a word for `sh -c` (used for `script -c`). */
export const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`

/**
 * A fresh temporary folder, made when `dir` is first read (so a skipped or filtered-out suite leaves
 * nothing behind); `cleanup` removes it.
 */
export const tempDir = (prefix: string) => {
  let made: string | undefined
  return {
    get dir(): string {
      made ??= realpathSync(mkdtempSync(join(tmpdir(), `effect-agent-cli-${prefix}-`)))
      return made
    },
    cleanup: () => {
      if (made !== undefined) rmSync(made, { recursive: true, force: true })
    }
  }
}

/** Every stdout line parsed as JSON; throws naming the line that is not JSON. */
export const parseJsonLines = (stdout: string): Array<any> =>
  stdout.split("\n").filter((line) => line.trim() !== "").map((line, index) => {
    try {
      return JSON.parse(line)
    } catch (error) {
      throw new Error(`stdout line ${index + 1} is not JSON: ${line.slice(0, 200)}`, { cause: error })
    }
  })

/** The folder the command keeps a workspace's sessions in (CLI 7.1), under a state folder. */
export const sessionFolder = (workspace: string, home: string = testStateHome()): string =>
  join(home, "sessions", projectSlug(workspace))

/** The session files the command wrote for a workspace in the state folder (CLI 7.1). */
export const defaultSessionFiles = (workspace: string, home: string = testStateHome()): Array<string> => {
  const folder = sessionFolder(workspace, home)
  return existsSync(folder) ? readdirSync(folder).filter((f) => f.endsWith(".jsonl")).map((f) => join(folder, f)) : []
}

/** The non-blank lines of a file. */
export const nonBlankLines = (file: string): Array<string> =>
  readFileSync(file, "utf8").split("\n").filter((line) => line.trim() !== "")

/** Loads a session file with the library's own `Session.load`. */
export const loadSession = (file: string): Promise<Exit.Exit<ReadonlyArray<Message>, Session.SessionFileError>> =>
  Effect.runPromise(Effect.exit(Session.load(file)).pipe(Effect.provide(NodeServices.layer)))

/** The messages of a session file, or a thrown error saying why it did not load. */
export const loadSessionOrThrow = async (file: string): Promise<ReadonlyArray<Message>> => {
  const exit = await loadSession(file)
  if (Exit.isSuccess(exit)) return exit.value
  throw new Error(`Session.load(${file}) failed: ${String(exit.cause)}`)
}

/** The `message_end` messages of an event list (the messages the transcript gained). */
export const endedMessages = (events: ReadonlyArray<any>): Array<any> =>
  events.filter((e) => e.type === "message_end").map((e) => e.message)

/** The first text of a tool result (as in `tool_execution_end.result`). */
export const resultText = (result: any): string =>
  Array.isArray(result?.content) ? result.content.map((b: any) => b.type === "text" ? b.text : "").join("\n") : ""

/** Processes (pid, command line) whose working folder is inside `folder`, found with `ps` and `/proc`. */
export const processesIn = (folder: string): Array<{ pid: number; args: string }> => {
  const out = execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
  const found: Array<{ pid: number; args: string }> = []
  for (const row of out.split("\n")) {
    const match = /^\s*(\d+)\s+(.*)$/.exec(row)
    if (match === null) continue
    const pid = Number(match[1])
    let cwd: string
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`)
    } catch {
      continue // gone, or not ours to look at
    }
    if (cwd === folder || cwd.startsWith(folder + "/")) found.push({ pid, args: match[2] })
  }
  return found
}

/** The processes still in a process group (`ps -g` lists by session, so filter on pgid). */
export const processGroupMembers = (pgid: number): Array<string> => {
  const out = execFileSync("ps", ["-eo", "pid=,pgid=,stat=,args="], { encoding: "utf8" })
  return out.split("\n").filter((row) => {
    const parts = row.trim().split(/\s+/)
    return parts.length >= 3 && Number(parts[1]) === pgid && !parts[2].startsWith("Z")
  })
}
