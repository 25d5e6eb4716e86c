/**
 * What the command line shows while an agent runs: streamed assistant text, a live lane per running tool
 * call (name, key argument, spinner, elapsed time, last progress line), a line per finished call, and after
 * each batch a timeline showing which calls overlapped, and after each run its tokens, cost and context share
 * with the session's running total (CLI 5.4). A finished `bash` call keeps its last output lines visible
 * (CLI 10.4). On a terminal it redraws in place with colours;
 * elsewhere it prints plain lines only. Nothing a model or a tool said reaches the terminal raw: control
 * characters in it (escape sequences included) are printed as visible stand-ins.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { AgentEvent } from "../AgentEvent.ts"
import { isMessage, type ToolResultContent } from "../Message.ts"
import type { Catalogue } from "../providers/ModelCatalogue.ts"
import { terminalSafe } from "./internal/terminalText.ts"
import { stoppedLine } from "./Limits.ts"
import * as Usage from "./Usage.ts"

/** How the view renders. */
export interface ViewOptions {
  /** Redraw lanes in place with a spinner (a terminal). */
  readonly live: boolean
  /** ANSI colours. */
  readonly color: boolean
  /** Terminal width. */
  readonly columns: number
  /**
   * Where the text goes: the command passes an effect writing to standard output through the `Terminal`
   * service; a plain callback (tests, other views) is called as is.
   */
  readonly write: (text: string) => Effect.Effect<void> | void
  /** What the session used before this view started (a resumed transcript), for the running total. */
  readonly usageBefore?: Usage.UsageTally | undefined
  /** The model catalogue prices and context windows come from (default: the built-in one). */
  readonly catalogue?: Catalogue | undefined
}

/** How many last lines of a finished `bash` call stay on the screen (CLI 10.4). */
export const BASH_TAIL_LINES = 4

/** The usage line printed after a run: this run, then the session so far (CLI 5.4). */
export const usageLine = (turn: Usage.UsageTally, total: Usage.UsageTally): string =>
  `${Usage.format(turn)} · total ${Usage.format(total)}`

interface Lane {
  readonly id: string
  readonly name: string
  readonly keyArg: string
  startedAt: number
  progress: string
  /** Plain view: progress lines of this call were printed, so its output is on the screen already. */
  streamed: boolean
  /** The earlier calls it waits for (TE 11); it starts executing when the last of them ends. */
  readonly waitingFor: Set<string>
}

interface Span {
  readonly id: string
  readonly label: string
  start: number
  end: number | undefined
  isError: boolean
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
const KEY_ARGS = ["path", "pattern", "command", "query", "file", "url"]

/** The argument that best names what a call does, shortened, on one line and without control characters. */
export const keyArgument = (args: unknown, width = 40): string => {
  if (typeof args !== "object" || args === null) return ""
  const record = args as Record<string, unknown>
  const key = KEY_ARGS.find((k) => typeof record[k] === "string") ??
    Object.keys(record).find((k) => typeof record[k] === "string")
  if (key === undefined) return ""
  const value = terminalSafe(String(record[key]).replace(/\s+/g, " "))
  return value.length > width ? value.slice(0, width - 1) + "…" : value
}

const firstLine = (text: string, width: number): string => {
  const line = terminalSafe(text.split("\n").find((l) => l.trim() !== "") ?? "")
  return line.length > width ? line.slice(0, width - 1) + "…" : line
}

const lastLine = (text: string, width: number): string => {
  const lines = text.split("\n").filter((l) => l.trim() !== "")
  const line = terminalSafe(lines.at(-1) ?? "")
  return line.length > width ? line.slice(0, width - 1) + "…" : line
}

/** The last `count` non-blank lines of a text, each cut to `width`, made safe for the terminal. */
const lastLines = (text: string, count: number, width: number): Array<string> =>
  text.split("\n").filter((l) => l.trim() !== "").slice(-count).map((l) => {
    const line = terminalSafe(l)
    return line.length > width ? line.slice(0, width - 1) + "…" : line
  })

const textOf = (content: unknown): string =>
  Array.isArray(content)
    ? (content as ReadonlyArray<ToolResultContent>).map((block) => block.type === "text" ? block.text : "[image]")
      .join("\n")
    : ""

const formatMs = (ms: number): string => ms < 1000 ? `${Math.round(ms)}ms` : `${(ms / 1000).toFixed(1)}s`

/**
 * A timeline of one batch as text lines: one bar per call, placed on a shared time axis, so overlapping
 * bars are calls that ran at the same time.
 */
export const renderTimeline = (
  spans: ReadonlyArray<
    { readonly label: string; readonly start: number; readonly end: number; readonly isError: boolean }
  >,
  options: { readonly columns: number; readonly color: boolean }
): Array<string> => {
  if (spans.length === 0) return []
  const t0 = Math.min(...spans.map((s) => s.start))
  const t1 = Math.max(...spans.map((s) => s.end))
  const total = Math.max(1, t1 - t0)
  const labelWidth = Math.min(28, Math.max(...spans.map((s) => s.label.length)))
  const width = Math.max(10, Math.min(48, options.columns - labelWidth - 16))
  const paint = (text: string, code: string) => options.color ? `\x1b[${code}m${text}\x1b[0m` : text
  const lines = [paint(`  timeline ${formatMs(total)}`, "2")]
  for (const span of spans) {
    const from = Math.min(width - 1, Math.floor(((span.start - t0) / total) * width))
    const to = Math.max(from + 1, Math.min(width, Math.ceil(((span.end - t0) / total) * width)))
    const bar = " ".repeat(from) + "█".repeat(to - from) + " ".repeat(width - to)
    const label = span.label.length > labelWidth ? span.label.slice(0, labelWidth - 1) + "…" : span.label
    lines.push(
      `  ${label.padEnd(labelWidth)} │${paint(bar, span.isError ? "31" : "36")}│ ${formatMs(span.end - span.start)}`
    )
  }
  return lines
}

/** A view: feed it every event; `close` clears the live region. */
export interface LiveView {
  readonly handle: (event: AgentEvent) => Effect.Effect<void>
  /** Runs an effect with the live region cleared and the spinner stopped (e.g. a y/n question). */
  readonly pause: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly close: Effect.Effect<void>
}

/** Builds a view. On a live terminal a ticker redraws the lanes until the scope closes. */
export const make = (options: ViewOptions): Effect.Effect<LiveView, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { color, live } = options
    // Text is gathered while an event is handled and written once after it: one write per event, no
    // partial frame on the screen.
    let pending = ""
    const write = (text: string) => {
      pending += text
    }
    const flush = Effect.suspend(() => {
      const text = pending
      pending = ""
      if (text === "") return Effect.void
      const written = options.write(text)
      return Effect.isEffect(written) ? written : Effect.void
    })
    let turnUsage = Usage.empty
    let totalUsage = options.usageBefore ?? Usage.empty
    const paint = (text: string, code: string) => color ? `\x1b[${code}m${text}\x1b[0m` : text
    const lanes = new Map<string, Lane>()
    let spans: Array<Span> = []
    let drawn = 0
    let frame = 0
    let paused = false
    let midLine = false

    const clear = () => {
      if (!live || drawn === 0) return
      write(`\x1b[${drawn}A\r\x1b[J`)
      drawn = 0
    }
    const draw = (now: number) => {
      if (!live || paused || lanes.size === 0) return
      const spinner = SPINNER[frame % SPINNER.length]
      const lines: Array<string> = []
      for (const lane of lanes.values()) {
        const elapsed = formatMs(now - lane.startedAt).padStart(6)
        const progress = lane.progress === "" ? "" : paint(` │ ${lane.progress}`, "2")
        const line = `${paint(spinner, "33")} ${paint(lane.name, "1")} ${lane.keyArg} ${paint(elapsed, "2")}${progress}`
        lines.push(line)
      }
      write(lines.map((l) => `\r\x1b[2K${l}`).join("\n") + "\n")
      drawn = lines.length
    }
    /** Writes permanent output above the live region. */
    const print = (text: string, now: number) => {
      clear()
      if (midLine) {
        write("\n")
        midLine = false
      }
      write(text + "\n")
      draw(now)
    }

    const handle = (event: AgentEvent): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.andThen(
          Effect.sync(() => {
            switch (event.type) {
              case "message_update": {
                const update = event.assistantMessageEvent
                if (update.type === "text_delta" || update.type === "thinking_delta") {
                  const delta = terminalSafe(update.delta)
                  if (delta === "") return
                  clear()
                  write(update.type === "text_delta" ? delta : paint(delta, "2;3"))
                  midLine = !delta.endsWith("\n")
                } else if (update.type === "text_end" || update.type === "thinking_end") {
                  if (midLine) write("\n")
                  midLine = false
                }
                return
              }
              case "agent_start": {
                turnUsage = Usage.empty
                return
              }
              case "agent_end": {
                // AL 5: a task stopped by a limit says so in one line, with the flag that moves the limit.
                if (event.limitReached !== undefined) print(paint(stoppedLine(event.limitReached), "33"), now)
                // A model that reports no usage (the scripted demo, some local servers) gets no line of zeros.
                if (turnUsage.input + turnUsage.output > 0) print(paint(usageLine(turnUsage, totalUsage), "2"), now)
                turnUsage = Usage.empty
                return
              }
              case "message_end": {
                const message = event.message
                if (isMessage(message) && message.role === "assistant") {
                  const tally = Usage.ofMessage(message, options.catalogue)
                  turnUsage = Usage.add(turnUsage, tally)
                  totalUsage = Usage.add(totalUsage, tally)
                }
                if (
                  message.role === "assistant" && (message.stopReason === "error" || message.stopReason === "aborted")
                ) {
                  print(
                    paint(`✗ ${message.stopReason}: ${terminalSafe(String(message.errorMessage ?? ""))}`, "31"),
                    now
                  )
                }
                return
              }
              case "tool_execution_start": {
                const keyArg = keyArgument(event.args)
                const name = terminalSafe(event.toolName)
                lanes.set(event.toolCallId, {
                  id: event.toolCallId,
                  name,
                  keyArg,
                  startedAt: now,
                  progress: "",
                  streamed: false,
                  waitingFor: new Set()
                })
                spans.push({
                  id: event.toolCallId,
                  label: `${name} ${keyArg}`.trim(),
                  start: now,
                  end: undefined,
                  isError: false
                })
                if (live) {
                  clear()
                  draw(now)
                } else {
                  print(`▶ ${name} ${keyArg}`.trimEnd(), now)
                }
                return
              }
              case "tool_execution_update": {
                const lane = lanes.get(event.toolCallId)
                const line = lastLine(textOf(event.partialResult.content), Math.max(20, options.columns - 50))
                if (lane !== undefined && line !== "") lane.progress = line
                if (live) {
                  clear()
                  draw(now)
                } else if (line !== "") {
                  if (lane !== undefined) lane.streamed = true
                  print(`  │ ${line}`, now)
                }
                return
              }
              case "tool_execution_waiting": {
                const lane = lanes.get(event.toolCallId)
                if (lane === undefined) return
                const earlier = event.waitingFor.flatMap((id) => {
                  const other = lanes.get(id)
                  return other === undefined ? [] : [other]
                })
                for (const other of earlier) lane.waitingFor.add(other.id)
                const names = earlier.map((other) => `${other.name} ${other.keyArg}`.trim()).join(", ")
                lane.progress = `waits for ${names}`
                if (live) {
                  clear()
                  draw(now)
                } else {
                  print(paint(`  ⋯ ${lane.name} ${lane.keyArg} waits for ${names}`, "2"), now)
                }
                return
              }
              case "tool_execution_end": {
                const lane = lanes.get(event.toolCallId)
                lanes.delete(event.toolCallId)
                // A call that waited for this one starts executing now, if it waited for nothing else (TE 11.2):
                // its elapsed time and its bar in the timeline start here.
                for (const other of lanes.values()) {
                  if (other.waitingFor.delete(event.toolCallId) && other.waitingFor.size === 0) {
                    other.startedAt = now
                    other.progress = ""
                    const span = spans.find((s) => s.id === other.id && s.end === undefined)
                    if (span !== undefined) span.start = now
                  }
                }
                const span = spans.find((s) => s.id === event.toolCallId && s.end === undefined)
                if (span !== undefined) {
                  span.end = now
                  span.isError = event.isError
                }
                const output = textOf(event.result.content)
                // A command's news is at its end (the error, the summary line): bash output of more than one
                // line keeps its last lines under the call (unless the plain view printed them as they came);
                // one line stays on the call's line, as for others.
                const tail =
                  event.toolName === "bash" && lane?.streamed !== true && lastLines(output, 2, 1000).length > 1
                    ? lastLines(output, BASH_TAIL_LINES, Math.max(20, options.columns - 6))
                    : []
                const summary = tail.length > 0 ? "" : firstLine(output, Math.max(20, options.columns - 40))
                const took = lane === undefined ? "" : ` ${formatMs(now - lane.startedAt)}`
                const mark = event.isError ? paint("✗", "31") : paint("✓", "32")
                print(
                  `${mark} ${terminalSafe(event.toolName)} ${lane?.keyArg ?? ""}${paint(took, "2")}${
                    summary === "" ? "" : paint(` → ${summary}`, "2")
                  }${tail.map((line) => "\n" + paint(`  │ ${line}`, "2")).join("")}`,
                  now
                )
                return
              }
              case "turn_end": {
                const finished = spans.filter((s) => s.end !== undefined)
                if (event.toolResults.length > 0 && finished.length > 0) {
                  const lines = renderTimeline(
                    finished.map((s) => ({ label: s.label, start: s.start, end: s.end!, isError: s.isError })),
                    { columns: options.columns, color }
                  )
                  print(lines.join("\n"), now)
                }
                spans = []
                return
              }
              default:
                return
            }
          }),
          flush
        ))

    if (live) {
      yield* Effect.gen(function*() {
        while (true) {
          yield* Effect.sleep(Duration.millis(100))
          const now = yield* Clock.currentTimeMillis
          if (lanes.size > 0 && !paused) {
            frame++
            clear()
            draw(now)
            yield* flush
          }
        }
      }).pipe(Effect.forkScoped)
    }

    return {
      handle,
      pause: (effect) =>
        Effect.acquireUseRelease(
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.andThen(
              Effect.sync(() => {
                clear()
                paused = true
              }),
              Effect.as(flush, now)
            )),
          () => effect,
          (pausedAt) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.andThen(
                Effect.sync(() => {
                  // Time spent waiting for the person (an approval) is not the tool's (CLI 4.5): the calls
                  // on screen while paused have their start moved by the pause, in the lane and the timeline.
                  const waited = now - pausedAt
                  for (const lane of lanes.values()) lane.startedAt += waited
                  for (const span of spans) if (span.end === undefined) span.start += waited
                  paused = false
                  draw(now)
                }),
                flush
              ))
        ),
      close: Effect.andThen(
        Effect.sync(() => {
          clear()
          if (midLine) write("\n")
          midLine = false
        }),
        flush
      )
    }
  })
