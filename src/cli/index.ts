/**
 * The command line as a library: `effect-agent/cli`. `main` runs the `effect-agent` command on
 * `process.argv` with the Node services; `approvalHook` is its approval policy as a `beforeToolCall` hook for
 * any batch. (`bin/effect-agent.js` starts the command through `main.ts`'s `runAsProcess`, not through here.)
 *
 * @since 0.1.0
 */
export { approvalHook, type ApprovalMode } from "./Approval.ts"
export { main } from "./main.ts"
