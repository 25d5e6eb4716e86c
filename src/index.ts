/**
 * effect-agent: pi's agent core on Effect 4 (messages, tools, the five phases of a batch, the loop, the agent).
 * The rest lives behind its own entry point, so an application loads only what it uses:
 * `effect-agent/providers` (models over HTTP), `effect-agent/tools` (the built-in tools),
 * `effect-agent/durable` (runs that survive a crash), `effect-agent/mcp` (tools of MCP servers),
 * `effect-agent/telemetry` (the switches and the OTLP export of the spans every run records),
 * `effect-agent/testing` (a scripted model) and `effect-agent/cli` (the command line).
 *
 * @since 0.1.0
 */

/** Conversation data: content blocks and messages with pi's JSON shapes. */
export * as Message from "./Message.ts"
/** The streaming protocol of a model response. */
export * as AssistantMessageEvent from "./AssistantMessageEvent.ts"
/** The events of a run. */
export * as AgentEvent from "./AgentEvent.ts"
/** The context (system prompt and transcript) of a run. */
export * as AgentContext from "./AgentContext.ts"
/** Where events go. */
export * as EventSink from "./EventSink.ts"
/** Tool definitions, results and handler layers. */
export * as Tool from "./Tool.ts"
/** What a tool call touches, for scheduling a parallel batch. */
export * as ResourceAccess from "./ResourceAccess.ts"
/** The tools of a run. */
export * as ToolRegistry from "./ToolRegistry.ts"
/** Running one assistant message's tool calls. */
export * as ToolExecution from "./ToolExecution.ts"
/** The model interface. */
export * as Model from "./Model.ts"
/** What a run may use before it stops, and why it stopped. */
export * as RunLimits from "./RunLimits.ts"
/** The agent loop. */
export * as AgentLoop from "./AgentLoop.ts"
/** The stateful agent. */
export * as Agent from "./Agent.ts"
/** The Promise facade of the agent. */
export { PromiseAgent, type PromiseAgentOptions } from "./PromiseAgent.ts"
/** Transcripts as JSON-lines files. */
export * as Session from "./Session.ts"
