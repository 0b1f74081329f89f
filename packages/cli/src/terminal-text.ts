// Text from a session log is untrusted: a tool output can hold terminal escape sequences
// (ESC [ ... ), C1 controls or bidi overrides that would rewrite what a terminal shows.
// Everything the CLI prints for humans goes through these helpers.

/** C0 controls (except the ones a caller keeps), DEL, C1 controls, bidi embeddings/overrides/isolates, line/paragraph separators. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point: they are made visible
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g
// eslint-disable-next-line no-control-regex -- as above, newlines and tabs included
const UNSAFE_WITH_BREAKS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

function escapeCodeUnit(character: string): string {
  switch (character) {
    case '\n':
      return '\\n'
    case '\r':
      return '\\r'
    case '\t':
      return '\\t'
    default:
      return `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`
  }
}

/**
 * Replaces control and bidi characters (but not `\n` and `\t`) with visible `\uXXXX` escapes.
 *
 * @param text - Untrusted text.
 * @returns The text with nothing invisible that could hide or reorder it.
 */
export function visibleControls(text: string): string {
  return text.replace(UNSAFE, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * Makes untrusted text safe to print on a terminal: control characters and bidi controls
 * become visible `\uXXXX` escapes.
 *
 * @param text - Any text from a log.
 * @param options - `multiline`: keep `\n` and `\t` as they are (for message bodies); default false (one line).
 * @returns Text without terminal control sequences.
 */
export function terminalSafe(text: string, options: { readonly multiline?: boolean } = {}): string {
  if (options.multiline === true) return text.replace(UNSAFE, escapeCodeUnit)
  return text.replace(UNSAFE_WITH_BREAKS, escapeCodeUnit)
}

/**
 * Shortens text to `max` characters (code points are not split), marking the cut with `…`.
 *
 * @param text - The text.
 * @param max - Longest result, in UTF-16 code units, including the ellipsis.
 * @returns The text, or its start plus `…`.
 */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text
  let end = Math.max(0, max - 1)
  const code = text.charCodeAt(end - 1)
  if (code >= 0xd800 && code <= 0xdbff) end -= 1
  return `${text.slice(0, end)}…`
}

/**
 * One-line, quoted, terminal-safe preview of untrusted text.
 *
 * @param text - The text.
 * @param max - Longest preview (before quoting).
 * @returns `"…"` with escapes.
 */
export function preview(text: string, max = 100): string {
  return `"${terminalSafe(truncate(text, max)).replaceAll('"', '\\"')}"`
}

/**
 * A byte count for people: `512 B`, `90.1 MB` (decimal units, as disk tools show them).
 *
 * @param bytes - A non-negative count.
 * @returns The formatted size.
 */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`
  const units = ['kB', 'MB', 'GB', 'TB']
  let value = bytes
  let unit = 'B'
  for (const next of units) {
    if (value < 1000) break
    value /= 1000
    unit = next
  }
  return `${value >= 100 ? value.toFixed(0) : value.toFixed(1)} ${unit}`
}

const GROUPED = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })

/**
 * A count for people: digits grouped by thousands (`15,635,389`). Machine output (`--json`) keeps raw numbers.
 *
 * @param value - An integer.
 * @returns The grouped digits.
 */
export function formatCount(value: number): string {
  return GROUPED.format(value)
}

/**
 * A count and its noun, pluralised (`1 error`, `2 errors`), the count grouped by thousands.
 *
 * @param value - The count.
 * @param singular - The noun for one (`error`).
 * @param pluralForm - The noun for other counts. Default: `singular` + `s`.
 * @returns The phrase.
 */
export function countOf(value: number, singular: string, pluralForm = `${singular}s`): string {
  return `${formatCount(value)} ${value === 1 ? singular : pluralForm}`
}
