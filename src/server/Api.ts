/**
 * The bodies of `effect-agent serve`'s HTTP API, as Schemas: what clients send is decoded with them (a
 * body that does not match gets 400 with the decoder's message) and what the server answers is built to
 * them.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Message } from "../Message.ts"

/** `POST /runs`: a new run. `workspace` is relative to the server's `--workspaces` root (default: the root). */
export const CreateRun = Schema.Struct({
  prompt: Schema.NonEmptyString,
  workspace: Schema.optionalKey(Schema.String),
  /** `all`: write, edit and bash run without asking; `none` (default): they are refused (no one to ask). */
  approve: Schema.optionalKey(Schema.Literals(["all", "none"]))
})
export type CreateRun = typeof CreateRun.Type

/** The answer to `POST /runs` (status 201). */
export const RunCreated = Schema.Struct({ runId: Schema.String })

/** Where a run stands. `aborted`: it was ended by `POST /runs/:id/abort`. */
export const RunStatus = Schema.Literals(["running", "completed", "failed", "aborted"])
export type RunStatus = typeof RunStatus.Type

/** `GET /runs/:id`. While a run is running, `messages` holds what its current execution has finished. */
export const RunView = Schema.Struct({
  runId: Schema.String,
  status: RunStatus,
  workspace: Schema.String,
  messages: Schema.Array(Message),
  /** Which runners executed the run, in order (more than one after a failover). */
  runners: Schema.Array(Schema.String)
})
export type RunView = typeof RunView.Type

/** `POST /runs/:id/messages`: a steering message (read after the current batch) or a follow-up (read at the end). */
export const SendMessage = Schema.Struct({
  kind: Schema.Literals(["steer", "followUp"]),
  text: Schema.NonEmptyString
})
export type SendMessage = typeof SendMessage.Type

/** Every error answer: a sentence saying what was wrong. */
export const ErrorBody = Schema.Struct({ error: Schema.String })

/**
 * The event the server adds to a run's event stream when a runner starts executing it: first, and again
 * after a failover, where the new runner replays the finished steps (their events come again) and goes on.
 */
export const ExecutionStart = Schema.Struct({
  type: Schema.Literal("execution_start"),
  runner: Schema.String,
  at: Schema.Number
})
export type ExecutionStart = typeof ExecutionStart.Type
