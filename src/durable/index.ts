/**
 * Durable agent runs on Effect Workflow with an embedded SQLite store: `effect-agent/durable`. The services a
 * run needs besides the model and the tools (the engine, the run index, the step ledger) come from
 * `DurableStore.layer` (or `DurableStore.engine` over another `SqlClient`).
 *
 * @since 0.1.0
 */
export * as DurableAgent from "./DurableAgent.ts"
export * as DurableStore from "./DurableStore.ts"
export { SqliteClient } from "./SqliteClient.ts"
export { ToolAttempt } from "./ToolAttempt.ts"
