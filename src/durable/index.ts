/**
 * Durable agent runs on Effect Workflow with an embedded SQLite store: `effect-agent/durable`.
 *
 * @since 0.1.0
 */
export * as DurableAgent from "./DurableAgent.ts"
export * as DurableStore from "./DurableStore.ts"
export {
  type RunEntry,
  RunIndex,
  type RunIndexShape,
  StartLedger,
  type StartLedgerShape
} from "./RunState.ts"
export { make as makeSqliteClient, SqliteClient, type SqliteClientConfig, type SqliteClientShape } from "./SqliteClient.ts"
export { ToolAttempt, type ToolAttemptInfo } from "./ToolAttempt.ts"
