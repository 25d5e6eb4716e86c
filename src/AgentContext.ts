/**
 * The context a run works in: the system prompt and the transcript so far. Hooks receive it; the loop passes
 * it (transformed and converted) to the model.
 *
 * @since 0.1.0
 */
import type { AgentMessage } from "./Message.ts"

/** A snapshot of a run's context. Never mutated by the library: each step makes a new one. */
export interface AgentContext {
  readonly systemPrompt: string
  readonly messages: ReadonlyArray<AgentMessage>
}

/** An empty context: what a tool batch run on its own sees. @internal */
export const empty: AgentContext = { systemPrompt: "", messages: [] }
