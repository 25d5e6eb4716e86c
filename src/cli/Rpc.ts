/**
 * `--mode rpc`: the agent driven by another program (an editor, a script) over standard streams (rules CLI
 * 11.x in `docs/cli.md`). Each line of standard input is one JSON command; standard output carries, one JSON
 * object per line, the agent's events (as `--json` prints them) and a `response` to every command.
 *
 * ```text
 * → {"type":"prompt","id":"1","message":"List the files"}
 * ← {"type":"response","command":"prompt","id":"1","success":true}
 * ← {"type":"agent_start"} … {"type":"agent_end",…}
 * → {"type":"get_state"}
 * ← {"type":"response","command":"get_state","success":true,"data":{"isStreaming":false,…}}
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type { AgentShape } from "../Agent.ts"
import type { ImageContent } from "../Message.ts"
import { makeJsonLineEncoder } from "./JsonLines.ts"
import * as Usage from "./Usage.ts"

const Id = Schema.optionalKey(Schema.String)

/** Start a run with this message. Refused while a run is active: use `steer` or `follow_up` then. */
const PromptCommand = Schema.Struct({ type: Schema.Literal("prompt"), id: Id, message: Schema.String })
/** A message for the model as soon as the running tool calls are done; starts a run when idle. */
const SteerCommand = Schema.Struct({ type: Schema.Literal("steer"), id: Id, message: Schema.String })
/** A message for the model once the current run would stop; starts a run when idle. */
const FollowUpCommand = Schema.Struct({ type: Schema.Literal("follow_up"), id: Id, message: Schema.String })
/** Abort the running answer: every started tool call still gets its result. Nothing happens when idle. */
const AbortCommand = Schema.Struct({ type: Schema.Literal("abort"), id: Id })
/** Ask for the agent's state (running or not, message count, pending calls, usage). */
const GetStateCommand = Schema.Struct({ type: Schema.Literal("get_state"), id: Id })

/** Every command of the RPC mode, told apart by `type`. */
export const RpcCommand = Schema.Union([PromptCommand, SteerCommand, FollowUpCommand, AbortCommand, GetStateCommand])
/** @since 0.1.0 */
export type RpcCommand = typeof RpcCommand.Type

const decodeCommand = Schema.decodeUnknownExit(Schema.fromJsonString(RpcCommand))

/** The answer to one command (CLI 11.2). `error` is one line saying what was wrong. */
export interface RpcResponse {
  readonly type: "response"
  readonly command: string | undefined
  readonly id?: string | undefined
  readonly success: boolean
  readonly data?: unknown
  readonly error?: string | undefined
}

/**
 * The command of one input line, or the error line for it (CLI 11.3): not JSON, not an object with a known
 * `type`, or missing a field. The error names the line number and, when the line had one, its `type` and `id`.
 */
export const parseCommand = (line: string, lineNumber: number): RpcCommand | RpcResponse => {
  const decoded = decodeCommand(line)
  if (decoded._tag === "Success") return decoded.value
  let type: string | undefined
  let id: string | undefined
  let detail: string
  try {
    const raw: unknown = JSON.parse(line)
    const record = typeof raw === "object" && raw !== null ? raw as Record<string, unknown> : {}
    type = typeof record.type === "string" ? record.type : undefined
    id = typeof record.id === "string" ? record.id : undefined
    const known = ["prompt", "steer", "follow_up", "abort", "get_state"]
    detail = type === undefined
      ? "a command is a JSON object with a \"type\""
      : !known.includes(type)
      ? `unknown command type "${type}" (known: ${known.join(", ")})`
      : (type === "abort" || type === "get_state")
      ? "bad fields"
      : `"${type}" needs a "message" string`
  } catch {
    detail = "not valid JSON"
  }
  return {
    type: "response",
    command: type,
    ...(id !== undefined ? { id } : {}),
    success: false,
    error: `line ${lineNumber}: ${detail}`
  }
}

/** What the RPC mode needs around the agent. */
/** The longest command line read (CLI 12.7), in UTF-16 units: as large as a task on standard input may be. */
const MAX_LINE_CHARS = 10 * 1024 * 1024

/** A command line longer than {@link MAX_LINE_CHARS}: dropped as it came, only its length kept. */
export interface LineTooLong {
  readonly _tag: "LineTooLong"
  readonly length: number
}

interface SplitState {
  readonly parts: Array<string>
  readonly length: number
  /** Set while the current line is past the limit: its length so far (its text is not kept). */
  readonly overflow: number | undefined
}

/**
 * Text split into lines (`\n` or `\r\n`), with no line held in memory past `maxChars` (CLI 12.7): a longer
 * line becomes a {@link LineTooLong} once it ends, and the lines after it are read as usual. A last line
 * without its newline is a line too.
 */
export const splitCommandLines =
  (maxChars: number = MAX_LINE_CHARS) =>
  <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<string | LineTooLong, E, R> => {
    const finish = (state: SplitState, last: string): string | LineTooLong => {
      const length = state.length + last.length
      if (state.overflow !== undefined || length > maxChars) {
        return {
          _tag: "LineTooLong",
          length: (state.overflow ?? 0) + (state.overflow === undefined ? length : last.length)
        }
      }
      const line = state.parts.join("") + last
      return line.endsWith("\r") ? line.slice(0, -1) : line
    }
    const empty: SplitState = { parts: [], length: 0, overflow: undefined }
    return text.pipe(
      Stream.mapAccum((): SplitState => empty, (state, chunk) => {
        const pieces = chunk.split("\n")
        const out: Array<string | LineTooLong> = []
        let current = state
        for (let i = 0; i < pieces.length - 1; i++) {
          out.push(finish(current, pieces[i]!))
          current = empty
        }
        const rest = pieces[pieces.length - 1]!
        if (current.overflow !== undefined) current = { ...current, overflow: current.overflow + rest.length }
        else if (current.length + rest.length > maxChars) {
          current = { parts: [], length: 0, overflow: current.length + rest.length }
        } else if (rest !== "") {
          current = { parts: [...current.parts, rest], length: current.length + rest.length, overflow: undefined }
        }
        return [current, out] as const
      }, {
        onHalt: (state) => state.overflow === undefined && state.length === 0 ? [] : [finish(state, "")]
      })
    )
  }

export interface RpcOptions {
  readonly agent: AgentShape
  /** The command lines (standard input, split in lines). */
  readonly lines: Stream.Stream<string | LineTooLong, unknown, never>
  /** Writes one line (without its newline) to the output. */
  readonly writeLine: (line: string) => Effect.Effect<void>
  /** Expands a prompt's `@path` attachments (CLI 10.1); the text as it is when absent. */
  readonly attach?:
    | ((text: string) => Effect.Effect<{ readonly text: string; readonly images: ReadonlyArray<ImageContent> }>)
    | undefined
  /** Extra fields of the `get_state` answer (e.g. the session file). */
  readonly stateExtras?: Record<string, unknown> | undefined
}

/**
 * Serves commands until the input ends, then waits for a running answer to finish (CLI 11.4). Events go out
 * as the `--json` lines; each command gets exactly one `response`, written before anything it caused.
 */
export const serve = Effect.fn("Rpc.serve")(function*(options: RpcOptions) {
  const { agent, writeLine } = options
  const encoder = makeJsonLineEncoder()
  yield* agent.subscribe((event) => writeLine(encoder.encode(event)))
  const respond = (response: RpcResponse) => writeLine(JSON.stringify(response))
  const ok = (command: RpcCommand, data?: unknown) =>
    respond({
      type: "response",
      command: command.type,
      ...(command.id !== undefined ? { id: command.id } : {}),
      success: true,
      ...(data !== undefined ? { data } : {})
    })
  const failed = (command: RpcCommand, error: string) =>
    respond({
      type: "response",
      command: command.type,
      ...(command.id !== undefined ? { id: command.id } : {}),
      success: false,
      error
    })
  const attach = options.attach ?? ((text: string) => Effect.succeed({ text, images: [] }))

  // Whether a run started here is under way: set before the run is forked, so a second prompt right after
  // the first is refused even if the first has not started yet.
  let running = false
  let run: Fiber.Fiber<unknown, unknown> | undefined
  const isBusy = Effect.map(SubscriptionRef.get(agent.state), (state) => running || state.isStreaming)
  const start = (message: string) =>
    Effect.gen(function*() {
      const prompt = yield* attach(message)
      running = true
      run = yield* agent.prompt(prompt.text, prompt.images).pipe(
        Effect.ignore,
        Effect.ensuring(Effect.sync(() => {
          running = false
        })),
        Effect.forkChild
      )
    })

  const handle = (command: RpcCommand): Effect.Effect<void> =>
    Effect.gen(function*() {
      switch (command.type) {
        case "prompt": {
          if (yield* isBusy) {
            return yield* failed(command, "a run is active: send steer or follow_up, or abort it first")
          }
          yield* ok(command)
          return yield* start(command.message)
        }
        case "steer":
        case "follow_up": {
          if (!(yield* isBusy)) {
            yield* ok(command, { started: true })
            return yield* start(command.message)
          }
          yield* (command.type === "steer" ? agent.steer(command.message) : agent.followUp(command.message))
          return yield* ok(command, { queued: true })
        }
        case "abort": {
          const busy = yield* isBusy
          yield* agent.abort
          return yield* ok(command, { aborted: busy })
        }
        case "get_state": {
          const state = yield* SubscriptionRef.get(agent.state)
          return yield* ok(command, {
            isStreaming: running || state.isStreaming,
            model: state.model,
            messageCount: state.messages.length,
            pendingToolCalls: [...state.pendingToolCalls],
            ...(state.errorMessage !== undefined ? { errorMessage: state.errorMessage } : {}),
            ...(state.limitReached !== undefined ? { limitReached: state.limitReached } : {}),
            usage: Usage.ofMessages(state.messages),
            ...options.stateExtras
          })
        }
      }
    })

  let lineNumber = 0
  yield* options.lines.pipe(
    Stream.runForEach((line) => {
      lineNumber++
      if (typeof line !== "string") {
        return respond({
          type: "response",
          command: undefined,
          success: false,
          error: `line ${lineNumber}: longer than ${
            MAX_LINE_CHARS / 1024 / 1024
          } MB (${line.length} characters): not read`
        })
      }
      if (line.trim() === "") return Effect.void
      const parsed = parseCommand(line, lineNumber)
      return "success" in parsed ? respond(parsed) : handle(parsed)
    }),
    // The input failing (closed under us) ends the commands like its end does.
    Effect.catchCause(() => Effect.void)
  )
  if (run !== undefined) yield* Fiber.await(run)
})
