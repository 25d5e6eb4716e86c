/**
 * Set-up of the interactive-mode tests: the stub provider of test/support/stubProvider.ts and the command
 * run inside a real pseudo-terminal by tmux, with keys sent in and the screen read back with `capture-pane`.
 *
 * Every tmux session runs on its own server socket, so tests never touch another tmux; `stop` kills it.
 * The tests that use it declare `needs(tmux)` (test/support/components.ts): skipped where tmux is missing,
 * failing under `CI=true`.
 */
import { execFileSync } from "node:child_process"
import { MAIN, NODE, shellQuote } from "./support.ts"

export { lastUserText, startStub, type Stub, type StubReply } from "../support/stubProvider.ts"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A command running in a tmux pane of its own server. */
export interface Screen {
  /** Keys by tmux name (`Enter`, `Escape`, `C-c`, `M-Enter`, `Up`, `Tab`). */
  readonly keys: (...names: ReadonlyArray<string>) => void
  /** Literal text typed. */
  readonly type: (text: string) => void
  /** Text pasted with the terminal's bracketed paste. */
  readonly paste: (text: string) => void
  /**
   * The screen now, with the scrollback (`-S -200`), rows the terminal wrapped joined (`-J`), trailing blank
   * lines dropped; with CAPTURE_ANSI=1 in the environment, with its colours (`-e`, for the README picture).
   */
  readonly capture: () => string
  /**
   * Waits until the screen matches (polling); fails with the screen in the message after `timeoutMs`
   * (generous: the machine may be loaded).
   */
  readonly waitFor: (pattern: RegExp | string, timeoutMs?: number) => Promise<string>
  /** Kills the pane's server (and so the command, if still running). */
  readonly stop: () => void
  /** Runs a tmux command on this screen's own server; its output. */
  readonly tmux: (...args: ReadonlyArray<string>) => string
}

let counter = 0

/**
 * Runs `effect-agent` with these arguments in a fresh 100x40 pseudo-terminal. When the command ends the
 * pane stays, showing `[exit N]`.
 */
export const openScreen = (args: ReadonlyArray<string>, env: Record<string, string>, cwd: string): Screen => {
  const socket = `effect-agent-test-${process.pid}-${++counter}`
  const tmux = (...tmuxArgs: ReadonlyArray<string>) =>
    execFileSync("tmux", ["-L", socket, "-f", "/dev/null", ...tmuxArgs], {
      encoding: "utf8",
      env: { ...process.env, TERM: process.env.TERM ?? "xterm-256color" }
    })
  const vars = Object.entries({ TERM: "xterm-256color", ...env }).map(([k, v]) => `${k}=${shellQuote(v)}`).join(" ")
  const command = `cd ${shellQuote(cwd)} && env -u NO_COLOR -u EFFECT_AGENT_LIVE ${vars} ${shellQuote(NODE)} ${
    shellQuote(MAIN)
  } ${args.map(shellQuote).join(" ")}; echo "[exit $?]"; sleep 600`
  tmux("new-session", "-d", "-s", "main", "-x", "100", "-y", "40", "sh", "-c", command)
  tmux("set-option", "-s", "escape-time", "0")
  const colours = process.env.CAPTURE_ANSI === "1" ? ["-e"] : []
  const capture = () => tmux("capture-pane", "-p", "-J", ...colours, "-t", "main", "-S", "-200").replace(/\s+$/, "")
  return {
    tmux,
    keys: (...names) => void tmux("send-keys", "-t", "main", ...names),
    type: (text) => void tmux("send-keys", "-t", "main", "-l", text),
    paste: (text) => {
      tmux("set-buffer", "-b", "p", text)
      tmux("paste-buffer", "-p", "-b", "p", "-t", "main")
    },
    capture,
    waitFor: async (pattern, timeoutMs = 45_000) => {
      const deadline = Date.now() + timeoutMs
      let screen = ""
      while (Date.now() < deadline) {
        screen = capture()
        if (typeof pattern === "string" ? screen.includes(pattern) : pattern.test(screen)) return screen
        await sleep(50)
      }
      throw new Error(`the screen never showed ${String(pattern)}; it shows:\n${screen}`)
    },
    stop: () => {
      try {
        tmux("kill-server")
      } catch {
        // already gone
      }
    }
  }
}
