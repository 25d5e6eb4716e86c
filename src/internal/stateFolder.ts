/**
 * The state folder, read in one place for the whole package (durable runs, sessions, the prompt history):
 * `EFFECT_AGENT_HOME` through `Config`, so a `ConfigProvider` (a test, an embedding program) decides it and
 * no module reads `process.env` itself.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { homedir } from "node:os"
import { join, resolve } from "node:path"

/**
 * `EFFECT_AGENT_HOME` made absolute when it is set and not blank, else `~/.effect-agent` (docs/cli.md CLI 7.1,
 * 12.9). A blank value is the default: read as given it was a folder named by its spaces, relative to the
 * current folder, so the state landed in the workspace. Never fails: a value that cannot be read is the default.
 */
export const stateFolder: Effect.Effect<string> = Config.String("EFFECT_AGENT_HOME").pipe(
  Config.option,
  Effect.orElseSucceed(() => Option.none<string>()),
  Effect.map((given) =>
    Option.isSome(given) && given.value.trim() !== "" ? resolve(given.value) : join(homedir(), ".effect-agent")
  )
)
