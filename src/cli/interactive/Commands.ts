/**
 * The slash commands of the interactive mode and their completion. A line whose first word is `/name` is a
 * command and never goes to the model; an unknown one gets a hint (CLI 2.1, 2.2). A first word that is a
 * path (`/etc/hosts`) makes the line a prompt.
 */
import { providerNames } from "../../providers/index.ts"

/** One command: its name (with the slash), its arguments and what it does. */
export interface CommandInfo {
  readonly name: string
  readonly args: string
  readonly summary: string
}

/** Every slash command, in the order `/help` lists them. */
export const COMMANDS: ReadonlyArray<CommandInfo> = [
  { name: "/help", args: "", summary: "the commands and keys" },
  {
    name: "/model",
    args: "[provider] [model]",
    summary: "show the model, or switch model or provider for the next prompts"
  },
  { name: "/session", args: "", summary: "the session file, message count, tokens and cost" },
  {
    name: "/clear",
    args: "",
    summary: "start the conversation afresh (the model forgets it; the session file keeps it)"
  },
  { name: "/compact", args: "", summary: "summarise older turns through the model to free context" },
  { name: "/undo", args: "", summary: "put back the files the last turn changed with write or edit" },
  { name: "/quit", args: "", summary: "leave (as does Ctrl-C twice, or Ctrl-D, at an empty prompt)" }
]

/** A parsed line: a command with its argument text, or not a command. */
export const parse = (line: string): { readonly name: string; readonly args: string } | undefined => {
  const match = /^(\/[A-Za-z][\w-]*)(?:\s+([\s\S]*))?$/.exec(line.trim())
  return match === null ? undefined : { name: match[1]!.toLowerCase(), args: (match[2] ?? "").trim() }
}

/** The completions of a buffer: command names, then `/model`'s provider names. */
export const complete = (text: string): ReadonlyArray<string> => {
  if (/^\/\S*$/.test(text)) return COMMANDS.map((c) => c.name).filter((name) => name.startsWith(text))
  const model = /^\/model\s+(\S*)$/.exec(text)
  if (model !== null) return providerNames.filter((name) => name.startsWith(model[1]!)).map((name) => `/model ${name}`)
  return []
}

/** The hint for an unknown command: the closest names, then `/help`. */
export const unknownHint = (name: string): string => {
  const near = COMMANDS.filter((c) => c.name.startsWith(name.slice(0, 3)) || name.startsWith(c.name))
  const suggestion = near.length > 0 ? ` Did you mean ${near.map((c) => c.name).join(" or ")}?` : ""
  return `Unknown command ${name}.${suggestion} Type /help for the commands; it was not sent to the model.`
}

/** The `/help` text. */
export const helpLines = (): Array<string> => [
  "Commands (Tab completes):",
  ...COMMANDS.map((c) => `  ${(c.name + (c.args === "" ? "" : " " + c.args)).padEnd(30)} ${c.summary}`),
  "  !command                       run a shell command in the workspace yourself (not sent to the model)",
  "Keys:",
  "  Enter send · Alt-Enter, Ctrl-J or \\ then Enter: new line · Up/Down history · Tab complete · Ctrl-L clear",
  "  Esc or Ctrl-C while the agent answers: stop that answer · Ctrl-C twice at an empty prompt: exit"
]
