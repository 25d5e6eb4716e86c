/**
 * What the HTTP providers share: sending the request on `effect/http`, decoding the SSE body with
 * `effect/encoding`'s `Sse`, turning every fault into a typed {@link ModelError}, retrying transient
 * faults before anything was streamed, and the idle timeout between chunks.
 *
 * Internal: no entry point exports it.
 */
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AssistantMessageEvent } from "../../AssistantMessageEvent.ts"
import { errorChainText } from "../../internal/errorText.ts"
import type { AssistantMessage } from "../../Message.ts"
import { ModelError, type ModelInfo, type ModelRequest, type ModelShape } from "../../Model.ts"
import type { ResponseBuilder } from "./builder.ts"

// ---------------------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------------------

/** How transient faults are retried. Only faults that happen before the first event are retried. */
export interface RetryOptions {
  /** Retries after the first attempt. Default 2, as in the official clients; 0 disables retrying. */
  readonly times?: number | undefined
  /** The first backoff delay, doubled (with jitter) for each retry. Default 1 second. */
  readonly baseDelay?: Duration.Input | undefined
  /**
   * The longest wait between attempts. A `retry-after` asking for longer is not honoured: the call fails
   * at once, and its error message says how long the server asked to wait. Default 60 seconds.
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
  /**
   * Send the current trace as `traceparent` and `b3` headers. Default false: a third-party API has no use
   * for them, and they tell it about your tracing.
   */
  readonly propagateTracing?: boolean | undefined
}

/** {@link TransportOptions} with every default applied. */
export interface Transport {
  readonly idleTimeout: Duration.Duration
  readonly retryTimes: number
  readonly baseDelay: Duration.Duration
  readonly maxDelay: Duration.Duration
  readonly headers: Readonly<Record<string, string>>
  readonly propagateTracing: boolean
}

export const resolveTransport = (options: TransportOptions): Transport => ({
  idleTimeout: Duration.fromInputUnsafe(options.idleTimeout ?? Duration.minutes(5)),
  retryTimes: Math.max(0, Math.floor(options.retry?.times ?? DEFAULT_RETRIES)),
  baseDelay: Duration.fromInputUnsafe(options.retry?.baseDelay ?? Duration.seconds(1)),
  maxDelay: Duration.fromInputUnsafe(options.retry?.maxDelay ?? Duration.seconds(60)),
  headers: options.headers ?? {},
  propagateTracing: options.propagateTracing ?? false
})

/** Retries after the first attempt unless told otherwise: the official OpenAI and Anthropic clients' default. */
const DEFAULT_RETRIES = 2

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
  reason: ModelError["reason"],
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

/** What an error body says: its message and, when it names one, its error type (`insufficient_quota`, …). */
export interface ErrorBodyInfo {
  readonly message: string
  readonly type?: string | undefined
  readonly code?: string | undefined
}

/** Reads an error body of a known shape; `undefined` when the text is not one. */
const parseErrorBody = (body: string): ErrorBodyInfo | undefined => {
  const parsed = decodeErrorBody(body)
  if (Option.isNone(parsed)) return undefined
  const value = parsed.value
  if ("error" in value) {
    if (typeof value.error === "string") return { message: value.error }
    const code = typeof value.error.code === "string" ? value.error.code : undefined
    const type = value.error.type ?? code
    return { message: value.error.message, ...(type ? { type } : {}), ...(code ? { code } : {}) }
  }
  return { message: "message" in value ? value.message : value.detail }
}

const shorten = (text: string, max: number) => text.length > max ? `${text.slice(0, max)}…` : text

/** The human-readable message of an error body, or the body itself (shortened) when it has no known shape. */
export const errorBodyMessage = (body: string): string => {
  const info = parseErrorBody(body)
  if (info !== undefined) return info.type ? `${info.message} (${info.type})` : info.message
  return shorten(body.trim(), 500)
}

/**
 * The wait a response asks for: `retry-after-ms`, or `retry-after` in seconds or as an HTTP date (counted
 * from `now`, the Clock's time in milliseconds).
 */
export const retryAfterOf = (
  headers: Readonly<Record<string, string | undefined>>,
  now: number
): Duration.Duration | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Duration.millis(Number(ms))
  const value = headers["retry-after"]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Duration.seconds(Number(value))
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Duration.millis(Math.max(0, date - now))
}

/** A failure of the HTTP client: connection refused, reset, lost mid-body. */
const networkFailure = (label: string, what: string, error: HttpClientError.HttpClientError, scrub: Scrub) =>
  failure("network", scrub(`${label}: ${what} (${errorChainText(error.reason.cause ?? error.reason)})`), {
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
    Effect.zip(Clock.currentTimeMillis),
    Effect.map(([body, now]) => {
      const status = response.status
      const info = parseErrorBody(body)
      const detail = errorBodyMessage(body) || `status ${status}`
      const [reason, retryableByStatus]: [ModelError["reason"], boolean] = status === 401 || status === 403
        ? ["auth", false]
        : status === 429
        ? ["rate-limit", true]
        : status === 408
        ? ["timeout", true]
        : status === 409 // a lock timeout, retried by the official clients
        ? ["http", true]
        : status >= 500
        ? ["http", true]
        : ["http", false]
      let retryable = retryableByStatus
      // The server knows better than its status code (the official clients obey this header too).
      const shouldRetry = response.headers["x-should-retry"]?.trim().toLowerCase()
      if (shouldRetry === "false") retryable = false
      else if (shouldRetry === "true") retryable = true
      // A billing limit, not a rate limit: waiting does not help, and retrying only delays the bad news.
      if (info?.type === "insufficient_quota" || info?.code === "insufficient_quota") retryable = false
      const retryAfter = retryAfterOf(response.headers, now)
      const tooLong = retryable && transport.retryTimes > 0 && retryAfter !== undefined &&
        Duration.isGreaterThan(retryAfter, transport.maxDelay)
      const note = tooLong
        ? ` (the server asked to wait ${formatDuration(retryAfter)} before retrying, longer than the ${
          formatDuration(transport.maxDelay)
        } allowed by retry.maxDelay, so it was not retried)`
        : ""
      return failure(reason, scrub(`${label} request failed with HTTP ${status}: ${detail}${note}`), {
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
  /**
   * A JSON body that came instead of a stream (the server ignored `stream: true`) as the events its
   * stream would have carried; `undefined` when it is not a complete response of this API.
   */
  readonly fromJson?: ((body: string) => ReadonlyArray<Sse.Event> | undefined) | undefined
}

export interface SseCall {
  /** Who is being called, for messages: "OpenAI-compatible API", "Anthropic API". */
  readonly label: string
  /** The client, with `HttpClient.withScope` applied so the request lives as long as the stream. */
  readonly client: HttpClient.HttpClient.With<HttpClientError.HttpClientError, Scope.Scope>
  readonly request: Effect.Effect<HttpClientRequest.HttpClientRequest, ProviderFailure>
  /** A fresh decoder for one attempt; `now` (the Clock's time) stamps the message it builds. */
  readonly decoder: (now: number) => EventDecoder
  readonly transport: Transport
  readonly scrub: Scrub
}

const formatDuration = (duration: Duration.Duration): string => Duration.format(duration)

/**
 * SSE text as events. A `retry:` field only tells a browser how long to wait before reconnecting; it is
 * dropped here, where `Sse.decode` would fail the stream on it (and whether it did would depend on where
 * the network split the bytes).
 */
const sseEvents = <E>(text: Stream.Stream<string, E>, label: string): Stream.Stream<Sse.Event, E | ProviderFailure> =>
  Stream.suspend(() => {
    let buffer: Array<Sse.Event> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") buffer.push(event)
    })
    return text.pipe(
      Stream.mapEffect((chunk) => {
        const error = parser.feed(chunk)
        if (error !== undefined) return Effect.fail(failure("decode", `${label}: ${error.message}`))
        const out = buffer
        buffer = []
        return Effect.succeed(out)
      }),
      Stream.flattenIterable
    )
  })

const isJsonResponse = (response: HttpClientResponse.HttpClientResponse) => {
  const type = response.headers["content-type"]?.toLowerCase() ?? ""
  return type.includes("json") && !type.includes("event-stream")
}

/** What a failed call had streamed, for its error message: the text and the tool calls so far. */
const describePartial = (message: AssistantMessage): string | undefined => {
  const text = message.content.flatMap((block) => block.type === "text" ? [block.text] : []).join("")
  const calls = message.content.flatMap((block) =>
    block.type === "toolCall" ? [`${block.name || "?"}(${shorten(JSON.stringify(block.arguments), 300)})`] : []
  )
  const parts = [
    ...(text.length > 0 ? [`text so far: ${JSON.stringify(shorten(text, 4000))}`] : []),
    ...(calls.length > 0 ? [`tool calls so far: ${calls.join(", ")}`] : [])
  ]
  return parts.length > 0 ? parts.join("; ") : undefined
}

const withPartial = (error: ModelError, partial: AssistantMessage | undefined): ModelError => {
  const described = partial === undefined ? undefined : describePartial(partial)
  if (described === undefined) return error
  return new ModelError({
    reason: error.reason,
    message: `${error.message} [partial response kept: ${described}]`,
    ...(error.status !== undefined ? { status: error.status } : {}),
    ...(error.retryable !== undefined ? { retryable: error.retryable } : {})
  })
}

/**
 * One model call as a stream of events. The request's lifetime is the stream's: interrupting or ending
 * the stream aborts it. A fault before any content was streamed is retried (the `start` event is held
 * back until content follows, so a retry never repeats it); after content it fails the stream, and the
 * error message says what had been streamed.
 */
const streamSse = (call: SseCall): Stream.Stream<AssistantMessageEvent, ModelError> =>
  Stream.suspend(() => {
    const state: AttemptState = { emitted: false, current: undefined }
    return Stream.unwrap(sseAttempt(call, state)).pipe(
      Stream.tap(() =>
        Effect.sync(() => {
          state.emitted = true
        })
      ),
      Stream.retry(retrySchedule(call.transport, () => state.emitted)),
      Stream.mapError((fault) =>
        state.emitted ? withPartial(fault.error, state.current?.builder.snapshot()) : fault.error
      )
    )
  })

/** What the attempts of one model call share: whether content went out, and the latest attempt's decoder. */
interface AttemptState {
  emitted: boolean
  current: EventDecoder | undefined
}

/**
 * One attempt of a model call: the request sent, and its events. A module generator, not one made per call:
 * a generator function made per call keeps what its scope holds (the call's whole response) alive through
 * every scavenge until the next major collection (the lint rule in tools/lint/eslint.config.mjs says why).
 */
const sseAttempt = Effect.fnUntraced(function*(call: SseCall, state: AttemptState) {
  const { label, scrub, transport } = call
  const request = yield* call.request
  const execute = call.client.execute(request).pipe(
    Effect.mapError((error) => networkFailure(label, "the request failed", error, scrub)),
    Effect.timeoutOrElse({
      duration: transport.idleTimeout,
      orElse: () =>
        Effect.fail(
          failure("timeout", `${label}: no response within ${formatDuration(transport.idleTimeout)}`)
        )
    })
  )
  const response = yield* (transport.propagateTracing
    ? execute
    : Effect.provideService(execute, HttpClient.TracerPropagationEnabled, false))
  if (response.status < 200 || response.status >= 300) {
    return yield* Effect.fail(yield* statusFailure(label, response, transport, scrub))
  }
  const decoder = call.decoder(yield* Clock.currentTimeMillis)
  state.current = decoder
  let held: Array<AssistantMessageEvent> = []
  // `start` alone is not content: hold it so that a retry before content does not start twice.
  const release = (events: Array<AssistantMessageEvent>): Array<AssistantMessageEvent> => {
    if (held.length === 0 && events.length === 0) return events
    if (events.every((event) => event.type === "start")) {
      held.push(...events)
      return []
    }
    const out = held.length > 0 ? [...held, ...events] : events
    held = []
    return out
  }
  const events: Stream.Stream<Sse.Event, ProviderFailure> = isJsonResponse(response)
    ? Stream.fromEffect(
      response.text.pipe(
        Effect.mapError((error) => networkFailure(label, "the connection was lost while reading", error, scrub)),
        Effect.timeoutOrElse({
          duration: transport.idleTimeout,
          orElse: () =>
            Effect.fail(failure("timeout", `${label}: the body stalled (${formatDuration(transport.idleTimeout)})`))
        }),
        Effect.flatMap((body) => {
          const converted = decoder.fromJson?.(body)
          if (converted !== undefined) return Effect.succeed(converted)
          const info = parseErrorBody(body)
          return Effect.fail(
            info !== undefined
              ? failure(
                "http",
                scrub(`${label}: the server answered with an error instead of a stream: ${errorBodyMessage(body)}`),
                { status: response.status }
              )
              : failure(
                "decode",
                scrub(`${label}: the server answered with JSON instead of a stream: ${shorten(body.trim(), 500)}`),
                { status: response.status }
              )
          )
        })
      )
    ).pipe(Stream.flattenIterable)
    : sseEvents(
      response.stream.pipe(
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
        }),
        Stream.decodeText()
      ),
      label
    )
  return events.pipe(
    Stream.mapEffect((event) => {
      const fault = decoder.onEvent(event)
      return fault === undefined ? Effect.succeed(release(decoder.builder.drain())) : Effect.fail(fault)
    }),
    Stream.takeUntil(() => decoder.ended()),
    Stream.concat(Stream.suspend(() => {
      const fault = decoder.onEnd()
      return fault === undefined ? Stream.succeed(release(decoder.builder.drain())) : Stream.fail(fault)
    })),
    Stream.flattenIterable
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
  readonly makeDecoder: (scrub: Scrub) => (now: number) => EventDecoder
}

/**
 * A model service for a provider that takes a JSON request and streams SSE: the request is built and
 * encoded per call, sent with the transport's retries and idle timeout, and decoded into our events.
 */
export const makeSseModel: <Body>(
  spec: SseModelSpec<Body>
) => Effect.Effect<ModelShape, never, HttpClient.HttpClient> = Effect.fnUntraced(
  function*<Body>(spec: SseModelSpec<Body>) {
    const client = (yield* HttpClient.HttpClient).pipe(HttpClient.withScope)
    const scrub = makeScrub(spec.secrets)
    const decoder = spec.makeDecoder(scrub)
    const baseRequest = HttpClientRequest.post(spec.url).pipe(
      HttpClientRequest.setHeaders({ ...spec.transport.headers, accept: "text/event-stream" }),
      spec.authorize
    )
    const encodeBody = HttpClientRequest.schemaBodyJson(spec.bodySchema)
    const model: ModelShape = {
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
    return model
  }
)
