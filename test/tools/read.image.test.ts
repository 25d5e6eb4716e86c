/**
 * CLI 10.5 (docs/cli.md): `read` returns PNG, JPEG, GIF and WebP files as images, told by their first bytes
 * and not their names, and that image reaches the model in both the OpenAI-compatible and the Anthropic
 * request bodies (checked on the bytes a local server received).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import type { ToolResultContent } from "../../src/Message.ts"
import { Model } from "../../src/Model.ts"
import * as Anthropic from "../../src/providers/Anthropic.ts"
import * as OpenAiCompatible from "../../src/providers/OpenAiCompatible.ts"
import { BinaryFile } from "../../src/tools/errors.ts"
import { detectImage } from "../../src/tools/image.ts"
import { ImageReading, read } from "../../src/tools/index.ts"
import {
  anthropicSse,
  anthropicText,
  assistant,
  openAiTextStream,
  request,
  toolResult,
  user
} from "../providers/support/fixtures.ts"
import { startServer } from "../providers/support/server.ts"
import { platform, sandbox, textOf } from "./helpers.ts"

const bytes = (...values: ReadonlyArray<number | string>): Uint8Array =>
  Uint8Array.from(values.flatMap((v) => typeof v === "string" ? [...v].map((c) => c.charCodeAt(0)) : [v]))

const PNG = bytes(0x89, "PNG\r\n\x1a\n", 0, 0, 0, 13, "IHDR", 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0)
const JPEG = bytes(0xff, 0xd8, 0xff, 0xe0, 0, 16, "JFIF", 0)
const GIF = bytes("GIF89a", 1, 0, 1, 0, 0, 0, 0)
const WEBP = bytes("RIFF", 26, 0, 0, 0, "WEBPVP8 ", 0, 0, 0, 0)
const base64 = (data: Uint8Array) => Buffer.from(data).toString("base64")

describe("image detection", () => {
  it("tells the four formats by their first bytes; text and near misses are no image", () => {
    assert.strictEqual(detectImage(PNG), "image/png")
    assert.strictEqual(detectImage(JPEG), "image/jpeg")
    assert.strictEqual(detectImage(GIF), "image/gif")
    assert.strictEqual(detectImage(bytes("GIF87a", 0)), "image/gif")
    assert.strictEqual(detectImage(WEBP), "image/webp")
    assert.isUndefined(detectImage(bytes("GIF88a")))
    assert.isUndefined(detectImage(bytes("RIFF", 0, 0, 0, 0, "WAVE")))
    assert.isUndefined(detectImage(bytes("hello world")))
    assert.isUndefined(detectImage(new Uint8Array(0)))
  })
})

describe("read of an image", () => {
  it.effect("returns each format as an image block after a line naming it, whatever the file is called", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const box = yield* sandbox()
        for (
          const [name, data, mimeType] of [["shot.txt", PNG, "image/png"], ["photo", JPEG, "image/jpeg"], [
            "a.gif",
            GIF,
            "image/gif"
          ], ["b.bin", WEBP, "image/webp"]] as const
        ) {
          yield* box.put(name, data)
          const result = yield* box.run(read, { path: name })
          assert.deepStrictEqual(result.content[1], { type: "image", data: base64(data), mimeType }, name)
          assert.match(textOf(result), new RegExp(`^${name} is a ${mimeType} image`))
          assert.deepStrictEqual(result.details.image, { mimeType })
        }
        // A text file with an image's name is read as text.
        yield* box.put("logo.png", "not an image\n")
        const text = yield* box.run(read, { path: "logo.png" })
        assert.strictEqual(textOf(text), "not an image")
        assert.strictEqual(text.content.length, 1)
      }).pipe(Effect.provide(platform))
    ))

  it.effect("describes the image instead when images are off, and refuses one larger than the limit", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const off = yield* sandbox().pipe(Effect.provideService(ImageReading, { enabled: false, maxBytes: 1024 }))
        yield* off.put("shot.png", PNG)
        const described = yield* off.run(read, { path: "shot.png" })
        assert.strictEqual(described.content.length, 1)
        assert.include(textOf(described), "does not take images")
        const small = yield* sandbox().pipe(Effect.provideService(ImageReading, { enabled: true, maxBytes: 10 }))
        yield* small.put("shot.png", PNG)
        const error = yield* small.fail(read, { path: "shot.png" })
        assert.instanceOf(error, BinaryFile)
        assert.include((error as BinaryFile).message, "larger than")
      }).pipe(Effect.provide(platform))
    ))
})

describe("an image read reaches the model", () => {
  /** The `read` result of a PNG, as the tool returns it, in a transcript one turn long. */
  const transcriptWithImage = Effect.gen(function*() {
    const box = yield* sandbox()
    yield* box.put("shot.txt", PNG)
    const result = yield* box.run(read, { path: "shot.txt" })
    return [
      user("What is in shot.txt?"),
      assistant([{ type: "toolCall", id: "toolu_1", name: "read", arguments: { path: "shot.txt" } }]),
      toolResult("toolu_1", "read", result.content as ReadonlyArray<ToolResultContent>)
    ]
  })
  const streamTo = (layer: Layer.Layer<Model>, messages: Effect.Success<typeof transcriptWithImage>) =>
    Model.use((model) => Stream.runDrain(model.stream(request(messages)))).pipe(Effect.provide(layer))

  it.effect("OpenAI-compatible: the image follows the tool message as an image_url data URL", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const messages = yield* transcriptWithImage
        const server = yield* startServer
        server.replies = [{ headers: { "content-type": "text/event-stream" }, body: openAiTextStream("A pixel.") }]
        yield* streamTo(
          OpenAiCompatible.layer({ model: "m", baseUrl: `${server.url}/v1`, apiKey: Redacted.make("k") }).pipe(
            Layer.provide(FetchHttpClient.layer)
          ),
          messages
        )
        const body = server.requests[0].body
        const url = `data:image/png;base64,${base64(PNG)}`
        const tool = body.messages.find((m: any) => m.role === "tool")
        assert.strictEqual(tool.tool_call_id, "toolu_1")
        const carrier = body.messages.slice(body.messages.indexOf(tool) + 1).find((m: any) => m.role === "user")
        assert.deepInclude(carrier.content, { type: "image_url", image_url: { url } })
      }).pipe(Effect.provide(platform))
    ))

  it.effect("Anthropic: the image is a base64 image block inside the tool_result", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const messages = yield* transcriptWithImage
        const server = yield* startServer
        server.replies = [{
          headers: { "content-type": "text/event-stream" },
          body: anthropicSse(anthropicText("A pixel."))
        }]
        yield* streamTo(
          Anthropic.layer({ model: "claude-test", baseUrl: server.url, apiKey: Redacted.make("k") }).pipe(
            Layer.provide(FetchHttpClient.layer)
          ),
          messages
        )
        const body = server.requests[0].body
        const results = body.messages.flatMap((m: any) => Array.isArray(m.content) ? m.content : [])
          .filter((b: any) => b.type === "tool_result")
        assert.strictEqual(results.length, 1)
        assert.strictEqual(results[0].tool_use_id, "toolu_1")
        assert.deepInclude(results[0].content, {
          type: "image",
          source: { type: "base64", media_type: "image/png", data: base64(PNG) }
        })
      }).pipe(Effect.provide(platform))
    ))
})
