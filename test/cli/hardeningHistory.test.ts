/**
 * The history file's place and reading (docs/cli.md CLI 12.9, 1.2): the state folder is read as the
 * sessions' is, so a blank `EFFECT_AGENT_HOME` never puts the history in the workspace.
 */
import { ConfigProvider, Effect, Layer } from "effect"
import { NodeServices } from "@effect/platform-node"
import { homedir } from "node:os"
import { join, resolve } from "node:path"
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
    Effect.provide(Layer.mergeAll(NodeServices.layer, ConfigProvider.layer(ConfigProvider.fromUnknown({ EFFECT_AGENT_HOME: value }))))
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
