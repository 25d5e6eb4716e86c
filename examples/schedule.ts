// Calls that touch the same thing: two edits of one note run in source order, a read of another beside them.
import { Effect, Layer, Schema } from "effect"
import { EventSink, Message, ResourceAccess, Tool, ToolExecution, ToolRegistry } from "effect-agent"

const notes = new Map([["todo", "milk"], ["ideas", "a boat"]])

const Append = Tool.make("append", {
  description: "Append a line to a note",
  parameters: Schema.Struct({ note: Schema.String, line: Schema.String })
})
const Show = Tool.make("show", { description: "Show a note", parameters: Schema.Struct({ note: Schema.String }) })

// Each implementation says what a call touches, from its arguments.
const AppendLive = Append.toLayer(Tool.withResources(
  ({ line, note }) =>
    Effect.sleep("20 millis").pipe(
      Effect.andThen(Effect.sync(() => notes.set(note, `${notes.get(note)}, ${line}`))),
      Effect.as(Tool.textResult(`appended to ${note}`))
    ),
  ({ note }) => [ResourceAccess.write(`notes/${note}`)]
))
const ShowLive = Show.toLayer(Tool.withResources(
  ({ note }) => Effect.succeed(Tool.textResult(notes.get(note) ?? "")),
  ({ note }) => [ResourceAccess.read(`notes/${note}`)]
))
const Tools = ToolRegistry.ToolRegistry.layer(Append, Show).pipe(Layer.provide([AppendLive, ShowLive]))

const message: Message.AssistantMessage = {
  role: "assistant",
  content: [
    { type: "toolCall", id: "1", name: "append", arguments: { note: "todo", line: "eggs" } },
    { type: "toolCall", id: "2", name: "append", arguments: { note: "todo", line: "bread" } },
    { type: "toolCall", id: "3", name: "show", arguments: { note: "ideas" } }
  ],
  api: "example",
  provider: "example",
  model: "example",
  usage: Message.emptyUsage,
  stopReason: "toolUse",
  timestamp: Date.now()
}

const log = EventSink.fromCallback((event) => {
  if (event.type === "tool_execution_waiting") console.log(`${event.toolCallId} waits for ${event.waitingFor}`)
  if (event.type === "tool_execution_end") console.log(`${event.toolCallId} ended`)
})

export const program = ToolExecution.executeToolCalls(message).pipe(
  Effect.andThen(Effect.sync(() => console.log(`todo: ${notes.get("todo")}`))),
  Effect.provide(Tools),
  Effect.provideService(EventSink.EventSink, log)
)

if (import.meta.main) Effect.runPromise(program)
