/**
 * The embedded default of the command line: a small sample project and a scripted model that works on it
 * for real. Several reads and searches run in parallel; two edits of one file run one after the other while
 * a read runs beside the first (TE 11); one call fails, one is refused, a `bash` command streams its output,
 * and then the model answers from what the tools returned.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import type * as PlatformError from "effect/PlatformError"
import type * as Scope from "effect/Scope"
import { type Message, text, type ToolResultMessage } from "../Message.ts"
import type { ModelRequest } from "../Model.ts"
import * as ScriptedModel from "../ScriptedModel.ts"

/** The task the demo is given when no `--prompt` is. */
export const DEMO_TASK = "The calculator's add() gives wrong answers. Find the bug, fix it, and check the fix."

/** The files of the sample project. */
export const SAMPLE_FILES: ReadonlyArray<readonly [string, string]> = [
  ["README.md", "# calc\n\nA tiny calculator used by the effect-agent demo.\n\nTODO: document subtract().\n"],
  [
    "src/math.ts",
    "// Arithmetic for the calculator.\nexport function add(a: number, b: number): number {\n  return a - b\n}\n\nexport function subtract(a: number, b: number): number {\n  return a - b\n}\n"
  ],
  [
    "src/format.ts",
    "// TODO: honour the user's locale.\nexport const format = (n: number): string => n.toFixed(2)\n"
  ],
  [
    "src/main.ts",
    "import { add } from \"./math\"\nimport { format } from \"./format\"\n\nconsole.log(format(add(2, 3)))\n"
  ]
]

/**
 * Writes the sample project into `root`, leaving any file that already exists untouched. Returns the files
 * it wrote.
 */
export const writeSampleProject = Effect.fn("Demo.writeSampleProject")(function*(root: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const written: Array<string> = []
  for (const [file, content] of SAMPLE_FILES) {
    const target = path.join(root, file)
    if (yield* fs.exists(target)) continue
    yield* fs.makeDirectory(path.dirname(target), { recursive: true })
    yield* fs.writeFileString(target, content)
    written.push(file)
  }
  return written
})

/**
 * A new temporary folder (under the system's temporary folder) holding the sample project. Unless `keep`,
 * it is removed with everything in it (the session too) when the scope closes, however the run ended.
 * `report` is told, when the scope closes, where the folder is and whether it was removed.
 */
export const temporaryWorkspace = (
  keep: boolean,
  report: (root: string, removed: boolean) => Effect.Effect<void>
): Effect.Effect<string, PlatformError.PlatformError, FileSystem.FileSystem | Path.Path | Scope.Scope> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const root = yield* Effect.acquireRelease(
      fs.makeTempDirectory({ prefix: "effect-agent-demo-" }),
      (root) =>
        keep
          ? report(root, false)
          : fs.remove(root, { recursive: true, force: true }).pipe(
            Effect.andThen(report(root, true)),
            Effect.catch(() => Effect.void)
          )
    )
    yield* writeSampleProject(root)
    return root
  })

const toolResults = (messages: ReadonlyArray<Message>): Array<ToolResultMessage> =>
  messages.filter((m): m is ToolResultMessage => m.role === "toolResult")

const resultText = (result: ToolResultMessage): string =>
  result.content.map((block) => block.type === "text" ? block.text : "").join("\n")

/** The closing answer, written from what the tools actually returned. */
const summary = (request: ModelRequest): ScriptedModel.Reply => {
  const results = toolResults(request.messages)
  const failed = results.filter((r) => r.isError)
  const edits = results.filter((r) => r.toolName === "edit")
  const edit = edits[0]
  const comment = edits[1]
  const check = results.findLast((r) => r.toolName === "bash")
  const grep = results.find((r) => r.toolName === "grep")
  const todoCount = grep === undefined ? 0 : resultText(grep).split("\n").filter((l) => /TODO/.test(l)).length
  const lines = [
    `Done. I ran ${results.length} tool calls; ${failed.length} of them ended with an error, as planned for this demo.`,
    "",
    edit === undefined || edit.isError
      ? "- The fix to `add()` in src/math.ts could not be applied: " + (edit ? resultText(edit) : "no edit was made.")
      : "- `add()` in src/math.ts returned `a - b`; it now returns `a + b`.",
    comment === undefined || comment.isError
      ? "- The module's comment was not updated."
      : "- The module's comment now says what it holds; that edit waited for the first, as both change one file.",
    `- I found ${todoCount} TODO comment${todoCount === 1 ? "" : "s"} in the project.`,
    "- Reading notes/todo.md failed because that file does not exist.",
    "- A `sudo` command was refused by the approval policy, so it never ran.",
    check === undefined
      ? "- The check did not run."
      : check.isError
      ? `- The check did not pass: ${resultText(check).split("\n")[0]}`
      : "- The check ran and found the fixed line."
  ]
  return { content: [text(lines.join("\n"))] }
}

/** The demo's scripted model: four turns on the sample project. */
const demoScript: ReadonlyArray<ScriptedModel.Step> = [
  ScriptedModel.callTools(
    [
      ScriptedModel.toolCall("demo-ls", "ls", { path: "." }),
      ScriptedModel.toolCall("demo-find", "find", { pattern: "**/*.ts" }),
      ScriptedModel.toolCall("demo-grep", "grep", { pattern: "TODO" }),
      ScriptedModel.toolCall("demo-read", "read", { path: "src/math.ts" })
    ],
    "I'll get my bearings first: list the project, find the sources, look for TODOs and read the math module."
  ),
  ScriptedModel.callTools(
    [
      ScriptedModel.toolCall("demo-edit", "edit", {
        path: "src/math.ts",
        oldText: "export function add(a: number, b: number): number {\n  return a - b",
        newText: "export function add(a: number, b: number): number {\n  return a + b"
      }),
      ScriptedModel.toolCall("demo-comment", "edit", {
        path: "src/math.ts",
        oldText: "// Arithmetic for the calculator.",
        newText: "// Arithmetic for the calculator: add() and subtract()."
      }),
      ScriptedModel.toolCall("demo-notes", "read", { path: "notes/todo.md" })
    ],
    "Found it: add() subtracts. I'll fix it, say what the module holds, and check the notes for anything else."
  ),
  ScriptedModel.callTools(
    [
      ScriptedModel.toolCall("demo-sudo", "bash", { command: "sudo rm -rf /tmp/calc-cache" }),
      ScriptedModel.toolCall("demo-check", "bash", {
        command: "for i in 1 2 3; do echo \"check $i/3\"; sleep 0.3; done; grep -n 'a + b' src/math.ts"
      })
    ],
    "Now let me clear the cache and run a quick check."
  ),
  summary
]

/** The demo's scripted model as a layer; streams with a small delay so the live view has something to show. */
export const demoModel = ScriptedModel.layer(
  demoScript.map((step) =>
    typeof step === "function"
      ? (request: ModelRequest) => ({ ...(step(request) as ScriptedModel.Reply), delay: "15 millis" })
      : { ...step, delay: "15 millis" }
  ),
  { info: { provider: "demo", model: "scripted-demo" }, chunkSize: 6 }
)
