/**
 * Text measured as a terminal shows it: by grapheme cluster (a base character with its combining marks, an
 * emoji sequence) and by display width (wide East Asian characters and emoji take two cells, combining marks
 * none), so that wrapping and cursor placement match the screen.
 */
import stringWidth from "string-width"
import wrapAnsi from "wrap-ansi"

const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" })

/** The grapheme clusters of a text, each with its start offset (UTF-16). */
export const graphemes = (text: string): Array<{ readonly segment: string; readonly index: number }> =>
  Array.from(segmenter.segment(text), ({ index, segment }) => ({ index, segment }))

/** The display width of a text (ANSI escapes count zero). */
export const displayWidth = (text: string): number => stringWidth(text)

/** The offset of the grapheme boundary before `offset` (0 at the start). */
export const previousBoundary = (text: string, offset: number): number => {
  let last = 0
  for (const { index } of graphemes(text)) {
    if (index >= offset) break
    last = index
  }
  return last
}

/** The offset of the grapheme boundary after `offset` (the text's length at the end). */
export const nextBoundary = (text: string, offset: number): number => {
  for (const { index, segment } of graphemes(text)) {
    if (index >= offset) return index + segment.length
  }
  return text.length
}

/**
 * Styled text (ANSI colours allowed) as screen rows no wider than `columns` cells: long lines are wrapped at
 * words where possible and cut where not, so the number of rows is exactly the number printed.
 */
export const toRows = (text: string, columns: number): Array<string> =>
  text.split("\n").flatMap((line) =>
    line === "" ? [""] : wrapAnsi(line, Math.max(1, columns), { hard: true, trim: false }).split("\n")
  )
