/**
 * For tests and demos: `effect-agent/testing`. `ScriptedModel` is a `Model` that replays a script (replies,
 * tool calls, failures, or functions of the request), streamed like a provider's response, so an agent or a
 * batch runs end to end without a network, and under `TestClock` when its steps have delays.
 *
 * @since 0.1.0
 */

/** A model that replays a script (also the command line's embedded demo). */
export * as ScriptedModel from "../ScriptedModel.ts"
