/**
 * What the HTTP providers share: sending the request on `effect/http`, decoding the SSE body with
 * `effect/encoding`'s `Sse`, turning every fault into a typed {@link ModelError}, retrying transient
 * faults before anything was streamed, and the idle timeout between chunks.
 *
 * @internal
 */
import { Data, Duration, Effect, Option, Redacted, Schedule, Schema, Stream } from "effect"
import type { Scope } from "effect"
import { Sse } from "effect/encoding"
import { HttpClient, type HttpClientError, HttpClientRequest, type HttpClientResponse } from "effect/http"
import type { AssistantMessageEvent } from "../../AssistantMessageEvent.ts"
import {
  ModelError,
  type ModelErrorReason,
  type ModelInfo,
  type ModelRequest,
  type ModelShape
} from "../../Model.ts"
import type { ResponseBuilder } from "./builder.ts"

// ---------------------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------------------

/** How transient faults are retried. Only faults that happen before the first event are retried. */
export interface RetryOptions {
  /** Retries after the first attempt. Default 3; 0 disables retrying. */
  readonly times?: number | undefined
  /** The first backoff delay, doubled (with jitter) for each retry. Default 1 second. */
  readonly baseDelay?: Duration.Input | undefined
  /**
   * The longest wait between attempts. A `retry-after` asking for longer is not honoured: the call fails
   * at once. Default 60 seconds.
   */
  readonly maxDelay?: Duration.Input | undefined
}

/** The transport settings every HTTP provider accepts. */
export interface TransportOptions {
  /**
   * How long to wait for the response headers and then for each chunk of the body before failing with a
   * `timeout` error. Default 5 minutes.
   */
  readonly idleTimeout?: Duration.Input | undefined
  readonly retry?: RetryOptions | undefined
  /** Extra request headers (e.g. for a proxy). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** {@link TransportOptions} with every default applied. */
export interface Transport {
  readonly idleTimeout: Duration.Duration
  readonly retryTimes: number
  readonly baseDelay: Duration.Duration
  readonly maxDelay: Duration.Duration
  readonly headers: Readonly<Record<string, string>>
}

export const resolveTransport = (options: TransportOptions): Transport => ({
  idleTimeout: Duration.fromInputUnsafe(options.idleTimeout ?? Duration.minutes(5)),
  retryTimes: Math.max(0, Math.floor(options.retry?.times ?? 3)),
  baseDelay: Duration.fromInputUnsafe(options.retry?.baseDelay ?? Duration.seconds(1)),
  maxDelay: Duration.fromInputUnsafe(options.retry?.maxDelay ?? Duration.seconds(60)),
  headers: options.headers ?? {}
})

// ---------------------------------------------------------------------------------------------------------
// Faults
// ---------------------------------------------------------------------------------------------------------

/** A fault on its way to becoming a `ModelError`, with the wait the server asked for, if any. */
export class ProviderFailure extends Data.TaggedError("ProviderFailure")<{
  readonly error: ModelError
  readonly retryAfter?: Duration.Duration | undefined
}> {}

/** Removes secrets from a text before it reaches an error message. */
export type Scrub = (text: string) => string

export const makeScrub = (secrets: ReadonlyArray<Redacted.Redacted<string> | undefined>): Scrub => {
  const values = secrets.flatMap((secret) => {
    if (secret === undefined) return []
    const value = Redacted.value(secret)
    return value.length >= 4 ? [value] : []
  })
  return (text) => values.reduce((acc, value) => acc.split(value).join("[redacted]"), text)
}

export const failure = (
  reason: ModelErrorReason,
  message: string,
  extra: { readonly status?: number; readonly retryable?: boolean; readonly retryAfter?: Duration.Duration } = {}
): ProviderFailure =>
  new ProviderFailure({
    error: new ModelError({
      reason,
      message,
      ...(extra.status !== undefined ? { status: extra.status } : {}),
      retryable: extra.retryable ?? false
    }),
    retryAfter: extra.retryAfter
  })

/** The error bodies servers send: OpenAI's and Anthropic's shapes and the common variants. */
const ErrorBody = Schema.Union([
  Schema.Struct({
    error: Schema.Struct({
      message: Schema.String,
      type: Schema.optionalKey(Schema.NullOr(Schema.String)),
      code: Schema.optionalKey(Schema.NullOr(Schema.Union([Schema.String, Schema.Number])))
    })
  }),
  Schema.Struct({ error: Schema.String }),
  Schema.Struct({ message: Schema.String }),
  Schema.Struct({ detail: Schema.String })
])
const decodeErrorBody = Schema.decodeUnknownOption(Schema.fromJsonString(ErrorBody))

/** The human-readable message of an error body, or the body itself (shortened) when it has no known shape. */
export const errorBodyMessage = (body: string): string => {
  const parsed = decodeErrorBody(body)
  if (Option.isSome(parsed)) {
    const value = parsed.value
    if ("error" in value) {
      if (typeof value.error === "string") return value.error
      const type = value.error.type ?? (typeof value.error.code === "string" ? value.error.code : undefined)
      return type ? `${value.error.message} (${type})` : value.error.message
    }
    return "message" in value ? value.message : value.detail
  }
  const trimmed = body.trim()
  return trimmed.length > 500 ? `${trimmed.slice(0, 500)}…` : trimmed
}

/** The wait a response asks for: `retry-after-ms`, or `retry-after` in seconds or as an HTTP date. */
export const retryAfterOf = (headers: Readonly<Record<string, string | undefined>>): Duration.Duration | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Duration.millis(Number(ms))
  const value = headers["retry-after"]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Duration.seconds(Number(value))
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Duration.millis(Math.max(0, date - Date.now()))
}

const describeCause = (cause: unknown): string => {
  const parts: Array<string> = []
  let current: unknown = cause
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    if (typeof current === "object") {
      const code = "code" in current && typeof current.code === "string" ? current.code : undefined
      const message = "message" in current && typeof current.message === "string" ? current.message : undefined
      const text = code && message && !message.includes(code) ? `${message} (${code})` : message ?? code
      if (text !== undefined && !parts.includes(text)) parts.push(text)
      current = "cause" in current ? current.cause : undefined
    } else {
      parts.push(String(current))
      break
    }
  }
  return parts.join(": ") || "unknown cause"
}

/** A failure of the HTTP client: connection refused, reset, lost mid-body. */
const networkFailure = (label: string, what: string, error: HttpClientError.HttpClientError, scrub: Scrub) =>
  failure("network", scrub(`${label}: ${what} (${describeCause(error.reason.cause ?? error.reason)})`), {
    retryable: true
  })

const statusFailure = (
  label: string,
  response: HttpClientResponse.HttpClientResponse,
  transport: Transport,
  scrub: Scrub
): Effect.Effect<ProviderFailure> =>
  response.text.pipe(
    Effect.timeoutOrElse({ duration: transport.idleTimeout, orElse: () => Effect.succeed("") }),
    Effect.orElseSucceed(() => ""),
    Effect.map((body) => {
      const status = response.status
      const detail = errorBodyMessage(body) || `status ${status}`
      const [reason, retryable]: [ModelErrorReason, boolean] = status === 401 || status === 403
        ? ["auth", false]
        : status === 429
        ? ["rate-limit", true]
        : status === 408
        ? ["timeout", true]
        : status >= 500
        ? ["http", true]
        : ["http", false]
      const retryAfter = retryAfterOf(response.headers)
      return failure(reason, scrub(`${label} request failed with HTTP ${status}: ${detail}`), {
        status,
        retryable,
        ...(retryAfter !== undefined ? { retryAfter } : {})
      })
    })
  )

const retrySchedule = (transport: Transport, emitted: () => boolean) =>
  Schedule.exponential(transport.baseDelay, 2).pipe(
    Schedule.jittered,
    Schedule.setInputType<ProviderFailure>(),
    Schedule.while(({ attempt, input }) =>
      attempt <= transport.retryTimes &&
      !emitted() &&
      input.error.retryable === true &&
      (input.retryAfter === undefined || Duration.isLessThanOrEqualTo(input.retryAfter, transport.maxDelay))
    ),
    Schedule.modifyDelay(({ duration, input }) =>
      Effect.succeed(input.retryAfter ?? Duration.min(duration, transport.maxDelay))
    )
  )

// ---------------------------------------------------------------------------------------------------------
// Streaming
// ---------------------------------------------------------------------------------------------------------

/** Turns the SSE events of one response into our events. A fresh decoder serves each attempt. */
export interface EventDecoder {
  readonly builder: ResponseBuilder
  /** Handles one SSE event; a returned failure ends the stream. */
  readonly onEvent: (event: Sse.Event) => ProviderFailure | undefined
  /** True once the response is complete: nothing more is read. */
  readonly ended: () => boolean
  /** Called when the body is over (or {@link ended}): finishes the message, or fails if it was cut short. */
  readonly onEnd: () => ProviderFailure | undefined
}

export interface SseCall {
  /** Who is being called, for messages: "OpenAI-compatible API", "Anthropic API". */
  readonly label: string
  /** The client, with `HttpClient.withScope` applied so the request lives as long as the stream. */
  readonly client: HttpClient.HttpClient.With<HttpClientError.HttpClientError, Scope.Scope>
  readonly request: Effect.Effect<HttpClientRequest.HttpClientRequest, ProviderFailure>
  readonly decoder: () => EventDecoder
  readonly transport: Transport
  readonly scrub: Scrub
}

const formatDuration = (duration: Duration.Duration): string => Duration.format(duration)

/**
 * One model call as a stream of events. The request's lifetime is the stream's: interrupting or ending
 * the stream aborts it.
 */
export const streamSse = (call: SseCall): Stream.Stream<AssistantMessageEvent, ModelError> =>
  Stream.suspend(() => {
    const { label, scrub, transport } = call
    let emitted = false
    const attempt = Stream.unwrap(Effect.gen(function*() {
      const request = yield* call.request
      const response = yield* call.client.execute(request).pipe(
        Effect.mapError((error) => networkFailure(label, "the request failed", error, scrub)),
        Effect.timeoutOrElse({
          duration: transport.idleTimeout,
          orElse: () =>
            Effect.fail(
              failure("timeout", `${label}: no response within ${formatDuration(transport.idleTimeout)}`)
            )
        })
      )
      if (response.status < 200 || response.status >= 300) {
        return yield* Effect.fail(yield* statusFailure(label, response, transport, scrub))
      }
      const decoder = call.decoder()
      const body: Stream.Stream<Uint8Array, ProviderFailure> = response.stream.pipe(
        Stream.mapError((error) => networkFailure(label, "the connection was lost while streaming", error, scrub)),
        Stream.timeoutOrElse({
          duration: transport.idleTimeout,
          orElse: () =>
            Stream.fail(
              failure(
                "timeout",
                `${label}: the stream stalled (no data for ${formatDuration(transport.idleTimeout)})`
              )
            )
        })
      )
      return body.pipe(
        Stream.decodeText(),
        Stream.pipeThroughChannel(Sse.decode<ProviderFailure, unknown>()),
        Stream.mapError((error) =>
          error instanceof ProviderFailure
            ? error
            : Sse.Retry.is(error)
            ? failure("stream", `${label}: the server asked to reconnect`)
            : failure("decode", `${label}: ${error.message}`)
        ),
        Stream.mapEffect((event) => {
          const fault = decoder.onEvent(event)
          return fault === undefined ? Effect.succeed(decoder.builder.drain()) : Effect.fail(fault)
        }),
        Stream.takeUntil(() => decoder.ended()),
        Stream.concat(Stream.suspend(() => {
          const fault = decoder.onEnd()
          return fault === undefined ? Stream.succeed(decoder.builder.drain()) : Stream.fail(fault)
        })),
        Stream.flattenIterable
      )
    }))
    return attempt.pipe(
      Stream.tap(() =>
        Effect.sync(() => {
          emitted = true
        })
      ),
      Stream.retry(retrySchedule(transport, () => emitted)),
      Stream.mapError((fault) => fault.error)
    )
  })

/** A stream event's data as JSON decoded by a Schema, or a `decode` failure naming the event. */
export const decodeJsonData = <S extends Schema.Decoder<unknown>>(schema: S, label: string, scrub: Scrub) => {
  const decode = Schema.decodeUnknownResult(Schema.fromJsonString(schema))
  return (data: string): S["Type"] | ProviderFailure => {
    const result = decode(data)
    if (result._tag === "Success") return result.success
    const snippet = data.length > 200 ? `${data.slice(0, 200)}…` : data
    return failure(
      "decode",
      scrub(`${label}: could not decode a stream event: ${result.failure.message} (data: ${snippet})`)
    )
  }
}

/** What differs between providers speaking JSON requests and SSE responses. */
export interface SseModelSpec<Body> {
  readonly label: string
  readonly info: ModelInfo
  readonly url: string
  readonly transport: Transport
  /** The secrets to scrub from every message (API keys). */
  readonly secrets: ReadonlyArray<Redacted.Redacted<string> | undefined>
  /** Adds the provider's headers (authentication, version) to the base request. */
  readonly authorize: (request: HttpClientRequest.HttpClientRequest) => HttpClientRequest.HttpClientRequest
  readonly bodySchema: Schema.Codec<Body, unknown>
  readonly toBody: (request: ModelRequest) => Body
  readonly makeDecoder: (scrub: Scrub) => () => EventDecoder
}

/**
 * A model service for a provider that takes a JSON request and streams SSE: the request is built and
 * encoded per call, sent with the transport's retries and idle timeout, and decoded into our events.
 */
export const makeSseModel = <Body>(
  spec: SseModelSpec<Body>
): Effect.Effect<ModelShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = (yield* HttpClient.HttpClient).pipe(HttpClient.withScope)
    const scrub = makeScrub(spec.secrets)
    const decoder = spec.makeDecoder(scrub)
    const baseRequest = HttpClientRequest.post(spec.url).pipe(
      HttpClientRequest.setHeaders({ ...spec.transport.headers, accept: "text/event-stream" }),
      spec.authorize
    )
    const encodeBody = HttpClientRequest.schemaBodyJson(spec.bodySchema)
    return {
      info: spec.info,
      stream: (request) =>
        streamSse({
          label: spec.label,
          client,
          transport: spec.transport,
          scrub,
          decoder,
          request: Effect.suspend(() => encodeBody(baseRequest, spec.toBody(request))).pipe(
            Effect.mapError((error) =>
              failure("unknown", scrub(`${spec.label}: could not encode the request: ${error.message}`))
            )
          )
        })
    }
  })
