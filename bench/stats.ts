/** Small numeric and formatting helpers for the benchmark. */

export const median = (xs: ReadonlyArray<number>): number => {
  if (xs.length === 0) return Number.NaN
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

export interface Summary {
  readonly median: number
  readonly min: number
  readonly max: number
  /** (max − min) / median, in percent. */
  readonly spreadPct: number
  readonly samples: number
}

export const summarize = (xs: ReadonlyArray<number>): Summary => {
  const m = median(xs)
  const min = Math.min(...xs)
  const max = Math.max(...xs)
  return { median: m, min, max, spreadPct: m > 0 ? ((max - min) / m) * 100 : 0, samples: xs.length }
}

export const round = (x: number, digits = 3): number => {
  if (!Number.isFinite(x)) return x
  const f = 10 ** digits
  return Math.round(x * f) / f
}

/** Triggers a full GC when the process runs with --expose-gc. */
export const collect = (): void => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc !== undefined) gc()
}

export const now = (): number => Number(process.hrtime.bigint()) / 1e3 // microseconds

/** A plain text table with right-aligned numeric columns. */
export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n")
}
