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

/** The message of a failure or defect cause. */
export const causeMessage = (cause: Cause.Cause<unknown>): string => errorMessage(Cause.squash(cause))
