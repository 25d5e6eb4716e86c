/**
 * Text from a model or a tool, made safe to print on a terminal. Such text is untrusted: an escape
 * sequence in it could clear the screen, set the window title, write the clipboard (OSC 52) or rewrite
 * what was printed before. Every C0 control except newline and tab, DEL and every C1 control is replaced
 * by a visible stand-in, so nothing in the text is interpreted by the terminal.
 */

// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g
// eslint-disable-next-line no-control-regex
const HAS_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

/** The visible stand-in of one control character: its Unicode control picture (C0, DEL) or `\xNN` (C1). */
const standIn = (char: string): string => {
  const code = char.charCodeAt(0)
  if (code < 0x20) return String.fromCharCode(0x2400 + code)
  if (code === 0x7f) return "\u2421"
  return `\\x${code.toString(16)}`
}

/**
 * The text with no control character left but newline and tab. A carriage return ending a line (CRLF, or
 * the end of a streamed chunk that may be followed by its newline) is dropped so Windows-style output stays
 * readable; any other carriage return is made visible, since it would let the text overwrite its own line.
 */
export const terminalSafe = (text: string): string => {
  if (!HAS_CONTROL.test(text)) return text
  return text.replace(/\r(?=\n|$)/g, "").replace(CONTROLS, standIn)
}
