/**
 * Assistant text as markdown on the terminal: headings, emphasis, lists, tables, block quotes and code
 * blocks with syntax highlighting (marked with marked-terminal, which highlights with cli-highlight), wrapped
 * by display width. While an answer streams, every finished block is printed once and for good; only the
 * block still being written is redrawn in place, as one write inside the terminal's synchronized-update
 * mode, so the screen does not flicker and the scrollback keeps exactly what was said (CLI 1.7).
 */
import type { Marked } from "marked"
import { terminalSafe } from "../internal/terminalText.ts"
import { toRows } from "./internal/text.ts"

type Libraries = {
  readonly Marked: typeof Marked
  readonly markedTerminal: typeof import("marked-terminal").markedTerminal
}
let libraries: Libraries | undefined
let loading: Promise<void> | undefined

/**
 * Loads the renderer (marked, marked-terminal and its highlighter take most of a second to load): started
 * when the interactive mode starts and awaited before the first answer, so no other command pays for it.
 */
export const load = (): Promise<void> =>
  loading ??= Promise.all([import("marked"), import("marked-terminal")]).then(([marked, terminal]) => {
    libraries = { Marked: marked.Marked, markedTerminal: terminal.markedTerminal }
  })

/** Begin and end of a synchronized update: the terminal shows the frame only when it is complete. */
export const SYNC_BEGIN = "\x1b[?2026h"
export const SYNC_END = "\x1b[?2026l"

const renderers = new Map<string, Marked>()

const rendererFor = (columns: number, color: boolean): Marked | undefined => {
  if (libraries === undefined) return undefined
  const key = `${columns}:${color}`
  let marked = renderers.get(key)
  if (marked === undefined) {
    marked = new libraries.Marked()
    marked.use(
      libraries.markedTerminal({ width: columns, reflowText: true, tab: 2, emoji: false, showSectionPrefix: false })
    )
    renderers.set(key, marked)
  }
  return marked
}

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g

/**
 * A markdown text as screen rows at most `columns` wide, without trailing blank rows. The text is made
 * terminal-safe first, so escape sequences in it are shown, never obeyed; tabs become spaces so that widths
 * are known.
 */
export const renderMarkdown = (
  source: string,
  options: { readonly columns: number; readonly color: boolean }
): Array<string> => {
  const safe = terminalSafe(source).replace(/\t/g, "    ")
  let out: string
  try {
    // Not loaded (or a renderer bug): the answer is shown as it came rather than lost.
    out = rendererFor(options.columns, options.color)?.parse(safe, { async: false }) as string | undefined ?? safe
  } catch {
    out = safe
  }
  if (!options.color) out = out.replace(ANSI, "")
  const rows = toRows(out.replace(/\n+$/, ""), options.columns)
  while (rows.length > 0 && rows[rows.length - 1]!.replace(ANSI, "").trim() === "") rows.pop()
  return rows
}

/** Where a streamed block is drawn: the terminal's size (read at each redraw), colours and the output. */
export interface MarkdownStreamOptions {
  readonly columns: () => number
  /** Screen height: a block taller than this is printed for good from the top as it grows. */
  readonly rows: () => number
  readonly color: boolean
  readonly write: (text: string) => void
}

/**
 * One streamed text block rendered as markdown. `push` adds a delta; `end` prints what remains. Between
 * them the unfinished last block is the only part redrawn.
 */
export interface MarkdownStream {
  readonly push: (delta: string) => void
  readonly end: () => void
  /** Removes the redrawn part from the screen (it is drawn again on the next push). */
  readonly hide: () => void
}

/** Starts a streamed block. */
export const stream = (options: MarkdownStreamOptions): MarkdownStream => {
  const lexer = libraries === undefined ? undefined : new libraries.Marked()
  let source = ""
  /** How much of `source` has been printed for good, as whole markdown blocks. */
  let settled = 0
  /** Rows of the unfinished block printed for good because it outgrew the screen. */
  let committedRows = 0
  /** Rows currently drawn by the redrawn part; the cursor is at the start of the row below them. */
  let drawn = 0
  let printedAny = false

  const erase = (): string => drawn > 0 ? `\x1b[${drawn}A\r\x1b[J` : "\r\x1b[J"

  const redraw = (final: boolean) => {
    const columns = Math.max(20, options.columns() - 1)
    const render = { columns, color: options.color }
    let out = erase()
    drawn = 0
    const tail = source.slice(settled)
    // Without the renderer loaded the whole text is one block, shown as it came.
    const tokens: Array<{ readonly type: string; readonly raw: string }> = lexer === undefined
      ? [{ type: "text", raw: tail }]
      : lexer.lexer(tail)
    // Every block but the last is finished: print each once, for good.
    const finished = final ? tokens.length : Math.max(0, tokens.length - 1)
    let consumed = 0
    for (let i = 0; i < finished; i++) {
      const token = tokens[i]!
      consumed += token.raw.length
      if (token.type === "space") continue
      // Only the first block can have rows on screen already (printed while it outgrew the screen).
      const skip = committedRows
      committedRows = 0
      const rows = renderMarkdown(token.raw, render).slice(skip)
      if (printedAny && rows.length > 0 && skip === 0) out += "\n"
      if (rows.length > 0) {
        out += rows.join("\n") + "\n"
        printedAny = true
      }
    }
    settled += consumed
    if (!final && finished < tokens.length) {
      const last = tokens[tokens.length - 1]!
      if (last.type !== "space") {
        let rows = renderMarkdown(last.raw, render)
        const separator = printedAny && committedRows === 0 ? "\n" : ""
        rows = rows.slice(committedRows)
        const room = Math.max(3, options.rows() - 3)
        if (rows.length > room) {
          // Taller than the screen: rows scrolled away cannot be redrawn, so they are printed for good.
          const keep = rows.length - room
          out += separator + rows.slice(0, keep).join("\n") + "\n"
          committedRows += keep
          printedAny = true
          rows = rows.slice(keep)
          out += rows.join("\n") + "\n"
          drawn = rows.length
        } else if (rows.length > 0) {
          out += separator + rows.join("\n") + "\n"
          drawn = rows.length + (separator === "" ? 0 : 1)
        }
      }
    }
    options.write(SYNC_BEGIN + out + SYNC_END)
  }
  return {
    push: (delta) => {
      if (delta === "") return
      source += delta
      redraw(false)
    },
    end: () => redraw(true),
    hide: () => {
      if (drawn === 0) return
      options.write(erase())
      drawn = 0
    }
  }
}
