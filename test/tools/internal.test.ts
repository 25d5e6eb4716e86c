import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  clip,
  globMatcher,
  TailBuffer,
  truncateToBytes,
  truncateToBytesFromEnd,
  utf8Length
} from "../../src/tools/internal.ts"

/** Text made of pieces that exercise line breaks, multi-byte characters and long lines. */
const Parts = Schema.Array(Schema.Literals(["a", "é", "😀", "\n", "\r\n", "bbbbbbbbbb", "\n\n"]))
const Cuts = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 200 })))

/** The reference: keep whole lines from the end while both budgets hold. */
const expectedTail = (all: string, maxLines: number, maxBytes: number) => {
  const lines = all.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l))
  const partial = lines.pop()!
  const cut = (l: string) => (utf8Length(l) > maxBytes ? truncateToBytesFromEnd(l, maxBytes) : l)
  const kept: Array<string> = []
  let bytes = utf8Length(cut(partial))
  for (let i = lines.length - 1; i >= 0 && kept.length < maxLines; i--) {
    const line = cut(lines[i])
    if (bytes + utf8Length(line) + 1 > maxBytes) break
    kept.unshift(line)
    bytes += utf8Length(line) + 1
  }
  if (partial !== "") kept.push(cut(partial))
  return kept.join("\n")
}

describe("TailBuffer", () => {
  it("caps an unfinished line by its UTF-8 bytes, not its UTF-16 length (found by the property below)", () => {
    // 3 x (10 + 4) = 42 bytes in 36 UTF-16 units, pushed in pieces.
    const buffer = new TailBuffer(5, 40)
    for (let i = 0; i < 3; i++) buffer.push("bbbbbbbbbb😀")
    assert.isAtMost(utf8Length(buffer.text()), 40)
    assert.strictEqual(buffer.text(), expectedTail("bbbbbbbbbb😀".repeat(3), 5, 40))
  })

  it.prop("keeps the same tail however the output is split into chunks", [Parts, Cuts], ([parts, cuts]) => {
    const input = parts.join("")
    const whole = new TailBuffer(5, 40)
    whole.push(input)
    const pieces = new TailBuffer(5, 40)
    let at = 0
    for (const c of cuts) {
      let end = Math.min(at + c, input.length)
      // a decoder never splits a surrogate pair
      if (end > 0 && end < input.length && /[\uD800-\uDBFF]/.test(input[end - 1])) end++
      pieces.push(input.slice(at, end))
      at = end
    }
    pieces.push(input.slice(at))
    assert.strictEqual(pieces.text(), whole.text())
    assert.strictEqual(pieces.totalBytes, utf8Length(input))
    assert.strictEqual(whole.text(), expectedTail(input, 5, 40))
    assert.isAtMost(utf8Length(whole.text()), 40)
  })

  it("an unfinished last line counts against the byte budget", () => {
    const buffer = new TailBuffer(100, 40)
    buffer.push("bbbbbbbbbb\nbbbbbbbbbb\nbbbbbbbbbb\n")
    buffer.push("cccccccccc")
    assert.isAtMost(utf8Length(buffer.text()), 40)
    assert.strictEqual(buffer.text(), "bbbbbbbbbb\nbbbbbbbbbb\ncccccccccc")
  })

  it("counts lines and reports truncation", () => {
    const buffer = new TailBuffer(2, 1000)
    buffer.push("a\nb\r\nc\nd")
    assert.strictEqual(buffer.text(), "b\nc\nd") // two complete lines plus the unfinished one
    assert.strictEqual(buffer.lineCount, 4)
    assert.isTrue(buffer.truncated)
    const small = new TailBuffer(10, 1000)
    small.push("one\ntwo\n")
    assert.isFalse(small.truncated)
    assert.strictEqual(small.text(), "one\ntwo")
  })
})

describe("UTF-8 helpers", () => {
  it("measure and cut without splitting characters", () => {
    assert.strictEqual(utf8Length("aé€😀"), 1 + 2 + 3 + 4)
    assert.strictEqual(truncateToBytes("aé€😀", 6), "aé€")
    assert.strictEqual(truncateToBytes("aé€😀", 9), "aé€")
    assert.strictEqual(truncateToBytes("aé€😀", 10), "aé€😀")
    assert.strictEqual(truncateToBytesFromEnd("😀€éa", 3), "éa")
    assert.strictEqual(truncateToBytesFromEnd("😀€éa", 8), "€éa")
    assert.strictEqual(truncateToBytesFromEnd("😀€éa", 10), "😀€éa")
  })
})

describe("glob rule", () => {
  it("a pattern without / matches names at any depth; with /, the relative path", () => {
    const ts = globMatcher("*.ts")
    assert.isTrue(ts("src/deep/a.ts", "a.ts"))
    assert.isFalse(ts("src/a.tsx", "a.tsx"))
    const nested = globMatcher("src/**/*.test.ts")
    assert.isTrue(nested("src/a/b/c.test.ts", "c.test.ts"))
    assert.isTrue(nested("src/c.test.ts", "c.test.ts"))
    assert.isFalse(nested("test/c.test.ts", "c.test.ts"))
    assert.isTrue(globMatcher("./src/*.ts")("src/a.ts", "a.ts"))
    assert.isTrue(globMatcher("*.{md,txt}")("docs/x.md", "x.md"))
    assert.isTrue(globMatcher("*")(".hidden", ".hidden")) // hidden files are matched too
  })
})

describe("clip (issue 16, item 6)", () => {
  const Text = Schema.Array(Schema.Literals(["a", "é", "😀", "/", " "]))
  const Max = Schema.Int.check(Schema.isBetween({ minimum: 4, maximum: 60 }))
  it.prop(
    "keeps short text whole; cuts long text to its start and end, never splitting a surrogate pair",
    [Text, Max],
    ([parts, max]) => {
      const text = parts.join("")
      const clipped = clip(text, max)
      if (text.length <= max) return assert.strictEqual(clipped, text)
      const match = /^([\s\S]*)…\[(\d+) characters left out\]…([\s\S]*)$/.exec(clipped)
      assert.isNotNull(match)
      const [, head, left, tail] = match!
      assert.isTrue(text.startsWith(head) && text.endsWith(tail))
      assert.strictEqual(head.length + Number(left) + tail.length, text.length)
      assert.isAtMost(head.length + tail.length, max)
      // No lone surrogate on either side of the cut.
      assert.isFalse(/[\uD800-\uDBFF]$/.test(head) || /^[\uDC00-\uDFFF]/.test(tail))
    },
    { arbitrary: { size: 80 } }
  )
})
