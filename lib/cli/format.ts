/**
 * Human output: aligned tables, shortened ids, times, optional colour.
 * Machines use `--json`; nothing here is meant to be parsed.
 */
import { printable } from './errors.js'

export type Paint = (text: string) => string

export interface Style {
  bold: Paint
  dim: Paint
  red: Paint
  green: Paint
  yellow: Paint
  /** How a table shows a `pwh_`/`pwi_` id: shortened for a terminal, whole for a pipe. */
  id: (id: string) => string
}

/**
 * Colours when `colour`; ids shortened only when `terminal` (stdout is a
 * terminal), so a table piped to another command holds ids it can pass back.
 */
export function style(colour: boolean, terminal = false): Style {
  const sgr = (code: number): Paint => (colour ? (text) => `\x1b[${code}m${text}\x1b[0m` : (text) => text)
  return {
    bold: sgr(1),
    dim: sgr(2),
    red: sgr(31),
    green: sgr(32),
    yellow: sgr(33),
    id: terminal ? shortId : (id) => id,
  }
}

/** A table cell: its text, and how to paint it (colour does not count toward the width). */
export type Cell = string | number | { text: string; paint?: Paint }

export interface Column {
  header: string
  align?: 'left' | 'right'
}

function cellText(cell: Cell): string {
  return printable(typeof cell === 'object' ? cell.text : String(cell))
}

/**
 * The lines of a table: a bold header row, then one row per entry, columns
 * separated by two spaces and padded to the widest cell; no trailing blanks.
 */
export function table(columns: readonly Column[], rows: readonly (readonly Cell[])[], s: Style): string[] {
  const texts = rows.map((row) => columns.map((_, i) => cellText(row[i] ?? '')))
  const widths = columns.map((c, i) => Math.max([...c.header].length, ...texts.map((t) => [...(t[i] ?? '')].length)))
  const render = (cells: string[], paints: (Paint | undefined)[]): string => {
    const out = cells.map((text, i) => {
      const pad = ' '.repeat((widths[i] ?? 0) - [...text].length)
      const painted = paints[i] ? paints[i]!(text) : text
      if (columns[i]?.align === 'right') return pad + painted
      return i === cells.length - 1 ? painted : painted + pad
    })
    return out.join('  ').trimEnd()
  }
  const header = render(
    columns.map((c) => c.header),
    columns.map(() => s.bold),
  )
  return [
    header,
    ...rows.map((row, r) =>
      render(
        texts[r]!,
        columns.map((_, i) => {
          const cell = row[i]
          return cell !== undefined && typeof cell === 'object' ? cell.paint : undefined
        }),
      ),
    ),
  ]
}

/**
 * `pwh_1234abcd…` for the package's `pwh_`/`pwi_` ids; anything else
 * unchanged. The CLI takes the shortened form back as a prefix (ids.ts).
 */
export function shortId(id: string): string {
  const m = /^(pw[hi]_)([0-9a-f]{8})[0-9a-f]{56}$/.exec(id)
  return m ? `${m[1]}${m[2]}…` : id
}

/** A journal time (milliseconds since the epoch) in UTC, to the second. */
export function time(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-'
  const date = new Date(ms)
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** A violation's JSON Pointer for a human: `(root)` for the whole document, quoted when it holds blanks or quotes. */
export function pointer(path: string): string {
  if (path === '') return '(root)'
  // eslint-disable-next-line no-control-regex -- control characters force quoting
  return /[\s"\\\u0000-\u001f\u007f-\u009f]/.test(path) ? JSON.stringify(path) : path
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`
}
