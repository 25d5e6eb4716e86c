/**
 * A Promise facade over the {@link Agent} for applications that do not use Effect. It owns a runtime built
 * from a layer that provides the model and the tools; `dispose` releases it.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Agent from "./Agent.ts"
import type { AgentEvent } from "./AgentEvent.ts"
import type { AgentMessage, ImageContent } from "./Message.ts"
import type { Model } from "./Model.ts"
import type { ToolRegistry } from "./ToolRegistry.ts"

/** Options of a {@link PromiseAgent}: the layer with the model and tools, and the agent's options. */
export interface PromiseAgentOptions extends Agent.AgentOptions {
  readonly layer: Layer.Layer<Model | ToolRegistry, unknown>
}

/**
 * The agent with Promise methods. Refused calls reject with the agent's typed errors (`AgentBusy`,
 * `CannotContinue`), whose `message` says what to do instead.
 */
export class PromiseAgent {
  readonly #runtime: ManagedRuntime.ManagedRuntime<Agent.Agent, unknown>

  constructor(options: PromiseAgentOptions) {
    const { layer, ...agentOptions } = options
    this.#runtime = ManagedRuntime.make(Layer.provide(Agent.Agent.layer(agentOptions), layer))
  }

  #run<A, E>(f: (agent: Agent.AgentShape) => Effect.Effect<A, E>): Promise<A> {
    return this.#runtime.runPromise(Agent.Agent.use(f))
  }

  /** The current state. */
  state(): Promise<Agent.AgentState> {
    return this.#run((agent) => SubscriptionRef.get(agent.state))
  }
  /** Runs a prompt; resolves when the run and its `agent_end` subscribers are done. */
  prompt(input: Agent.PromptInput, images?: ReadonlyArray<ImageContent>): Promise<void> {
    return this.#run((agent) => agent.prompt(input, images))
  }
  /** Continues from the transcript (see {@link Agent.AgentShape.continue}). */
  continue(): Promise<void> {
    return this.#run((agent) => agent.continue)
  }
  steer(message: AgentMessage | string): Promise<void> {
    return this.#run((agent) => agent.steer(message))
  }
  followUp(message: AgentMessage | string): Promise<void> {
    return this.#run((agent) => agent.followUp(message))
  }
  abort(): Promise<void> {
    return this.#run((agent) => agent.abort)
  }
  waitForIdle(): Promise<void> {
    return this.#run((agent) => agent.waitForIdle)
  }
  reset(): Promise<void> {
    return this.#run((agent) => agent.reset)
  }
  /** Replaces the transcript (the array is copied). Rejects with `AgentBusy` while a run is active. */
  setMessages(messages: ReadonlyArray<AgentMessage>): Promise<void> {
    return this.#run((agent) => agent.setMessages(messages))
  }
  /**
   * Adds a subscriber, awaited in order for every event. Resolves to a function that removes it. A throwing
   * or rejecting subscriber is logged and never breaks a run.
   */
  subscribe(listener: (event: AgentEvent, signal: AbortSignal) => void | Promise<void>): Promise<() => Promise<void>> {
    return this.#run((agent) =>
      Effect.map(
        agent.subscribe((event, signal) =>
          Effect.suspend(() => {
            // A listener that returns nothing is done: no promise to wait for, no trip through the microtask queue.
            const result = listener(event, signal)
            return result !== undefined && typeof (result as Promise<void>).then === "function"
              ? Effect.tryPromise(() => result as Promise<void>)
              : Effect.void
          })
        ),
        (unsubscribe) => () => this.#runtime.runPromise(unsubscribe)
      )
    )
  }
  /** Aborts any run and releases the runtime. */
  async dispose(): Promise<void> {
    await this.abort().catch(() => undefined)
    await this.#runtime.dispose()
  }
}
