/**
 * The hooks the loop and the batch call to record spans and metrics, and the metrics (the switches are
 * `Telemetry.ts`; the rules `docs/telemetry.md`, OT n.m). Each hook takes the run's or batch's trace,
 * which is `undefined` when nothing is recorded, and then does nothing: no span, no clock read, no Effect.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import type { AssistantMessage, ToolCall, ToolResultMessage } from "../Message.ts"
import type { ModelInfo, ModelShape } from "../Model.ts"
import { RecordContents, RecordMetrics } from "../Telemetry.ts"
import type { ToolResult } from "../Tool.ts"

// ---------------------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------------------

/** Seconds from a tool call's start event to its end event, by `gen_ai.tool.name` and outcome (OT 5.2). */
export const toolCallDuration = Metric.histogram("effect_agent.tool.call.duration", {
  description: "Duration of a tool call, from its start event to its end event, in seconds",
  boundaries: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300]
})

/** Tokens reported by model responses, by `gen_ai.request.model` and `gen_ai.token.type` (OT 5.3). */
export const modelTokens = Metric.counter("effect_agent.model.tokens", {
  description: "Tokens reported by model responses"
})

/** Seconds from a model call's start to its first content event, by `gen_ai.request.model` (OT 5.4). */
export const modelTimeToFirstToken = Metric.histogram("effect_agent.model.time_to_first_token", {
  description: "Time from a model request to its first content event, in seconds",
  boundaries: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60]
})

/** Tool calls started and not yet ended (OT 5.5). */
export const toolCallsInFlight = Metric.gauge("effect_agent.tool.calls_in_flight", {
  description: "Tool calls between their start and end events"
})

/** One labelled metric per attribute set, made once (a metric with attributes is a new value each time). */
const labelled = new Map<string, Metric.Metric<number, unknown>>()
const withLabels = <S>(metric: Metric.Metric<number, S>, attributes: Record<string, string>) => {
  let key = metric.id
  for (const name in attributes) key += `\u0000${name}\u0000${attributes[name]}`
  let found = labelled.get(key)
  if (found === undefined) {
    found = Metric.withAttributes(metric, attributes) as Metric.Metric<number, unknown>
    // Bounded: model and tool names are few, but a misbehaving model may invent tool names.
    if (labelled.size < 10_000) labelled.set(key, found)
  }
  return found
}

// ---------------------------------------------------------------------------------------------------------
// Shared machinery
// ---------------------------------------------------------------------------------------------------------

/** What a traced scope needs: the tracer (or none: metrics only), the clock, the context for metrics. */
interface Scope {
  readonly tracer: Tracer.Tracer | undefined
  readonly clock: Clock.Clock
  readonly context: Context.Context<never>
  readonly contents: boolean
  readonly metrics: boolean
}

/** The scope of the current fiber, or `undefined` when there is nothing to record (OT 1.2). */
const scopeOf = (
  fiber: { readonly getRef: <A>(ref: Context.Reference<A>) => A; readonly context: Context.Context<never> }
): Scope | undefined => {
  const tracer = fiber.getRef(Tracer.Tracer)
  const tracing = tracer !== Tracer.nativeTracer && fiber.getRef(References.TracerEnabled)
  const recordMetrics = fiber.getRef(RecordMetrics)
  const metrics = recordMetrics === "auto" ? tracing : recordMetrics
  if (!tracing && !metrics) return undefined
  return {
    tracer: tracing ? tracer : undefined,
    clock: fiber.getRef(Clock.Clock),
    context: fiber.context,
    contents: fiber.getRef(RecordContents),
    metrics
  }
}

const open = (
  scope: Scope,
  name: string,
  parent: Option.Option<Tracer.AnySpan>,
  attributes: Record<string, unknown>,
  startTime: bigint = scope.clock.currentTimeNanosUnsafe(),
  kind: Tracer.SpanKind = "internal"
): Tracer.Span => {
  const span = scope.tracer!.span({
    name,
    parent,
    annotations: Context.empty(),
    links: [],
    startTime,
    kind,
    root: false,
    // An unsampled parent keeps its children unsampled, as Effect's own spans do.
    sampled: Option.isNone(parent) || parent.value.sampled
  })
  for (const key in attributes) span.attribute(key, attributes[key])
  return span
}

const close = (scope: Scope, span: Tracer.Span, exit: Exit.Exit<unknown, unknown>) => {
  if (span.status._tag === "Ended") return
  span.end(scope.clock.currentTimeNanosUnsafe(), exit)
}

const json = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

const seconds = (from: bigint, to: bigint) => Number(to - from) / 1e9

/** A failed exit for a span whose work ended in an error result rather than a failure. */
const failedExit = (errorType: string, message: string | undefined) =>
  Exit.fail(Object.assign(new Error(message ?? errorType), { name: errorType }))

// ---------------------------------------------------------------------------------------------------------
// Runs, turns and model calls (the loop)
// ---------------------------------------------------------------------------------------------------------

/** The telemetry of one run; `undefined` when nothing is recorded. Built by {@link runTrace}. */
export interface RunTrace {
  readonly scope: Scope
  run: Tracer.Span | undefined
  turn: Tracer.Span | undefined
  turns: number
  inputTokens: number
  outputTokens: number
}

/** The run's telemetry, decided once per run from the fiber's tracer and switches (OT 1.2). */
export const runTrace: Effect.Effect<RunTrace | undefined> = Effect.withFiber((fiber) => {
  const scope = scopeOf(fiber)
  return Effect.succeed(
    scope === undefined
      ? undefined
      : { scope, run: undefined, turn: undefined, turns: 0, inputTokens: 0, outputTokens: 0 }
  )
})

const modelAttributes = (info: ModelInfo) => ({
  "gen_ai.provider.name": info.provider,
  "gen_ai.request.model": info.model
})

/**
 * Runs a whole run under its `invoke_agent` span (OT 2.1). An open turn span is ended with the run, so a
 * run that dies mid-turn leaves no span open.
 */
export const invokeAgent = <A, E, R>(
  trace: RunTrace | undefined,
  info: ModelInfo,
  body: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  if (trace?.scope.tracer === undefined) return body
  const scope = trace.scope
  return Effect.withFiber((fiber) => {
    const span = open(scope, "invoke_agent effect-agent", Context.getOption(fiber.context, Tracer.ParentSpan), {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "effect-agent",
      ...modelAttributes(info)
    })
    trace.run = span
    return Effect.onExit(Effect.withParentSpan(body, span), (exit) =>
      Effect.sync(() => {
        if (trace.turn !== undefined) close(scope, trace.turn, exit)
        trace.turn = undefined
        span.attribute("effect_agent.turns", trace.turns)
        span.attribute("gen_ai.usage.input_tokens", trace.inputTokens)
        span.attribute("gen_ai.usage.output_tokens", trace.outputTokens)
        close(scope, span, exit)
      }))
  })
}

/** Opens the span of a new turn under the run's span (OT 2.2). */
export const turnStart = (trace: RunTrace | undefined): void => {
  if (trace?.scope.tracer === undefined || trace.run === undefined) return
  if (trace.turn !== undefined) close(trace.scope, trace.turn, Exit.void)
  trace.turn = open(trace.scope, "turn", Option.some(trace.run), {
    "effect_agent.turn.index": trace.turns++
  })
}

/** Ends the current turn's span with what the turn produced (OT 2.2). */
export const turnEnd = (
  trace: RunTrace | undefined,
  message: AssistantMessage,
  toolResults: ReadonlyArray<ToolResultMessage>
): void => {
  const span = trace?.turn
  if (span === undefined) return
  trace!.turn = undefined
  span.attribute("effect_agent.turn.stop_reason", message.stopReason)
  span.attribute("effect_agent.turn.tool_calls", toolResults.length)
  close(
    trace!.scope,
    span,
    message.stopReason === "error" ? failedExit("model_error", message.errorMessage) : Exit.void
  )
}

/** Runs `effect` (the turn's tool batch) with the current turn span as its parent (OT 2.2). */
export const inTurn = <A, E, R>(trace: RunTrace | undefined, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  trace?.turn === undefined ? effect : Effect.withParentSpan(effect, trace.turn)

const firstTokenEvent = (type: string) => type !== "start" && type !== "done" && type !== "error"

/**
 * The run's model with each call observed: a `chat` span under the turn (OT 3.1) with the usage, finish
 * reason and response ids (OT 3.2), the time to first token and token metrics (OT 5.3, 5.4), and the
 * contents when opted in (OT 4.1). Without a trace the model itself is returned.
 */
export const observeModel = (trace: RunTrace | undefined, model: ModelShape): ModelShape => {
  if (trace === undefined) return model
  const scope = trace.scope
  const info = model.info
  const modelLabel = { "gen_ai.request.model": info.model }
  return {
    info,
    stream: (request) =>
      Stream.unwrap(Effect.sync(() => {
        const started = scope.clock.currentTimeNanosUnsafe()
        const parent = trace.turn ?? trace.run
        const span = scope.tracer === undefined ? undefined : open(
          scope,
          `chat ${info.model}`,
          parent === undefined ? Option.none() : Option.some(parent),
          {
            "gen_ai.operation.name": "chat",
            ...modelAttributes(info),
            ...(request.options?.maxTokens !== undefined
              ? { "gen_ai.request.max_tokens": request.options.maxTokens }
              : {}),
            ...(request.options?.temperature !== undefined
              ? { "gen_ai.request.temperature": request.options.temperature }
              : {})
          },
          started,
          "client"
        )
        if (span !== undefined && scope.contents) {
          span.attribute("gen_ai.system_instructions", json([{ type: "text", content: request.systemPrompt }]))
          span.attribute("gen_ai.input.messages", json(request.messages))
        }
        let first = true
        let final: AssistantMessage | undefined
        const observed = model.stream(request).pipe(
          Stream.map((event) => {
            if (first && firstTokenEvent(event.type)) {
              first = false
              const ttft = seconds(started, scope.clock.currentTimeNanosUnsafe())
              span?.attribute("effect_agent.time_to_first_token", ttft)
              if (scope.metrics) withLabels(modelTimeToFirstToken, modelLabel).updateUnsafe(ttft, scope.context)
            }
            if (event.type === "done") final = event.message
            else if (event.type === "error") final = event.error
            return event
          }),
          Stream.onExit((exit) =>
            Effect.sync(() => {
              if (final !== undefined) {
                const usage = final.usage
                trace.inputTokens += usage.input
                trace.outputTokens += usage.output
                if (scope.metrics) {
                  const kinds = [["input", usage.input], ["output", usage.output], ["cache_read", usage.cacheRead], [
                    "cache_write",
                    usage.cacheWrite
                  ]] as const
                  for (const [kind, count] of kinds) {
                    if (count > 0) {
                      withLabels(modelTokens, { ...modelLabel, "gen_ai.token.type": kind }).updateUnsafe(
                        count,
                        scope.context
                      )
                    }
                  }
                }
              }
              if (span === undefined) return
              if (final !== undefined) {
                span.attribute("gen_ai.usage.input_tokens", final.usage.input)
                span.attribute("gen_ai.usage.output_tokens", final.usage.output)
                if (final.usage.cacheRead > 0) {
                  span.attribute("gen_ai.usage.cache_read.input_tokens", final.usage.cacheRead)
                }
                if (final.usage.cacheWrite > 0) {
                  span.attribute("gen_ai.usage.cache_creation.input_tokens", final.usage.cacheWrite)
                }
                span.attribute("gen_ai.response.finish_reasons", [final.stopReason])
                if (final.responseModel !== undefined) {
                  span.attribute("gen_ai.response.model", final.responseModel)
                }
                if (final.responseId !== undefined) span.attribute("gen_ai.response.id", final.responseId)
                if (scope.contents) span.attribute("gen_ai.output.messages", json([final]))
              }
              if (Exit.isFailure(exit)) {
                const error = Cause.findErrorOption(exit.cause)
                span.attribute(
                  "error.type",
                  Option.isSome(error)
                    ? `ModelError.${(error.value as { reason?: string }).reason ?? "unknown"}`
                    : Cause.hasInterruptsOnly(exit.cause)
                    ? "aborted"
                    : "defect"
                )
                close(scope, span, exit)
              } else if (final?.stopReason === "error" || final?.stopReason === "aborted") {
                const errorType = final.stopReason === "error" ? "model_error" : "aborted"
                span.attribute("error.type", errorType)
                close(scope, span, failedExit(errorType, final.errorMessage))
              } else {
                close(scope, span, exit)
              }
            })
          )
        )
        return span === undefined ? observed : Stream.provideService(observed, Tracer.ParentSpan, span)
      }))
  }
}

// ---------------------------------------------------------------------------------------------------------
// Tool calls (the batch)
// ---------------------------------------------------------------------------------------------------------

/** What a tool call ended with, as the batch records it. */
export interface ToolOutcome {
  readonly result: ToolResult
  readonly isError: boolean
  /** The immediate outcome's tag when the call ended in prepare (e.g. `ToolNotFound`). */
  readonly errorType?: string | undefined
}

/** A tool phase that can take time (OT 2.4). */
export type ToolPhase = "approval" | "execution" | "finalize"

interface CallTrace {
  readonly span: Tracer.Span | undefined
  readonly started: bigint
  readonly toolName: string
  phase: Tracer.Span | undefined
}

/** The telemetry of one tool batch; `undefined` when nothing is recorded. Built by {@link batchTrace}. */
export interface BatchTrace {
  readonly scope: Scope
  readonly parent: Option.Option<Tracer.AnySpan>
  /** Keyed by the batch's own record of each call: two calls may share an id. */
  readonly calls: Map<object, CallTrace>
}

/** The batch's telemetry, decided once per batch (OT 1.2); its spans go under the current span (the turn). */
export const batchTrace: Effect.Effect<BatchTrace | undefined> = Effect.withFiber((fiber) => {
  const scope = scopeOf(fiber)
  return Effect.succeed(
    scope === undefined
      ? undefined
      : { scope, parent: Context.getOption(fiber.context, Tracer.ParentSpan), calls: new Map() }
  )
})

/** Opens a call's `execute_tool` span at its start event and counts it in flight (OT 2.3, 5.5). */
export const toolStart = (trace: BatchTrace | undefined, call: object, toolCall: ToolCall): void => {
  if (trace === undefined) return
  const scope = trace.scope
  const started = scope.clock.currentTimeNanosUnsafe()
  const span = scope.tracer === undefined ? undefined : open(scope, `execute_tool ${toolCall.name}`, trace.parent, {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": toolCall.name,
    "gen_ai.tool.call.id": toolCall.id,
    "gen_ai.tool.type": "function"
  }, started)
  if (span !== undefined && scope.contents) span.attribute("gen_ai.tool.call.arguments", json(toolCall.arguments))
  trace.calls.set(call, { span, started, toolName: toolCall.name, phase: undefined })
  if (scope.metrics) toolCallsInFlight.modifyUnsafe(1, scope.context)
}

const errorTypeOf = (outcome: ToolOutcome): string | undefined => {
  if (!outcome.isError) return undefined
  if (outcome.errorType !== undefined) return outcome.errorType
  const details = outcome.result.details as { readonly timedOut?: unknown; readonly aborted?: unknown } | undefined
  if (details?.timedOut === true) return "timeout"
  if (details?.aborted === true) return "aborted"
  return "tool_error"
}

/**
 * Ends a call's span at its end event with its outcome, `error.type` for an error result (OT 2.3), and
 * records its duration (OT 5.2). A phase still open (an abandoned tool) ends with it.
 */
export const toolEnd = (trace: BatchTrace | undefined, call: object, outcome: ToolOutcome): void => {
  if (trace === undefined) return
  const entry = trace.calls.get(call)
  if (entry === undefined) return
  trace.calls.delete(call)
  const scope = trace.scope
  const ended = scope.clock.currentTimeNanosUnsafe()
  const errorType = errorTypeOf(outcome)
  const outcomeName = errorType === undefined ? "success" : "error"
  if (scope.metrics) {
    toolCallsInFlight.modifyUnsafe(-1, scope.context)
    withLabels(toolCallDuration, {
      "gen_ai.tool.name": entry.toolName,
      "effect_agent.tool.outcome": outcomeName,
      ...(errorType === undefined ? {} : { "error.type": errorType })
    }).updateUnsafe(seconds(entry.started, ended), scope.context)
  }
  const span = entry.span
  if (span === undefined) return
  if (entry.phase !== undefined) close(scope, entry.phase, Exit.interrupt())
  span.attribute("effect_agent.tool.outcome", outcomeName)
  if (scope.contents) span.attribute("gen_ai.tool.call.result", json(outcome.result.content))
  if (errorType === undefined) {
    span.end(ended, Exit.void)
  } else {
    span.attribute("error.type", errorType)
    const text = outcome.result.content.find((block) => block.type === "text")
    span.end(ended, failedExit(errorType, text?.type === "text" ? text.text : undefined))
  }
}

/**
 * Runs one phase of a call (OT 2.4). `phase` is called at once; when it returns an Effect that is already
 * complete (an instant tool, no hook) no span is made, otherwise its span starts from before the call and
 * is the parent of whatever the phase runs (the tool's own spans, an approval prompt's).
 */
export const toolPhase = <A, E, R>(
  trace: BatchTrace | undefined,
  call: object,
  name: ToolPhase,
  phase: () => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  if (trace?.scope.tracer === undefined) return phase()
  const scope = trace.scope
  const startTime = scope.clock.currentTimeNanosUnsafe()
  const effect = phase()
  const entry = trace.calls.get(call)
  if (Exit.isExit(effect) || entry?.span === undefined) return effect
  const span = open(scope, `tool.${name}`, Option.some(entry.span), {
    "effect_agent.tool.phase": name,
    "gen_ai.tool.name": entry.toolName
  }, startTime)
  entry.phase = span
  return Effect.onExit(Effect.withParentSpan(effect, span), (exit) =>
    Effect.sync(() => {
      if (entry.phase === span) entry.phase = undefined
      close(scope, span, exit)
    }))
}
