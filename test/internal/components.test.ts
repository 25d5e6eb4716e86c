/**
 * The end-of-run line about tests skipped for a missing system component (test/support): every skipped
 * test is named once, under its component's reason and install command.
 */
import { describe, expect, it } from "vitest"
import { summaryLine } from "../support/componentReporter.ts"
import { bubblewrap, skipNote, tmux } from "../support/components.ts"

describe("the missing-component summary", () => {
  it("says nothing when no test was skipped for a component", () => {
    expect(summaryLine([])).toBeUndefined()
  })

  it("names each test with its component's reason and install command, grouped, in one line", () => {
    const noBwrap = skipNote(bubblewrap, "bwrap was not found")
    const noTmux = skipNote(tmux, "tmux was not found")
    const line = summaryLine([
      { test: "a > one", note: noBwrap },
      { test: "b > two", note: noTmux },
      { test: "a > three", note: noBwrap }
    ])
    expect(line).toBe(
      "Skipped 3 tests for a missing system component; " +
        "bubblewrap: bwrap was not found (install: apt-get install bubblewrap): \"a > one\", \"a > three\"; " +
        "tmux: tmux was not found (install: apt-get install tmux): \"b > two\""
    )
    expect(line).not.toContain("\n")
  })
})
