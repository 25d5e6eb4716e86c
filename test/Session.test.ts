/**
 * Session files (src/Session.ts): messages round-trip through `writer` and `load` unchanged, blank lines are
 * skipped, a bad line is named by its 1-based number, and a missing file is a clear error.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, FileSystem, Path } from "effect"
import { TestClock } from "effect/testing"
import { spawnSync } from "node:child_process"
import { utimesSync } from "node:fs"
import { hostname } from "node:os"
import { type CustomMessage, emptyUsage, type Message } from "../src/Message.ts"
import * as Session from "../src/Session.ts"

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

/** One message of every kind and shape the transcript holds. */
const MESSAGES: ReadonlyArray<Message> = [
  { role: "user", content: "Fix the bug in add().", timestamp: 1_700_000_000_000 },
  {
    role: "user",
    content: [{ type: "text", text: "What is in this picture?\nLine two, \"quoted\", ünïcödé ✓" }, {
      type: "image",
      data: PNG,
      mimeType: "image/png"
    }],
    timestamp: 1_700_000_000_001
  },
  {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "The user wants add() fixed.", thinkingSignature: "sig-think-1" },
      { type: "thinking", thinking: "", thinkingSignature: "opaque-redacted-payload", redacted: true },
      { type: "text", text: "Let me look.", textSignature: "sig-text-1" },
      {
        type: "toolCall",
        id: "call_1",
        name: "read",
        arguments: { path: "src/math.ts", limit: 20, nested: { list: [1, "two", null, { deep: true }] } },
        thoughtSignature: "sig-thought-1"
      },
      { type: "toolCall", id: "call_2", name: "ls", arguments: {} }
    ],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-test",
    responseModel: "claude-test-2025",
    responseId: "msg_123",
    diagnostics: [{ kind: "note", detail: { retried: 1 } }],
    usage: {
      input: 120,
      output: 45,
      cacheRead: 10,
      cacheWrite: 5,
      totalTokens: 180,
      cost: { input: 0.00036, output: 0.000675, cacheRead: 0.000003, cacheWrite: 0.00001875, total: 0.00105675 }
    },
    stopReason: "toolUse",
    timestamp: 1_700_000_000_002
  },
  {
    role: "toolResult",
    toolCallId: "call_1",
    toolName: "read",
    content: [{ type: "text", text: "export function add(a, b) {\n  return a - b\n}\n" }],
    details: { path: "src/math.ts", lines: 3, truncated: false, extra: [null, { a: 1 }] },
    isError: false,
    timestamp: 1_700_000_000_003
  },
  {
    role: "toolResult",
    toolCallId: "call_2",
    toolName: "screenshot",
    content: [{ type: "text", text: "A screenshot:" }, { type: "image", data: PNG, mimeType: "image/png" }],
    isError: true,
    timestamp: 1_700_000_000_004
  },
  {
    role: "assistant",
    content: [{ type: "text", text: "" }],
    api: "openai-completions",
    provider: "openai-compatible",
    model: "local",
    usage: emptyUsage,
    stopReason: "error",
    errorMessage: "HTTP 500: upstream failed",
    timestamp: 1_700_000_000_005
  },
  {
    role: "assistant",
    content: [{ type: "text", text: "Stopped." }],
    api: "openai-completions",
    provider: "openai-compatible",
    model: "local",
    usage: emptyUsage,
    stopReason: "aborted",
    errorMessage: "Request was aborted",
    timestamp: 1_700_000_000_006
  },
  {
    role: "assistant",
    content: [{ type: "text", text: "Done." }],
    api: "openai-completions",
    provider: "openai-compatible",
    model: "local",
    usage: emptyUsage,
    stopReason: "stop",
    timestamp: 1_700_000_000_007
  }
]

/** A scratch folder for one test, removed when the test's scope closes. */
const scratch = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "effect-agent-session-" })
  const write = (name: string, text: string) =>
    Effect.as(fs.writeFileString(path.join(dir, name), text), path.join(dir, name))
  return { fs, path, dir, write }
})

const loadFailure = (file: string) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Session.load(file))
    assert.isTrue(Exit.isFailure(exit), "load should fail")
    if (Exit.isSuccess(exit)) throw new Error("unreachable")
    const reason = exit.cause.reasons[0]
    assert.strictEqual(reason._tag, "Fail")
    if (reason._tag !== "Fail") throw new Error("unreachable")
    assert.strictEqual(reason.error._tag, "SessionFileError")
    return reason.error
  })

const lines = (...values: ReadonlyArray<string>) => values.join("\n") + "\n"

describe("Session", () => {
  it.layer(NodeServices.layer)((it) => {
    it.effect("round-trips every message kind through writer and load", () =>
      Effect.scoped(Effect.gen(function*() {
        const { fs, path, dir } = yield* scratch
        const file = path.join(dir, "deep", "er", "session.jsonl")
        const writer = yield* Session.writer(file)
        assert.strictEqual(writer.path, file)
        // CLI 7.5: the folders are made at once, the file only by the first message (no empty sessions).
        assert.isTrue(yield* fs.exists(path.dirname(file)))
        assert.isFalse(yield* fs.exists(file))
        for (const message of MESSAGES) yield* writer.append(message)

        const text = yield* fs.readFileString(file)
        const written = text.split("\n")
        assert.strictEqual(written.length, MESSAGES.length + 1)
        assert.strictEqual(written.at(-1), "")
        written.slice(0, -1).forEach((line, i) => {
          assert.strictEqual(line, Session.encodeMessage(MESSAGES[i]))
          assert.deepStrictEqual(JSON.parse(line), MESSAGES[i]) // the JSON is the message itself (pi's shape)
        })

        const loaded = yield* Session.load(file)
        assert.deepStrictEqual(loaded, MESSAGES)
      })))

    it.effect("appends to an existing file and skips application messages", () =>
      Effect.scoped(Effect.gen(function*() {
        const { path, dir } = yield* scratch
        const file = path.join(dir, "s.jsonl")
        yield* Effect.scoped(Effect.gen(function*() {
          const first = yield* Session.writer(file)
          yield* first.append(MESSAGES[0])
          const notification: CustomMessage = { role: "notification", text: "build started", timestamp: 5 }
          yield* first.append(notification)
        }))
        // A second writer (a resumed session, once the first run is over) keeps what is there.
        const second = yield* Session.writer(file)
        yield* second.append(MESSAGES[1])
        assert.deepStrictEqual(yield* Session.load(file), [MESSAGES[0], MESSAGES[1]])
      })))

    it.effect("encodes a message as one line", () =>
      Effect.sync(() => {
        for (const message of MESSAGES) assert.notInclude(Session.encodeMessage(message), "\n")
      }))

    it.effect("loads an empty file, and skips blank and whitespace-only lines anywhere", () =>
      Effect.scoped(Effect.gen(function*() {
        const { write } = yield* scratch
        assert.deepStrictEqual(yield* Session.load(yield* write("empty.jsonl", "")), [])
        assert.deepStrictEqual(yield* Session.load(yield* write("blank.jsonl", "\n\n   \n\t\n")), [])
        const file = yield* write(
          "gaps.jsonl",
          "\n" + Session.encodeMessage(MESSAGES[0]) + "\n\n  \n" + Session.encodeMessage(MESSAGES[3]) + "\n\n\n"
        )
        assert.deepStrictEqual(yield* Session.load(file), [MESSAGES[0], MESSAGES[3]])
        // CRLF line ends and a last line without a newline are fine too.
        const crlf = yield* write("crlf.jsonl", MESSAGES.slice(0, 3).map(Session.encodeMessage).join("\r\n"))
        assert.deepStrictEqual(yield* Session.load(crlf), MESSAGES.slice(0, 3))
      })))

    it.effect("names the 1-based line of bad JSON, counting blank lines", () =>
      Effect.scoped(Effect.gen(function*() {
        const { write } = yield* scratch
        const file = yield* write(
          "bad.jsonl",
          lines(
            Session.encodeMessage(MESSAGES[0]),
            "",
            Session.encodeMessage(MESSAGES[1]),
            "{\"role\":\"user\",",
            Session.encodeMessage(MESSAGES[2])
          )
        )
        const error = yield* loadFailure(file)
        assert.strictEqual(error.path, file)
        assert.strictEqual(error.line, 4)
        assert.include(error.message, `Session file ${file}, line 4: not a valid message`)
      })))

    it.effect("names the line of valid JSON that is not a message", () =>
      Effect.scoped(Effect.gen(function*() {
        const { write } = yield* scratch
        const cases: ReadonlyArray<[string, unknown]> = [
          ["unknown role", { role: "robot", content: "hi", timestamp: 1 }],
          ["no role", { content: "hi", timestamp: 1 }],
          ["wrong field type", { role: "user", content: "hi", timestamp: "yesterday" }],
          ["missing field", { role: "toolResult", toolCallId: "x", toolName: "t", content: [], timestamp: 1 }],
          ["bad block", { role: "user", content: [{ type: "video", url: "x" }], timestamp: 1 }],
          ["an array", [1, 2]],
          ["a number", 42],
          ["null", null]
        ]
        for (const [name, value] of cases) {
          const file = yield* write(
            `${name}.jsonl`,
            lines(Session.encodeMessage(MESSAGES[0]), Session.encodeMessage(MESSAGES[2]), JSON.stringify(value))
          )
          const error = yield* loadFailure(file)
          assert.strictEqual(error.line, 3, name)
          assert.include(error.message, "line 3", name)
        }
      })))

    it.effect("names only the first bad line", () =>
      Effect.scoped(Effect.gen(function*() {
        const { write } = yield* scratch
        const file = yield* write("two-bad.jsonl", lines("", "nope", "{}"))
        assert.strictEqual((yield* loadFailure(file)).line, 2)
      })))

    it.effect("a missing file is an error without a line", () =>
      Effect.scoped(Effect.gen(function*() {
        const { path, dir } = yield* scratch
        const file = path.join(dir, "does-not-exist.jsonl")
        const error = yield* loadFailure(file)
        assert.strictEqual(error.path, file)
        assert.isUndefined(error.line)
        assert.include(error.message, "Cannot read session file")
      })))

    it.effect("a writer whose folder cannot be created fails with a SessionFileError", () =>
      Effect.scoped(Effect.gen(function*() {
        const { path, write } = yield* scratch
        const blocker = yield* write("a-file", "not a folder")
        const exit = yield* Effect.exit(Session.writer(path.join(blocker, "sub", "s.jsonl")))
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const reason = exit.cause.reasons[0]
          assert.isTrue(reason._tag === "Fail" && reason.error._tag === "SessionFileError")
        }
      })))

    // BUG (src/Session.ts, `writer`): appending assumes the file ends with a newline. A session file whose
    // last line has none (hand-edited, or written by another tool) gets the first new message glued onto
    // that line, and the next `load` (`--resume`) fails on it.
    it.effect("appending to a file whose last line has no newline keeps both messages loadable", () =>
      Effect.scoped(Effect.gen(function*() {
        const { write } = yield* scratch
        const file = yield* write("no-newline.jsonl", Session.encodeMessage(MESSAGES[0]))
        const writer = yield* Session.writer(file)
        yield* writer.append(MESSAGES[1])
        const loaded = yield* Effect.exit(Session.load(file))
        assert.deepStrictEqual(loaded, Exit.succeed([MESSAGES[0], MESSAGES[1]]))
      })))

    // Issue 16 item 12: a crash while a line is written leaves it cut, with no newline after it.
    it.effect("a last line cut by a crash is left out and reported; a bad last line that has its newline is still an error", () =>
      Effect.scoped(Effect.gen(function*() {
        const { write } = yield* scratch
        const whole = Session.encodeMessage(MESSAGES[2])
        const cut = whole.slice(0, Math.floor(whole.length / 2))
        const file = yield* write(
          "cut.jsonl",
          lines(Session.encodeMessage(MESSAGES[0]), "", Session.encodeMessage(MESSAGES[1])) + cut
        )
        const contents = yield* Session.read(file)
        assert.deepStrictEqual(contents.messages, [MESSAGES[0], MESSAGES[1]])
        assert.deepStrictEqual(contents.cutLine, { line: 4, text: cut })
        assert.deepStrictEqual(yield* Session.load(file), [MESSAGES[0], MESSAGES[1]])
        assert.include(
          Session.cutLineWarning(file, contents.cutLine!),
          `Session file ${file}, line 4: the last line was cut short`
        )
        // The same text with its newline was written whole and is wrong: still an error naming the line.
        const complete = yield* write("bad-last.jsonl", lines(Session.encodeMessage(MESSAGES[0]), cut))
        assert.strictEqual((yield* loadFailure(complete)).line, 2)
        // Nothing cut: no report.
        assert.isUndefined((yield* Session.read(yield* write("ok.jsonl", lines(whole)))).cutLine)
      })))

    it.effect("a writer drops a cut last line byte for byte, so what it appends loads", () =>
      Effect.scoped(Effect.gen(function*() {
        const { fs, write } = yield* scratch
        const head = lines(Session.encodeMessage(MESSAGES[0]), Session.encodeMessage(MESSAGES[1]))
        const file = yield* write("cut-append.jsonl", head + Session.encodeMessage(MESSAGES[2]).slice(0, 25))
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* Session.writer(file)
          yield* writer.append(MESSAGES[3])
        }))
        assert.strictEqual(yield* fs.readFileString(file), head + Session.encodeMessage(MESSAGES[3]) + "\n")
        assert.deepStrictEqual(yield* Session.load(file), [MESSAGES[0], MESSAGES[1], MESSAGES[3]])
      })))

    it.effect("a second writer on a file is refused while the first is open (no interleaved lines)", () =>
      Effect.scoped(Effect.gen(function*() {
        const { fs, path, dir } = yield* scratch
        const file = path.join(dir, "locked.jsonl")
        yield* Effect.scoped(Effect.gen(function*() {
          const first = yield* Session.writer(file)
          yield* first.append(MESSAGES[0])
          const second = yield* Effect.exit(Session.writer(file))
          assert.isTrue(Exit.isFailure(second))
          const reason = Exit.isFailure(second) ? second.cause.reasons[0] : undefined
          const error = reason?._tag === "Fail" ? reason.error : undefined
          assert.strictEqual(error?._tag, "SessionInUse")
          assert.include(error?.message, `Session file ${file} is in use by another agent (pid ${process.pid})`)
          yield* first.append(MESSAGES[1])
        }))
        // Released with the scope: the lock file is gone and a new writer may open the file.
        assert.isFalse(yield* fs.exists(`${file}.lock`))
        const third = yield* Session.writer(file)
        yield* third.append(MESSAGES[3])
        assert.deepStrictEqual(yield* Session.load(file), [MESSAGES[0], MESSAGES[1], MESSAGES[3]])
      })))

    it.effect("a lock left by a process that died is taken over; one from another host is respected", () =>
      Effect.scoped(Effect.gen(function*() {
        const { fs, path, dir } = yield* scratch
        const dead = spawnSync("true").pid!
        const stale = path.join(dir, "stale.jsonl")
        yield* fs.writeFileString(`${stale}.lock`, JSON.stringify({ pid: dead, host: hostname() }))
        yield* Effect.scoped(Session.writer(stale))
        // A lock naming no holder: being written right now (refused), or left half-written by a crash long
        // ago (taken over).
        const garbled = path.join(dir, "garbled.jsonl")
        yield* fs.writeFileString(`${garbled}.lock`, "{\"pid\": 12")
        const fresh = yield* Effect.exit(Effect.scoped(Session.writer(garbled)))
        assert.isTrue(Exit.isFailure(fresh), "a lock being written is respected")
        const past = new Date(Date.now() - 60_000)
        utimesSync(`${garbled}.lock`, past, past)
        yield* Effect.scoped(Session.writer(garbled))

        const remote = path.join(dir, "remote.jsonl")
        yield* fs.writeFileString(`${remote}.lock`, JSON.stringify({ pid: dead, host: "another-host.example" }))
        const exit = yield* Effect.exit(Effect.scoped(Session.writer(remote)))
        assert.isTrue(Exit.isFailure(exit))
        const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
        assert.isTrue(reason?._tag === "Fail" && reason.error._tag === "SessionInUse")
        assert.isTrue(yield* fs.exists(`${remote}.lock`), "another host's lock is left alone")
      })))

    it.effect("newSessionPath names a .jsonl file under the folder by the current time", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2025, 0, 2, 3, 4, 5, 678))
        const file = yield* Session.newSessionPath("/sessions")
        assert.strictEqual(file, "/sessions/2025-01-02T03-04-05-678Z.jsonl")
      }))
  })
})
