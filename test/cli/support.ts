/**
 * Shared set-up of the command-line tests: runs `src/cli/main.ts` as a real subprocess (on Node 22) or
 * in-process on test streams ({@link runCliInProcess}), makes temporary workspaces, parses `--json` output
 * and loads session files with `Session.load`.
 *
 * Nothing here asserts on timing: the machine may be loaded, so every wait is bounded only by a generous
 * timeout that kills the child (and fails the test) instead of hanging.
 */
import { NodeServices } from "@effect/platform-node"
import {
  type Cause,
  Clock,
  ConfigProvider,
  Console,
  Duration,
  Effect,
  Exit,
  FileSystem,
  Layer,
  Option,
  Queue,
  Runtime,
  Sink,
  Stdio,
  Stream,
  Terminal
} from "effect"
import { type ChildProcess, type ChildProcessWithoutNullStreams, execFileSync, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { format } from "node:util"
import { projectSlug } from "../../src/cli/SessionStore.ts"
import { type AssistantMessage, emptyUsage, type Message } from "../../src/Message.ts"
import * as Session from "../../src/Session.ts"
import { SCRIPT } from "../support/components.ts"

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

/** The open standard input of an in-process run. */
export interface InProcessStdin {
  readonly write: (text: string) => void
  readonly end: () => void
}

export interface InProcessOptions {
  readonly env?: Record<string, string | undefined>
  /**
   * Standard input: what a pipe holds before it closes (default: nothing, as {@link runProcess} gives), or
   * `"open"`: a pipe the test writes to and ends through the `stdin` handed to `onStart` and `onLine`.
   */
  readonly stdin?: string | "open"
  /** Called once before the command starts, with its open standard input. */
  readonly onStart?: (stdin: InProcessStdin) => void
  /** Called with each complete stdout line as it is written (and the open standard input). */
  readonly onLine?: (line: string, stdin: InProcessStdin) => void
  readonly timeoutMs?: number
  /** Every pause as long as it is written; by default short ones take no time (see {@link runCliInProcess}). */
  readonly realTime?: boolean
  /**
   * Standard input and output are this terminal (see {@link testTerminal}) instead of pipes: the run sees a
   * person at a terminal, reads its keys and displays on it (standard error stays captured apart).
   */
  readonly terminal?: TestTerminal
}

/** Modifiers of a key pressed on a {@link TestTerminal}. */
export interface KeyModifiers {
  readonly ctrl?: boolean
  readonly meta?: boolean
  readonly shift?: boolean
}

/**
 * A terminal for an in-process run: the `Terminal` service with keys the test presses (the events Node's
 * terminal gives, bracketed-paste markers included) and what the run displayed. Like the command line's own
 * Node terminal, no key ends a reader's input, unless `endsInputAtQuitKeys`: then, as `NodeTerminal.layer`
 * does, it ends after Esc, Ctrl-C or Ctrl-D, and keys pressed before the next reader opens are lost. Keys
 * pressed while no one reads wait for the next reader, as they wait in the terminal's buffer.
 */
export interface TestTerminal {
  /** Types text, one key per character. */
  readonly type: (text: string) => void
  /** Presses a named key (`return`, `escape`, `up`, `tab`, `c` with `ctrl`...). */
  readonly press: (name: string, modifiers?: KeyModifiers) => void
  /** Pastes text, between the paste brackets (`paste-start`, `paste-end`); `\n` arrives as Enter. */
  readonly paste: (text: string) => void
  /** Ends the terminal's input (the terminal closed). */
  readonly end: () => void
  /** Resizes the terminal; resolves once every reader of its size has taken the new one. */
  readonly resize: (size: Terminal.Size) => Promise<void>
  /** Resolves once a reader whose input has not ended is open (after a quit key, the run's next one). */
  readonly reading: () => Promise<void>
  /** Everything displayed so far, as written (escape sequences included). */
  readonly output: () => string
  /**
   * Resolves once the plain text (no escape sequences, no carriage returns) displayed after the previous
   * match shows `pattern`, with that text up to the end of this match; rejects after `timeoutMs`.
   */
  readonly waitFor: (pattern: string | RegExp, timeoutMs?: number) => Promise<string>
  /** The `Terminal` service of the run, writing what is displayed to `write` too. */
  readonly service: (write: (text: string) => void) => Terminal.Terminal
}

/** A {@link TestTerminal} of this size. */
export const testTerminal = (
  options: { readonly size?: Terminal.Size; readonly endsInputAtQuitKeys?: boolean } = {}
): TestTerminal => {
  let size = options.size ?? { columns: 100, rows: 40 }
  const sizeReaders = new Set<Queue.Queue<Terminal.Size, Cause.Done>>()
  let displayed = ""
  let seen = 0
  let ended = false
  const waiting: Array<Terminal.UserInput> = []
  const readers = new Set<Queue.Queue<Terminal.UserInput, Cause.Done>>()
  const endedReaders = new WeakSet<Queue.Queue<Terminal.UserInput, Cause.Done>>()
  const quits = ({ key }: Terminal.UserInput) =>
    options.endsInputAtQuitKeys === true &&
    (key.name === "escape" || (key.ctrl && (key.name === "c" || key.name === "d")))
  const deliver = (input: Terminal.UserInput) => {
    if (readers.size === 0) return void waiting.push(input)
    for (const reader of readers) {
      Queue.offerUnsafe(reader, input)
      if (quits(input)) {
        Queue.endUnsafe(reader)
        endedReaders.add(reader)
      }
    }
  }
  const event = (name: string, sequence: string | undefined, modifiers: KeyModifiers = {}) =>
    deliver({
      input: Option.fromUndefinedOr(sequence),
      key: { name, ctrl: modifiers.ctrl === true, meta: modifiers.meta === true, shift: modifiers.shift === true }
    })
  const NAMED: Record<string, string> = {
    return: "\r",
    enter: "\r",
    tab: "\t",
    escape: "\x1b",
    backspace: "\x7f",
    space: " "
  }
  const typeText = (text: string) => {
    for (const char of text) {
      if (char === "\n" || char === "\r") event("return", "\r")
      else if (char === "\t") event("tab", "\t")
      else if (char === " ") event("space", " ")
      else event(/^[a-z0-9]$/i.test(char) ? char.toLowerCase() : "", char, { shift: /^[A-Z]$/.test(char) })
    }
  }
  const plain = (text: string) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "")
  return {
    type: typeText,
    press: (name, modifiers) => {
      const ctrlChar = modifiers?.ctrl === true && /^[a-z]$/.test(name)
        ? String.fromCharCode(name.charCodeAt(0) - 96)
        : undefined
      const sequence = ctrlChar ?? NAMED[name] ?? (name.length === 1 ? name : undefined)
      event(name, modifiers?.meta === true && sequence !== undefined ? "\x1b" + sequence : sequence, modifiers)
    },
    paste: (text) => {
      event("paste-start", "\x1b[200~")
      typeText(text)
      event("paste-end", "\x1b[201~")
    },
    end: () => {
      ended = true
      for (const reader of readers) Queue.endUnsafe(reader)
    },
    resize: async (next) => {
      size = next
      for (const queue of sizeReaders) Queue.offerUnsafe(queue, next)
      const deadline = Date.now() + 30_000
      while ([...sizeReaders].some((queue) => Queue.sizeUnsafe(queue) > 0)) {
        if (Date.now() > deadline) throw new Error("the resize was never read")
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    },
    reading: async () => {
      const deadline = Date.now() + 30_000
      while (![...readers].some((reader) => !endedReaders.has(reader))) {
        if (Date.now() > deadline) throw new Error("no reader of the terminal's input opened")
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    },
    output: () => displayed,
    waitFor: async (pattern, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs
      while (true) {
        const text = plain(displayed).slice(seen)
        const found = typeof pattern === "string" ? undefined : pattern.exec(text)
        const match = typeof pattern === "string"
          ? { index: text.indexOf(pattern), length: pattern.length }
          : { index: found?.index ?? -1, length: found?.[0].length ?? 0 }
        if (match.index >= 0) {
          // The next wait looks after this match: what was displayed with it (the next prompt) still counts.
          seen += match.index + match.length
          return text.slice(0, match.index + match.length)
        }
        if (Date.now() > deadline) throw new Error(`the terminal never showed ${String(pattern)}; it shows:\n${text}`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    },
    service: (write) =>
      Terminal.make({
        columns: Effect.sync(() => size.columns),
        rows: Effect.sync(() => size.rows),
        size: Effect.gen(function*() {
          const queue = yield* Queue.sliding<Terminal.Size, Cause.Done>(1)
          yield* Queue.offer(queue, size)
          sizeReaders.add(queue)
          yield* Effect.addFinalizer(() => Effect.sync(() => sizeReaders.delete(queue)))
          return queue
        }),
        readInput: Effect.gen(function*() {
          const reader = yield* Queue.unbounded<Terminal.UserInput, Cause.Done>()
          yield* Effect.addFinalizer(() => Effect.sync(() => readers.delete(reader)))
          if (ended) {
            yield* Queue.end(reader)
            return reader
          }
          readers.add(reader)
          for (const input of waiting.splice(0)) deliver(input)
          return reader
        }),
        readLine: Effect.fail(new Terminal.QuitError()),
        display: (text) =>
          Effect.sync(() => {
            displayed += text
            write(text)
          })
      })
  }
}

/** Pauses shorter than this take no time in-process: the demo model's streaming pace (15 ms a chunk). */
const QUICK_BELOW = Duration.millis(50)

/**
 * The clock of in-process runs: the real one, except that a pause shorter than {@link QUICK_BELOW} only
 * yields. The demo streams ~240 chunks 15 ms apart (3.6 s of waiting a run, the same events in the same
 * order); timeouts, the live view's redraw tick and real programs (bash's `sleep`) keep their real time.
 */
const quickClock = (real: Clock.Clock): Clock.Clock =>
  Object.assign(Object.create(real), {
    sleep: (duration: Duration.Duration) =>
      Duration.isLessThan(duration, QUICK_BELOW) ? Effect.yieldNow : real.sleep(duration)
  })

/**
 * Runs `effect-agent` with these arguments inside this process, as {@link runCli} runs it in a child: the
 * whole command (`program` of `src/cli/main.ts`, parsing and failure report included) on Node's services,
 * but with standard input a closed pipe holding `stdin`, standard output and error (the `Stdio` streams, the
 * `Terminal`'s display and the `Console`) captured, no terminal, and the environment of {@link childEnv} as
 * the configuration; pauses shorter than {@link QUICK_BELOW} take no time unless `realTime`. The exit code
 * is the one the process would exit with. For what does not depend on the process itself: signals, exit on
 * a signal, the installed bin, Node's own terminal (pseudo-terminals) and a real pipe need {@link runCli};
 * the interactive mode runs here on a {@link testTerminal} (`terminal`). Programs the run starts (bash, MCP
 * servers) inherit this process's environment, not `env`.
 */
export const runCliInProcess = async (
  args: ReadonlyArray<string>,
  options: InProcessOptions = {}
): Promise<RunResult> => {
  const { program } = await import("../../src/cli/main.ts")
  const input = Effect.runSync(Queue.unbounded<Uint8Array, Cause.Done>())
  if (options.stdin !== "open") {
    if (options.stdin !== undefined && options.stdin !== "") {
      Queue.offerUnsafe(input, new TextEncoder().encode(options.stdin))
    }
    Queue.endUnsafe(input)
  }
  const stdin: InProcessStdin = {
    write: (text) => void Queue.offerUnsafe(input, new TextEncoder().encode(text)),
    end: () => void Queue.endUnsafe(input)
  }
  let stdout = ""
  let stderr = ""
  let lineStart = 0
  const text = (chunk: string | Uint8Array) => typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8")
  const write = (chunk: string) => {
    stdout += chunk
    if (options.onLine === undefined) return
    for (let newline = stdout.indexOf("\n", lineStart); newline >= 0; newline = stdout.indexOf("\n", lineStart)) {
      const line = stdout.slice(lineStart, newline)
      lineStart = newline + 1
      options.onLine(line, stdin)
    }
  }
  const toStdout = (...values: ReadonlyArray<unknown>) => write(format(...values) + "\n")
  const toStderr = (...values: ReadonlyArray<unknown>) => void (stderr += format(...values) + "\n")
  // Node's console: log, info and debug write to stdout, error, warn and trace to stderr.
  const console: Console.Console = Object.assign(Object.create(globalThis.console), {
    log: toStdout,
    info: toStdout,
    debug: toStdout,
    error: toStderr,
    warn: toStderr,
    trace: toStderr
  })
  const onTerminal = options.terminal !== undefined
  const stdio = Stdio.make({
    args: Effect.succeed(args),
    stdin: Stream.fromQueue(input),
    stdout: () => Sink.forEach((chunk) => Effect.sync(() => write(text(chunk)))),
    stderr: () => Sink.forEach((chunk) => Effect.sync(() => void (stderr += text(chunk)))),
    stdinIsTerminal: Effect.succeed(onTerminal),
    stdoutIsTerminal: Effect.succeed(onTerminal),
    stderrIsTerminal: Effect.succeed(false)
  })
  // No terminal: input ends at once, as a closed pipe does.
  const ended = <A>() => Effect.tap(Queue.unbounded<A, Cause.Done>(), Queue.end)
  const terminal = options.terminal?.service(write) ?? Terminal.make({
    columns: Effect.succeed(0),
    rows: Effect.succeed(0),
    size: ended<Terminal.Size>(),
    readInput: ended<Terminal.UserInput>(),
    readLine: Effect.fail(new Terminal.QuitError()),
    display: (chunk) => Effect.sync(() => write(chunk))
  })
  // Standard input is a pipe (as for a child of runProcess), whatever this process's own is.
  const files = Layer.effect(
    FileSystem.FileSystem,
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      return FileSystem.make({
        ...fs,
        stat: (path) =>
          path === "/dev/stdin"
            ? Effect.map(fs.stat(ROOT), (info) => ({ ...info, type: "FIFO" as const }))
            : fs.stat(path)
      })
    })
  )
  const timeoutMs = options.timeoutMs ?? RUN_TIMEOUT_MS
  let timedOut = false
  options.onStart?.(stdin)
  const exit = await Effect.runPromiseExit(
    program.pipe(
      Effect.provide(
        Layer.mergeAll(Layer.succeed(Stdio.Stdio, stdio), Layer.succeed(Terminal.Terminal, terminal), files)
      ),
      Effect.provide(NodeServices.layer),
      Effect.provideService(Console.Console, console),
      options.realTime === true ? (effect) => effect : Effect.updateService(Clock.Clock, quickClock),
      Effect.provideService(
        ConfigProvider.ConfigProvider,
        ConfigProvider.fromEnv({ env: childEnv(options.env) as Record<string, string> })
      ),
      Effect.timeoutOrElse({
        duration: Duration.millis(timeoutMs),
        orElse: () => Effect.sync(() => void (timedOut = true))
      })
    )
  )
  if (timedOut) {
    throw new Error(
      `effect-agent ${args.join(" ")} did not finish in ${timeoutMs}ms\nstdout:\n${stdout}\nstderr:\n${stderr}`
    )
  }
  let code = 0
  Runtime.defaultTeardown(exit, (c) => void (code = c))
  return { code, signal: null, stdout, stderr }
}

/** Quotes a word for `sh -c` (used for `script -c`). */
export const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`

/**
 * Starts `effect-agent` with these arguments on a pseudo-terminal: `script -qfec` (quiet, flush, the child's
 * exit code, a command), the typescript to /dev/null and the terminal's output on the child's stdout; what is
 * written to its stdin is typed on the terminal. The caller stops it (a kill on timeout is the caller's).
 */
export const spawnOnTerminal = (args: ReadonlyArray<string>): ChildProcessWithoutNullStreams =>
  spawn(SCRIPT, ["-qfec", [NODE, MAIN, ...args].map(shellQuote).join(" "), "/dev/null"], {
    cwd: ROOT,
    env: childEnv(),
    stdio: ["pipe", "pipe", "pipe"]
  })

const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g

/** Text without its escape sequences (CSI: colours, cursor moves, clears); carriage returns are kept. */
export const stripAnsi = (text: string): string => text.replace(ANSI, "")

/** Terminal output as plain text: no escape sequences, no carriage returns. */
export const plainText = (text: string): string => stripAnsi(text).replace(/\r/g, "")

/** An assistant message of the test model (a tool-use stop unless `extra` says otherwise). */
export const assistantMessage = (
  content: AssistantMessage["content"],
  extra: Partial<AssistantMessage> = {}
): AssistantMessage => ({
  role: "assistant",
  content,
  api: "test",
  provider: "test",
  model: "test",
  usage: emptyUsage,
  stopReason: "toolUse",
  timestamp: 0,
  ...extra
})

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

/**
 * What a run wrote to stderr besides the one-line notice that `bash` runs without a sandbox, which is the
 * right output on a machine without bubblewrap: tests that check the command said nothing else use this, so
 * they hold with or without bubblewrap (the notice itself is tested in `sandbox.test.ts`).
 */
export const stderrBesidesSandboxNotice = (stderr: string): string =>
  stderr.replace(/^effect-agent: bash runs without a sandbox: .*\n?/m, "").trim()
