/**
 * The history file's place and reading (docs/cli.md CLI 12.9, 1.2): the state folder is read as the
 * sessions' is, so a blank `EFFECT_AGENT_HOME` never puts the history in the workspace; only the end of
 * the file is read (CLI 12.14), so a huge file still gives its newest entries and a FIFO gives none at once.
 */
import { ConfigProvider, Effect } from "effect"
import { execFileSync } from "node:child_process"
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import * as History from "../../src/cli/interactive/History.ts"
import { stateFolder } from "../../src/cli/SessionStore.ts"
import * as DurableStore from "../../src/durable/DurableStore.ts"

/** A state folder as the CLI reads it: `EFFECT_AGENT_HOME` through `Config` (sessions, history, run store). */
const stateOf = (folder: Effect.Effect<string>, value: string) =>
  Effect.runSync(folder.pipe(
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown({ EFFECT_AGENT_HOME: value }))
  ))

describe("history file (CLI 12.9)", () => {
  it("a blank EFFECT_AGENT_HOME means the default state folder, for sessions, history and the run store", () => {
    expect(stateOf(stateFolder, "   ")).toBe(join(homedir(), ".effect-agent"))
    expect(stateOf(DurableStore.stateFolder, "   ")).toBe(join(homedir(), ".effect-agent"))
    expect(stateOf(DurableStore.defaultStoreFile, "   ")).toBe(join(homedir(), ".effect-agent", "runs.db"))
  })

  it("a relative EFFECT_AGENT_HOME is made absolute once, for sessions, history and the run store", () => {
    const state = stateOf(stateFolder, "rel/state")
    expect(state).toBe(resolve("rel/state"))
    expect(stateOf(DurableStore.stateFolder, "rel/state")).toBe(state)
    expect(History.historyFile("/w/p", state).startsWith(resolve("rel/state", "history") + "/")).toBe(true)
  })
})

describe("reading the history file (CLI 12.14)", () => {
  it("a 3 GB history gives its newest entries; a FIFO gives none without blocking", () => {
    const home = mkdtempSync(join(tmpdir(), "effect-agent-history-"))
    try {
      const file = History.historyFile("/w/big", home)
      mkdirSync(dirname(file), { recursive: true })
      writeFileSync(file, JSON.stringify("oldest") + "\n")
      truncateSync(file, 3 * 1024 * 1024 * 1024) // sparse: reads as NUL bytes
      appendFileSync(
        file,
        "\n" + JSON.stringify("second newest") + "\n" + JSON.stringify("newest\nof two lines") + "\n"
      )
      expect(History.load("/w/big", home).entries()).toEqual(["second newest", "newest\nof two lines"])
      const fifo = History.historyFile("/w/fifo", home)
      execFileSync("mkfifo", [fifo])
      expect(History.load("/w/fifo", home).entries()).toEqual([])
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})
