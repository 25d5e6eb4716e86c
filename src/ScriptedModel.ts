/**
 * A model that replays a script: the embedded default of the command line, and the model of tests and
 * docs. Each step is an assistant reply (or a function of the request producing one), streamed with
 * realistic deltas: text in small pieces, tool-call arguments as growing partial JSON. Steps can fail, stop
 * for `length`, stream slowly, and honour abort (interrupting the stream stops it).
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import type { AssistantMessageEvent } from "./AssistantMessageEvent.ts"
import {
  type AssistantContent,
  type AssistantMessage,
  emptyUsage,
  type StopReason,
  type ToolCall,
  type Usage
} from "./Message.ts"
import { Model, ModelError, type ModelInfo, type ModelRequest, type ModelShape } from "./Model.ts"

/** One scripted reply. */
export interface Reply {
  readonly content: ReadonlyArray<AssistantContent>
  /** Default: `toolUse` when the content has tool calls, else `stop`. */
  readonly stopReason?: Extract<StopReason, "stop" | "length" | "toolUse"> | undefined
  readonly usage?: Usage | undefined
  /** Pause before each streamed event (virtual time under `TestClock`). */
  readonly delay?: Duration.Input | undefined
}

/** A step that fails: with a typed error (`fail`) or with a final `error` event after streaming `content`. */
interface Failure {
  readonly fail: string
  /** `"event"` streams the content then ends with an `error` event; `"error"` fails the stream. */
  readonly as?: "event" | "error" | undefined
  readonly content?: ReadonlyArray<AssistantContent> | undefined
  readonly delay?: Duration.Input | undefined
}

/** A script step: a reply, a failure, or a function of the request producing one. */
export type Step =
  | Reply
  | Failure
  | ((request: ModelRequest) => Reply | Failure | Effect.Effect<Reply | Failure>)

/** Options of a scripted model. */
export interface ScriptOptions {
  readonly info?: Partial<ModelInfo> | undefined
  /** Characters per text delta. Default 12. */
  readonly chunkSize?: number | undefined
  /** What to do after the last step: repeat it, or fail with a clear error (default). */
  readonly whenExhausted?: "fail" | "repeat-last" | undefined
}

// ---------------------------------------------------------------------------------------------------------
// Convenience constructors
// ---------------------------------------------------------------------------------------------------------

/** A text reply. */
export const say = (text: string, options: Omit<Reply, "content"> = {}): Reply => ({
  ...options,
  content: [{ type: "text", text }]
})

/** A tool call block. */
export const toolCall = (id: string, name: string, args: ToolCall["arguments"]): ToolCall => ({
  type: "toolCall",
  id,
  name,
  arguments: args
})

/** A reply that calls tools, optionally after some text. */
export const callTools = (calls: ReadonlyArray<ToolCall>, text?: string): Reply => ({
  content: text === undefined ? calls : [{ type: "text", text }, ...calls]
})

// ---------------------------------------------------------------------------------------------------------
// Streaming a reply
// ---------------------------------------------------------------------------------------------------------

const pieces = (text: string, size: number): Array<string> => {
  if (text.length === 0) return [""]
  const out: Array<string> = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

const isFailure = (step: Reply | Failure): step is Failure => "fail" in step

/** The events of streaming `content`, each carrying the partial message so far. */
const contentEvents = (
  base: AssistantMessage,
  content: ReadonlyArray<AssistantContent>,
  chunkSize: number
): { readonly events: Array<AssistantMessageEvent>; readonly message: AssistantMessage } => {
  const events: Array<AssistantMessageEvent> = []
  let blocks: Array<AssistantContent> = []
  const partial = (): AssistantMessage => ({ ...base, content: blocks })
  const setLast = (block: AssistantContent) => {
    blocks = [...blocks.slice(0, -1), block]
  }
  /** A text or thinking block: start, the text in pieces (each partial holding what arrived), end. */
  const streamText = (
    contentIndex: number,
    kind: "text" | "thinking",
    full: string,
    withText: (text: string) => AssistantContent
  ) => {
    blocks = [...blocks, withText("")]
    events.push({ type: `${kind}_start`, contentIndex, partial: partial() })
    let sofar = ""
    for (const delta of pieces(full, chunkSize)) {
      sofar += delta
      setLast(withText(sofar))
      events.push({ type: `${kind}_delta`, contentIndex, delta, partial: partial() })
    }
    setLast(withText(full))
    events.push({ type: `${kind}_end`, contentIndex, content: full, partial: partial() })
  }
  events.push({ type: "start", partial: partial() })
  content.forEach((block, contentIndex) => {
    if (block.type === "text") {
      streamText(contentIndex, "text", block.text, (text) => ({ ...block, text }))
    } else if (block.type === "thinking") {
      streamText(contentIndex, "thinking", block.thinking, (thinking) => ({ ...block, thinking }))
    } else {
      blocks = [...blocks, { ...block, arguments: {} }]
      events.push({ type: "toolcall_start", contentIndex, partial: partial() })
      for (const delta of pieces(JSON.stringify(block.arguments), chunkSize)) {
        events.push({ type: "toolcall_delta", contentIndex, delta, partial: partial() })
      }
      setLast(block)
      events.push({ type: "toolcall_end", contentIndex, toolCall: block, partial: partial() })
    }
  })
  return { events, message: partial() }
}

const streamStep = (
  step: Reply | Failure,
  info: ModelInfo,
  chunkSize: number,
  timestamp: number
): Stream.Stream<AssistantMessageEvent, ModelError> => {
  const content = step.content ?? []
  const hasCalls = content.some((block) => block.type === "toolCall")
  const stopReason = isFailure(step) ? "error" : step.stopReason ?? (hasCalls ? "toolUse" : "stop")
  const base: AssistantMessage = {
    role: "assistant",
    content: [],
    api: info.api,
    provider: info.provider,
    model: info.model,
    usage: (!isFailure(step) && step.usage) || emptyUsage,
    stopReason,
    timestamp
  }
  const { events, message } = contentEvents(base, content, chunkSize)
  if (isFailure(step)) {
    // As a typed failure, the stream fails after the content events (below).
    if (step.as !== "error") {
      events.push({
        type: "error",
        reason: "error",
        error: { ...message, stopReason: "error", errorMessage: step.fail }
      })
    }
  } else {
    events.push({ type: "done", reason: step.stopReason ?? (hasCalls ? "toolUse" : "stop"), message })
  }
  const delay = step.delay === undefined ? undefined : Duration.fromInputUnsafe(step.delay)
  const streamed = delay === undefined
    ? Stream.fromIterable(events)
    : Stream.fromIterable(events).pipe(Stream.tap(() => Effect.sleep(delay)))
  return isFailure(step) && step.as === "error"
    ? Stream.concat(streamed, Stream.fail(new ModelError({ reason: "unknown", message: step.fail })))
    : streamed
}

// ---------------------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------------------

/** A scripted model: a model, plus the requests it has received so far, in order. */
export interface ScriptedModelShape extends ModelShape {
  readonly requests: Effect.Effect<ReadonlyArray<ModelRequest>>
}

/** Builds a scripted model. The requests it received are kept in order for inspection. */
export const make = Effect.fn("ScriptedModel.make")(
  function*(script: ReadonlyArray<Step>, options: ScriptOptions = {}): Effect.fn.Return<ScriptedModelShape> {
    const info: ModelInfo = {
      api: options.info?.api ?? "scripted",
      provider: options.info?.provider ?? "scripted",
      model: options.info?.model ?? "scripted-model"
    }
    const chunkSize = Math.max(1, options.chunkSize ?? 12)
    const cursor = yield* Ref.make(0)
    const requests = yield* Ref.make<ReadonlyArray<ModelRequest>>([])
    const nextStep = Effect.fnUntraced(function*(request: ModelRequest) {
      yield* Ref.update(requests, (all) => [...all, request])
      const index = yield* Ref.getAndUpdate(cursor, (n) => n + 1)
      const step = index < script.length
        ? script[index]
        : options.whenExhausted === "repeat-last" && script.length > 0
        ? script[script.length - 1]
        : undefined
      if (step === undefined) {
        return yield* new ModelError({
          reason: "config",
          message: `Scripted model: the script has ${script.length} step(s) and all were used`
        })
      }
      const resolved = typeof step === "function" ? step(request) : step
      return Effect.isEffect(resolved) ? yield* resolved : resolved
    })
    return {
      info,
      requests: Ref.get(requests),
      stream: (request) =>
        Stream.unwrap(
          Effect.gen(function*() {
            const step = yield* nextStep(request)
            const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
            return streamStep(step, info, chunkSize, now)
          })
        )
    }
  }
)

/** A layer serving a scripted model as the {@link Model}. */
export const layer = (script: ReadonlyArray<Step>, options: ScriptOptions = {}): Layer.Layer<Model> =>
  Layer.effect(Model, make(script, options))
