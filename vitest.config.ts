import { defineConfig } from "vitest/config"

export default defineConfig({
  // Inside this repository "effect-agent" resolves to the sources (the published package points at dist/).
  resolve: { conditions: ["effect-agent-source"] },
  ssr: { resolve: { conditions: ["effect-agent-source"] } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Most of the suite's time is spent waiting on subprocesses (the CLI, bash, the durable crash tests), not
    // on the CPU: more workers than cores keeps the two cores busy while those wait.
    maxWorkers: 4,
    // The default report, then one line naming the tests skipped for a missing system component.
    reporters: ["default", "./test/support/componentReporter.ts"]
  }
})
