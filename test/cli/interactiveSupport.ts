/**
 * Set-up of the interactive-mode tests: a stub OpenAI-compatible provider on 127.0.0.1 (each request is
 * answered by a function of its body, streamed as server-sent events) and the command run inside a real
 * pseudo-terminal by tmux, with keys sent in and the screen read back with `capture-pane`.
 *
 * Every tmux session runs on its own server socket, so tests never touch another tmux; `stop` kills it.
 * The tests that use it declare `needs(tmux)` (test/support/components.ts): skipped where tmux is missing,
 * failing under `CI=true`.
 */
import { execFileSync } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { MAIN, NODE, shellQuote } from "./support.ts"

/** One scripted answer: text (streamed in pieces) and/or tool calls. */
export interface StubReply {
  readonly text?: string
  readonly toolCalls?: ReadonlyArray<{ readonly id: string; readonly name: string; readonly args: unknown }>
  /** Pause between pieces, ms (default 5). */
  readonly delayMs?: number
  /** Characters per piece (default 12). */
  readonly chunk?: number
  /** Pause before the first piece, ms (a model thinking before it answers). */
  readonly firstDelayMs?: number
}

export interface Stub {
  readonly url: string
  /** The parsed bodies of every request, in order. */
  readonly requests: Array<any>
  readonly close: () => Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const sseChunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) =>
  `data: ${
    JSON.stringify({
      id: "stub",
      object: "chat.completion.chunk",
      created: 1,
      model: "stub-model",
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra
    })
  }\n\n`

/** The text of a request's last user message. */
export const lastUserText = (body: any): string => {
  const messages: Array<any> = body?.messages ?? []
  const last = [...messages].reverse().find((m) => m.role === "user")
  if (last === undefined) return ""
  return typeof last.content === "string"
    ? last.content
    : (last.content as Array<any>).map((part) => part.text ?? "").join("")
}

/** Starts the stub provider; `respond` picks each request's answer. */
export const startStub = (respond: (body: any) => StubReply): Promise<Stub> =>
  new Promise((resolveStub) => {
    const requests: Array<any> = []
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", async () => {
        let body: any
        try {
          body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
        } catch {
          body = undefined
        }
        requests.push(body)
        const reply = respond(body)
        let gone = false
        res.on("close", () => {
          gone = true
        })
        res.writeHead(200, { "content-type": "text/event-stream" })
        if (reply.firstDelayMs !== undefined) await sleep(reply.firstDelayMs)
        if (gone) return
        res.write(sseChunk({ role: "assistant", content: "" }))
        const text = reply.text ?? ""
        const size = reply.chunk ?? 12
        for (let i = 0; i < text.length && !gone; i += size) {
          await sleep(reply.delayMs ?? 5)
          if (!gone) res.write(sseChunk({ content: text.slice(i, i + size) }))
        }
        ;(reply.toolCalls ?? []).forEach((call, index) => {
          if (gone) return
          res.write(sseChunk({
            tool_calls: [{
              index,
              id: call.id,
              type: "function",
              function: { name: call.name, arguments: JSON.stringify(call.args) }
            }]
          }))
        })
        if (gone) return
        res.write(sseChunk({}, (reply.toolCalls ?? []).length > 0 ? "tool_calls" : "stop"))
        res.write(
          `data: ${
            JSON.stringify({
              id: "stub",
              object: "chat.completion.chunk",
              created: 1,
              model: "stub-model",
              choices: [],
              usage: { prompt_tokens: 1200, completion_tokens: 34, total_tokens: 1234 }
            })
          }\n\n`
        )
        res.end("data: [DONE]\n\n")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolveStub({
        url: `http://127.0.0.1:${port}/v1`,
        requests,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })

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
