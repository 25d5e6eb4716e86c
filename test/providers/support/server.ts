/**
 * A scripted HTTP server on 127.0.0.1 for provider tests: each request gets the next scripted reply
 * (the last one repeats), and every request is recorded with its parsed JSON body.
 */
import { Effect, Layer, type Scope } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface Recorded {
  readonly method: string
  readonly url: string
  readonly headers: http.IncomingHttpHeaders
  readonly raw: string
  readonly body: any
  /** When the request arrived (ms since the epoch). */
  readonly at: number
}

/** What the server does with one request. */
export interface Reply {
  readonly status?: number
  readonly headers?: Readonly<Record<string, string>>
  /** The body, written in pieces of `chunkSize` bytes (default: at once). */
  readonly body?: string | Uint8Array
  readonly chunkSize?: number
  /** Pause between pieces, in ms. Default 2 when chunked; 0 only yields to the event loop. */
  readonly delayMs?: number
  /** After the body: end the response (default), drop the connection, or keep it open forever. */
  readonly after?: "end" | "destroy" | "hang"
  /** Send nothing at all, not even headers, and keep the connection open. */
  readonly silent?: boolean
}

export interface TestServer {
  readonly url: string
  readonly requests: Array<Recorded>
  /** Replies in order; the last one is reused. Tests set it before calling. */
  replies: Array<Reply>
  /** Resolves when the response to request `n` (0-based) is closed; `early` when it was not finished. */
  readonly closed: (n: number) => Promise<{ readonly early: boolean }>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Starts a server for the scope. */
export const startServer: Effect.Effect<TestServer, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ server: http.Server; state: TestServer }>((resolve) => {
      const closedWaiters = new Map<number, Array<(value: { early: boolean }) => void>>()
      const closedResults = new Map<number, { early: boolean }>()
      const state: TestServer = {
        url: "",
        requests: [],
        replies: [],
        closed: (n) =>
          new Promise((done) => {
            const known = closedResults.get(n)
            if (known !== undefined) return done(known)
            closedWaiters.set(n, [...(closedWaiters.get(n) ?? []), done])
          })
      }
      const server = http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const n = state.requests.length
          const raw = Buffer.concat(chunks).toString("utf8")
          let body: unknown = undefined
          try {
            body = JSON.parse(raw)
          } catch {
            body = undefined
          }
          state.requests.push({
            method: req.method ?? "",
            url: req.url ?? "",
            headers: req.headers,
            raw,
            body,
            at: Date.now()
          })
          res.on("close", () => {
            const result = { early: !res.writableFinished }
            closedResults.set(n, result)
            for (const done of closedWaiters.get(n) ?? []) done(result)
          })
          const reply = state.replies[Math.min(n, state.replies.length - 1)]
          if (reply === undefined) {
            res.writeHead(500).end("no reply scripted")
            return
          }
          void play(reply, res)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        ;(state as { url: string }).url = `http://127.0.0.1:${port}`
        resolve({ server, state })
      })
    })
  ),
  ({ server }) =>
    Effect.promise(() =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
    )
).pipe(Effect.map(({ state }) => state))

const play = async (reply: Reply, res: http.ServerResponse) => {
  if (reply.silent === true) return
  res.socket?.setNoDelay(true)
  res.writeHead(reply.status ?? 200, {
    "content-type": reply.status === undefined || reply.status < 300 ? "text/event-stream" : "application/json",
    ...reply.headers
  })
  res.flushHeaders()
  const body = reply.body === undefined
    ? new Uint8Array()
    : typeof reply.body === "string"
    ? new TextEncoder().encode(reply.body)
    : reply.body
  const size = reply.chunkSize ?? body.length
  for (let offset = 0; offset < body.length; offset += Math.max(1, size)) {
    if (res.destroyed) return
    res.write(body.subarray(offset, offset + Math.max(1, size)))
    // A pause of 0 still yields to the event loop, so each piece leaves as its own write.
    if (size < body.length) {
      await (reply.delayMs === 0 ? new Promise((resolve) => setImmediate(resolve)) : sleep(reply.delayMs ?? 2))
    }
  }
  switch (reply.after ?? "end") {
    case "end":
      res.end()
      break
    case "destroy":
      await sleep(5)
      res.socket?.destroy()
      break
    case "hang":
      break
  }
}

/**
 * An HttpClient whose responses are given in memory, chunk by chunk: for exact byte boundaries (a real
 * socket may merge small writes).
 */
export const memoryClient = (
  respond: (request: { readonly url: string; readonly body: any }) => {
    readonly status?: number
    readonly chunks: ReadonlyArray<Uint8Array>
  }
): Layer.Layer<HttpClient.HttpClient> =>
  Layer.succeed(
    HttpClient.HttpClient,
    HttpClient.make((request, url) =>
      Effect.sync(() => {
        const body = request.body._tag === "Uint8Array"
          ? JSON.parse(new TextDecoder().decode(request.body.body))
          : undefined
        const { chunks, status } = respond({ url: url.toString(), body })
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            for (const chunk of chunks) controller.enqueue(chunk)
            controller.close()
          }
        })
        return HttpClientResponse.fromWeb(
          request,
          new Response(stream, { status: status ?? 200, headers: { "content-type": "text/event-stream" } })
        )
      })
    )
  )

/** A text's UTF-8 bytes cut into pieces of `size` bytes (cutting through characters and lines). */
export const bytesIn = (text: string, size: number): Array<Uint8Array> => {
  const bytes = new TextEncoder().encode(text)
  const out: Array<Uint8Array> = []
  for (let offset = 0; offset < bytes.length; offset += size) out.push(bytes.subarray(offset, offset + size))
  return out
}
