/**
 * Issue 16 item 11: bad start-up input is refused before anything runs, with one line naming the flag (and
 * the environment variable): a provider without a model or a key, a missing workspace or a file given as
 * one, a tool timeout that is not positive, an empty prompt.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Redacted } from "effect"
import { Command } from "effect/cli"
import { mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { command } from "../../src/cli/main.ts"
import { type ProviderFlags, providerSettings } from "../../src/cli/provider.ts"
import { existingWorkspace, promptTask, toolTimeoutSeconds, UsageError } from "../../src/cli/startup.ts"

const NO_FLAGS: ProviderFlags = { baseUrl: undefined, model: undefined, apiKey: undefined }
const withEnv = (env: Record<string, string>) =>
  Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))

/** The UsageError an effect fails with (the test fails if it succeeds or fails otherwise). */
const usageError = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(effect)
    assert.isTrue(Exit.isFailure(exit), "expected a failure")
    const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
    assert.strictEqual(error?._tag, "Fail")
    const value = (error as { readonly error: unknown }).error
    assert.instanceOf(value, UsageError)
    const usage = value as UsageError
    assert.notInclude(usage.message, "\n", "one line")
    return usage
  })

describe("provider settings", () => {
  it.effect("anthropic without a model names --model and ANTHROPIC_MODEL", () =>
    Effect.gen(function*() {
      const error = yield* usageError(providerSettings("anthropic", NO_FLAGS).pipe(withEnv({ ANTHROPIC_API_KEY: "k" })))
      assert.strictEqual(error.flag, "--model")
      assert.strictEqual(
        error.message,
        "--provider anthropic needs a model: pass --model, or set ANTHROPIC_MODEL in the environment."
      )
    }))

  it.effect("anthropic without a key names --api-key and ANTHROPIC_API_KEY", () =>
    Effect.gen(function*() {
      const error = yield* usageError(providerSettings("anthropic", { ...NO_FLAGS, model: "m" }).pipe(withEnv({})))
      assert.strictEqual(error.flag, "--api-key")
      assert.include(error.message, "--api-key")
      assert.include(error.message, "ANTHROPIC_API_KEY")
    }))

  it.effect("openai-compatible without a model names --model and OPENAI_MODEL; it needs no key", () =>
    Effect.gen(function*() {
      const error = yield* usageError(providerSettings("openai-compatible", NO_FLAGS).pipe(withEnv({})))
      assert.include(error.message, "--model")
      assert.include(error.message, "OPENAI_MODEL")
      const settings = yield* providerSettings("openai-compatible", { ...NO_FLAGS, model: "m" }).pipe(withEnv({}))
      assert.deepStrictEqual(
        { ...settings },
        {
          name: "openai-compatible",
          model: "m",
          baseUrl: "https://api.openai.com/v1",
          apiKey: undefined,
          maxTokens: undefined
        }
      )
    }))

  it.effect("flags win over the environment, and the environment fills the rest", () =>
    Effect.gen(function*() {
      const settings = yield* providerSettings("anthropic", { ...NO_FLAGS, model: "flag-model" }).pipe(
        withEnv({ ANTHROPIC_MODEL: "env-model", ANTHROPIC_API_KEY: "env-key", ANTHROPIC_BASE_URL: "http://x" })
      )
      assert.strictEqual(settings.model, "flag-model")
      assert.strictEqual(settings.baseUrl, "http://x")
      assert.strictEqual(Redacted.value(settings.apiKey!), "env-key")
    }))

  it.effect("ANTHROPIC_MAX_TOKENS reaches the provider; a value that is not a whole number names the variable", () =>
    Effect.gen(function*() {
      const flags = { ...NO_FLAGS, model: "m", apiKey: Redacted.make("k") }
      const settings = yield* providerSettings("anthropic", flags).pipe(withEnv({ ANTHROPIC_MAX_TOKENS: "2048" }))
      assert.strictEqual(settings.maxTokens, 2048)
      const error = yield* usageError(
        providerSettings("anthropic", flags).pipe(withEnv({ ANTHROPIC_MAX_TOKENS: "lots" }))
      )
      assert.include(error.message, "ANTHROPIC_MAX_TOKENS")
    }))
})

describe("--workspace", () => {
  const check = (path: string) => existingWorkspace(path).pipe(Effect.provide(NodeServices.layer))

  it.effect("a folder that does not exist is refused, and not created", () =>
    Effect.gen(function*() {
      const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-startup-")))
      try {
        const missing = join(base, "no", "such", "folder")
        const error = yield* usageError(check(missing))
        assert.strictEqual(error.flag, "--workspace")
        assert.strictEqual(error.message, `--workspace ${missing}: no such folder (create it first, or pick another).`)
        const again = yield* Effect.exit(check(join(base, "no")))
        assert.isTrue(Exit.isFailure(again), "nothing was created")
      } finally {
        rmSync(base, { recursive: true, force: true })
      }
    }))

  it.effect("a file is \"not a directory\"; an existing folder is resolved to its absolute path", () =>
    Effect.gen(function*() {
      const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-startup-")))
      try {
        const file = join(base, "file.txt")
        writeFileSync(file, "x")
        const error = yield* usageError(check(file))
        assert.strictEqual(error.message, `--workspace ${file}: not a directory.`)
        assert.strictEqual(yield* check(base), base)
      } finally {
        rmSync(base, { recursive: true, force: true })
      }
    }))
})

describe("--tool-timeout and --prompt", () => {
  it.effect("--tool-timeout must be a positive whole number", () =>
    Effect.gen(function*() {
      for (const bad of [0, -5]) {
        const error = yield* usageError(toolTimeoutSeconds(bad))
        assert.strictEqual(error.flag, "--tool-timeout")
        assert.include(error.message, "positive")
      }
      assert.strictEqual(yield* toolTimeoutSeconds(1), 1)
    }))

  it.effect("an empty or blank --prompt is refused", () =>
    Effect.gen(function*() {
      for (const bad of ["", "   \n\t"]) {
        const error = yield* usageError(promptTask(bad))
        assert.strictEqual(error.flag, "--prompt")
        assert.include(error.message, "--prompt is empty")
      }
      assert.strictEqual(yield* promptTask("fix it"), "fix it")
    }))
})

describe("the command refuses bad start-up input before creating or running anything", () => {
  const runCommand = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
    Command.runWith(command, { version: "test" })(args).pipe(Effect.provide(NodeServices.layer), withEnv(env))

  it.effect("each bad value fails with its UsageError; the workspace stays untouched", () =>
    Effect.gen(function*() {
      const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-startup-")))
      try {
        const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
          [["--provider", "anthropic", "-p", "hi", "-w", base], "--model"],
          [["--provider", "anthropic", "--model", "m", "-p", "hi", "-w", base], "--api-key"],
          [["--provider", "openai-compatible", "-p", "hi", "-w", base], "--model"],
          [["-w", join(base, "missing")], "--workspace"],
          [["--tool-timeout", "0", "-w", base], "--tool-timeout"],
          [["--prompt", "", "-w", base], "--prompt"],
          [["--max-turns", "-1", "-w", base], "--max-turns"],
          [["--max-cost", "-0.5", "-w", base], "--max-cost"],
          [["--max-minutes", "-3", "-w", base], "--max-minutes"]
        ]
        for (const [args, flag] of cases) {
          const error = yield* usageError(runCommand(args))
          assert.strictEqual(error.flag, flag, args.join(" "))
        }
        assert.deepStrictEqual(readdirSync(base), [], "no session, no sample project, no folder")
      } finally {
        rmSync(base, { recursive: true, force: true })
      }
    }))
})
