/**
 * The `effect-agent` command: an agent working on a workspace folder with the built-in tools. With no
 * provider it runs the embedded demo on a sample project; with `--provider` it talks to a real model. The
 * task comes as words after the flags, `--prompt`, standard input, or the interactive prompt; `--print`
 * prints only the answer, `--json` every event, `--mode rpc` serves JSON commands (docs/cli.md).
 */
import { NodeRuntime, NodeServices, NodeTerminal } from "@effect/platform-node"
import * as Cause from "effect/Cause"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Prompt from "effect/cli/Prompt"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Queue from "effect/Queue"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Terminal from "effect/Terminal"
import { realpathSync } from "node:fs"
import { pathToFileURL } from "node:url"
import * as Agent from "../Agent.ts"
import type { AgentEvent } from "../AgentEvent.ts"
import { type AssistantMessage, isMessage, type Message, textOf } from "../Message.ts"
import { Model } from "../Model.ts"
import { ProviderName } from "../providers/index.ts"
import type { RunLimits } from "../RunLimits.ts"
import * as Session from "../Session.ts"
import * as TelemetryExport from "../TelemetryExport.ts"
import type { ToolRegistry } from "../ToolRegistry.ts"
import { resolveSandbox } from "../tools/bash.ts"
import * as BuiltinTools from "../tools/index.ts"
import { approvalHook, type ApprovalMode } from "./Approval.ts"
import * as Demo from "./Demo.ts"
import type * as DurableCli from "./durable.ts"
import * as Interactive from "./interactive/Interactive.ts"
import * as PromptInput from "./internal/promptInput.ts"
import { interruptedExitCode, interruptOnStopSignals, receivedSignal, stopAsCtrlC } from "./internal/signals.ts"
import { terminalSafe } from "./internal/terminalText.ts"
import { makeJsonLineEncoder } from "./JsonLines.ts"
import { limitFlags, limitsOf, stoppedLine } from "./Limits.ts"
import * as LiveView from "./LiveView.ts"
import { connectMcp, mcpFlags, mcpServers, withMcpTools } from "./mcp.ts"
import * as ProjectContext from "./ProjectContext.ts"
import { providerEnvironment, providerLayer, type ProviderSettings, providerSettings } from "./provider.ts"
import * as Rpc from "./Rpc.ts"
import * as Serve from "./serve.ts"
import * as SessionStore from "./SessionStore.ts"
import { existingWorkspace, toolTimeoutSeconds } from "./startup.ts"
import { attachFiles, resolveTask, stdinKind } from "./Task.ts"
import { workspaceTools } from "./tools.ts"
import * as Usage from "./Usage.ts"

/** The run ended with a model error; the process exits non-zero. */
class RunFailed extends Schema.TaggedError<RunFailed>()("RunFailed", { message: Schema.String }) {}

const flags = {
  provider: Flag.Literals("provider", ProviderName.literals).pipe(
    Flag.withDescription("The model provider. Without it, the embedded scripted demo runs."),
    Flag.optional
  ),
  baseUrl: Flag.String("base-url").pipe(
    Flag.withDescription("The provider's base URL (e.g. http://127.0.0.1:11434/v1 for Ollama)."),
    Flag.optional
  ),
  model: Flag.String("model").pipe(Flag.withDescription("The model name to ask for."), Flag.optional),
  apiKey: Flag.Redacted("api-key").pipe(
    Flag.withDescription(
      "The API key. Default: OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY from the environment."
    ),
    Flag.optional
  ),
  prompt: Flag.String("prompt").pipe(
    Flag.withAlias("p"),
    Flag.withDescription(
      "The task (or give it as words after the flags, or on standard input). Without one: the demo task, or an interactive prompt when a provider is set."
    ),
    Flag.optional
  ),
  print: Flag.Boolean("print").pipe(
    Flag.withDescription(
      "Print only the final answer's text (no start-up lines, no tool lanes); for scripts and pipes."
    ),
    Flag.withDefault(false)
  ),
  mode: Flag.Literals("mode", ["text", "json", "rpc"]).pipe(
    Flag.withDescription(
      "text (the default view), json (every event as a JSON line, as --json), or rpc (JSON commands on stdin, events on stdout)."
    ),
    Flag.withDefault("text")
  ),
  workspace: Flag.String("workspace").pipe(
    Flag.withAlias("w"),
    Flag.withDescription(
      "The folder the tools work in; it must exist. Default: a new sample project in a temporary folder (demo), or the current folder (with a provider)."
    ),
    Flag.optional
  ),
  systemPrompt: Flag.String("system-prompt").pipe(
    Flag.withDescription(
      "Instructions replacing the built-in ones (the project context, folder, date and tools are still given)."
    ),
    Flag.optional
  ),
  appendSystemPrompt: Flag.String("append-system-prompt").pipe(
    Flag.withDescription("Text added at the end of the system prompt."),
    Flag.optional
  ),
  yes: Flag.Boolean("yes").pipe(
    Flag.withAlias("y"),
    Flag.withDescription("Allow write, edit and bash without asking."),
    Flag.withDefault(false)
  ),
  json: Flag.Boolean("json").pipe(
    Flag.withDescription("Print every event as a JSON line instead of the live view."),
    Flag.withDefault(false)
  ),
  session: Flag.String("session").pipe(
    Flag.withDescription(
      "Save the transcript to this JSON-lines file. Default: a new file in $EFFECT_AGENT_HOME/sessions/<project>/."
    ),
    Flag.optional
  ),
  resume: Flag.String("resume").pipe(
    Flag.withOptionalValue(""),
    Flag.withDescription(
      "Continue a saved session (and keep appending to it): --resume FILE, or --resume alone to pick one of this folder's sessions."
    ),
    Flag.optional
  ),
  continue: Flag.Boolean("continue").pipe(
    Flag.withAlias("c"),
    Flag.withDescription("Continue the most recent session of this folder (a new one when there is none)."),
    Flag.withDefault(false)
  ),
  fork: Flag.String("fork").pipe(
    Flag.withOptionalValue(""),
    Flag.withDescription(
      "Start a new session with the transcript of an old one (left unchanged): --fork FILE, or --fork alone to pick one."
    ),
    Flag.optional
  ),
  images: Flag.Boolean("images").pipe(
    Flag.withDescription("Let read return images and @path attach them (--no-images for a model without image input)."),
    Flag.withDefault(true)
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
    Flag.withDescription("Keep the demo's temporary folder after the run; by default it is removed."),
    Flag.withDefault(false)
  ),
  ...mcpFlags,
  ...limitFlags
}

/** The words after the flags: the task (CLI 8.1). Only the main command takes them. */
const taskWords = {
  task: Argument.String("task").pipe(
    Argument.withDescription("The task, as words after the flags (quote it, or not). Same as --prompt."),
    Argument.variadic()
  )
}

type Options = Command.Command.Config.Infer<typeof flags>

/** How the run talks to the outside (CLI 8.3, 11.1): `--mode`, with `--json` and `--print` as shorthands. */
type OutputMode = "text" | "json" | "rpc" | "print"

const outputMode = (options: Options): OutputMode =>
  options.mode === "rpc" ? "rpc" : options.json || options.mode === "json" ? "json" : options.print ? "print" : "text"

/** Writes to standard output through the `Terminal` service; a closed output is not an error of the run. */
const displayOn = (terminal: Terminal.Terminal) => (text: string): Effect.Effect<void> =>
  terminal.display(text).pipe(Effect.catch(() => Effect.void))

/** A boolean switch from the environment: set and not empty (`NO_COLOR`), or exactly `1` (`EFFECT_AGENT_LIVE`). */
const envSwitch = (name: string, exactlyOne = false) =>
  Config.String(name).pipe(
    Config.option,
    Effect.map(Option.match({ onNone: () => false, onSome: (v) => exactlyOne ? v === "1" : v !== "" })),
    Effect.orElseSucceed(() => false)
  )

/**
 * The workspace folder: the given one (which must exist), the current folder (provider), or a fresh
 * sample project in a temporary folder (demo) that is removed when the run's scope closes unless `--keep`.
 */
const resolveWorkspace = Effect.fn("resolveWorkspace")(
  function*(given: string | undefined, demo: boolean, options: Options) {
    const path = yield* Path.Path
    if (given === undefined && demo) {
      const quiet = outputMode(options) !== "text"
      return yield* Demo.temporaryWorkspace(options.keep, (root, removed) => {
        const line = terminalSafe(
          removed ? `demo folder removed: ${root} (--keep keeps it)` : `demo folder kept: ${root}`
        )
        // With --json, stdout holds only events: where a kept folder is goes to stderr, a removal is not told.
        return !quiet ? Console.log(line) : removed ? Effect.void : Console.error(`effect-agent: ${line}`)
      })
    }
    const root = given ?? path.resolve(".")
    if (demo) yield* Demo.writeSampleProject(root)
    return root
  }
)

/** The model: a real provider when one is named, else the demo. */
const modelLayer = (settings: ProviderSettings | undefined): Layer.Layer<Model> =>
  settings === undefined ? Demo.demoModel : providerLayer(settings)

/**
 * The system prompt (CLI 6.4) and the start-up line naming what went into it (CLI 6.5): the project's
 * context files from the workspace up, the working folder, the date and the tools.
 */
const buildSystemPrompt = Effect.fn("buildSystemPrompt")(function*(options: Options, root: string) {
  const path = yield* Path.Path
  const state = yield* SessionStore.stateFolder
  const files = yield* ProjectContext.load(root, state)
  const instructions = Option.getOrUndefined(options.systemPrompt)
  const append = Option.getOrUndefined(options.appendSystemPrompt)
  const prompt = ProjectContext.systemPrompt({
    instructions,
    append,
    contextFiles: files,
    workspace: root,
    now: yield* Clock.currentTimeMillis,
    tools: BuiltinTools.builtinTools.map((tool) => ({ name: tool.name, description: tool.description }))
  })
  const relative = (file: string) => {
    const folder = path.dirname(file)
    const above = root === folder || root.startsWith(folder + path.sep)
    return above ? path.relative(root, file) : file
  }
  const line = ProjectContext.describeLoaded(relative, files, {
    instructions: instructions !== undefined,
    append: append !== undefined
  })
  return { prompt, line }
})

/**
 * Every check of the start-up input, then the task, the workspace, the provider settings, the system prompt
 * and the tools (with the bash sandbox tried once, so a missing sandbox is said once and `require` fails
 * before anything runs). Nothing is created or run until the input is known to be usable. `words` is
 * `undefined` for commands that take no task (`resume <run-id>`).
 */
const prepare = Effect.fn("prepare")(
  function*(options: Options, demo: boolean, words: ReadonlyArray<string> | undefined) {
    const settings = Option.isSome(options.provider)
      ? yield* providerSettings(options.provider.value, {
        baseUrl: Option.getOrUndefined(options.baseUrl),
        model: Option.getOrUndefined(options.model),
        apiKey: Option.getOrUndefined(options.apiKey)
      })
      : undefined
    yield* toolTimeoutSeconds(options.toolTimeout)
    const limits = yield* limitsOf(options)
    // `--resume FILE` (with a space) leaves FILE among the words: take it back (CLI 7.4).
    const sessionFlags = yield* SessionStore.takeFileWord(options, words ?? [])
    const servers = yield* mcpServers(options)
    const given = Option.isSome(options.workspace) ? yield* existingWorkspace(options.workspace.value) : undefined
    // In RPC mode standard input carries the commands, never a task. The demo has its own task: it reads
    // standard input only from a pipe or a file, never from a socket a parent may hold open (CLI 8.2).
    const stdin = yield* stdinKind
    const task = words === undefined || outputMode(options) === "rpc"
      ? undefined
      : yield* resolveTask(sessionFlags.words, options.prompt, demo && stdin === "other" ? "terminal" : stdin)
    const root = yield* resolveWorkspace(given, demo, options)
    const sandboxSettings = { mode: options.sandbox, allowNetwork: options.allowNetwork, bwrap: options.bwrap } as const
    const sandbox = yield* resolveSandbox(sandboxSettings, root)
    if (sandbox._tag === "Unconfined" && options.sandbox === "auto") {
      yield* Console.error(`effect-agent: bash runs without a sandbox: ${terminalSafe(sandbox.reason)}`)
    }
    const mcp = yield* connectMcp(servers) // started in the command's scope, stopped when it ends
    const tools = withMcpTools(
      workspaceTools(root, { ...sandboxSettings, mode: sandbox._tag === "Sandboxed" ? "require" : "off" }, {
        images: options.images
      }),
      mcp
    )
    const system = yield* buildSystemPrompt(options, root)
    return { root, settings, tools, task, system, sessionFlags, needsApproval: mcp.needsApproval, limits }
  }
)

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

/** A view that shows nothing: `--print` (the answer is printed at the end) and `--mode rpc`. */
const silentView: LiveView.LiveView = { handle: () => Effect.void, pause: (effect) => effect, close: Effect.void }

/** What the run shows while it goes (CLI 5.4): the live view, JSON lines, or nothing (print, rpc). */
const view = (mode: OutputMode, usageBefore: Usage.UsageTally, display: (text: string) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    if (mode === "print" || mode === "rpc") return silentView
    if (mode === "json") {
      const encoder = makeJsonLineEncoder()
      return {
        handle: (event: AgentEvent) => display(encoder.encode(event) + "\n"),
        pause: <A, E, R>(effect: Effect.Effect<A, E, R>) => effect,
        close: Effect.void
      } as LiveView.LiveView
    }
    const stdio = yield* Stdio.Stdio
    const terminal = yield* Terminal.Terminal
    const isTty = yield* stdio.stdoutIsTerminal
    const live = isTty || (yield* envSwitch("EFFECT_AGENT_LIVE", true))
    const color = live && !(yield* envSwitch("NO_COLOR"))
    const reported = isTty ? yield* terminal.columns : 0
    const columns = reported >= 40 ? reported : 100
    return yield* LiveView.make({ live, color, columns, write: display, usageBefore })
  })

/** How write, edit and bash are approved: `--yes`, the person at the terminal, or no one (blocked). */
const approvals = (options: Options, mode: OutputMode, interactive: boolean, ui: LiveView.LiveView) =>
  Effect.gen(function*() {
    if (options.yes) return { _tag: "AllowAll" } as ApprovalMode
    if (!interactive || mode === "print" || mode === "rpc") return { _tag: "NoTerminal" } as ApprovalMode
    const promptEnvironment = yield* Effect.context<Prompt.Environment>()
    return {
      _tag: "Ask",
      ask: (question) =>
        ui.pause(
          Effect.andThen(discardTypeAhead, PromptInput.run(Prompt.Confirm({ message: question, initial: false })))
        )
          .pipe(
            // Ctrl-C (or Ctrl-D) at the question stops the run as Ctrl-C does anywhere else: it is not a "no".
            Effect.catchTag("QuitError", () => stopAsCtrlC),
            Effect.catch(() => Effect.succeed(false)),
            Effect.provide(promptEnvironment)
          )
    } as ApprovalMode
  })

type Prepared = Effect.Success<ReturnType<typeof prepare>>

/** One conversation: the session file, the agent, the task or the interactive prompt, or the RPC server. */
const session = Effect.fn("session")(
  function*(options: Options, prepared: Prepared, demo: boolean, temporary: boolean) {
    const { root, system, task } = prepared
    const stdio = yield* Stdio.Stdio
    const mode = outputMode(options)
    const say = (line: string) => mode === "text" ? Console.log(terminalSafe(line)) : Effect.void
    const interactive = (yield* stdio.stdinIsTerminal) && (yield* stdio.stdoutIsTerminal)

    // Which file is read and which is written (CLI 7.2-7.4); the picker runs here, before anything is written.
    const plan = yield* SessionStore.plan(prepared.sessionFlags, root, interactive && mode !== "rpc")
    if (plan.note !== undefined) yield* Console.error(`effect-agent: ${terminalSafe(plan.note)}`)
    const saved = plan.source === undefined ? undefined : yield* Session.read(plan.source)
    // Locks the file for this run (another agent on it is refused) and drops a line cut by a crash. The file
    // itself is made by the first message (CLI 7.5).
    const transcript = yield* Session.writer(plan.target)
    if (saved?.cutLine !== undefined) {
      yield* Console.error(
        `effect-agent: warning: ${terminalSafe(Session.cutLineWarning(plan.source!, saved.cutLine))}`
      )
    }
    // Resuming the locked file itself: read it again now that no other agent can be adding to it.
    const resumed: ReadonlyArray<Message> = saved === undefined
      ? []
      : plan.source === plan.target
      ? (yield* Session.read(plan.target)).messages
      : saved.messages
    // Resuming into another file (a fork, or --session): that file gets the whole transcript.
    if (plan.source !== undefined && plan.source !== plan.target) {
      for (const message of resumed) yield* transcript.append(message)
    }

    const display = displayOn(yield* Terminal.Terminal)
    // A person at a terminal with a provider and no task: the interactive mode (CLI 1-4).
    const tui = interactive && mode === "text" && task === undefined && prepared.settings !== undefined
      ? yield* Interactive.prepare({
        root,
        color: !(yield* envSwitch("NO_COLOR")),
        settings: prepared.settings,
        yes: options.yes,
        needsApproval: prepared.needsApproval,
        usageBefore: Usage.ofMessages(resumed)
      })
      : undefined
    const ui: LiveView.LiveView = tui?.view ?? (yield* view(mode, Usage.ofMessages(resumed), display))
    const removed = temporary && !options.keep
    yield* say(
      `workspace: ${root}${
        demo ? ` (sample project, scripted demo model${removed ? "; removed at the end, --keep keeps it" : ""})` : ""
      }`
    )
    const how = plan.how === "new" ? "" : ` (${plan.how}, ${resumed.length} messages)`
    yield* say(`session:   ${plan.target}${how}`)
    if (system.line !== undefined) yield* say(system.line)

    const agent = yield* Agent.make({
      systemPrompt: system.prompt,
      messages: resumed,
      toolExecution: options.sequential ? "sequential" : "parallel",
      timeout: `${options.toolTimeout} seconds`,
      limits: prepared.limits,
      beforeToolCall: tui?.beforeToolCall ??
        approvalHook(yield* approvals(options, mode, interactive, ui), prepared.needsApproval)
    }).pipe(Effect.provideService(Model, tui?.model ?? (yield* Model)))
    yield* agent.subscribe((event) => ui.handle(event))
    yield* agent.subscribe((event) => event.type === "message_end" ? transcript.append(event.message) : Effect.void)

    const files = yield* Effect.context<FileSystem.FileSystem | Path.Path>()
    // `--no-images`: a named image is not attached (CLI 10.5).
    const attach = (text: string) =>
      attachFiles(text, root).pipe(
        Effect.map((a) => options.images ? a : { ...a, images: [] }),
        Effect.provide(files)
      )

    if (mode === "rpc") {
      return yield* Rpc.serve({
        agent,
        lines: stdio.stdin.pipe(Stream.decodeText(), Rpc.splitCommandLines()),
        writeLine: (line) => display(line + "\n"),
        attach,
        stateExtras: { sessionFile: plan.target, workspace: root }
      })
    }

    const runTask = (text: string) =>
      Effect.gen(function*() {
        const prompt = yield* attach(text)
        yield* say(`\n› ${text}${prompt.attached.length > 0 ? `  [attached: ${prompt.attached.join(", ")}]` : ""}\n`)
        yield* agent.prompt(prompt.text, prompt.images)
        yield* ui.close
      })

    if (task !== undefined) yield* runTask(task)
    else if (demo) yield* runTask(Demo.DEMO_TASK)
    else if (tui !== undefined) yield* tui.run(agent, { sessionPath: plan.target, attach })
    else if (interactive && mode !== "print") yield* interactiveLoop(ui, runTask)
    else {
      return yield* new RunFailed({
        message:
          "No task: give it as words after the flags, with --prompt, or on standard input; or run in a terminal to type one."
      })
    }

    const state = yield* SubscriptionRef.get(agent.state)
    const last = state.messages.findLast((m): m is AssistantMessage => isMessage(m) && m.role === "assistant")
    const failed = last !== undefined && last.stopReason === "error"
    // --print: the answer's text alone on standard output (CLI 8.3); a stop for a limit said on stderr.
    if (mode === "print" && last !== undefined && !failed) {
      const answer = textOf(last)
      yield* display(answer.endsWith("\n") ? answer : answer + "\n")
      if (state.limitReached !== undefined) yield* Console.error(`effect-agent: ${stoppedLine(state.limitReached)}`)
    }
    if (!removed || mode === "text") yield* say(`\nsession saved: ${plan.target}`)
    // The interactive mode showed each failure where it happened; leaving it is not a failure (CLI 1.6).
    if (failed && tui === undefined) {
      return yield* new RunFailed({ message: `The model failed: ${String(last?.errorMessage)}` })
    }
  },
  (effect) => Effect.scoped(effect)
)

/** Tasks typed at the terminal until an empty one (the interactive editor replaces this loop). */
const interactiveLoop = <E, R>(ui: LiveView.LiveView, runTask: (task: string) => Effect.Effect<void, E, R>) =>
  Effect.gen(function*() {
    while (true) {
      const task = yield* ui.pause(PromptInput.run(Prompt.String({ message: "Task (empty to quit)" }))).pipe(
        Effect.catch(() => Effect.succeed(""))
      )
      if (task.trim() === "") break
      yield* runTask(task)
    }
  })

/**
 * The command's body. Ctrl-C interrupts it: the agent aborts the run, every started tool call gets its
 * result, the session file already holds every completed message, and the process exits with 130.
 */
const run = Effect.fn("effect-agent")(function*(options: Options & { readonly task: ReadonlyArray<string> }) {
  const demo = Option.isNone(options.provider)
  const prepared = yield* prepare(options, demo, options.task)
  if (options.durable) {
    const task = prepared.task ?? (demo ? Demo.DEMO_TASK : "")
    if (task === "") return yield* new RunFailed({ message: "--durable needs a task: pass --prompt." })
    return yield* Effect.asVoid(Effect.flatMap(durableCli, (cli) => cli.runTask(durableTask(options, prepared), task)))
  }
  yield* session(options, prepared, demo, demo && Option.isNone(options.workspace)).pipe(
    Effect.provide(Layer.mergeAll(modelLayer(prepared.settings), prepared.tools)),
    Effect.onInterrupt(() => {
      const signal = receivedSignal()
      return Console.error(
        `\ninterrupted${signal === undefined ? "" : ` (${signal})`}: the run was aborted and the session saved`
      )
    })
  )
}, (effect) => Effect.scoped(effect))

/** The durable-run commands, loaded on first use: `node:sqlite` warns on stderr when it is loaded at all. */
const durableCli = Effect.promise(() => import("./durable.ts"))

/** A durable run's settings from the flags (approvals: `--yes`, else calls needing one are refused). */
const durableTask = (
  options: Options,
  prepared: {
    readonly settings: ProviderSettings | undefined
    readonly tools: Layer.Layer<ToolRegistry, unknown>
    readonly system: { readonly prompt: string }
    readonly needsApproval: ReadonlySet<string>
    readonly limits: RunLimits
  }
): DurableCli.DurableTask => ({
  store: Option.getOrUndefined(options.store),
  json: outputMode(options) === "json",
  systemPrompt: prepared.system.prompt,
  config: {
    toolExecution: options.sequential ? "sequential" : "parallel",
    timeout: `${options.toolTimeout} seconds`,
    limits: prepared.limits,
    beforeToolCall: approvalHook(options.yes ? { _tag: "AllowAll" } : { _tag: "NoTerminal" }, prepared.needsApproval)
  },
  model: modelLayer(prepared.settings),
  tools: prepared.tools
})

/** Every environment variable the command reads, for `--help` (CLI 8.4). */
export const ENVIRONMENT: ReadonlyArray<readonly [string, string]> = [
  ["EFFECT_AGENT_HOME", "the state folder: sessions, the run store, your own AGENTS.md (default ~/.effect-agent)"],
  ...providerEnvironment,
  ["EFFECT_AGENT_LIVE", "1: redraw the live view even when stdout is not a terminal"],
  ["NO_COLOR", "set: no colours"]
]

/** The examples `--help` shows (CLI 8.4). */
export const EXAMPLES: ReadonlyArray<Command.Command.Example> = [
  { command: "effect-agent", description: "the scripted demo on a sample project (no model needed)" },
  {
    command: "effect-agent --provider anthropic --model claude-sonnet-4-5 \"fix the failing test\"",
    description: "one task in the current folder, then exit"
  },
  {
    command: "effect-agent --provider openai-compatible --base-url http://127.0.0.1:11434/v1 --model qwen3",
    description: "an interactive session with a local server"
  },
  {
    command: "git diff | effect-agent --provider anthropic --print \"review this diff\"",
    description: "the task on stdin, only the answer printed"
  },
  { command: "effect-agent --provider anthropic -c", description: "continue this folder's latest session" },
  { command: "effect-agent --provider anthropic --resume", description: "pick a session of this folder to continue" },
  { command: "effect-agent --provider anthropic \"explain @src/main.ts\"", description: "attach a file to the task" },
  { command: "effect-agent --provider anthropic --mode rpc", description: "JSON commands on stdin, events on stdout" }
]

/** The `effect-agent` command (exported so tests can run it in-process with `Command.runWith`). */
export const command = Command.make("effect-agent", { ...flags, ...taskWords }, run).pipe(
  Command.withDescription(
    "An agent that works on a folder with built-in tools (read, ls, find, grep, write, edit, bash). Without --provider it runs a scripted demo on a sample project.\n\n" +
      "Environment:\n" + ENVIRONMENT.map(([name, what]) => `  ${name.padEnd(22)} ${what}`).join("\n")
  ),
  Command.withExamples(EXAMPLES)
)

const runsCommand = Command.make(
  "runs",
  { store: flags.store, json: flags.json },
  (options) => Effect.flatMap(durableCli, (cli) => cli.listRuns(Option.getOrUndefined(options.store), options.json))
).pipe(
  Command.withDescription("List the runs of the run store (--store), newest first, with their status.")
)

// The run's model and tools are not stored (an API key must not be): pass the same provider and workspace.
const resumeCommand = Command.make(
  "resume",
  { ...flags, runId: Argument.String("run-id") },
  (options) =>
    Effect.gen(function*() {
      const prepared = yield* prepare(options, Option.isNone(options.provider), undefined)
      const cli = yield* durableCli
      yield* cli.resumeRun(durableTask(options, prepared), options.runId)
    }).pipe(Effect.scoped)
).pipe(
  Command.withDescription("Continue a durable run after a crash or Ctrl-C; finished steps are not repeated.")
)

const abortCommand = Command.make(
  "abort",
  { store: flags.store, runId: Argument.String("run-id") },
  (options) => Effect.flatMap(durableCli, (cli) => cli.abortRun(Option.getOrUndefined(options.store), options.runId))
).pipe(
  Command.withDescription("Abort a durable run of the store, in whichever process runs it (DR 3.2).")
)

const serveCommand = Serve.makeCommand({
  provider: flags.provider,
  baseUrl: flags.baseUrl,
  model: flags.model,
  apiKey: flags.apiKey,
  sandbox: flags.sandbox,
  allowNetwork: flags.allowNetwork,
  bwrap: flags.bwrap,
  toolTimeout: flags.toolTimeout,
  sequential: flags.sequential,
  ...limitFlags
})

const app = command.pipe(Command.withSubcommands([runsCommand, resumeCommand, abortCommand, serveCommand]))

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

/**
 * The whole command, run on the arguments of the `Stdio` service, with the platform's services (standard
 * streams, terminal, files, processes) left to the caller: {@link main} gives Node's, tests give their own
 * to run the command in-process.
 */
export const program = Command.run(app, { version: "0.1.0" }).pipe(
  Effect.tapCause(reportFailure),
  // Spans and metrics go to an OTLP collector only when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/telemetry.md OT 6).
  Effect.provide(TelemetryExport.layerFromEnvironment({ serviceName: "effect-agent", serviceVersion: "0.1.0" })),
  // Logs (the cluster engine's warnings among them) go to stderr: stdout carries only the run, so `--json`
  // and `--print` output stays parseable.
  Effect.provideService(Logger.LogToStderr, true)
)

/**
 * Node's terminal with key input that no key ends: the interactive mode reads Esc, Ctrl-C and Ctrl-D as keys
 * of a session that goes on, and a paste holding one of them stays whole (CLI 1.3, 9.4); the prompts end
 * their own input at those keys (`internal/promptInput.ts`). `NodeTerminal.layer` would end it there, and the
 * keys after them in the same read would be lost.
 */
const nodeTerminal = Layer.effect(Terminal.Terminal, NodeTerminal.make(() => false))

/** Runs the command on `process.argv`. */
export const main = program.pipe(Effect.provide(nodeTerminal), Effect.provide(NodeServices.layer))

/**
 * Runs {@link main} as the process. SIGINT, SIGTERM and SIGHUP each abort the run cleanly; the exit code is
 * then 128 + the signal's number (130 for Ctrl-C).
 */
export const runAsProcess = (): void =>
  NodeRuntime.runMain(interruptOnStopSignals(main), {
    disableErrorReporting: true,
    teardown: (exit, onExit) =>
      Runtime.defaultTeardown(exit, (code) =>
        onExit(code === 130 && Exit.hasInterrupts(exit) ? interruptedExitCode() : code))
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
