/**
 * CLI 9.2, 9.3 (docs/cli.md): one list of providers behind the flag, the settings and `--help`; and
 * `ANTHROPIC_MAX_TOKENS` reaches the provider (no fixed limit in the command line hides it).
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Redacted } from "effect"
import { ENVIRONMENT } from "../../src/cli/main.ts"
import { providerEnvironment, providerSettings } from "../../src/cli/provider.ts"
import { UsageError } from "../../src/cli/startup.ts"
import { providerNames } from "../../src/providers/index.ts"

const FLAGS = { baseUrl: undefined, model: "claude-test", apiKey: Redacted.make("k") }
const withEnv = (env: Record<string, string>) =>
  Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))

describe("provider settings", () => {
  it.effect("CLI 9.3: ANTHROPIC_MAX_TOKENS is passed on; unset, the provider's own default applies", () =>
    Effect.gen(function*() {
      const set = yield* providerSettings("anthropic", FLAGS).pipe(withEnv({ ANTHROPIC_MAX_TOKENS: "32000" }))
      assert.strictEqual(set.maxTokens, 32000)
      const unset = yield* providerSettings("anthropic", FLAGS).pipe(withEnv({}))
      assert.isUndefined(unset.maxTokens)
    }))

  it.effect("CLI 9.3: a value that is not a positive whole number is a UsageError naming the variable", () =>
    Effect.gen(function*() {
      for (const bad of ["0", "-5", "1.5", "lots"]) {
        const exit = yield* Effect.exit(
          providerSettings("anthropic", FLAGS).pipe(withEnv({ ANTHROPIC_MAX_TOKENS: bad }))
        )
        assert.isTrue(Exit.isFailure(exit), bad)
        const error = Exit.isFailure(exit) ? (exit.cause.reasons[0] as any).error : undefined
        assert.instanceOf(error, UsageError, bad)
        assert.strictEqual(error.flag, "ANTHROPIC_MAX_TOKENS")
      }
    }))

  it("CLI 9.2: --help lists the variables of every provider, from the one list of providers", () => {
    const names = ENVIRONMENT.map(([name]) => name)
    for (const provider of providerNames) {
      assert.isTrue(providerEnvironment.some(([, what]) => what.includes(provider)), provider)
    }
    for (
      const name of [
        "EFFECT_AGENT_HOME",
        "OPENAI_API_KEY",
        "ANTHROPIC_MAX_TOKENS",
        "GEMINI_MODEL",
        "NO_COLOR",
        "EFFECT_AGENT_LIVE"
      ]
    ) {
      assert.include(names, name)
    }
  })
})
