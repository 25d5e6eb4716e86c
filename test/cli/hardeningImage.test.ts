/**
 * `read` of an image that changes while it is read (docs/cli.md CLI 12.12, 10.5): the size checked is that
 * of the bytes read, on one opened file, so a file that grew past the limit after it was measured is refused
 * instead of loaded whole and sent.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ByteSize, Effect, FileSystem, Layer } from "effect"
import { BinaryFile } from "../../src/tools/errors.ts"
import { ImageReading, read } from "../../src/tools/index.ts"
import { sandbox } from "../tools/helpers.ts"

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

/** The platform, except that every stat reports 20 bytes: the file "grew" after it was measured. */
const measuredSmall = Layer.effect(
  FileSystem.FileSystem,
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    return {
      ...fs,
      stat: (path: string) =>
        Effect.map(fs.stat(path), (info): FileSystem.File.Info => ({ ...info, size: ByteSize.bytes(20) }))
    }
  })
).pipe(Layer.provide(NodeServices.layer))

describe("read of a growing image (CLI 12.12)", () => {
  it.effect("an image over the limit by the time it is read is refused, not sent", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const box = yield* sandbox().pipe(Effect.provideService(ImageReading, { enabled: true, maxBytes: 100 }))
        yield* box.put("shot.png", Uint8Array.from([...PNG_SIGNATURE, ...new Array(992).fill(7)]))
        const error = yield* box.fail(read, { path: "shot.png" })
        assert.instanceOf(error, BinaryFile)
        assert.include((error as BinaryFile).message, "changed while it was read")
        // Within the limit it is still an image.
        yield* box.put("small.png", Uint8Array.from([...PNG_SIGNATURE, 1, 2, 3]))
        const result = yield* box.run(read, { path: "small.png" })
        assert.strictEqual(result.content[1]?.type, "image")
      }).pipe(Effect.provide(Layer.provideMerge(measuredSmall, NodeServices.layer)))
    ))
})
