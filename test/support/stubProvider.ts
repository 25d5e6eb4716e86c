/**
 * A stub OpenAI-compatible provider on 127.0.0.1 for tests that run the real command: each request is
 * answered by a function of its body, streamed as server-sent events the way such servers stream.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

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
        // The usage chunk of `stream_options.include_usage`: no choices.
        res.write(sseChunk({}, null, {
          choices: [],
          usage: { prompt_tokens: 1200, completion_tokens: 34, total_tokens: 1234 }
        }))
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
