/**
 * Durable agent runs on Effect Workflow with an embedded SQLite store: `effect-agent/durable`.
 *
 * @since 0.1.0
 */
export * as DurableAgent from "./DurableAgent.ts"
export * as DurableStore from "./DurableStore.ts"
// The services a durable run needs (DurableStore.layer provides them all); their shapes stay internal.
export { RunIndex, StartLedger } from "./RunState.ts"
export { make as makeSqliteClient, SqliteClient, type SqliteClientConfig } from "./SqliteClient.ts"
export { ToolAttempt, type ToolAttemptInfo } from "./ToolAttempt.ts"
