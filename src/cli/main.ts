/**
 * The `effect-agent` command: an agent working on a workspace folder with the built-in tools. With no
 * provider it runs the embedded demo on a sample project; with `--provider` it talks to a real model.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import {
  Cause,
  Console,
  Effect,
  FileSystem,
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
import * as Agent from "../Agent.ts"
import type { AgentEvent } from "../AgentEvent.ts"
import type { Message } from "../Message.ts"
import type { Model } from "../Model.ts"
import * as Session from "../Session.ts"
import { approvalHook, type ApprovalMode } from "./Approval.ts"
import * as Demo from "./Demo.ts"
import type * as DurableCli from "./durable.ts"
import * as LiveView from "./LiveView.ts"
import { providerLayer, type ProviderName } from "./provider.ts"
import { workspaceTools } from "./tools.ts"

const SYSTEM_PROMPT = [
  "You are a careful coding agent working in a workspace folder.",
  "Use the tools to look before you change anything; prefer small, exact edits.",
  "Paths are relative to the workspace root. Say plainly what you did and what failed."
].join(" ")

/** The run ended with a model error; the process exits non-zero. */
class RunFailed extends Schema.TaggedError<RunFailed>()("RunFailed", { message: Schema.String }) {}

const flags = {
  provider: Flag.Literals("provider", ["openai-compatible", "anthropic"]).pipe(
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
      "The folder the tools work in. Default: a new sample project in a temporary folder (demo), or the current folder (with a provider)."
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
  durable: Flag.Boolean("durable").pipe(
    Flag.withDescription("Run the task as a durable run in the run store and print its id; `resume` continues it."),
    Flag.withDefault(false)
  ),
  store: Flag.String("store").pipe(
    Flag.withDescription("The run store for --durable, runs and resume. Default: $EFFECT_AGENT_HOME/runs.db."),
    Flag.optional
  ),
  toolTimeout: Flag.Int("tool-timeout").pipe(
    Flag.withDescription("Seconds a tool call may run before it is stopped (default: 120)."),
    Flag.withDefault(120)
  )
}

type Options = Command.Command.Config.Infer<typeof flags>

/** The workspace folder: given, the current folder (provider), or a fresh sample project (demo). */
const resolveWorkspace = Effect.fn("resolveWorkspace")(function*(options: Options, demo: boolean) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const root = Option.isSome(options.workspace)
    ? path.resolve(options.workspace.value)
    : demo
    ? yield* fs.makeTempDirectory({ prefix: "effect-agent-demo-" })
    : path.resolve(".")
  yield* fs.makeDirectory(root, { recursive: true })
  if (demo) yield* Demo.writeSampleProject(root)
  return root
})

/** The model: a real provider when one is named, else the demo. */
const modelLayer = (options: Options): Layer.Layer<Model, unknown> =>
  Option.match(options.provider, {
    onNone: () => Demo.demoModel,
    onSome: (name: ProviderName) =>
      providerLayer(name, {
        baseUrl: Option.getOrUndefined(options.baseUrl),
        model: Option.getOrUndefined(options.model),
        apiKey: Option.getOrUndefined(options.apiKey)
      })
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
      return {
        handle: (event: AgentEvent) => Effect.sync(() => process.stdout.write(JSON.stringify(event) + "\n")),
        pause: <A, E, R>(effect: Effect.Effect<A, E, R>) => effect,
        close: Effect.void
      } satisfies LiveView.LiveView
    }
    return yield* LiveView.make({ live, color, columns, write: (text) => void process.stdout.write(text) })
  })

const session = Effect.fn("session")(function*(options: Options, root: string, demo: boolean) {
  const path = yield* Path.Path
  const stdio = yield* Stdio.Stdio
  const say = (line: string) => options.json ? Effect.void : Console.log(line)

  const resumed: ReadonlyArray<Message> = Option.isSome(options.resume)
    ? yield* Session.load(path.resolve(options.resume.value))
    : []
  const sessionPath = Option.isSome(options.session)
    ? path.resolve(options.session.value)
    : Option.isSome(options.resume)
    ? path.resolve(options.resume.value)
    : yield* Session.newSessionPath(path.join(root, ".effect-agent", "sessions"))
  const transcript = yield* Session.writer(sessionPath)
  // Resuming into another file: that file gets the whole transcript, not only what this run adds.
  if (Option.isSome(options.resume) && path.resolve(options.resume.value) !== sessionPath) {
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
            Effect.catch(() => Effect.succeed(false)),
            Effect.provide(promptEnvironment)
          )
    }
    : { _tag: "NoTerminal" }

  yield* say(`workspace: ${root}${demo ? " (sample project, scripted demo model)" : ""}`)
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
  yield* say(`\nsession saved: ${sessionPath}`)
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
  const root = yield* resolveWorkspace(options, demo)
  if (options.durable) {
    const task = Option.getOrElse(options.prompt, () => demo ? Demo.DEMO_TASK : "")
    if (task === "") return yield* new RunFailed({ message: "--durable needs a task: pass --prompt." })
    return yield* Effect.asVoid(Effect.flatMap(durableCli, (cli) => cli.runTask(durableTask(options, root), task)))
  }
  yield* session(options, root, demo).pipe(
    Effect.provide(Layer.mergeAll(modelLayer(options), workspaceTools(root))),
    Effect.onInterrupt(() => Console.error("\ninterrupted: the run was aborted and the session saved"))
  )
})

/** The durable-run commands, loaded on first use: `node:sqlite` warns on stderr when it is loaded at all. */
const durableCli = Effect.promise(() => import("./durable.ts"))

/** A durable run's settings from the flags (approvals: `--yes`, else calls needing one are refused). */
const durableTask = (options: Options, root: string): DurableCli.DurableTask => ({
  store: Option.getOrUndefined(options.store),
  json: options.json,
  systemPrompt: SYSTEM_PROMPT,
  config: {
    toolExecution: options.sequential ? "sequential" : "parallel",
    timeout: `${options.toolTimeout} seconds`,
    beforeToolCall: approvalHook(options.yes ? { _tag: "AllowAll" } : { _tag: "NoTerminal" })
  },
  model: modelLayer(options),
  tools: workspaceTools(root)
})

const command = Command.make("effect-agent", flags, run).pipe(
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
    const root = yield* resolveWorkspace(options, Option.isNone(options.provider))
    const cli = yield* durableCli
    yield* cli.resumeRun(durableTask(options, root), options.runId)
  })).pipe(
    Command.withDescription("Continue a durable run after a crash or Ctrl-C; finished steps are not repeated.")
  )

const app = command.pipe(Command.withSubcommands([runsCommand, resumeCommand]))

/**
 * Failures are reported here, on stderr and as one line (stdout stays clean for `--json`); the runtime's
 * own report (on stdout, with a stack trace) is turned off. Errors the CLI parser already printed are
 * marked as reported and not repeated.
 */
const reportFailure = (cause: Cause.Cause<unknown>) => {
  if (Cause.hasInterruptsOnly(cause)) return Effect.void
  const error = Cause.squash(cause)
  if (!Runtime.getErrorReported(error)) return Effect.void
  return Console.error(`effect-agent: ${error instanceof Error ? error.message : Cause.pretty(cause)}`)
}

/** Runs the command on `process.argv`. */
export const main = Command.run(app, { version: "0.1.0" }).pipe(
  Effect.tapCause(reportFailure),
  Effect.provide(NodeServices.layer)
)

NodeRuntime.runMain(main, { disableErrorReporting: true })
