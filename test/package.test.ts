/**
 * The published package, as an application installs it: `npm pack`, installed with npm into a fresh project,
 * running the README's batch example (examples/batch.ts) there.
 *
 * Needs: the npm registry or an npm cache holding effect 4.1 and 4.0.6 (and @effect/platform-node 4.1 with its
 * dependencies); `npm` on the PATH. About 10 to 20 s, mostly `npm install`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect } from "effect"
import { execFile } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"

const root = join(import.meta.dirname, "..")
const run = promisify(execFile)

/** The effect version the application's own code is pinned to: another 4.x than the one the package gets. */
const OTHER_EFFECT = "4.0.6"

const sh = (cwd: string, file: string, args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    run(file, [...args], {
      cwd,
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" }
    })
  )

/** A temporary directory removed when the test ends. */
const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), prefix))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/**
 * Packs the package without touching the repository: the files are staged in a temporary directory and
 * compiled there (a dist/ in the repository would make bin/ run stale compiled code).
 */
const pack = (into: string) =>
  Effect.gen(function*() {
    const stage = join(into, "stage")
    mkdirSync(stage)
    for (const entry of ["package.json", "README.md", "LICENSE", "bin", "src"]) {
      cpSync(join(root, entry), join(stage, entry), { recursive: true })
    }
    yield* sh(root, process.execPath, [
      join(root, "node_modules", "typescript", "bin", "tsc"),
      "-p",
      join(root, "tsconfig.build.json"),
      "--outDir",
      join(stage, "dist")
    ])
    yield* sh(stage, "npm", ["pack", "--ignore-scripts", "--pack-destination", into])
    const tarball = readdirSync(into).find((f) => f.endsWith(".tgz"))
    assert.isDefined(tarball)
    return join(into, tarball!)
  })

/** The README's batch example, its own imports of effect pointed at `effectModule`. */
const example = (effectModule: string) =>
  readFileSync(join(root, "examples", "batch.ts"), "utf8").replaceAll(`from "effect"`, `from "${effectModule}"`)

const expectCoerced = (stdout: string) => {
  // The convert call's arguments are { celsius: "21" }: coerced to 21 and converted, in both modes.
  const converted = stdout.split("\n").filter((l) => l.trim() === "c: 69.80000000000001°F")
  assert.strictEqual(converted.length, 2, stdout)
  assert.notInclude(stdout, "Validation failed", stdout)
}

describe("the packed package", () => {
  it.live(
    "runs the README example with coercion, next to a second copy of effect the application's code uses",
    () =>
      Effect.scoped(
        Effect.gen(function*() {
          const work = yield* tempDir("effect-agent-pack-")
          const tarball = yield* pack(work)
          const app = join(work, "app")
          mkdirSync(app)
          // The application's own code is pinned to another effect 4.x (an npm alias, so both copies coexist);
          // effect-agent gets the effect its peer range asks for.
          writeFileSync(
            join(app, "package.json"),
            JSON.stringify({ name: "app", private: true, type: "module" }, null, 2)
          )
          yield* sh(app, "npm", [
            "install",
            "--prefer-offline",
            tarball,
            "effect@^4.1.0",
            `effect-app@npm:effect@${OTHER_EFFECT}`
          ])
          const installed = (name: string) =>
            JSON.parse(readFileSync(join(app, "node_modules", name, "package.json"), "utf8")).version as string
          assert.strictEqual(installed("effect-app"), OTHER_EFFECT)
          assert.notStrictEqual(installed("effect"), OTHER_EFFECT)
          // A peer dependency: the package has no copy of its own.
          assert.deepStrictEqual(
            readdirSync(join(app, "node_modules", "effect-agent")).filter((f) => f === "node_modules"),
            []
          )

          // The application's Schemas, Effects and Layers come from the other copy.
          writeFileSync(join(app, "other.ts"), example("effect-app"))

          // Every entry point of package.json's "exports" loads from the compiled package (the CLI's without
          // running it).
          writeFileSync(
            join(app, "entries.ts"),
            [
              `import * as Core from "effect-agent"`,
              `import * as Providers from "effect-agent/providers"`,
              `import * as Tools from "effect-agent/tools"`,
              `import * as Cli from "effect-agent/cli"`,
              `import * as Durable from "effect-agent/durable"`,
              `import * as Mcp from "effect-agent/mcp"`,
              `import * as Telemetry from "effect-agent/telemetry"`,
              `import * as Testing from "effect-agent/testing"`,
              `console.log(JSON.stringify([typeof Core.Agent.make, typeof Providers.layerConfig, Tools.builtinTools.length, typeof Cli.main, typeof Durable.DurableAgent.run, typeof Mcp.registry, typeof Telemetry.TelemetryExport.layer, typeof Testing.ScriptedModel.layer]))`
            ].join("\n")
          )
          // A Schema of the other copy with a transformation cannot be decoded by the package's copy: every call
          // says so (instead of failing on a check it would pass).
          writeFileSync(
            join(app, "transform.ts"),
            [
              `import { Effect, Layer, Schema } from "effect-app"`,
              `import { EventSink, Message, Tool, ToolExecution, ToolRegistry } from "effect-agent"`,
              `const T = Tool.make("t", { description: "t", parameters: Schema.Struct({ n: Schema.NumberFromString }) })`,
              `const Tools = ToolRegistry.ToolRegistry.layer(T).pipe(Layer.provide(T.toLayer(() => Effect.succeed(Tool.textResult("ran")))))`,
              `const message: Message.AssistantMessage = { role: "assistant", content: [{ type: "toolCall", id: "x", name: "t", arguments: { n: "1" } }], api: "a", provider: "p", model: "m", usage: Message.emptyUsage, stopReason: "toolUse", timestamp: 0 }`,
              `const batch = await Effect.runPromise(ToolExecution.executeToolCalls(message, {}).pipe(Effect.provide(Tools), Effect.provideService(EventSink.EventSink, EventSink.discard)))`,
              `console.log(JSON.stringify(batch.messages.map((m) => [m.isError, Message.textOf(m)])))`
            ].join("\n")
          )
          // And with one copy, as most applications have it.
          writeFileSync(join(app, "same.ts"), example("effect"))

          const [other, same, entries, transform] = yield* Effect.all(
            ["other.ts", "same.ts", "entries.ts", "transform.ts"].map((script) => sh(app, process.execPath, [script])),
            { concurrency: "unbounded" }
          )
          expectCoerced(other.stdout)
          expectCoerced(same.stdout)
          assert.deepStrictEqual(JSON.parse(entries.stdout), [
            "function",
            "function",
            7,
            "object",
            "function",
            "function",
            "function",
            "function"
          ])
          // The installed declarations type-check as a strict application compiles them, every file of them
          // (skipLibCheck off): a declaration stripInternal cut short, or a name it lost, fails here.
          writeFileSync(
            join(app, "tsconfig.json"),
            JSON.stringify({
              compilerOptions: {
                strict: true,
                noEmit: true,
                skipLibCheck: false,
                module: "nodenext",
                moduleResolution: "nodenext",
                target: "es2022",
                types: ["node"],
                typeRoots: [join(root, "node_modules", "@types")]
              },
              include: ["node_modules/effect-agent/dist/**/*.d.ts"]
            })
          )
          const declarations = yield* Effect.exit(
            sh(app, process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"])
          )
          assert.isTrue(
            declarations._tag === "Success",
            declarations._tag === "Failure" ? String((Cause.squash(declarations.cause) as any).stdout) : ""
          )
          const [[isError, text]] = JSON.parse(transform.stdout)
          assert.isTrue(isError, transform.stdout)
          assert.include(text, "built by another copy of the effect package and has a transformation")
        })
      ),
    90_000
  )
})
