/**
 * `/undo` on hostile or changed state (docs/cli.md CLI 12.6, 2.8): a failed call's copy is not restored, a
 * file changed since the turn is left as it is, and no snapshot is taken or restored through a link that
 * leads out of the workspace.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import * as Undo from "../../src/cli/interactive/Undo.ts"

let base = ""
let root = ""
beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-undo-")))
  root = join(base, "ws")
  mkdirSync(root)
  mkdirSync(join(base, "out"))
})
afterEach(() => rmSync(base, { recursive: true, force: true }))
const file = (name: string) => join(root, name)

describe("/undo (CLI 12.6)", () => {
  it("a turn whose only edit failed changed nothing: /undo does not rewrite the file with that turn's copy", () => {
    writeFileSync(file("a.txt"), "v1")
    const snapshots = Undo.make(root)
    snapshots.beginTurn()
    snapshots.before("write", { path: "a.txt" }, "w1")
    writeFileSync(file("a.txt"), "v2")
    snapshots.after("w1", false)
    snapshots.beginTurn()
    snapshots.before("edit", { path: "a.txt" }, "e1")
    snapshots.after("e1", true) // oldText not found: the tool failed and wrote nothing
    // /undo goes to the turn that did change the file.
    expect(snapshots.undo()).toEqual({ restored: ["a.txt"], removed: [], failed: [], changed: [] })
    expect(readFileSync(file("a.txt"), "utf8")).toBe("v1")
    expect(snapshots.undo()).toBeUndefined()
  })

  it("a file changed since the turn (the person edited it) is left as it is and reported", () => {
    writeFileSync(file("a.txt"), "v1")
    const snapshots = Undo.make(root)
    snapshots.beginTurn()
    snapshots.before("edit", { path: "a.txt" }, "e1")
    snapshots.before("write", { path: "b.txt" }, "w1")
    writeFileSync(file("a.txt"), "v2")
    writeFileSync(file("b.txt"), "new")
    snapshots.after("e1", false)
    snapshots.after("w1", false)
    writeFileSync(file("a.txt"), "the person's own work")
    expect(snapshots.undo()).toEqual({ restored: [], removed: ["b.txt"], failed: [], changed: ["a.txt"] })
    expect(readFileSync(file("a.txt"), "utf8")).toBe("the person's own work")
  })

  it("with parallel calls on one file, the copy stays while one of them succeeded", () => {
    writeFileSync(file("a.txt"), "v1")
    const snapshots = Undo.make(root)
    snapshots.beginTurn()
    snapshots.before("edit", { path: "a.txt" }, "e1")
    snapshots.before("edit", { path: "a.txt" }, "e2")
    snapshots.after("e1", true)
    writeFileSync(file("a.txt"), "v2")
    snapshots.after("e2", false)
    expect(snapshots.undo()?.restored).toEqual(["a.txt"])
    expect(readFileSync(file("a.txt"), "utf8")).toBe("v1")
  })

  it("no copy is taken through a link that leads out, and none is written through one swapped in since", () => {
    writeFileSync(join(base, "out", "x.txt"), "outside v1")
    symlinkSync(join(base, "out"), file("up"))
    writeFileSync(file("a.txt"), "v1")
    const snapshots = Undo.make(root)
    snapshots.beginTurn()
    snapshots.before("write", { path: "up/x.txt" }, "w0")
    snapshots.before("write", { path: "up/new.txt" }, "w1")
    snapshots.before("write", { path: "a.txt" }, "w2")
    writeFileSync(file("a.txt"), "v2")
    snapshots.after("w0", true)
    snapshots.after("w1", true)
    snapshots.after("w2", false)
    // Since the turn, a.txt became a link to a file outside holding the same bytes.
    writeFileSync(join(base, "out", "bashrc"), "v2")
    rmSync(file("a.txt"))
    symlinkSync(join(base, "out", "bashrc"), file("a.txt"))
    expect(snapshots.undo()).toEqual({ restored: [], removed: [], failed: [], changed: ["a.txt"] })
    expect(readFileSync(join(base, "out", "bashrc"), "utf8")).toBe("v2")
    expect(readFileSync(join(base, "out", "x.txt"), "utf8")).toBe("outside v1")
  })
})
