/**
 * Approvals for tools that change things. `write`, `edit` and `bash` run only when the person at the
 * terminal says yes (or `--yes` was given); with no terminal to ask they are blocked with a reason the model
 * can read. Some commands are refused whatever was said.
 */
import { Effect } from "effect"
import type { BeforeToolCallContext, BeforeToolCallResult } from "../ToolExecution.ts"
import { refusal } from "./CommandPolicy.ts"

/** The tools that need a yes before they run. */
export const NEEDS_APPROVAL: ReadonlySet<string> = new Set(["write", "edit", "bash"])

/** How approvals are decided. */
export type ApprovalMode =
  /** Every call is allowed (`--yes`). */
  | { readonly _tag: "AllowAll" }
  /** The person is asked; `ask` returns their answer. */
  | { readonly _tag: "Ask"; readonly ask: (question: string) => Effect.Effect<boolean> }
  /** No one can be asked: calls that need approval are blocked. */
  | { readonly _tag: "NoTerminal" }

/** The question shown for a call: the tool and its exact arguments. */
export const question = (toolName: string, args: unknown): string =>
  `Allow ${toolName} ${JSON.stringify(args, null, 2)}?`

/**
 * The `beforeToolCall` hook implementing the approval policy for the tools named in `needsApproval` (default:
 * {@link NEEDS_APPROVAL}; the command line adds every MCP server's tool).
 */
export const approvalHook = (mode: ApprovalMode, needsApproval: ReadonlySet<string> = NEEDS_APPROVAL) =>
(context: BeforeToolCallContext): Effect.Effect<BeforeToolCallResult | undefined> => {
  const name = context.toolCall.name
  if (!needsApproval.has(name)) return Effect.succeed(undefined)
  if (name === "bash") {
    const command = (context.args as { readonly command?: unknown } | undefined)?.command
    const why = typeof command === "string" ? refusal(command) : undefined
    if (why !== undefined) {
      return Effect.succeed({ block: true, reason: `Refused by policy: ${why}. Do not retry this command.` })
    }
  }
  switch (mode._tag) {
    case "AllowAll":
      return Effect.succeed(undefined)
    case "NoTerminal":
      return Effect.succeed({
        block: true,
        reason:
          `${name} needs the user's approval, but there is no terminal to ask. It was not run. The user can rerun with --yes to allow it.`
      })
    case "Ask":
      return Effect.map(mode.ask(question(name, context.args)), (yes) =>
        yes ? undefined : { block: true, reason: `The user declined this ${name} call. It was not run.` })
  }
}
