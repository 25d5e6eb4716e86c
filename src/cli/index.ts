/**
 * The command line as a library: `effect-agent/cli`. `main` runs the `effect-agent` command on
 * `process.argv` (what `bin/effect-agent.js` does through `runAsProcess`); `command` is the command itself, to
 * embed or run in-process; `approvalHook` is its approval policy as a `beforeToolCall` hook for any batch.
 *
 * @since 0.1.0
 */
export { approvalHook, type ApprovalMode } from "./Approval.ts"
export { command, main, runAsProcess } from "./main.ts"
