/**
 * Parsing the arguments of a tool call while they stream in: a JSON text that may stop anywhere. Whatever
 * is complete is kept (objects and arrays so far, a string cut short keeps its prefix); a key without its
 * value, a number cut after its sign or exponent and a literal cut short are left out.
 *
 * Internal: no entry point exports it.
 */

interface Parsed {
  readonly value: unknown
  /** False when the text ended inside this value. */
  readonly complete: boolean
}

class Incomplete {
  static readonly instance = new Incomplete()
}

class SyntaxFailure extends Error {}

const WHITESPACE = /\s/

class Parser {
  i = 0
  readonly text: string

  constructor(text: string) {
    this.text = text
  }

  get eof(): boolean {
    return this.i >= this.text.length
  }

  skipWhitespace(): void {
    while (this.i < this.text.length && WHITESPACE.test(this.text[this.i]!)) this.i++
  }

  value(): Parsed | Incomplete {
    this.skipWhitespace()
    if (this.eof) return Incomplete.instance
    const c = this.text[this.i]!
    if (c === "{") return this.object()
    if (c === "[") return this.array()
    if (c === "\"") return this.string()
    if (c === "-" || (c >= "0" && c <= "9")) return this.number()
    for (const [literal, value] of LITERALS) {
      if (this.text.startsWith(literal, this.i)) {
        this.i += literal.length
        return { value, complete: true }
      }
      const rest = this.text.slice(this.i)
      if (literal.startsWith(rest)) {
        this.i = this.text.length
        return Incomplete.instance
      }
    }
    throw new SyntaxFailure(`Unexpected character ${c} at ${this.i}`)
  }

  object(): Parsed {
    this.i++
    const result: Record<string, unknown> = {}
    for (;;) {
      this.skipWhitespace()
      if (this.eof) return { value: result, complete: false }
      if (this.text[this.i] === "}") {
        this.i++
        return { value: result, complete: true }
      }
      if (this.text[this.i] !== "\"") throw new SyntaxFailure(`Expected a key at ${this.i}`)
      const key = this.string()
      if (!key.complete) return { value: result, complete: false }
      this.skipWhitespace()
      if (this.eof) return { value: result, complete: false }
      if (this.text[this.i] !== ":") throw new SyntaxFailure(`Expected ':' at ${this.i}`)
      this.i++
      const value = this.value()
      if (value instanceof Incomplete) return { value: result, complete: false }
      result[key.value as string] = value.value
      if (!value.complete) return { value: result, complete: false }
      this.skipWhitespace()
      if (this.eof) return { value: result, complete: false }
      const next = this.text[this.i]
      if (next === ",") this.i++
      else if (next !== "}") throw new SyntaxFailure(`Expected ',' or '}' at ${this.i}`)
    }
  }

  array(): Parsed {
    this.i++
    const result: Array<unknown> = []
    for (;;) {
      this.skipWhitespace()
      if (this.eof) return { value: result, complete: false }
      if (this.text[this.i] === "]") {
        this.i++
        return { value: result, complete: true }
      }
      const value = this.value()
      if (value instanceof Incomplete) return { value: result, complete: false }
      result.push(value.value)
      if (!value.complete) return { value: result, complete: false }
      this.skipWhitespace()
      if (this.eof) return { value: result, complete: false }
      const next = this.text[this.i]
      if (next === ",") this.i++
      else if (next !== "]") throw new SyntaxFailure(`Expected ',' or ']' at ${this.i}`)
    }
  }

  string(): Parsed {
    const start = this.i
    this.i++
    while (this.i < this.text.length) {
      const c = this.text[this.i]
      if (c === "\\") {
        this.i += 2
        continue
      }
      if (c === "\"") {
        this.i++
        return { value: JSON.parse(this.text.slice(start, this.i)), complete: true }
      }
      this.i++
    }
    // Cut short: keep the prefix, dropping an escape sequence that is itself cut short.
    let body = this.text.slice(start + 1)
    const escape = /\\(u[0-9a-fA-F]{0,3})?$/.exec(body)
    if (escape !== null && !isEscaped(body, escape.index)) body = body.slice(0, escape.index)
    this.i = this.text.length
    try {
      return { value: JSON.parse(`"${body}"`), complete: false }
    } catch {
      return { value: "", complete: false }
    }
  }

  number(): Parsed | Incomplete {
    const match = /^-?(\d+)?(\.\d*)?([eE][+-]?\d*)?/.exec(this.text.slice(this.i))!
    const token = match[0]
    this.i += token.length
    const value = Number(token)
    if (token === "" || Number.isNaN(value) || /[-+.eE]$/.test(token)) {
      if (this.eof) return Incomplete.instance
      throw new SyntaxFailure(`Invalid number at ${this.i}`)
    }
    return { value, complete: !this.eof }
  }
}

/** Whether the backslash at `index` is itself escaped (preceded by an odd number of backslashes). */
const isEscaped = (text: string, index: number): boolean => {
  let count = 0
  for (let j = index - 1; j >= 0 && text[j] === "\\"; j--) count++
  return count % 2 === 1
}

const LITERALS: ReadonlyArray<readonly [string, unknown]> = [["true", true], ["false", false], ["null", null]]

/**
 * The value of a JSON text that may be cut short, or `undefined` when the text is not the beginning of a
 * JSON value.
 */
export const parsePartialJson = (text: string): unknown => {
  if (text.trim() === "") return undefined
  try {
    return JSON.parse(text)
  } catch {
    // fall through to the tolerant parser
  }
  try {
    const parser = new Parser(text)
    const parsed = parser.value()
    if (parsed instanceof Incomplete) return undefined
    parser.skipWhitespace()
    if (!parser.eof) return undefined
    return parsed.value
  } catch {
    return undefined
  }
}

/** Tool-call arguments from streamed JSON: the object so far, or `{}` while there is none. */
export const parseArguments = (text: string): Record<string, unknown> => {
  const value = parsePartialJson(text)
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : {}
}
