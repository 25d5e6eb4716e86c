/**
 * The interactive mode: the prompt a person lives in. A multi-line editor with per-project history, answers
 * streamed as markdown, Esc or Ctrl-C stopping only the current answer, slash commands, `!command`, and
 * approvals that show what a call would do. The command line calls {@link prepare} before it builds the
 * agent (for the approval hook, the switchable model and the view) and `run` where it used to read prompts.
 * Rules: docs/cli.md, CLI 1.x-4.x.
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Terminal from "effect/Terminal"
import type { AgentShape } from "../../Agent.ts"
import type { AgentEvent } from "../../AgentEvent.ts"
import { type AgentMessage, type AssistantMessage, emptyUsage, isMessage } from "../../Message.ts"
import { Model, type ModelShape } from "../../Model.ts"
import { type ProviderName, providerNames } from "../../providers/index.ts"
import type { BeforeToolCallContext, BeforeToolCallResult } from "../../ToolExecution.ts"
import { approvalHook, type ApprovalRequest, currentFile, type Decision, preview } from "../Approval.ts"
import { terminalSafe } from "../internal/terminalText.ts"
import * as LiveView from "../LiveView.ts"
import { providerLayer, type ProviderSettings, providerSettings } from "../provider.ts"
import * as SessionStore from "../SessionStore.ts"
import type { AttachedPrompt } from "../Task.ts"
import * as Usage from "../Usage.ts"
import * as Commands from "./Commands.ts"
import * as Editor from "./Editor.ts"
import * as History from "./History.ts"
import * as Keys from "./Keys.ts"
import * as Markdown from "./Markdown.ts"
import * as Shell from "./Shell.ts"
import * as Undo from "./Undo.ts"

/** What the command line gives the interactive mode. */
export interface InteractiveOptions {
  readonly root: string
  /** The provider the session started with (`/model` switches from it). */
  readonly settings: ProviderSettings
  /** `--yes`: calls that need approval run without asking. */
  readonly yes: boolean
  /** The tools that need the person's approval (the built-in ones that change things, and MCP tools). */
  readonly needsApproval?: ReadonlySet<string> | undefined
  /** What the session used before (a resumed transcript), for the running total. */
  readonly usageBefore?: Usage.UsageTally | undefined
  /** Colours on screen (off with `NO_COLOR`, read by the command line through `Config`). */
  readonly color: boolean
}

/** Where the session is kept and how a prompt's `@path` mentions become attachments. */
export interface RunOptions {
  readonly sessionPath: string
  readonly attach?: ((text: string) => Effect.Effect<AttachedPrompt, unknown>) | undefined
}

/** The interactive mode, ready before the agent exists. */
export interface Interactive {
  /** The view to subscribe to the agent's events. */
  readonly view: LiveView.LiveView
  /** The model to build the agent on: it follows `/model`. */
  readonly model: ModelShape
  /** Approvals (judged on screen) and the snapshots `/undo` needs. */
  readonly beforeToolCall: (context: BeforeToolCallContext) => Effect.Effect<BeforeToolCallResult | undefined>
  /** Reads and runs prompts until the person leaves. */
  readonly run: (agent: AgentShape, options: RunOptions) => Effect.Effect<void>
}

const PROMPT_TEXT = "› "
const SUMMARY_PREFIX = "[Summary of the conversation so far]"

/** The size assumed when the terminal reports none (0), as a test terminal does. */
const DEFAULT_SIZE: Terminal.Size = { columns: 100, rows: 30 }

/**
 * Takes the terminal (raw mode, for the scope) and sets the interactive mode up. Everything on screen goes
 * through the `Terminal` service (`display`, its size and its key input), never `process` itself. The
 * `Model` in the context is the one the session starts with.
 */
export const prepare = Effect.fn("Interactive.prepare")(function*(options: InteractiveOptions) {
  const terminal = yield* Terminal.Terminal
  // The screen is written synchronously, in order, by the editor and the markdown stream: each chunk starts
  // its `display` at once (a fiber runs synchronously up to the write), and the write's completion is not
  // awaited. A closed output is not an error of the session.
  const write = (text: string) => void Effect.runFork(Effect.ignore(terminal.display(text)))
  const color = options.color
  // The size follows the terminal's resizes (read when the editor or a markdown block is laid out).
  const reported = (size: Terminal.Size): Terminal.Size => ({
    columns: size.columns > 0 ? size.columns : DEFAULT_SIZE.columns,
    rows: size.rows > 0 ? size.rows : DEFAULT_SIZE.rows
  })
  let size = reported({ columns: yield* terminal.columns, rows: yield* terminal.rows })
  const resizes = yield* terminal.size
  // A terminal without resizes (a test's) ends the queue at once: the first size stays.
  yield* Effect.forkScoped(
    Effect.ignore(Effect.forever(Effect.map(Queue.take(resizes), (next) => void (size = reported(next)))))
  )
  const columns = () => Math.max(40, size.columns)
  const rows = () => Math.max(10, size.rows)
  const paint = (text: string, code: string) => color ? `\x1b[${code}m${text}\x1b[0m` : text
  const say = (text: string) => write(text.split("\n").map((line) => line + "\x1b[K").join("\n") + "\n")

  // Loads in the background while the person types the first prompt; awaited when an answer starts.
  const markdownLoaded = Markdown.load().catch(() => undefined)
  const keys = yield* Keys.make
  const history = History.load(options.root, yield* SessionStore.stateFolder)
  const snapshots = Undo.make(options.root)

  // The model, switchable by /model: the agent keeps this one object, which forwards to the current model.
  let current: ModelShape = yield* Model
  let settings = options.settings
  const model: ModelShape = {
    get info() {
      return current.info
    },
    stream: (request) => Stream.suspend(() => current.stream(request))
  }

  // --- The view: markdown for the answer's text, the live tool lanes for the rest -----------------------
  const lanes = yield* LiveView.make({ live: true, color, columns: columns(), write, usageBefore: options.usageBefore })
  let text: Markdown.MarkdownStream | undefined
  // Every request of the session, /compact's included (a resumed transcript's count comes in `usageBefore`).
  let sessionUsage = options.usageBefore ?? Usage.empty
  const endText = () => {
    text?.end()
    text = undefined
  }
  // While a request waits for the model's first word, one line says so (a spinner, Esc to stop); it is
  // cleared, on the same row, as soon as anything else is shown.
  let waitingSince: number | undefined
  let waitingShown = false
  const clearWaiting = () => {
    waitingSince = undefined
    if (waitingShown) write("\r\x1b[2K")
    waitingShown = false
  }
  const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
  yield* Effect.forkScoped(Effect.forever(Effect.andThen(
    Effect.sleep("100 millis"),
    Effect.sync(() => {
      if (waitingSince === undefined) return
      const seconds = Math.floor((Date.now() - waitingSince) / 1000)
      const frame = SPINNER[Math.floor(Date.now() / 100) % SPINNER.length]
      write(`\r\x1b[2K${paint(`${frame} waiting for the model${seconds > 0 ? ` ${seconds}s` : ""} (Esc stops)`, "2")}`)
      waitingShown = true
    })
  )))

  const view: LiveView.LiveView = {
    handle: (event: AgentEvent) => {
      if (event.type === "tool_execution_end") snapshots.after(event.toolCallId, event.isError)
      if (event.type === "turn_start") waitingSince = Date.now()
      else if (
        event.type === "message_update" || event.type === "agent_end" ||
        (event.type === "message_end" && event.message.role === "assistant")
      ) clearWaiting()
      if (event.type === "message_update") {
        const update = event.assistantMessageEvent
        if (update.type === "text_start") {
          return Effect.andThen(
            Effect.promise(() => markdownLoaded),
            Effect.sync(() => {
              endText()
              text = Markdown.stream({ columns, rows, color, write })
            })
          )
        }
        if (update.type === "text_delta") return Effect.sync(() => text?.push(update.delta))
        if (update.type === "text_end") return Effect.sync(endText)
      }
      if (event.type === "message_end") {
        endText()
        if (isMessage(event.message) && event.message.role === "assistant") {
          sessionUsage = Usage.add(sessionUsage, Usage.ofMessage(event.message))
        }
      }
      return lanes.handle(event)
    },
    pause: (effect) =>
      Effect.andThen(
        Effect.sync(() => {
          clearWaiting()
          text?.hide()
        }),
        lanes.pause(effect)
      ),
    close: Effect.andThen(
      Effect.sync(() => {
        clearWaiting()
        endText()
      }),
      lanes.close
    )
  }

  // --- Keys while an answer runs: Esc/Ctrl-C stop it; a question on screen gets the keys -----------------
  const questionKeys = yield* Queue.unbounded<Keys.Key>()
  const questionSource: Keys.Keys = {
    take: Queue.take(questionKeys),
    poll: Effect.map(Queue.poll(questionKeys), Option.getOrUndefined),
    discard: Effect.asVoid(Queue.clear(questionKeys))
  }
  let asking = false
  const typeAhead: Array<Keys.Key> = []
  const promptKeys: Keys.Keys = {
    take: Effect.suspend(() => typeAhead.length > 0 ? Effect.succeed(typeAhead.shift()!) : keys.take),
    poll: Effect.suspend(() => typeAhead.length > 0 ? Effect.succeed(typeAhead.shift()) : keys.poll),
    discard: Effect.andThen(Effect.sync(() => void typeAhead.splice(0)), keys.discard)
  }
  let stopAnswer: Effect.Effect<void> = Effect.void

  // --- Approvals ---------------------------------------------------------------------------------------
  /** The answer to a question on screen: keys come from the question's queue while `asking` (CLI 4.2-4.6). */
  const answerKey: Effect.Effect<Decision> = Effect.gen(function*() {
    while (true) {
      const key = yield* questionSource.take
      if (Keys.isStop(key)) {
        say(paint("stopped", "31"))
        yield* stopAnswer
        return { _tag: "Deny", reason: "The user stopped this answer." } satisfies Decision
      }
      switch (key.sequence.toLowerCase()) {
        case "y":
          say(paint("yes", "32"))
          return { _tag: "Allow" } satisfies Decision
        case "n":
          say(paint("no", "31"))
          return { _tag: "Deny" } satisfies Decision
        case "a":
          say(paint("always (this tool, this session)", "32"))
          return { _tag: "AllowAlways" } satisfies Decision
        case "e": {
          say(paint("no, because:", "31"))
          const reason = yield* Editor.read(questionSource, {
            prompt: paint("why? ", "2"),
            history: [],
            complete: () => [],
            cancelable: true,
            columns,
            color,
            write
          })
          return reason._tag === "Submit" ? { _tag: "Deny", reason: reason.text } : { _tag: "Deny" }
        }
      }
    }
  })
  const judge = (request: ApprovalRequest): Effect.Effect<Decision> =>
    view.pause(Effect.gen(function*() {
      const before = request.toolName === "edit" || request.toolName === "write"
        ? currentFile(options.root, request.args)
        : undefined
      say(preview(request, before, { color }).join("\n"))
      // Keys typed before the question was on screen answer nothing.
      yield* questionSource.discard
      write(
        `${paint(`Allow ${terminalSafe(request.toolName)}?`, "1;33")} ${paint("[y]es [n]o [a]lways [e]xplain", "2")} `
      )
      asking = true
      return yield* Effect.ensuring(
        answerKey,
        Effect.sync(() => {
          asking = false
        })
      )
    }))
  const approvals = approvalHook(options.yes ? { _tag: "AllowAll" } : { _tag: "Judge", judge }, options.needsApproval)
  const beforeToolCall = (context: BeforeToolCallContext) =>
    Effect.tap(approvals(context), (result) =>
      Effect.sync(() => {
        if (result?.block !== true) snapshots.before(context.toolCall.name, context.args, context.toolCall.id)
      }))

  // --- Running an answer ---------------------------------------------------------------------------------
  const answer = (agent: AgentShape, prompt: string, attach: RunOptions["attach"]) =>
    Effect.gen(function*() {
      const attached = attach === undefined
        ? { text: prompt, images: [], attached: [] }
        : yield* attach(prompt).pipe(Effect.catch(() => Effect.succeed({ text: prompt, images: [], attached: [] })))
      if (attached.attached.length > 0) say(paint(`attached: ${attached.attached.map(terminalSafe).join(", ")}`, "2"))
      snapshots.beginTurn()
      let stopping = false
      stopAnswer = Effect.suspend(() => {
        if (!stopping) {
          stopping = true
          text?.hide()
        }
        return agent.abort
      })
      const watcher = yield* Effect.forkChild(Effect.gen(function*() {
        while (true) {
          const key = yield* keys.take
          if (asking) yield* Queue.offer(questionKeys, key)
          else if (Keys.isStop(key)) yield* stopAnswer
          // Typed while the agent works: kept for the next prompt, as a shell keeps type-ahead.
          else typeAhead.push(key)
          // The input has ended: the answer (or its question) is stopped and nothing more will come.
          if (Keys.isEnd(key)) return
        }
      }))
      yield* agent.prompt(attached.text, attached.images).pipe(
        Effect.catch((error) => Effect.sync(() => say(paint(`✗ ${terminalSafe(error.message)}`, "31"))))
      )
      yield* Fiber.interrupt(watcher)
      yield* view.close
      stopAnswer = Effect.void
      if (stopping) say(paint("answer stopped; the session goes on", "2"))
    })

  // --- `!command` ---------------------------------------------------------------------------------------
  const shell = (command: string) =>
    Effect.gen(function*() {
      let midLine = false
      const code = yield* Shell.run(command, {
        cwd: options.root,
        output: (chunk) => {
          const textChunk = terminalSafe(chunk.toString("utf8"))
          write(textChunk.replace(/\n/g, "\r\n"))
          midLine = !textChunk.endsWith("\n")
        },
        stopRequested: Effect.asVoid(Effect.repeat(keys.take, { until: Keys.isStop }))
      })
      if (midLine) write("\r\n")
      say(paint(code === 0 ? "✓ exit 0" : `✗ exit ${code}`, code === 0 ? "32" : "31"))
    })

  // --- Slash commands ---------------------------------------------------------------------------------
  const switchModel = (args: string) =>
    Effect.gen(function*() {
      const words = args.split(/\s+/).filter((w) => w !== "")
      if (words.length === 0) {
        say(`model: ${terminalSafe(current.info.provider)} / ${terminalSafe(current.info.model)}`)
        return
      }
      const named = (providerNames as ReadonlyArray<string>).includes(words[0]!)
      const provider: ProviderName = named ? (words[0] as ProviderName) : settings.name
      const modelName = named ? words[1] : words[0]
      const same = provider === settings.name
      const next = yield* providerSettings(provider, {
        model: modelName ?? (same ? settings.model : undefined),
        baseUrl: same ? settings.baseUrl : undefined,
        apiKey: same ? settings.apiKey : undefined
      }).pipe(Effect.catch((error) => Effect.sync(() => void say(paint(terminalSafe(error.message), "31")))))
      if (next === undefined) return
      current = yield* Effect.gen(function*() {
        return yield* Model
      }).pipe(Effect.provide(providerLayer(next)))
      settings = next
      say(
        `model: ${terminalSafe(current.info.provider)} / ${terminalSafe(current.info.model)} (from the next prompt on)`
      )
    })

  const compact = (agent: AgentShape) =>
    Effect.gen(function*() {
      const messages = (yield* SubscriptionRef.get(agent.state)).messages
      const lastUser = messages.findLastIndex((m) => m.role === "user")
      const older = messages.slice(0, Math.max(0, lastUser)).filter(isMessage)
      if (!older.some((m) => m.role === "assistant")) {
        say("Nothing to compact yet: the context holds only the latest turn.")
        return
      }
      write(paint("compacting…", "2") + "\r")
      const request = {
        systemPrompt: "You summarise a coding session so that it can go on without its transcript.",
        messages: [...older, {
          role: "user" as const,
          content:
            "Summarise the conversation above for yourself: the task, what was done, files changed, decisions and open questions. Be brief; keep paths, names and numbers exact.",
          timestamp: Date.now()
        }],
        tools: []
      }
      const events = yield* Stream.runCollect(current.stream(request)).pipe(
        Effect.catch((error) =>
          Effect.sync(() => void say(paint(`compact failed: ${terminalSafe(error.message)}`, "31")))
        )
      )
      if (events === undefined) return
      const done = Array.from(events).find((e) => e.type === "done")
      if (done?.type === "done") sessionUsage = Usage.add(sessionUsage, Usage.ofMessage(done.message))
      const summary = done?.type === "done"
        ? done.message.content.flatMap((b) => b.type === "text" ? [b.text] : []).join("\n").trim()
        : ""
      if (summary === "") {
        say(paint("compact failed: the model gave no summary; nothing was changed.", "31"))
        return
      }
      const now = Date.now()
      const ack: AssistantMessage = {
        role: "assistant",
        content: [{ type: "text", text: "Understood; I will go on from this summary." }],
        api: current.info.api,
        provider: current.info.provider,
        model: current.info.model,
        usage: emptyUsage,
        stopReason: "stop",
        timestamp: now
      }
      const kept = lastUser >= 0 ? messages.slice(lastUser) : []
      const replaced: Array<AgentMessage> = [
        { role: "user", content: `${SUMMARY_PREFIX}\n\n${summary}`, timestamp: now },
        ack,
        ...kept
      ]
      yield* agent.setMessages(replaced).pipe(Effect.catch(() => Effect.void))
      say(`Compacted ${older.length} older messages into a summary; ${kept.length} recent messages kept.`)
      say(
        Markdown.renderMarkdown(summary, { columns: columns() - 3, color }).map((row) => paint("│ ", "2") + row).join(
          "\n"
        )
      )
    })

  const sessionInfo = (agent: AgentShape, sessionPath: string) =>
    Effect.gen(function*() {
      const messages = (yield* SubscriptionRef.get(agent.state)).messages
      say([
        `session:  ${terminalSafe(sessionPath)}`,
        `model:    ${terminalSafe(current.info.provider)} / ${terminalSafe(current.info.model)}`,
        `messages: ${messages.length} in context (${messages.filter((m) => m.role === "user").length} prompts)`,
        `tokens:   ${Usage.format(sessionUsage)} (the whole session)`
      ].join("\n"))
    })

  const command = (agent: AgentShape, sessionPath: string, name: string, args: string) =>
    Effect.gen(function*() {
      switch (name) {
        case "/help":
          return say(Commands.helpLines().join("\n"))
        case "/model":
          return yield* switchModel(args)
        case "/session":
          return yield* sessionInfo(agent, sessionPath)
        case "/clear": {
          const count = (yield* SubscriptionRef.get(agent.state)).messages.length
          yield* agent.setMessages([]).pipe(Effect.catch(() => Effect.void))
          write("\x1b[2J\x1b[3J\x1b[H")
          return say(
            `Context cleared: the model no longer sees the ${count} earlier messages (the session file keeps them).`
          )
        }
        case "/compact":
          return yield* compact(agent)
        case "/undo": {
          const report = snapshots.undo()
          if (report === undefined) return say("Nothing to undo: no turn changed files with write or edit.")
          const lines = [
            ...report.restored.map((f) => `restored ${terminalSafe(f)}`),
            ...report.removed.map((f) => `removed  ${terminalSafe(f)} (it did not exist before)`),
            ...report.failed.map((f) => paint(`could not restore ${terminalSafe(f)}`, "31")),
            ...report.changed.map((f) =>
              paint(
                `left ${terminalSafe(f)} as it is: it changed since that turn (or now leads outside the workspace)`,
                "33"
              )
            )
          ]
          return say(lines.length === 0 ? "Nothing to undo." : lines.join("\n"))
        }
        default:
          return say(paint(Commands.unknownHint(terminalSafe(name)), "33"))
      }
    })

  const run = (agent: AgentShape, { attach, sessionPath }: RunOptions) =>
    Effect.gen(function*() {
      say(paint("Type a task. Enter sends, Alt-Enter adds a line, /help lists the commands, Esc stops an answer.", "2"))
      while (true) {
        write("\n")
        const entry = yield* Editor.read(promptKeys, {
          prompt: paint(PROMPT_TEXT, "1;36"),
          history: history.entries(),
          complete: Commands.complete,
          cancelable: false,
          columns,
          rows,
          color,
          write
        })
        if (entry._tag !== "Submit") break
        const line = entry.text
        if (line.trim() === "") continue
        history.add(line)
        const parsed = Commands.parse(line)
        if (parsed?.name === "/quit" || parsed?.name === "/exit") break
        if (parsed !== undefined) yield* command(agent, sessionPath, parsed.name, parsed.args)
        else if (line.trimStart().startsWith("!")) yield* shell(line.trimStart().slice(1))
        else yield* answer(agent, line, attach)
      }
    })

  return { view, model, beforeToolCall, run } satisfies Interactive
})
