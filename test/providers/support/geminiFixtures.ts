/**
 * Gemini `streamGenerateContent?alt=sse` streams, written from the documented response shape: each event
 * a `GenerateContentResponse` with `candidates[].content.parts[]` (text, `thought`, `thoughtSignature`,
 * `functionCall`), `finishReason` on the last, `usageMetadata` with running totals, no end marker.
 */

export const geminiSse = (chunks: ReadonlyArray<unknown>, eol = "\r\n"): string =>
  chunks.map((chunk) => `data: ${JSON.stringify(chunk)}${eol}${eol}`).join("")

export const MODEL_VERSION = "gemini-2.5-flash-001"
export const SIGNATURE = "CiQBVKhc7jT1y1nN/Zq8+9w0vYx2aBc="

export const geminiChunk = (
  parts: ReadonlyArray<Record<string, unknown>>,
  extra: { readonly finishReason?: string; readonly finishMessage?: string; readonly usage?: Record<string, number> } =
    {}
) => ({
  candidates: [{
    content: { parts, role: "model" },
    ...(extra.finishReason !== undefined ? { finishReason: extra.finishReason } : {}),
    ...(extra.finishMessage !== undefined ? { finishMessage: extra.finishMessage } : {}),
    index: 0
  }],
  usageMetadata: extra.usage ?? { promptTokenCount: 100, totalTokenCount: 100 },
  modelVersion: MODEL_VERSION,
  responseId: "resp_g1"
})

export const finalUsage = {
  promptTokenCount: 100,
  candidatesTokenCount: 20,
  thoughtsTokenCount: 12,
  cachedContentTokenCount: 30,
  totalTokenCount: 132
}

/** Thought summaries, text with multi-byte characters, two function calls (the first signed), usage. */
export const geminiFullChunks = [
  geminiChunk([{ text: "I need to add… ", thought: true }]),
  geminiChunk([{ text: "🤔 then echo", thought: true }]),
  geminiChunk([{ text: "Héllo wörld " }]),
  geminiChunk([{ text: "🌍!" }]),
  geminiChunk(
    [
      { functionCall: { name: "add", args: { a: 2, b: 40 } }, thoughtSignature: SIGNATURE },
      { functionCall: { name: "echo", args: { text: "naïve ✓ 日本" } } }
    ],
    { finishReason: "STOP", usage: finalUsage }
  )
]

/** A plain text answer whose signature comes in a last part of its own. */
export const geminiText = (text = "Hi there", finishReason = "STOP") => [
  geminiChunk([{ text }]),
  geminiChunk([{ text: "", thoughtSignature: SIGNATURE }], {
    finishReason,
    usage: { promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7 }
  })
]
