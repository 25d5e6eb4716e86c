/**
 * The history file's place and reading (docs/cli.md CLI 12.9, 1.2): the state folder is read as the
 * sessions' is, so a blank `EFFECT_AGENT_HOME` never puts the history in the workspace; only the end of
 * the file is read (CLI 12.14), so a huge file still gives its newest entries and a FIFO gives none at once.
 */
import { NodeServices } from "@effect/platform-node"
import { ConfigProvider, Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as History from "../../src/cli/interactive/History.ts"
import { stateFolder } from "../../src/cli/SessionStore.ts"

const saved = process.env.EFFECT_AGENT_HOME
afterEach(() => {
  if (saved === undefined) delete process.env.EFFECT_AGENT_HOME
  else process.env.EFFECT_AGENT_HOME = saved
})

const sessionsState = (value: string) =>
  Effect.runSync(stateFolder.pipe(
    Effect.provide(
      Layer.mergeAll(NodeServices.layer, ConfigProvider.layer(ConfigProvider.fromUnknown({ EFFECT_AGENT_HOME: value })))
    )
  ))

describe("history file (CLI 12.9)", () => {
  it("a blank EFFECT_AGENT_HOME means the default state folder, as for sessions", () => {
    process.env.EFFECT_AGENT_HOME = "   "
    expect(History.stateHome()).toBe(join(homedir(), ".effect-agent"))
    expect(History.stateHome()).toBe(sessionsState("   "))
  })

  it("a relative EFFECT_AGENT_HOME is made absolute once, as for sessions", () => {
    process.env.EFFECT_AGENT_HOME = "rel/state"
    expect(History.stateHome()).toBe(resolve("rel/state"))
    expect(History.stateHome()).toBe(sessionsState("rel/state"))
    expect(History.historyFile("/w/p").startsWith(resolve("rel/state", "history") + "/")).toBe(true)
  })
})

describe("reading the history file (CLI 12.14)", () => {
  it("a 3 GB history gives its newest entries; a FIFO gives none without blocking", () => {
    const home = mkdtempSync(join(tmpdir(), "effect-agent-history-"))
    try {
      process.env.EFFECT_AGENT_HOME = home
      const file = History.historyFile("/w/big")
      mkdirSync(dirname(file), { recursive: true })
      writeFileSync(file, JSON.stringify("oldest") + "\n")
      truncateSync(file, 3 * 1024 * 1024 * 1024) // sparse: reads as NUL bytes
      appendFileSync(
        file,
        "\n" + JSON.stringify("second newest") + "\n" + JSON.stringify("newest\nof two lines") + "\n"
      )
      expect(History.load("/w/big").entries()).toEqual(["second newest", "newest\nof two lines"])
      const fifo = History.historyFile("/w/fifo")
      execFileSync("mkfifo", [fifo])
      expect(History.load("/w/fifo").entries()).toEqual([])
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})
