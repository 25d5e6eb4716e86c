/**
 * Proves `npm run bench` still works: the benchmark's own workloads, tiny and once, on both sides (ours and
 * pi), with every event counted. Never asserts timings.
 */
import { describe, expect, it } from "vitest"
import { smoke } from "../bench/smoke.ts"

describe("bench smoke", () => {
  it("runs every workload of the benchmark on both sides with the expected events", async () => {
    const report = await smoke()
    expect(report.checks).toBe(60)
    expect(report.events).toBeGreaterThan(0)
  }, 20_000)
})
