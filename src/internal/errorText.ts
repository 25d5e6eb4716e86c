/** Turning whatever a tool or hook failed with into the text a model reads. */
import * as Cause from "effect/Cause"

/** The message of an error value: `message` when it has one, else its string form. */
export const errorMessage = (error: unknown): string => {
  if (error instanceof Error) return error.message
  if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") {
    return error.message
  }
  if (typeof error === "string") return error
  try {
    const json = JSON.stringify(error)
    return json === undefined ? String(error) : json
  } catch {
    return String(error)
  }
}

/**
 * An error and the errors that caused it, outermost first, as one line: `what failed: why: the system's
 * reason (CODE)`. Wrappers often say only what failed ("PgConnection: Failed to connect") while the reason
 * sits a few `cause`s down (`connect ECONNREFUSED 127.0.0.1:5432`); a line naming one without the other sends
 * the reader to a debugger. Repeated messages are said once; the walk stops after four levels.
 */
export const errorChainText = (error: unknown): string => {
  const parts: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    if (typeof current === "object") {
      const code = "code" in current && typeof current.code === "string" ? current.code : undefined
      const message = "message" in current && typeof current.message === "string" ? current.message : undefined
      const text = code && message && !message.includes(code) ? `${message} (${code})` : message ?? code
      if (text !== undefined && text !== "" && !parts.includes(text)) parts.push(text)
      current = "cause" in current ? current.cause : undefined
    } else {
      parts.push(String(current))
      break
    }
  }
  return parts.join(": ") || "unknown cause"
}

/** The message of a failure or defect cause. */
export const causeMessage = (cause: Cause.Cause<unknown>): string => errorMessage(Cause.squash(cause))
