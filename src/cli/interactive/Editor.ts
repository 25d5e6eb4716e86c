/**
 * The input editor of the interactive mode: a multi-line buffer edited in place, measured by grapheme and
 * display width, with history (Up/Down), Tab completion and bracketed paste. The editor is a pure state
 * machine (`step`) plus a renderer (`render`), driven by {@link read}; the rules are CLI 1.1-1.4.
 */
import * as Effect from "effect/Effect"
import { terminalSafe } from "../internal/terminalText.ts"
import { displayWidth, graphemes, nextBoundary, previousBoundary } from "./internal/text.ts"
import { isEnd, type Key, type Keys } from "./Keys.ts"
import { SYNC_BEGIN, SYNC_END } from "./Markdown.ts"

/** The editor's state. `cursor` is an offset into `text` at a grapheme boundary. */
export interface EditorState {
  readonly text: string
  readonly cursor: number
  /** Position in the history while browsing it (`history.length` = the draft). */
  readonly historyIndex: number
  /** What was typed before browsing the history, given back past its newest entry. */
  readonly draft: string
  /** A line shown under the buffer (completions, the second Ctrl-C hint). */
  readonly hint: string
  /** Ctrl-C was just pressed on an empty buffer: another one exits. */
  readonly armedExit: boolean
}

/** What the editor ends with. */
export type EditorResult =
  | { readonly _tag: "Submit"; readonly text: string }
  /** Esc or Ctrl-C where the caller asked to be told (a question): nothing was entered. */
  | { readonly _tag: "Cancel" }
  | { readonly _tag: "Exit" }

/** What the editor works with besides the keys: the history, completion, and whether Esc cancels. */
export interface EditorContext {
  readonly history: ReadonlyArray<string>
  /** The completions of a buffer (slash commands); none for ordinary text. */
  readonly complete: (text: string) => ReadonlyArray<string>
  /** Esc and Ctrl-C end the editor with `Cancel` instead of clearing it (a one-line question). */
  readonly cancelable: boolean
}

/** An empty editor at the end of the history. */
export const initial = (history: ReadonlyArray<string>, text = ""): EditorState => ({
  text,
  cursor: text.length,
  historyIndex: history.length,
  draft: "",
  hint: "",
  armedExit: false
})

const lineStart = (text: string, cursor: number) => text.lastIndexOf("\n", cursor - 1) + 1
const lineEnd = (text: string, cursor: number) => {
  const end = text.indexOf("\n", cursor)
  return end === -1 ? text.length : end
}

const insert = (state: EditorState, chunk: string): EditorState => ({
  ...state,
  text: state.text.slice(0, state.cursor) + chunk + state.text.slice(state.cursor),
  cursor: state.cursor + chunk.length,
  hint: "",
  armedExit: false
})

/** The cursor moved to the same display column on the line above (-1) or below (+1), if there is one. */
const verticalMove = (state: EditorState, direction: -1 | 1): EditorState | undefined => {
  const { text, cursor } = state
  const start = lineStart(text, cursor)
  const column = displayWidth(text.slice(start, cursor))
  let targetStart: number
  if (direction === -1) {
    if (start === 0) return undefined
    targetStart = lineStart(text, start - 1)
  } else {
    const end = lineEnd(text, cursor)
    if (end === text.length) return undefined
    targetStart = end + 1
  }
  const targetEnd = lineEnd(text, targetStart)
  let offset = targetStart
  let width = 0
  for (const { segment } of graphemes(text.slice(targetStart, targetEnd))) {
    const w = displayWidth(segment)
    if (width + w > column) break
    width += w
    offset += segment.length
  }
  return { ...state, cursor: offset, hint: "" }
}

const fromHistory = (state: EditorState, history: ReadonlyArray<string>, index: number): EditorState => {
  const draft = state.historyIndex === history.length ? state.text : state.draft
  const text = index === history.length ? draft : history[index]!
  return { ...state, text, cursor: text.length, historyIndex: index, draft, hint: "" }
}

const commonPrefix = (words: ReadonlyArray<string>): string =>
  words.reduce((prefix, word) => {
    let i = 0
    while (i < prefix.length && i < word.length && prefix[i] === word[i]) i++
    return prefix.slice(0, i)
  })

/** How many turns of the event loop the editor waits for more of a paste before it draws what came (CLI 1.1). */
const PASTE_TURNS = 3

/** The text a pasted key inserts: pasted text is text, a newline in it (CR or LF) is a new line, never Enter. */
const pastedText = (key: Key): string =>
  key.name === "return" || key.name === "enter" ? "\n" : key.sequence.replace(/\r\n?/g, "\n")

/** One key applied to the editor: the next state, or how the editor ends. */
export const step = (state: EditorState, key: Key, context: EditorContext): EditorState | EditorResult => {
  const { text, cursor } = state
  // The terminal's input has ended (CLI 1.9): no one can type any more, so the entry ends unsent.
  if (isEnd(key)) return context.cancelable ? { _tag: "Cancel" } : { _tag: "Exit" }
  if (key.paste) return insert(state, pastedText(key))
  if (key.ctrl && key.name === "c") {
    if (context.cancelable) return { _tag: "Cancel" }
    if (text !== "") return { ...initial(context.history), hint: "" }
    if (state.armedExit) return { _tag: "Exit" }
    return { ...state, armedExit: true, hint: "Press Ctrl-C again to exit (or type /quit)." }
  }
  if (key.ctrl && key.name === "d") {
    if (text === "") return context.cancelable ? { _tag: "Cancel" } : { _tag: "Exit" }
    return cursor < text.length
      ? { ...state, text: text.slice(0, cursor) + text.slice(nextBoundary(text, cursor)) }
      : state
  }
  const cleared = { ...state, armedExit: false }
  switch (key.name) {
    case "escape":
      return context.cancelable ? { _tag: "Cancel" } : { ...cleared, hint: "" }
    case "return": {
      // Alt-Enter (and Shift-Enter where the terminal tells them apart) starts a new line; so does a
      // backslash typed just before Enter, which is dropped.
      if (key.meta || key.shift) return insert(state, "\n")
      if (cursor > 0 && text[cursor - 1] === "\\") {
        return insert({ ...state, text: text.slice(0, cursor - 1) + text.slice(cursor), cursor: cursor - 1 }, "\n")
      }
      return { _tag: "Submit", text }
    }
    case "enter": // Ctrl-J (a line feed): a new line
      return insert(state, "\n")
    case "backspace": {
      if (cursor === 0) return cleared
      const from = previousBoundary(text, cursor)
      return { ...cleared, text: text.slice(0, from) + text.slice(cursor), cursor: from, hint: "" }
    }
    case "delete":
      return cursor < text.length
        ? { ...cleared, text: text.slice(0, cursor) + text.slice(nextBoundary(text, cursor)) }
        : cleared
    case "left":
      return { ...cleared, cursor: previousBoundary(text, cursor) }
    case "right":
      return { ...cleared, cursor: nextBoundary(text, cursor) }
    case "home":
      return { ...cleared, cursor: lineStart(text, cursor) }
    case "end":
      return { ...cleared, cursor: lineEnd(text, cursor) }
    case "up": {
      const moved = verticalMove(cleared, -1)
      if (moved !== undefined) return moved
      return state.historyIndex > 0 ? fromHistory(cleared, context.history, state.historyIndex - 1) : cleared
    }
    case "down": {
      const moved = verticalMove(cleared, 1)
      if (moved !== undefined) return moved
      return state.historyIndex < context.history.length
        ? fromHistory(cleared, context.history, state.historyIndex + 1)
        : cleared
    }
    case "tab": {
      const candidates = context.complete(text)
      if (candidates.length === 0) return insert(state, "  ")
      if (candidates.length === 1) {
        const done = candidates[0]! + " "
        return { ...cleared, text: done, cursor: done.length, hint: "" }
      }
      const prefix = commonPrefix(candidates)
      const next = prefix.length > text.length ? prefix : text
      return { ...cleared, text: next, cursor: next.length, hint: candidates.join("  ") }
    }
  }
  if (key.ctrl) {
    switch (key.name) {
      case "a":
        return { ...cleared, cursor: lineStart(text, cursor) }
      case "e":
        return { ...cleared, cursor: lineEnd(text, cursor) }
      case "u": {
        const start = lineStart(text, cursor)
        return { ...cleared, text: text.slice(0, start) + text.slice(cursor), cursor: start }
      }
      case "k":
        return { ...cleared, text: text.slice(0, cursor) + text.slice(lineEnd(text, cursor)) }
      case "w": {
        const before = text.slice(0, cursor)
        const from = before.replace(/\S+\s*$/, "").length
        return { ...cleared, text: text.slice(0, from) + text.slice(cursor), cursor: from }
      }
    }
    return cleared
  }
  if (key.meta) return cleared
  // Typed text (a key, or several characters the terminal sent at once).
  // eslint-disable-next-line no-control-regex
  const printable = key.sequence.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "").replace(/\r\n?/g, "\n")
  return printable === "" ? cleared : insert(state, printable)
}

/** The editor on screen: rows (no wider than `columns - 1`) and where the cursor goes. */
export interface Frame {
  readonly rows: ReadonlyArray<string>
  readonly cursorRow: number
  readonly cursorColumn: number
}

const displayed = (segment: string): string => segment === "\t" ? "  " : terminalSafe(segment)

/**
 * Lays the buffer out: the prompt before the first line, an indent of the same width before the others,
 * lines wrapped by display width (a wide character never split across rows), the hint in dim below.
 */
export const render = (
  state: EditorState,
  options: { readonly prompt: string; readonly columns: number; readonly color: boolean }
): Frame => {
  const limit = Math.max(10, options.columns - 1)
  const promptWidth = displayWidth(options.prompt)
  const indent = " ".repeat(promptWidth)
  const rows: Array<string> = []
  let row = options.prompt
  let column = promptWidth
  let cursorRow = 0
  let cursorColumn = promptWidth
  let offset = 0
  const place = () => {
    cursorRow = rows.length
    cursorColumn = column
  }
  const lines = state.text.split("\n")
  lines.forEach((line, lineIndex) => {
    if (lineIndex > 0) {
      rows.push(row)
      row = indent
      column = promptWidth
      offset += 1 // the newline
    }
    for (const { segment } of graphemes(line)) {
      const shown = displayed(segment)
      const width = displayWidth(shown)
      if (column + width > limit) {
        rows.push(row)
        row = indent
        column = promptWidth
      }
      if (offset === state.cursor) place()
      row += shown
      column += width
      offset += segment.length
    }
    if (offset === state.cursor) place()
  })
  if (column >= limit && cursorRow === rows.length && cursorColumn === column) {
    // The cursor after a full row goes to the start of the next.
    rows.push(row)
    row = indent
    cursorRow = rows.length
    cursorColumn = promptWidth
  }
  rows.push(row)
  if (state.hint !== "") {
    const hint = state.hint.length > limit ? state.hint.slice(0, limit - 1) + "…" : state.hint
    rows.push(options.color ? `\x1b[2m${hint}\x1b[0m` : hint)
  }
  return { rows, cursorRow, cursorColumn }
}

/**
 * The rows of a frame that fit on a screen of `height` rows (one kept free), around the cursor: rows above
 * the screen's top could not be redrawn, so they are not drawn at all.
 */
export const viewport = (frame: Frame, height: number | undefined): Frame => {
  const room = height === undefined ? Infinity : Math.max(3, height - 1)
  if (frame.rows.length <= room) return frame
  const start = Math.min(Math.max(0, frame.cursorRow - room + 1), frame.rows.length - room)
  return {
    rows: frame.rows.slice(start, start + room),
    cursorRow: frame.cursorRow - start,
    cursorColumn: frame.cursorColumn
  }
}

/** Options of one read. */
export interface ReadOptions extends EditorContext {
  readonly prompt: string
  readonly initialText?: string | undefined
  readonly columns: () => number
  /** The terminal's height: an entry taller than the screen shows the rows around the cursor. */
  readonly rows?: (() => number) | undefined
  readonly color: boolean
  readonly write: (text: string) => void
}

/**
 * Reads one entry from the keyboard, redrawing the editor after each key (one write per frame). On
 * return the editor's last frame stays on screen without its hint and the cursor is on a new line.
 */
export const read = (keys: Keys, options: ReadOptions): Effect.Effect<EditorResult> =>
  Effect.gen(function*() {
    let state = initial(options.history, options.initialText ?? "")
    let cursorRow = 0
    const draw = (frame: Frame, final: boolean) => {
      let out = SYNC_BEGIN + (cursorRow > 0 ? `\x1b[${cursorRow}A` : "") + "\r\x1b[J" + frame.rows.join("\r\n")
      if (final) {
        out += "\r\n"
        cursorRow = 0
      } else {
        const up = frame.rows.length - 1 - frame.cursorRow
        out += (up > 0 ? `\x1b[${up}A` : "") + "\r" + (frame.cursorColumn > 0 ? `\x1b[${frame.cursorColumn}C` : "")
        cursorRow = frame.cursorRow
      }
      options.write(out + SYNC_END)
    }
    const fullFrame = (s: EditorState) =>
      render(s, { prompt: options.prompt, columns: options.columns(), color: options.color })
    const frameOf = (s: EditorState) => viewport(fullFrame(s), options.rows?.())
    draw(frameOf(state), false)
    while (true) {
      // Every key already waiting is applied before the next frame: a long paste is drawn once, not per key.
      let key: Key | undefined = yield* keys.take
      while (key !== undefined) {
        if (key.ctrl && key.name === "l" && !key.paste) {
          // Ctrl-L: a clear screen, the editor drawn again at the top.
          options.write("\x1b[2J\x1b[3J\x1b[H")
          cursorRow = 0
          key = yield* keys.poll
          continue
        }
        if (key.paste) {
          // A paste arrives as one key per character: the keys waiting are gathered and inserted at once,
          // since inserting them one by one copies the whole entry at each key (a 256 KB paste took 46 s).
          const pasted: Array<string> = []
          while (key !== undefined && key.paste) {
            pasted.push(pastedText(key))
            key = yield* keys.poll
            // The rest of a paste may not have been read yet: it is waited for (briefly) before a frame is
            // drawn, since every frame lays out the whole entry (a 1 MB paste drawn in its thousands of
            // pieces took minutes).
            for (let turn = 0; key === undefined && turn < PASTE_TURNS; turn++) {
              yield* Effect.sleep(0)
              key = yield* keys.poll
            }
          }
          state = insert(state, pasted.join(""))
          continue
        }
        const next = step(state, key, options)
        if ("_tag" in next) {
          const last = next._tag === "Submit"
            ? { ...state, hint: "", cursor: state.text.length }
            : { ...state, hint: "" }
          // The entry as sent, whole, stays in the scrollback.
          draw(fullFrame(last), true)
          return next
        }
        state = next
        key = yield* keys.poll
      }
      draw(frameOf(state), false)
    }
  })
