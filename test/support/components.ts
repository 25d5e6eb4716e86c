/**
 * The system components some tests need (bubblewrap, tmux, `script`, PostgreSQL), found once per test
 * file. A test that needs one calls `needs(component)` at the top of its `describe`:
 *
 * - where the component works, the tests run;
 * - where it does not, each test is skipped with a note naming the component, why it is missing and how to
 *   install it; `componentReporter.ts` gathers those notes into one line at the end of the run;
 * - under `CI=true` nothing may be skipped for that reason (`.ci/run` installs every component): the tests
 *   fail instead, with the same note as their error.
 *
 * Tests that do not need a component never call `needs`, so a missing one cannot fail them.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { beforeEach } from "vitest"
import { findPostgresBin } from "../server/postgres.ts"

/** A program a test needs from the system, and how to get it. */
export interface Component {
  readonly name: string
  /** The Debian command that installs it. */
  readonly install: string
  /** `undefined` when it works here, else why not (one line). */
  readonly missing: () => string | undefined
}

/** The prefix of every skip note `needs` writes: the reporter recognises component skips by it. */
export const SKIP_PREFIX = "needs "

const once = (probe: () => string | undefined): () => string | undefined => {
  let result: { readonly value: string | undefined } | undefined
  return () => (result ??= { value: probe() }).value
}

/** Runs a program; `undefined` when it exits 0, else its first line of complaint. */
const runs = (program: string, args: ReadonlyArray<string>): string | undefined => {
  const run = spawnSync(program, args, { encoding: "utf8", timeout: 10_000 })
  if (run.error !== undefined) {
    return (run.error as NodeJS.ErrnoException).code === "ENOENT" ? `${program} was not found` : run.error.message
  }
  if (run.status === 0) return undefined
  const complaint = (run.stderr || run.stdout).trim().split("\n")[0]
  return `${program} does not work here: ${complaint || `exit code ${run.status}`}`
}

/** bubblewrap, for the `bash` sandbox: found and able to create its namespaces here. */
export const bubblewrap: Component = {
  name: "bubblewrap",
  install: "apt-get install bubblewrap",
  missing: once(() => {
    const dir = mkdtempSync(join(tmpdir(), "effect-agent-bwrap-probe-"))
    try {
      return runs("bwrap", ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--bind", dir, dir, "true"])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
}

/** tmux, the pseudo-terminal the interactive-mode tests drive. */
export const tmux: Component = {
  name: "tmux",
  install: "apt-get install tmux",
  missing: once(() => runs("tmux", ["-V"]))
}

/** util-linux's `script`: runs a command on a pseudo-terminal, for the terminal tests. */
export const SCRIPT = "/usr/bin/script"

/** `script`, found at `SCRIPT`. */
export const script: Component = {
  name: "script",
  install: "apt-get install bsdutils",
  missing: once(() => existsSync(SCRIPT) ? undefined : `${SCRIPT} was not found`)
}

/** PostgreSQL (`initdb` and `postgres`), started in a temporary folder by the cluster tests. */
export const postgresql: Component = {
  name: "PostgreSQL",
  install: "apt-get install postgresql",
  missing: once(() => findPostgresBin() === undefined ? "initdb was not found" : undefined)
}

/** The note of a test skipped because `component` is missing here. */
export const skipNote = (component: Component, reason: string): string =>
  `${SKIP_PREFIX}${component.name}: ${reason} (install: ${component.install})`

/** Whether this run must not skip for a missing component. */
const strict = (): boolean => process.env.CI === "true"

/**
 * Declares that the tests of the enclosing `describe` need `component`: each is skipped with a note when it
 * is missing, or fails under `CI=true`. Returns whether it is there, for `beforeAll` hooks that must not
 * start anything without it.
 */
export const needs = (component: Component): boolean => {
  const reason = component.missing()
  if (reason === undefined) return true
  const note = skipNote(component, reason)
  beforeEach((context) => {
    if (strict()) throw new Error(`CI=true and this test ${note}`)
    context.skip(note)
  })
  return false
}
