// Turns a `tmux capture-pane -e` text into an SVG of the terminal (for the README's PNG, made with
// `rsvg-convert`). Only what the captures use: SGR colours (16, 256), bold, dim, italic, underline.
// Run: npx node scratchpad/ansi-to-svg.ts capture.txt out.svg
import { readFileSync, writeFileSync } from "node:fs"
import stringWidth from "string-width"

const BASE = ["#1e1e1e", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#dcdfe4"]
const BRIGHT = ["#7f848e", "#ff7b86", "#b5e890", "#ffd68a", "#8cc8ff", "#e099ff", "#7fdbe6", "#ffffff"]
const FG = "#dcdfe4"
const color256 = (n: number): string => {
  if (n < 8) return BASE[n]!
  if (n < 16) return BRIGHT[n - 8]!
  if (n >= 232) {
    const v = 8 + (n - 232) * 10
    return `rgb(${v},${v},${v})`
  }
  const i = n - 16
  const c = (x: number) => (x === 0 ? 0 : 55 + x * 40)
  return `rgb(${c(Math.floor(i / 36))},${c(Math.floor(i / 6) % 6)},${c(i % 6)})`
}
interface Style {
  fg: string
  bold: boolean
  dim: boolean
  italic: boolean
  underline: boolean
}
const plain = (): Style => ({ fg: FG, bold: false, dim: false, italic: false, underline: false })
const apply = (style: Style, params: Array<number>) => {
  for (let i = 0; i < params.length; i++) {
    const p = params[i]!
    if (p === 0) Object.assign(style, plain())
    else if (p === 1) style.bold = true
    else if (p === 2) style.dim = true
    else if (p === 3) style.italic = true
    else if (p === 4) style.underline = true
    else if (p === 22) style.bold = style.dim = false
    else if (p === 23) style.italic = false
    else if (p === 24) style.underline = false
    else if (p >= 30 && p <= 37) style.fg = BASE[p - 30]!
    else if (p >= 90 && p <= 97) style.fg = BRIGHT[p - 90]!
    else if (p === 39) style.fg = FG
    else if (p === 38 && params[i + 1] === 5) {
      style.fg = color256(params[i + 2]!)
      i += 2
    }
  }
}
const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

const [input, output] = process.argv.slice(2)
const lines = readFileSync(input!, "utf8").replace(/\s+$/, "").split("\n")
const cell = 8.43
const row = 18
const pad = 14
let columns = 0
const style = plain()
const body: Array<string> = []
lines.forEach((line, y) => {
  let x = 0
  for (const part of line.split(/(\x1b\[[0-9;]*m)/)) {
    const sgr = /^\x1b\[([0-9;]*)m$/.exec(part)
    if (sgr !== null) {
      apply(style, sgr[1] === "" ? [0] : sgr[1]!.split(";").map(Number))
      continue
    }
    if (part === "") continue
    const attrs = [
      `x="${(pad + x * cell).toFixed(2)}"`,
      `y="${pad + (y + 1) * row - 5}"`,
      `fill="${style.fg}"`,
      style.bold ? `font-weight="bold"` : "",
      style.dim ? `opacity="0.6"` : "",
      style.italic ? `font-style="italic"` : "",
      style.underline ? `text-decoration="underline"` : ""
    ].filter((a) => a !== "")
    if (part.trim() !== "") body.push(`<text ${attrs.join(" ")} xml:space="preserve">${escape(part)}</text>`)
    x += stringWidth(part)
  }
  columns = Math.max(columns, x)
})
const width = pad * 2 + Math.max(columns, 100) * cell
const height = pad * 2 + lines.length * row
writeFileSync(
  output!,
  `<svg xmlns="http://www.w3.org/2000/svg" width="${
    width.toFixed(0)
  }" height="${height}" font-family="DejaVu Sans Mono, monospace" font-size="14">` +
    `<rect width="100%" height="100%" rx="8" fill="#1e1e1e"/>${body.join("")}</svg>\n`
)
