/**
 * A vitest reporter that ends the run with one line naming every test skipped because a system component
 * is missing (see `components.ts`), with the reason and the install command, so a skip never goes
 * unnoticed in the default reporter's count. Under `CI=true` such a skip fails the run (`components.ts`
 * already turns them into failures there; this is the second lock, for a test that skipped some other way
 * with the same note).
 */
import type { Reporter, TestCase } from "vitest/node"
import { SKIP_PREFIX } from "./components.ts"

/** One skipped test: its full name and its note. */
export interface ComponentSkip {
  readonly test: string
  readonly note: string
}

/**
 * The summary line of the skips: grouped by note (component, reason, install command), each followed by
 * the names of its tests; `undefined` when nothing was skipped for a component.
 */
export const summaryLine = (skips: ReadonlyArray<ComponentSkip>): string | undefined => {
  if (skips.length === 0) return undefined
  const byNote = new Map<string, Array<string>>()
  for (const skip of skips) {
    const tests = byNote.get(skip.note)
    if (tests === undefined) byNote.set(skip.note, [skip.test])
    else tests.push(skip.test)
  }
  const groups = [...byNote].map(([note, tests]) =>
    `${note.slice(SKIP_PREFIX.length)}: ${tests.map((t) => JSON.stringify(t)).join(", ")}`
  )
  return `Skipped ${skips.length} test${skips.length === 1 ? "" : "s"} for a missing system component; ${
    groups.join("; ")
  }`
}

export default class ComponentReporter implements Reporter {
  private readonly skips: Array<ComponentSkip> = []

  onTestCaseResult(testCase: TestCase): void {
    const result = testCase.result()
    if (result.state === "skipped" && result.note?.startsWith(SKIP_PREFIX) === true) {
      this.skips.push({
        test: `${testCase.module.moduleId.split("/test/").pop()} > ${testCase.fullName}`,
        note: result.note
      })
    }
  }

  onTestRunEnd(): void {
    const line = summaryLine(this.skips)
    if (line === undefined) return
    process.stdout.write(`\n${line}\n`)
    if (process.env.CI === "true") {
      process.stdout.write("CI=true: a test may not be skipped for a missing component; failing the run\n")
      process.exitCode = 1
    }
  }
}
