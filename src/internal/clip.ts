/**
 * Bounding what is echoed back to a model (TE 9.4): a path, a pattern, a tool name or argument text sent by
 * the model may be arbitrarily long, and an error that repeats it whole would grow the transcript with it.
 */

/** Most characters of a short argument (a name, a path, a pattern) that a message echoes back. */
const ECHO_MAX_CHARS = 256

/**
 * `text` when it has at most `max` characters; otherwise its start and its end around a note saying how
 * many characters were left out, so an echoed argument stays short however long it was. A surrogate pair
 * is never split.
 */
export const clip = (text: string, max: number = ECHO_MAX_CHARS): string => {
  if (text.length <= max) return text
  let head = Math.ceil(max * 0.6)
  let tail = text.length - (max - head)
  if (head > 0 && isHighSurrogate(text.charCodeAt(head - 1))) head--
  if (tail < text.length && isLowSurrogate(text.charCodeAt(tail))) tail++
  return `${text.slice(0, head)}…[${tail - head} characters left out]…${text.slice(tail)}`
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff
