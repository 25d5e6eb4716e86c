/**
 * The `effect-agent` command: an agent working on a workspace folder with the built-in tools. With no
 * provider it runs the embedded demo on a sample project; with `--provider` it talks to a real model.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import {
  Cause,
  Console,
  Effect,
  Exit,
  Layer,
  Option,
  Path,
  Queue,
  Runtime,
  Schema,
  Stdio,
  SubscriptionRef,
  Terminal
} from "effect"
import { Argument, Command, Flag, Prompt } from "effect/cli"
import { realpathSync } from "node:fs"
import { pathToFileURL } from "node:url"
import * as Agent from "../Agent.ts"
import type { AgentEvent } from "../AgentEvent.ts"
import type { Message } from "../Message.ts"
import type { Model } from "../Model.ts"
import * as Session from "../Session.ts"
import type { ToolRegistry } from "../ToolRegistry.ts"
import * as BuiltinTools from "../tools/index.ts"
import { approvalHook, type ApprovalMode } from "./Approval.ts"
import { interruptedExitCode, interruptOnStopSignals, receivedSignal, stopAsCtrlC } from "./internal/signals.ts"
import { terminalSafe } from "./internal/terminalText.ts"
import * as Demo from "./Demo.ts"
import { makeJsonLineEncoder } from "./JsonLines.ts"
import type * as DurableCli from "./durable.ts"
import * as LiveView from "./LiveView.ts"
import * as Serve from "./serve.ts"
import { providerLayer, providerSettings, type ProviderSettings } from "./provider.ts"
import { existingWorkspace, promptTask, toolTimeoutSeconds } from "./startup.ts"
import { workspaceTools } from "./tools.ts"

const SYSTEM_PROMPT = [
  "You are a careful coding agent working in a workspace folder.",
  "Use the tools to look before you change anything; prefer small, exact edits.",
  "Paths are relative to the workspace root. Say plainly what you did and what failed."
].join(" ")

/** The run ended with a model error; the process exits non-zero. */
class RunFailed extends Schema.TaggedError<RunFailed>()("RunFailed", { message: Schema.String }) {}

const flags = {
  provider: Flag.Literals("provider", ["openai-compatible", "anthropic", "openai-responses", "gemini"]).pipe(
    Flag.withDescription("The model provider. Without it, the embedded scripted demo runs."),
    Flag.optional
  ),
  baseUrl: Flag.String("base-url").pipe(
    Flag.withDescription("The provider's base URL (e.g. http://127.0.0.1:11434/v1 for Ollama)."),
    Flag.optional
  ),
  model: Flag.String("model").pipe(Flag.withDescription("The model name to ask for."), Flag.optional),
  apiKey: Flag.Redacted("api-key").pipe(
    Flag.withDescription("The API key. Default: OPENAI_API_KEY or ANTHROPIC_API_KEY from the environment."),
    Flag.optional
  ),
  prompt: Flag.String("prompt").pipe(
    Flag.withAlias("p"),
    Flag.withDescription("The task. Without it: the demo task, or an interactive prompt when a provider is set."),
    Flag.optional
  ),
  workspace: Flag.String("workspace").pipe(
    Flag.withAlias("w"),
    Flag.withDescription(
      "The folder the tools work in; it must exist. Default: a new sample project in a temporary folder (demo), or the current folder (with a provider)."
    ),
    Flag.optional
  ),
  yes: Flag.Boolean("yes").pipe(
    Flag.withAlias("y"),
    Flag.withDescription("Allow write, edit and bash without asking."),
    Flag.withDefault(false)
  ),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print every event as a JSON line instead of the live view."), Flag.withDefault(false)),
  session: Flag.String("session").pipe(
    Flag.withDescription("Save the transcript to this JSON-lines file. Default: a new file in <workspace>/.effect-agent/sessions/."),
    Flag.optional
  ),
  resume: Flag.String("resume").pipe(
    Flag.withDescription("Continue the transcript saved in this session file (and keep appending to it)."),
    Flag.optional
  ),
  sequential: Flag.Boolean("sequential").pipe(
    Flag.withDescription("Run every tool call of a response one at a time."),
    Flag.withDefault(false)
  ),
  sandbox: Flag.Literals("sandbox", ["auto", "require", "off"]).pipe(
    Flag.withDescription(
      "Confine bash with bubblewrap: auto (when it works here, else say so and run unconfined), require, or off."
    ),
    Flag.withDefault("auto")
  ),
  allowNetwork: Flag.Boolean("allow-network").pipe(
    Flag.withDescription("Let sandboxed bash commands use the network."),
    Flag.withDefault(false)
  ),
  bwrap: Flag.String("bwrap").pipe(
    Flag.withDescription("The bubblewrap program for the sandbox (default: bwrap on PATH)."),
    Flag.withDefault("bwrap")
  ),
  durable: Flag.Boolean("durable").pipe(
    Flag.withDescription("Run the task as a durable run in the run store and print its id; `resume` continues it."),
    Flag.withDefault(false)
  ),
  store: Flag.String("store").pipe(
    Flag.withDescription("The run store for --durable, runs and resume. Default: $EFFECT_AGENT_HOME/runs.db."),
    Flag.optional
  ),
  toolTimeout: Flag.Int("tool-timeout").pipe(
    Flag.withDescription("Seconds a tool call may run before it is stopped, a positive whole number (default: 120)."),
    Flag.withDefault(120)
  ),
  keep: Flag.Boolean("keep").pipe(
    Flag.withDescription("Keep the demo's temporary folder (and its session) after the run; by default it is removed."),
    Flag.withDefault(false)
  )
}

type Options = Command.Command.Config.Infer<typeof flags>

/**
 * The workspace folder: the given one (which must exist), the current folder (provider), or a fresh
 * sample project in a temporary folder (demo) that is removed when the run's scope closes unless `--keep`.
 */
const resolveWorkspace = Effect.fn("resolveWorkspace")(function*(given: string | undefined, demo: boolean, options: Options) {
  const path = yield* Path.Path
  if (given === undefined && demo) {
    return yield* Demo.temporaryWorkspace(options.keep, (root, removed) => {
      const line = terminalSafe(removed ? `demo folder removed: ${root} (--keep keeps it)` : `demo folder kept: ${root}`)
      // With --json, stdout holds only events: where a kept folder is goes to stderr, a removal is not told.
      return !options.json ? Console.log(line) : removed ? Effect.void : Console.error(`effect-agent: ${line}`)
    })
  }
  const root = given ?? path.resolve(".")
  if (demo) yield* Demo.writeSampleProject(root)
  return root
})

/** The model: a real provider when one is named, else the demo. */
const modelLayer = (settings: ProviderSettings | undefined): Layer.Layer<Model> =>
  settings === undefined ? Demo.demoModel : providerLayer(settings)

/**
 * Every check of the start-up input, then the workspace, the provider settings and the tools (with the bash
 * sandbox tried once, so a missing sandbox is said once and `require` fails before anything runs). Nothing is
 * created or run until the input is known to be usable.
 */
const prepare = Effect.fn("prepare")(function*(options: Options, demo: boolean) {
  const settings = Option.isSome(options.provider)
    ? yield* providerSettings(options.provider.value, {
      baseUrl: Option.getOrUndefined(options.baseUrl),
      model: Option.getOrUndefined(options.model),
      apiKey: Option.getOrUndefined(options.apiKey)
    })
    : undefined
  yield* toolTimeoutSeconds(options.toolTimeout)
  if (Option.isSome(options.prompt)) yield* promptTask(options.prompt.value)
  const given = Option.isSome(options.workspace) ? yield* existingWorkspace(options.workspace.value) : undefined
  const root = yield* resolveWorkspace(given, demo, options)
  const sandboxSettings = { mode: options.sandbox, allowNetwork: options.allowNetwork, bwrap: options.bwrap } as const
  const sandbox = yield* BuiltinTools.resolveSandbox(sandboxSettings, root)
  if (sandbox._tag === "Unconfined" && options.sandbox === "auto") {
    yield* Console.error(`effect-agent: bash runs without a sandbox: ${terminalSafe(sandbox.reason)}`)
  }
  const tools = workspaceTools(root, { ...sandboxSettings, mode: sandbox._tag === "Sandboxed" ? "require" : "off" })
  return { root, settings, tools }
})

/**
 * Throws away keys typed before a question appears, so a stray "y" cannot approve a command the person has
 * not seen. Keys typed in the short settling window are dropped too.
 */
const discardTypeAhead = Effect.scoped(
  Effect.gen(function*() {
    const terminal = yield* Terminal.Terminal
    const input = yield* terminal.readInput
    yield* Effect.sleep("50 millis")
    yield* Queue.clear(input)
  })
)

const view = (options: Options) =>
  Effect.gen(function*() {
    const stdio = yield* Stdio.Stdio
    const terminal = yield* Terminal.Terminal
    const isTty = yield* stdio.stdoutIsTerminal
    const force = process.env.EFFECT_AGENT_LIVE === "1"
    const live = !options.json && (isTty || force)
    const color = live && process.env.NO_COLOR === undefined
    const reported = isTty ? yield* terminal.columns : 0
    const columns = reported >= 40 ? reported : 100
    if (options.json) {
      const encoder = makeJsonLineEncoder()
      return {
        handle: (event: AgentEvent) => Effect.sync(() => void process.stdout.write(encoder.encode(event) + "\n")),
        pause: <A, E, R>(effect: Effect.Effect<A, E, R>) => effect,
        close: Effect.void
      } satisfies LiveView.LiveView
    }
    return yield* LiveView.make({ live, color, columns, write: (text) => void process.stdout.write(text) })
  })

const session = Effect.fn("session")(function*(options: Options, root: string, demo: boolean, temporary: boolean) {
  const path = yield* Path.Path
  const stdio = yield* Stdio.Stdio
  const say = (line: string) => options.json ? Effect.void : Console.log(terminalSafe(line))

  const resumePath = Option.isSome(options.resume) ? path.resolve(options.resume.value) : undefined
  // Read (and validate) before anything is written or locked: a bad file is refused untouched.
  const saved = resumePath === undefined ? undefined : yield* Session.read(resumePath)
  const sessionPath = Option.isSome(options.session)
    ? path.resolve(options.session.value)
    : resumePath ?? (yield* Session.newSessionPath(path.join(root, ".effect-agent", "sessions")))
  // Locks the file for this run (another agent on it is refused) and drops a line cut by a crash.
  const transcript = yield* Session.writer(sessionPath)
  if (saved?.cutLine !== undefined) {
    yield* Console.error(`effect-agent: warning: ${terminalSafe(Session.cutLineWarning(resumePath!, saved.cutLine))}`)
  }
  // Resuming the locked file itself: read it again now that no other agent can be adding to it.
  const resumed: ReadonlyArray<Message> = saved === undefined
    ? []
    : resumePath === sessionPath
    ? (yield* Session.read(sessionPath)).messages
    : saved.messages
  // Resuming into another file: that file gets the whole transcript, not only what this run adds.
  if (resumePath !== undefined && resumePath !== sessionPath) {
    for (const message of resumed) yield* transcript.append(message)
  }

  const ui = yield* view(options)
  const interactive = (yield* stdio.stdinIsTerminal) && (yield* stdio.stdoutIsTerminal)
  const promptEnvironment = yield* Effect.context<Prompt.Environment>()
  const approvals: ApprovalMode = options.yes
    ? { _tag: "AllowAll" }
    : interactive
    ? {
      _tag: "Ask",
      ask: (question) =>
        ui.pause(Effect.andThen(discardTypeAhead, Prompt.run(Prompt.Confirm({ message: question, initial: false }))))
          .pipe(
            // Ctrl-C (or Ctrl-D) at the question stops the run as Ctrl-C does anywhere else: it is not a "no".
            Effect.catchTag("QuitError", () => stopAsCtrlC),
            Effect.catch(() => Effect.succeed(false)),
            Effect.provide(promptEnvironment)
          )
    }
    : { _tag: "NoTerminal" }

  const removed = temporary && !options.keep
  yield* say(
    `workspace: ${root}${
      demo ? ` (sample project, scripted demo model${removed ? "; removed at the end, --keep keeps it" : ""})` : ""
    }`
  )
  yield* say(`session:   ${sessionPath}${resumed.length > 0 ? ` (resumed, ${resumed.length} messages)` : ""}`)

  const agent = yield* Agent.make({
    systemPrompt: SYSTEM_PROMPT,
    messages: resumed,
    toolExecution: options.sequential ? "sequential" : "parallel",
    timeout: `${options.toolTimeout} seconds`,
    beforeToolCall: approvalHook(approvals)
  })
  yield* agent.subscribe((event) => ui.handle(event))
  yield* agent.subscribe((event) => event.type === "message_end" ? transcript.append(event.message) : Effect.void)

  const runTask = (task: string) =>
    Effect.gen(function*() {
      yield* say(`\n› ${task}\n`)
      yield* agent.prompt(task)
      yield* ui.close
    })

  if (Option.isSome(options.prompt)) yield* runTask(options.prompt.value)
  else if (demo) yield* runTask(Demo.DEMO_TASK)
  else if (interactive) {
    while (true) {
      const task = yield* ui.pause(Prompt.run(Prompt.String({ message: "Task (empty to quit)" }))).pipe(
        Effect.catch(() => Effect.succeed(""))
      )
      if (task.trim() === "") break
      yield* runTask(task)
    }
  } else {
    return yield* new RunFailed({ message: "No task: pass --prompt, or run in a terminal to type one." })
  }

  const state = yield* SubscriptionRef.get(agent.state)
  const last = state.messages.findLast((m) => m.role === "assistant")
  if (!removed) yield* say(`\nsession saved: ${sessionPath}`)
  if (last !== undefined && last.role === "assistant" && last.stopReason === "error") {
    return yield* new RunFailed({ message: `The model failed: ${String(last.errorMessage)}` })
  }
}, (effect) => Effect.scoped(effect))

/**
 * The command's body. Ctrl-C interrupts it: the agent aborts the run, every started tool call gets its
 * result, the session file already holds every completed message, and the process exits with 130.
 */
const run = Effect.fn("effect-agent")(function*(options: Options) {
  const demo = Option.isNone(options.provider)
  const { root, settings, tools } = yield* prepare(options, demo)
  if (options.durable) {
    const task = Option.getOrElse(options.prompt, () => demo ? Demo.DEMO_TASK : "")
    if (task === "") return yield* new RunFailed({ message: "--durable needs a task: pass --prompt." })
    return yield* Effect.asVoid(Effect.flatMap(durableCli, (cli) => cli.runTask(durableTask(options, settings, tools), task)))
  }
  yield* session(options, root, demo, demo && Option.isNone(options.workspace)).pipe(
    Effect.provide(Layer.mergeAll(modelLayer(settings), tools)),
    Effect.onInterrupt(() => {
      const signal = receivedSignal()
      return Console.error(`\ninterrupted${signal === undefined ? "" : ` (${signal})`}: the run was aborted and the session saved`)
    })
  )
}, (effect) => Effect.scoped(effect))

/** The durable-run commands, loaded on first use: `node:sqlite` warns on stderr when it is loaded at all. */
const durableCli = Effect.promise(() => import("./durable.ts"))

/** A durable run's settings from the flags (approvals: `--yes`, else calls needing one are refused). */
const durableTask = (
  options: Options,
  settings: ProviderSettings | undefined,
  tools: Layer.Layer<ToolRegistry, unknown>
): DurableCli.DurableTask => ({
  store: Option.getOrUndefined(options.store),
  json: options.json,
  systemPrompt: SYSTEM_PROMPT,
  config: {
    toolExecution: options.sequential ? "sequential" : "parallel",
    timeout: `${options.toolTimeout} seconds`,
    beforeToolCall: approvalHook(options.yes ? { _tag: "AllowAll" } : { _tag: "NoTerminal" })
  },
  model: modelLayer(settings),
  tools
})

/** The `effect-agent` command (exported so tests can run it in-process with `Command.runWith`). */
export const command = Command.make("effect-agent", flags, run).pipe(
    Command.withDescription(
      "An agent that works on a folder with built-in tools (read, ls, find, grep, write, edit, bash). Without --provider it runs a scripted demo on a sample project."
    )
  )

const runsCommand = Command.make("runs", { store: flags.store, json: flags.json }, (options) =>
  Effect.flatMap(durableCli, (cli) => cli.listRuns(Option.getOrUndefined(options.store), options.json))).pipe(
    Command.withDescription("List the runs of the run store (--store), newest first, with their status.")
  )

// The run's model and tools are not stored (an API key must not be): pass the same provider and workspace.
const resumeCommand = Command.make("resume", { ...flags, runId: Argument.String("run-id") }, (options) =>
  Effect.gen(function*() {
    const { settings, tools } = yield* prepare(options, Option.isNone(options.provider))
    const cli = yield* durableCli
    yield* cli.resumeRun(durableTask(options, settings, tools), options.runId)
  }).pipe(Effect.scoped)).pipe(
    Command.withDescription("Continue a durable run after a crash or Ctrl-C; finished steps are not repeated.")
  )

const serveCommand = Serve.makeCommand({
  provider: flags.provider, baseUrl: flags.baseUrl, model: flags.model, apiKey: flags.apiKey, sandbox: flags.sandbox,
  allowNetwork: flags.allowNetwork, bwrap: flags.bwrap, toolTimeout: flags.toolTimeout, sequential: flags.sequential
})

const app = command.pipe(Command.withSubcommands([runsCommand, resumeCommand, serveCommand]))

/**
 * Failures are reported here, on stderr and as one line (stdout stays clean for `--json`); the runtime's
 * own report (on stdout, with a stack trace) is turned off. Errors the CLI parser already printed are
 * marked as reported and not repeated.
 */
const reportFailure = (cause: Cause.Cause<unknown>) => {
  if (Cause.hasInterruptsOnly(cause)) return Effect.void
  const error = Cause.squash(cause)
  if (!Runtime.getErrorReported(error)) return Effect.void
  return Console.error(`effect-agent: ${terminalSafe(error instanceof Error ? error.message : Cause.pretty(cause))}`)
}

/** Runs the command on `process.argv`. */
export const main = Command.run(app, { version: "0.1.0" }).pipe(
  Effect.tapCause(reportFailure),
  Effect.provide(NodeServices.layer)
)

/**
 * Runs {@link main} as the process. SIGINT, SIGTERM and SIGHUP each abort the run cleanly; the exit code is
 * then 128 + the signal's number (130 for Ctrl-C).
 */
export const runAsProcess = (): void =>
  NodeRuntime.runMain(interruptOnStopSignals(main), {
    disableErrorReporting: true,
    teardown: (exit, onExit) =>
      Runtime.defaultTeardown(exit, (code) => onExit(code === 130 && Exit.hasInterrupts(exit) ? interruptedExitCode() : code))
  })

/** Whether Node was started with this file as its program (`node src/cli/main.ts`, `npm start`). */
const isProgram = (): boolean => {
  try {
    return process.argv[1] !== undefined && pathToFileURL(realpathSync(process.argv[1])).href === import.meta.url
  } catch {
    return false // no such file: Node was started some other way (`-e`, a REPL)
  }
}

// The installed `bin` calls `runAsProcess` itself, and a test importing this module runs nothing.
if (isProgram()) runAsProcess()
