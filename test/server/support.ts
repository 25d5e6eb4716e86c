/**
 * The model and tools of the server tests: a scripted model that reads its task from the prompt, and an
 * `append` tool that appends a line to `out.txt` in the run's workspace (a side effect the tests count).
 *
 * Prompts: `batch <tag> <calls> <millis>`: one parallel batch of `calls` append calls (lines `<tag>:c<i>`),
 * each sleeping `millis` after its append, then a final answer `done <tag>: <last user text>`. `notes` instead
 * of `batch`: the same calls, each declaring that it writes the note `<tag>` (TE 11), so they run in turn.
 */
import { Effect, Layer, Schema, Stream } from "effect"
import { appendFileSync } from "node:fs"
import { join } from "node:path"
import { Model, type ModelRequest, type ModelShape } from "../../src/Model.ts"
import * as ResourceAccess from "../../src/ResourceAccess.ts"
import * as ScriptedModel from "../../src/ScriptedModel.ts"
import * as Tool from "../../src/Tool.ts"
import { ToolRegistry } from "../../src/ToolRegistry.ts"

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((c: any) => (c?.type === "text" ? c.text : "")).join(" ")
    : ""

/** The scripted model of the server tests (answers by the run's state, so a new runner continues it). */
export const model: ModelShape = {
  info: { api: "scripted", provider: "scripted", model: "scripted-server-model" },
  stream: (request: ModelRequest) =>
    Stream.unwrap(Effect.gen(function*() {
      const users = request.messages.filter((m) => m.role === "user")
      const [kind, tag = "t", calls = "1", millis = "0"] = textOf(users[0]?.content).split(" ")
      const turn = request.messages.filter((m) => m.role === "assistant").length
      const step: ScriptedModel.Step = (kind === "batch" || kind === "notes") && turn === 0
        ? ScriptedModel.callTools(
          Array.from({ length: Number(calls) }, (_, i) =>
            ScriptedModel.toolCall(`c${i + 1}`, "append", {
              line: `${tag}:c${i + 1}`,
              sleepMillis: Number(millis),
              ...(kind === "notes" ? { note: tag } : {})
            }))
        )
        : ScriptedModel.say(`done ${tag}: ${textOf(users[users.length - 1]?.content)}`)
      const scripted = yield* ScriptedModel.make([step], { chunkSize: 64 })
      return scripted.stream(request)
    }))
}

/** The model as a layer. */
export const modelLayer: Layer.Layer<Model> = Layer.succeed(Model, model)

const AppendParams = Schema.Struct({
  line: Schema.String,
  sleepMillis: Schema.Number,
  note: Schema.optionalKey(Schema.String)
})
const append = Tool.make("append", { description: "Appends a line to out.txt, then sleeps", parameters: AppendParams })

/** The tools of a run in `workspace`: `append` only; a call given a `note` declares that it writes it. */
export const tools = (workspace: string): Layer.Layer<ToolRegistry, unknown> =>
  ToolRegistry.fromEntries([{
    tool: append,
    handler: Tool.withResources(
      ({ line, sleepMillis }: typeof AppendParams.Type) =>
        Effect.sync(() => appendFileSync(join(workspace, "out.txt"), line + "\n")).pipe(
          Effect.andThen(Effect.sleep(sleepMillis)),
          Effect.as(Tool.textResult(`appended ${line}`))
        ),
      ({ note }) => (note === undefined ? undefined : [ResourceAccess.write(join(workspace, note))])
    )
  }])
