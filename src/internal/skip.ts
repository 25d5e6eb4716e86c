/**
 * The loop's way to have a batch end every call without running it (AL 2.10, AL 3.3), kept off the
 * public options: the reason is attached to the options object the loop builds, and read by the batch.
 */

const reasons = new WeakMap<object, string>()

/** The same options, marked so that the batch ends each call at once with `reason` (after its id check). */
export const skipping = <O extends object>(options: O, reason: string): O => {
  reasons.set(options, reason)
  return options
}

/** The skip reason attached to these options, if any. */
export const skipReasonOf = (options: object): string | undefined => reasons.get(options)
