/**
 * CLI 7.1-7.5 (docs/cli.md): sessions live in the state folder, one folder per workspace; `--continue`
 * takes the latest, `--resume` / `--fork` take a file or open the picker, and at most one of them is given.
 * In-process, on a temporary state folder.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Option } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import * as SessionStore from "../../src/cli/SessionStore.ts"
import { UsageError } from "../../src/cli/startup.ts"
import { emptyUsage, type Message } from "../../src/Message.ts"
import * as Session from "../../src/Session.ts"

const user = (text: string): Message => ({ role: "user", content: text, timestamp: 1 })
const answer: Message = {
  role: "assistant",
  content: [{ type: "text", text: "ok" }],
  api: "t",
  provider: "t",
  model: "t",
  usage: emptyUsage,
  stopReason: "stop",
  timestamp: 2
}
const lines = (...messages: ReadonlyArray<Message>) => messages.map((m) => Session.encodeMessage(m) + "\n").join("")

const NO_FLAGS: SessionStore.SessionFlags = {
  session: Option.none(),
  resume: Option.none(),
  continue: false,
  fork: Option.none()
}

/** A state folder and a workspace, both temporary; the effect runs with EFFECT_AGENT_HOME set to the first. */
const withState = <A, E>(body: (home: string, root: string) => Effect.Effect<A, E, any>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-store-")))),
    (base) => {
      const home = join(base, "home")
      const root = join(base, "work", "project")
      mkdirSync(root, { recursive: true })
      return body(home, root).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromEnv({ env: { EFFECT_AGENT_HOME: home } })
        )
      )
    },
    (base) => Effect.sync(() => rmSync(base, { recursive: true, force: true }))
  ).pipe(Effect.provide(NodeServices.layer)) as Effect.Effect<A, E>

const failureOf = <A, E>(exit: Exit.Exit<A, E>): unknown =>
  Exit.isFailure(exit) ? (exit.cause.reasons[0] as { readonly error?: unknown }).error : undefined

describe("SessionStore", () => {
  it.effect("CLI 7.1: the state folder is $EFFECT_AGENT_HOME, else ~/.effect-agent", () =>
    Effect.gen(function*() {
      const given = yield* SessionStore.stateFolder.pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromEnv({ env: { EFFECT_AGENT_HOME: "/srv/agent" } })
        )
      )
      assert.strictEqual(given, "/srv/agent")
      const fallback = yield* SessionStore.stateFolder.pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { EFFECT_AGENT_HOME: "" } }))
      )
      assert.strictEqual(fallback, join(homedir(), ".effect-agent"))
    }).pipe(Effect.provide(NodeServices.layer)))

  it("CLI 7.1: one folder per workspace, readable, and distinct for paths that flatten alike", () => {
    const a = SessionStore.projectSlug("/home/me/a-b")
    const b = SessionStore.projectSlug("/home/me/a/b")
    assert.match(a, /^home-me-a-b-[0-9a-f]{8}$/)
    assert.notStrictEqual(a, b)
    assert.strictEqual(SessionStore.projectSlug("/home/me/a-b"), a, "stable")
    assert.notInclude(SessionStore.projectSlug("/x/../y z/ü"), "/")
  })

  it.effect("CLI 7.2, 7.3: list is newest first with date, size, messages and first prompt; latest is the first", () =>
    withState((_home, root) =>
      Effect.gen(function*() {
        const folder = yield* SessionStore.projectFolder(root)
        mkdirSync(folder, { recursive: true })
        writeFileSync(join(folder, "old.jsonl"), lines(user("the   first\ntask"), answer))
        writeFileSync(join(folder, "new.jsonl"), lines(user("second task")))
        writeFileSync(join(folder, "broken.jsonl"), "not json\n{}\n")
        writeFileSync(join(folder, "notes.txt"), "ignored")
        utimesSync(join(folder, "old.jsonl"), 1_000, 1_000)
        utimesSync(join(folder, "new.jsonl"), 2_000, 2_000)
        const sessions = yield* SessionStore.list(root)
        assert.deepStrictEqual(sessions.map((s) => s.path), [join(folder, "new.jsonl"), join(folder, "old.jsonl")])
        assert.strictEqual(sessions[1].firstPrompt, "the first task")
        assert.strictEqual(sessions[1].messages, 2)
        assert.strictEqual(sessions[1].modified, 1_000_000)
        const line = SessionStore.describe(sessions[1])
        assert.match(line, /^1970-01-01 00:16 +\d+ B +2 msg {2}the first task$/)
        assert.strictEqual((yield* SessionStore.latest(root))?.path, join(folder, "new.jsonl"))
      })
    ))

  it.effect("CLI 7.2: --continue takes the latest; with none it starts a new one and says so", () =>
    withState((_home, root) =>
      Effect.gen(function*() {
        const none = yield* SessionStore.plan({ ...NO_FLAGS, continue: true }, root, false)
        assert.strictEqual(none.how, "new")
        assert.isUndefined(none.source)
        assert.include(none.note, "no earlier session")
        const folder = yield* SessionStore.projectFolder(root)
        assert.isTrue(none.target.startsWith(folder + "/"), "a new file in the project's folder")
        mkdirSync(folder, { recursive: true })
        writeFileSync(join(folder, "a.jsonl"), lines(user("hi")))
        const found = yield* SessionStore.plan({ ...NO_FLAGS, continue: true }, root, false)
        assert.deepStrictEqual([found.how, found.source, found.target], [
          "continued",
          join(folder, "a.jsonl"),
          join(folder, "a.jsonl")
        ])
      })
    ))

  it.effect("CLI 7.4: --resume FILE appends to FILE; --fork FILE writes a new file; --session names the target", () =>
    withState((_home, root) =>
      Effect.gen(function*() {
        const file = join(root, "..", "saved.jsonl")
        writeFileSync(file, lines(user("hi")))
        const resumed = yield* SessionStore.plan({ ...NO_FLAGS, resume: Option.some(file) }, root, false)
        assert.deepStrictEqual([resumed.how, resumed.source, resumed.target], ["resumed", file, file])
        const forked = yield* SessionStore.plan({ ...NO_FLAGS, fork: Option.some(file) }, root, false)
        assert.strictEqual(forked.how, "forked")
        assert.strictEqual(forked.source, file)
        assert.isTrue(forked.target.startsWith((yield* SessionStore.projectFolder(root)) + "/"))
        const into = yield* SessionStore.plan(
          { ...NO_FLAGS, resume: Option.some(file), session: Option.some("/tmp/x.jsonl") },
          root,
          false
        )
        assert.strictEqual(into.target, "/tmp/x.jsonl")
      })
    ))

  it.effect("CLI 7.3, 7.4: two of --resume/--continue/--fork, or a picker without a terminal, are UsageErrors", () =>
    withState((_home, root) =>
      Effect.gen(function*() {
        const both = failureOf(
          yield* Effect.exit(SessionStore.plan({ ...NO_FLAGS, resume: Option.some("a"), continue: true }, root, true))
        )
        assert.instanceOf(both, UsageError)
        assert.include((both as UsageError).message, "--resume and --continue cannot be used together")
        const noTerminal = failureOf(
          yield* Effect.exit(SessionStore.plan({ ...NO_FLAGS, resume: Option.some("") }, root, false))
        )
        assert.instanceOf(noTerminal, UsageError)
        assert.include((noTerminal as UsageError).message, "needs a terminal")
        // With a terminal but nothing saved, the picker is not even opened.
        const nothing = failureOf(
          yield* Effect.exit(SessionStore.plan({ ...NO_FLAGS, fork: Option.some("") }, root, true))
        )
        assert.instanceOf(nothing, UsageError)
        assert.include((nothing as UsageError).message, "no saved sessions")
      })
    ))

  it.effect("CLI 7.4: a bare --resume takes the first word as its file when it is a file or ends in .jsonl", () =>
    withState((_home, root) =>
      Effect.gen(function*() {
        const file = join(root, "s.jsonl")
        writeFileSync(file, "")
        const bare = { ...NO_FLAGS, resume: Option.some("") }
        const taken = yield* SessionStore.takeFileWord(bare, [file, "go", "on"])
        assert.deepStrictEqual([taken.resume, taken.words], [Option.some(file), ["go", "on"]])
        const missing = yield* SessionStore.takeFileWord(bare, ["gone.jsonl"])
        assert.deepStrictEqual([missing.resume, missing.words], [Option.some("gone.jsonl"), []])
        const words = yield* SessionStore.takeFileWord(bare, ["fix", "it"])
        assert.deepStrictEqual([words.resume, words.words], [Option.some(""), ["fix", "it"]])
        const withFile = yield* SessionStore.takeFileWord({ ...NO_FLAGS, resume: Option.some(file) }, [file])
        assert.deepStrictEqual(withFile.words, [file], "a flag with its file takes no word")
      })
    ))
})
