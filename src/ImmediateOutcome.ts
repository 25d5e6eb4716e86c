/**
 * The ways a tool call can end during prepare, before it executes. They are typed errors in the error channel
 * of the prepare phase; each `message` is exactly the text of the error result the model will read.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const call = { toolCallId: Schema.String, toolName: Schema.String, message: Schema.String }

/** No tool of that name is registered. */
export class ToolNotFound extends Schema.TaggedError<ToolNotFound>()("ToolNotFound", call) {}

/** One problem found when validating arguments: a dotted path (`root` for the whole value) and what is wrong. */
const ArgumentIssue = Schema.Struct({ path: Schema.String, message: Schema.String })

/** The arguments (after `prepareArguments`) do not match the tool's parameter Schema. */
export class InvalidToolArguments extends Schema.TaggedError<InvalidToolArguments>()("InvalidToolArguments", {
  ...call,
  issues: Schema.Array(ArgumentIssue)
}) {}

/** `beforeToolCall` refused the call. `terminate` counts towards stopping the loop after the batch. */
export class ToolCallBlocked extends Schema.TaggedError<ToolCallBlocked>()("ToolCallBlocked", {
  ...call,
  terminate: Schema.Boolean
}) {}

/**
 * `prepareArguments` or `beforeToolCall` failed or died, or the handler's `resources` died or gave something
 * that is not a list of accesses (TE 11.4).
 */
export class PrepareFailed extends Schema.TaggedError<PrepareFailed>()("PrepareFailed", {
  ...call,
  stage: Schema.Literals(["prepareArguments", "beforeToolCall", "resources"])
}) {}

/** The run was aborted before this call could execute; the tool never ran. */
export class AbortedBeforeStart extends Schema.TaggedError<AbortedBeforeStart>()("AbortedBeforeStart", call) {}

/** An earlier call in the same batch has this id; this one is never executed. */
export class DuplicateToolCallId extends Schema.TaggedError<DuplicateToolCallId>()("DuplicateToolCallId", call) {}

/** The caller asked for the call not to run (e.g. its response hit the token limit). */
export class ToolCallSkipped extends Schema.TaggedError<ToolCallSkipped>()("ToolCallSkipped", call) {}

/** Every immediate outcome. */
export type ImmediateOutcome =
  | ToolNotFound
  | InvalidToolArguments
  | ToolCallBlocked
  | PrepareFailed
  | AbortedBeforeStart
  | DuplicateToolCallId
  | ToolCallSkipped

/** The Schema of every immediate outcome, e.g. to log or persist them. */
export const ImmediateOutcome = Schema.Union([
  ToolNotFound,
  InvalidToolArguments,
  ToolCallBlocked,
  PrepareFailed,
  AbortedBeforeStart,
  DuplicateToolCallId,
  ToolCallSkipped
])
