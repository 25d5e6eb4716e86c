// Two tools and one assistant message with three tool calls, run in both modes.
import { Effect, Layer, Schema } from "effect"
import { EventSink, Message, Tool, ToolExecution, ToolRegistry } from "effect-agent"

// 1. Definitions: what the model sees.
const Weather = Tool.make("weather", {
  description: "Current temperature of a city",
  parameters: Schema.Struct({ city: Schema.String })
})
const Convert = Tool.make("convert", {
  description: "Celsius to Fahrenheit",
  parameters: Schema.Struct({ celsius: Schema.Finite })
})

// 2. Implementations: layers, swappable in tests.
const WeatherLive = Weather.toLayer(({ city }, { update }) =>
  Effect.gen(function*() {
    yield* update(Tool.textResult(`asking the station in ${city}...`))
    yield* Effect.sleep("20 millis")
    return Tool.textResult(`${city}: 21°C`, { celsius: 21 })
  })
)
const ConvertLive = Convert.toLayer(({ celsius }) => Effect.succeed(Tool.textResult(`${celsius * 1.8 + 32}°F`)))
const Tools = ToolRegistry.ToolRegistry.layer(Weather, Convert).pipe(Layer.provide([WeatherLive, ConvertLive]))

// 3. An assistant message asking for three calls (the model may send numbers as strings: they are coerced).
const message: Message.AssistantMessage = {
  role: "assistant",
  content: [
    Message.text("Checking."),
    { type: "toolCall", id: "a", name: "weather", arguments: { city: "Lisbon" } },
    { type: "toolCall", id: "b", name: "weather", arguments: { city: "Oslo" } },
    { type: "toolCall", id: "c", name: "convert", arguments: { celsius: "21" } }
  ],
  api: "example",
  provider: "example",
  model: "example",
  usage: Message.emptyUsage,
  stopReason: "toolUse",
  timestamp: Date.now()
}

const log = EventSink.fromCallback((event) => {
  if (event.type.startsWith("tool_execution")) {
    console.log(`  ${event.type} ${"toolCallId" in event ? event.toolCallId : ""}`)
  }
})

export const program = Effect.gen(function*() {
  for (const mode of ["parallel", "sequential"] as const) {
    console.log(mode)
    const batch = yield* ToolExecution.executeToolCalls(message, { toolExecution: mode })
    for (const result of batch.messages) {
      console.log(`  ${result.toolCallId}: ${result.content.map((c) => c.type === "text" ? c.text : "").join("")}`)
    }
  }
}).pipe(Effect.provide(Tools), Effect.provideService(EventSink.EventSink, log))

if (import.meta.main) Effect.runPromise(program)
