import { assert, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Schema, Stream } from "effect"
import { AiError, LanguageModel, type Prompt, type Response, Tool as AiTool, Toolkit } from "effect/ai"
import type { AgentEvent } from "../../src/AgentEvent.ts"
import * as EventSink from "../../src/EventSink.ts"
import type { AssistantMessage } from "../../src/Message.ts"
import { Model, ModelError } from "../../src/Model.ts"
import * as EffectAi from "../../src/providers/EffectAi.ts"
import { executeToolCalls } from "../../src/ToolExecution.ts"
import { addTool, assistant, PNG, request, toolResult, user } from "./support/fixtures.ts"
import { checkProtocol } from "./support/protocol.ts"

/** A LanguageModel that streams the given encoded parts and records what it was asked. */
const fakeLanguageModel = (
  parts: () => Stream.Stream<Response.StreamPartEncoded, AiError.AiError>,
  seen: Array<LanguageModel.ProviderOptions> = []
) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: () => Effect.die("not used"),
      streamText: (options) => {
        seen.push(options)
        return parts()
      }
    })
  )

const usage = { inputTokens: { uncached: 80, total: 100, cacheRead: 20 }, outputTokens: { total: 30 } }

const fullParts: Array<Response.StreamPartEncoded> = [
  { type: "response-metadata", id: "resp_1", modelId: "fake-model-v2" },
  { type: "reasoning-start", id: "r1" },
  { type: "reasoning-delta", id: "r1", delta: "Thinking… " },
  { type: "reasoning-delta", id: "r1", delta: "🤔" },
  { type: "reasoning-end", id: "r1" },
  { type: "text-start", id: "t1" },
  { type: "text-delta", id: "t1", delta: "Héllo " },
  { type: "text-delta", id: "t1", delta: "🌍" },
  { type: "text-end", id: "t1" },
  { type: "tool-params-start", id: "call_1", name: "add", providerExecuted: false },
  { type: "tool-params-delta", id: "call_1", delta: "{\"a\":2," },
  { type: "tool-params-delta", id: "call_1", delta: "\"b\":40}" },
  { type: "tool-params-end", id: "call_1" },
  { type: "tool-call", id: "call_1", name: "add", params: { a: 2, b: 40 }, providerExecuted: false },
  // A call that was not streamed in pieces, for a tool the request did not declare.
  { type: "tool-call", id: "call_2", name: "undeclared", params: { x: 1 }, providerExecuted: false },
  { type: "finish", reason: "tool-calls", usage }
]

const collect = (req = request([user("hi")], { tools: [addTool] })) =>
  Model.use((model) => Stream.runCollect(model.stream(req)))

const failureOf = <A>(exit: Exit.Exit<A, ModelError>): ModelError => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
  if (reason === undefined || reason._tag !== "Fail") throw new Error(`expected a typed failure: ${String(exit.cause)}`)
  assert.instanceOf(reason.error, ModelError)
  return reason.error
}

describe("EffectAi: a LanguageModel as our Model", () => {
  it.effect("maps reasoning, text, streamed and whole tool calls, usage and finish to pi's events", () =>
    Effect.gen(function*() {
      const seen: Array<LanguageModel.ProviderOptions> = []
      const events = yield* collect().pipe(
        Effect.provide(EffectAi.layer({ provider: "fake", model: "fake-model" })),
        Effect.provide(fakeLanguageModel(() => Stream.fromIterable(fullParts), seen))
      )
      const message = checkProtocol(events)
      expect(message.content).toEqual([
        { type: "thinking", thinking: "Thinking… 🤔" },
        { type: "text", text: "Héllo 🌍" },
        { type: "toolCall", id: "call_1", name: "add", arguments: { a: 2, b: 40 } },
        { type: "toolCall", id: "call_2", name: "undeclared", arguments: { x: 1 } }
      ])
      expect(message).toMatchObject({
        api: "effect-ai",
        provider: "fake",
        model: "fake-model",
        responseId: "resp_1",
        responseModel: "fake-model-v2",
        stopReason: "toolUse"
      })
      expect(message.usage).toMatchObject({ input: 80, output: 30, cacheRead: 20, totalTokens: 130 })
      // The tools reached the model as dynamic tools with our JSON Schemas; nothing ran them.
      expect(seen).toHaveLength(1)
      expect(seen[0]!.tools.map((t) => [t.name, AiTool.getJsonSchema(t)])).toEqual([["add", addTool.parameters]])
    }))

  it.effect("converts our transcript to an effect/ai prompt", () =>
    Effect.gen(function*() {
      const seen: Array<LanguageModel.ProviderOptions> = []
      const messages = [
        user("hi"),
        user([{ type: "text", text: "see" }, { type: "image", data: PNG, mimeType: "image/png" }]),
        assistant([
          { type: "thinking", thinking: "hmm" },
          { type: "text", text: "calling" },
          { type: "toolCall", id: "c1", name: "add", arguments: { a: 1, b: 2 } }
        ]),
        toolResult("c1", "add", [{ type: "text", text: "3" }]),
        assistant([{ type: "toolCall", id: "c_bad", name: "add", arguments: {} }], { stopReason: "error" }),
        toolResult("c_bad", "add", [{ type: "text", text: "x" }], true)
      ] as const
      yield* collect(request(messages, { systemPrompt: "sys" })).pipe(
        Effect.provide(EffectAi.layer()),
        Effect.provide(fakeLanguageModel(() =>
          Stream.fromIterable<Response.StreamPartEncoded>([
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: "ok" },
            { type: "text-end", id: "t" },
            { type: "finish", reason: "stop", usage: { inputTokens: {}, outputTokens: {} } }
          ]), seen))
      )
      const prompt = seen[0]!.prompt.content
      const simplified = prompt.map((message: Prompt.Message) => ({
        role: message.role,
        content: typeof message.content === "string"
          ? message.content
          : message.content.map((part: any) =>
            part.type === "file"
              ? { type: "file", mediaType: part.mediaType, data: part.data }
              : Object.fromEntries(Object.entries(part).filter(([key]) => key !== "options" && !key.startsWith("~")))
          )
      }))
      expect(simplified).toEqual([
        { role: "system", content: "sys" },
        { role: "user", content: [{ type: "text", text: "hi" }] },
        { role: "user", content: [{ type: "text", text: "see" }, { type: "file", mediaType: "image/png", data: PNG }] },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "hmm" },
            { type: "text", text: "calling" },
            { type: "tool-call", id: "c1", name: "add", params: { a: 1, b: 2 }, providerExecuted: false }
          ]
        },
        {
          role: "tool",
          content: [{
            type: "tool-result",
            id: "c1",
            name: "add",
            isFailure: false,
            result: "3",
            providerExecuted: false
          }]
        }
      ])
    }))

  it.effect("maps finish reasons: length, content-filter", () =>
    Effect.gen(function*() {
      const finishWith = (reason: Response.FinishReason) =>
        collect(request([user("x")])).pipe(
          Effect.provide(EffectAi.layer()),
          Effect.provide(fakeLanguageModel(() =>
            Stream.make<Array<Response.StreamPartEncoded>>(
              { type: "text-delta", id: "t", delta: "a" },
              { type: "finish", reason, usage: { inputTokens: {}, outputTokens: {} } }
            )
          ))
        )
      const length = yield* finishWith("length")
      expect(checkProtocol(length).stopReason).toBe("length")
      const filtered = yield* finishWith("content-filter")
      const last = filtered[filtered.length - 1]!
      expect(last.type).toBe("error")
      expect(checkProtocol(filtered).errorMessage).toMatch(/content filter/)
    }))

  it.effect("an AiError becomes a ModelError with the matching reason", () =>
    Effect.gen(function*() {
      const exit = yield* collect().pipe(
        Effect.provide(EffectAi.layer()),
        Effect.provide(fakeLanguageModel(() =>
          Stream.fail(AiError.make({ module: "Fake", method: "streamText", reason: new AiError.RateLimitError({}) }))
        )),
        Effect.exit
      )
      const error = failureOf(exit)
      expect(error.reason).toBe("rate-limit")
      expect(error.retryable).toBe(true)
    }))

  it.effect("an error part, or a stream without a finish part, is a stream error", () =>
    Effect.gen(function*() {
      const withError = yield* collect().pipe(
        Effect.provide(EffectAi.layer()),
        Effect.provide(fakeLanguageModel(() =>
          Stream.make<Array<Response.StreamPartEncoded>>(
            { type: "text-delta", id: "t", delta: "a" },
            { type: "error", error: { message: "backend fell over" } }
          )
        )),
        Effect.exit
      )
      expect(failureOf(withError).message).toContain("backend fell over")
      const cut = yield* collect().pipe(
        Effect.provide(EffectAi.layer()),
        Effect.provide(fakeLanguageModel(() =>
          Stream.make<Array<Response.StreamPartEncoded>>({ type: "text-delta", id: "t", delta: "a" })
        )),
        Effect.exit
      )
      expect(failureOf(cut).reason).toBe("stream")
    }))
})

// ---------------------------------------------------------------------------------------------------------
// Toolkit → our tools
// ---------------------------------------------------------------------------------------------------------

const GetWeather = AiTool.make("get_weather", {
  description: "The weather in a city",
  parameters: Schema.Struct({ city: Schema.String, unit: Schema.optionalKey(Schema.Literals(["C", "F"])) }),
  success: Schema.Struct({ city: Schema.String, temperature: Schema.Number }),
  failure: Schema.Struct({ message: Schema.String }),
  failureMode: "return"
})
const Countdown = AiTool.make("countdown", {
  description: "Counts down, reporting progress",
  parameters: Schema.Struct({ from: Schema.Int }),
  success: Schema.String
})
const Crash = AiTool.make("crash", {
  description: "Always fails",
  parameters: Schema.Struct({}),
  success: Schema.String
})
const Weather = Toolkit.make(GetWeather, Countdown, Crash)

const handlerCalls: Array<string> = []
const WeatherHandlers = Weather.toLayer(Weather.of({
  get_weather: ({ city, unit }) => {
    handlerCalls.push(city)
    return city === "Atlantis"
      ? Effect.fail({ message: `no such city: ${city}` })
      : Effect.succeed({ city, temperature: unit === "F" ? 70 : 21 })
  },
  countdown: Effect.fnUntraced(function*({ from }, ctx) {
    for (let i = from; i > 0; i--) yield* ctx.preliminary(`${i}…`)
    return "liftoff"
  }),
  crash: () =>
    Effect.fail(
      AiError.make({ module: "Test", method: "crash", reason: new AiError.UnknownError({ description: "kaboom" }) })
    )
}))

const callsMessage = (calls: Array<[string, string, Record<string, unknown>]>): AssistantMessage =>
  assistant(calls.map(([id, name, args]) => ({ type: "toolCall" as const, id, name, arguments: args })))

describe("EffectAi: a Toolkit as our tools", () => {
  it.effect("registers each toolkit tool with its parameter Schema, description and JSON Schema", () =>
    Effect.gen(function*() {
      const entries = yield* EffectAi.toolsFromToolkit(Weather).pipe(Effect.provide(WeatherHandlers))
      expect(entries.map((e) => [e.tool.name, e.tool.description])).toEqual([
        ["get_weather", "The weather in a city"],
        ["countdown", "Counts down, reporting progress"],
        ["crash", "Always fails"]
      ])
      expect(entries[0]!.tool.parameters).toBe(GetWeather.parametersSchema)
      expect(entries[0]!.tool.jsonSchema).toEqual(AiTool.getJsonSchema(GetWeather))
    }))

  it.effect("runs calls through the toolkit's handle: success, validation failure, returned failure, defect, progress", () =>
    Effect.gen(function*() {
      handlerCalls.length = 0
      const updates: Array<AgentEvent> = []
      const message = callsMessage([
        ["1", "get_weather", { city: "Oslo" }],
        ["2", "get_weather", { unit: "K" }],
        ["3", "get_weather", { city: "Atlantis" }],
        ["4", "countdown", { from: 2 }],
        ["5", "crash", {}],
        ["6", "get_weather", { city: "Paris", unit: "F" }]
      ])
      const batch = yield* executeToolCalls(message).pipe(
        Effect.provide(EffectAi.registryFromToolkit(Weather).pipe(Layer.provide(WeatherHandlers))),
        Effect.provideService(EventSink.EventSink, EventSink.fromCallback((e) => updates.push(e)))
      )
      const results = batch.messages.map((
        m
      ) => [m.toolCallId, m.isError, m.content.map((c) => c.type === "text" ? c.text : c.type).join("")])
      expect(results[0]).toEqual(["1", false, "{\"city\":\"Oslo\",\"temperature\":21}"])
      expect(results[1]![1]).toBe(true)
      expect(results[1]![2]).toContain("city")
      expect(results[1]![2]).toContain("unit")
      expect(results[2]).toEqual(["3", true, "{\"message\":\"no such city: Atlantis\"}"])
      expect(results[3]).toEqual(["4", false, "liftoff"])
      expect(results[4]![1]).toBe(true)
      expect(results[4]![2]).toContain("kaboom")
      expect(results[5]).toEqual(["6", false, "{\"city\":\"Paris\",\"temperature\":70}"])
      // Invalid arguments never reached the handler.
      expect(handlerCalls.sort()).toEqual(["Atlantis", "Oslo", "Paris"])
      // Preliminary results became progress updates.
      const progress = updates.flatMap((e) =>
        e.type === "tool_execution_update" && e.toolCallId === "4"
          ? [
            (e.partialResult as { content: ReadonlyArray<{ type: string; text?: string }> }).content.map((c) =>
              c.text ?? ""
            ).join("")
          ]
          : []
      )
      expect(progress).toEqual(["2…", "1…"])
    }))

  it.effect("end to end: a LanguageModel's tool call runs through a toolkit registered as our tools", () =>
    Effect.gen(function*() {
      const events = yield* collect(request([user("weather in Oslo?")], {
        tools: [{ name: GetWeather.name, description: "w", parameters: AiTool.getJsonSchema(GetWeather) }]
      })).pipe(
        Effect.provide(EffectAi.layer()),
        Effect.provide(fakeLanguageModel(() =>
          Stream.fromIterable<Response.StreamPartEncoded>([
            { type: "tool-call", id: "w1", name: "get_weather", params: { city: "Oslo" }, providerExecuted: false },
            { type: "finish", reason: "tool-calls", usage: { inputTokens: {}, outputTokens: {} } }
          ])
        ))
      )
      const message = checkProtocol(events)
      const batch = yield* executeToolCalls(message).pipe(
        Effect.provide(EffectAi.registryFromToolkit(Weather).pipe(Layer.provide(WeatherHandlers)))
      )
      expect(batch.messages.map((m) => [m.toolCallId, m.isError])).toEqual([["w1", false]])
      expect(batch.messages[0]!.content).toEqual([{ type: "text", text: "{\"city\":\"Oslo\",\"temperature\":21}" }])
    }))
})

describe("issue 11.7: the effect/ai bridge carries what it used to drop", () => {
  class FakeConfig
    extends Context.Service<FakeConfig, { readonly temperature?: number; readonly maxOutput?: number }>()(
      "test/FakeConfig"
    )
  {}

  const textParts = (
    usage: typeof Response.Usage.Encoded = { inputTokens: {}, outputTokens: {} },
    reason: Response.FinishReason = "stop"
  ) =>
    Stream.fromIterable<Response.StreamPartEncoded>([
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "ok" },
      { type: "text-end", id: "t" },
      { type: "finish", reason, usage }
    ])

  it.effect("temperature, max tokens and thinking level reach the LanguageModel", () =>
    Effect.gen(function*() {
      const reached: Array<unknown> = []
      // A LanguageModel that, like the vendor ones, reads its settings from the context of the stream.
      const languageModel = Layer.effect(
        LanguageModel.LanguageModel,
        LanguageModel.make({
          generateText: () => Effect.die("not used"),
          streamText: () =>
            Stream.unwrap(Effect.gen(function*() {
              reached.push({
                options: yield* EffectAi.RequestOptions,
                config: Option.getOrUndefined(yield* Effect.serviceOption(FakeConfig))
              })
              return textParts()
            }))
        })
      )
      const options = { temperature: 0.2, maxTokens: 321, thinkingLevel: "high" } as const
      yield* collect(request([user("x")], { options })).pipe(
        Effect.provide(EffectAi.layer({
          applyOptions: (options, parts) =>
            parts.pipe(Stream.provideService(FakeConfig, {
              ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
              ...(options.maxTokens !== undefined ? { maxOutput: options.maxTokens } : {})
            }))
        })),
        Effect.provide(languageModel)
      )
      expect(reached).toEqual([{
        options,
        config: { temperature: 0.2, maxOutput: 321 }
      }])
    }))

  it.effect("a reasoning signature survives a round trip, for the same model only", () =>
    Effect.gen(function*() {
      const seen: Array<LanguageModel.ProviderOptions> = []
      let call = 0
      const layer = EffectAi.layer({ provider: "fake", model: "fake-model" }).pipe(
        Layer.provide(fakeLanguageModel(() =>
          call++ === 0
            ? Stream.fromIterable<Response.StreamPartEncoded>([
              { type: "reasoning-start", id: "r", metadata: { anthropic: { type: "thinking" } } },
              { type: "reasoning-delta", id: "r", delta: "Let me see." },
              { type: "reasoning-end", id: "r", metadata: { anthropic: { signature: "EqQBsig==" } } },
              { type: "finish", reason: "stop", usage: { inputTokens: {}, outputTokens: {} } }
            ])
            : textParts(), seen))
      )
      const first = checkProtocol(yield* collect(request([user("x")])).pipe(Effect.provide(layer)))
      const thinking = first.content[0]!
      assert(thinking.type === "thinking")
      expect(thinking.thinking).toBe("Let me see.")
      expect(thinking.thinkingSignature).toBeDefined()
      yield* collect(request([user("x"), first, user("and?")])).pipe(Effect.provide(layer))
      const reasoning = (seen[1]!.prompt.content[1]!.content as ReadonlyArray<any>)[0]
      expect(reasoning.type).toBe("reasoning")
      expect(reasoning.options).toEqual({ anthropic: { type: "thinking", signature: "EqQBsig==" } })
      // Another model's reasoning goes back without the signature it could not verify.
      const other = EffectAi.toPrompt(
        { systemPrompt: "", messages: [user("x"), { ...first, model: "other-model" }] },
        { api: "effect-ai", provider: "fake", model: "fake-model" }
      )
      expect((other.content[1]!.content as ReadonlyArray<any>)[0].options).toEqual({})
    }))

  it.effect("pause and other finish reasons are not flattened to stop", () =>
    Effect.gen(function*() {
      const finishWith = (reason: Response.FinishReason) =>
        collect(request([user("x")])).pipe(
          Effect.provide(EffectAi.layer()),
          Effect.provide(fakeLanguageModel(() => textParts(undefined, reason)))
        )
      const paused = checkProtocol(yield* finishWith("pause"))
      expect(paused.stopReason).toBe("error")
      expect(paused.errorMessage).toMatch(/paused/)
      const other = checkProtocol(yield* finishWith("other"))
      expect(other.stopReason).toBe("error")
      expect(other.errorMessage).toMatch(/"other"/)
    }))

  it.effect("reasoning tokens are kept when the provider gives no output total", () =>
    Effect.gen(function*() {
      const events = yield* collect(request([user("x")])).pipe(
        Effect.provide(EffectAi.layer()),
        Effect.provide(
          fakeLanguageModel(() => textParts({ inputTokens: { total: 10 }, outputTokens: { text: 5, reasoning: 40 } }))
        )
      )
      expect(checkProtocol(events).usage).toMatchObject({ input: 10, output: 45, totalTokens: 55 })
    }))
})
