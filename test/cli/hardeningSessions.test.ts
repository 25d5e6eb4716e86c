/**
 * The session picker on hostile or unusual text (docs/cli.md CLI 12.10, 7.3): each row fits its width in
 * display cells, never splits a character, and the folder's name cannot send escape sequences; a session
 * flag naming a FIFO or a device is refused before anything reads it (CLI 12.13).
 */
import { NodeServices } from "@effect/platform-node"
import { Effect, Exit, Option } from "effect"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { displayWidth } from "../../src/cli/interactive/internal/text.ts"
import * as SessionStore from "../../src/cli/SessionStore.ts"

const session = (firstPrompt: string): SessionStore.SessionSummary => ({
  path: "/s/x.jsonl",
  modified: 0,
  bytes: 10,
  messages: 2,
  firstPrompt
})

describe("session picker rows (CLI 12.10)", () => {
  it("a first prompt of wide characters is cut by display width, with no character split", () => {
    const line = SessionStore.describe(session("漢字".repeat(100)), 80)
    expect(displayWidth(line)).toBeLessThanOrEqual(80)
    expect(line.endsWith("…")).toBe(true)
    const emoji = SessionStore.describe(session("👩‍👩‍👧".repeat(100)), 60)
    expect(displayWidth(emoji)).toBeLessThanOrEqual(60)
    // No lone surrogate left at the cut.
    expect(emoji).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/)
  })

  it("control characters in the prompt and in the folder's path are shown, not obeyed", () => {
    expect(SessionStore.describe(session("hi\x1b]0;pwned\x07"), 100)).not.toMatch(/[\x00-\x1f\x7f-\x9f]/)
    const message = SessionStore.pickerMessage("/tmp/evil\x1b[2Jdir", "--resume")
    expect(message).not.toMatch(/[\x00-\x1f\x7f-\x9f]/)
    expect(message).toBe("Pick a session of /tmp/evil␛[2Jdir (continued in place)")
  })
})

describe("session flags naming no regular file (CLI 12.13)", () => {
  const NO_FLAGS: SessionStore.SessionFlags = {
    session: Option.none(),
    resume: Option.none(),
    continue: false,
    fork: Option.none()
  }
  const planOf = (flags: Partial<SessionStore.SessionFlags>) =>
    Effect.runPromise(
      Effect.exit(
        SessionStore.plan({ ...NO_FLAGS, ...flags }, tmpdir(), false).pipe(Effect.provide(NodeServices.layer))
      )
    )

  it("--fork=FIFO, --resume=/dev/zero, a folder and --session FIFO are usage errors, not reads that never end", async () => {
    const base = mkdtempSync(join(tmpdir(), "effect-agent-flags-"))
    try {
      execFileSync("mkfifo", [join(base, "s.jsonl")])
      for (
        const [flags, flag, type] of [
          [{ fork: Option.some(join(base, "s.jsonl")) }, "--fork", "FIFO"],
          [{ resume: Option.some("/dev/zero") }, "--resume", "CharacterDevice"],
          [{ resume: Option.some(base) }, "--resume", "Directory"],
          [{ session: Option.some(join(base, "s.jsonl")) }, "--session", "FIFO"]
        ] as const
      ) {
        const exit = await planOf(flags)
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Exit.isFailure(exit) ? (exit.cause.reasons[0] as { readonly error?: any }).error : undefined
        expect(error?._tag).toBe("UsageError")
        expect(error?.flag).toBe(flag)
        expect(error?.message).toContain(`not a regular file (${type})`)
      }
      // A missing file is left to the reader, which says it is missing.
      const missing = await planOf({ resume: Option.some(join(base, "none.jsonl")) })
      expect(Exit.isSuccess(missing)).toBe(true)
    } finally {
      rmSync(base, { recursive: true, force: true })
    }
  })
})
