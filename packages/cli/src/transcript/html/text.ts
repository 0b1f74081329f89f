import { formatBytes, formatCount, visibleControls } from '../../terminal-text.ts'

/**
 * Escapes text for HTML element content and attribute values: `& < > " '` become
 * references, and control/bidi characters become visible escapes. Every piece of text
 * from a log goes through this (or through the Markdown renderer, which escapes the same
 * way), so a tool output holding `<script>` renders as text.
 *
 * @param text - Untrusted text.
 * @returns HTML-safe text.
 */
export function escapeHtml(text: string): string {
  return visibleControls(text)
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;')
}

/** A `<pre>` block; the newline after `<pre>` keeps a leading newline of the text (the parser drops one). */
export function pre(text: string, className = 'text'): string {
  return `<pre class="${className}">\n${escapeHtml(text)}</pre>`
}

/**
 * The first `max` UTF-16 code units of a text, never splitting a surrogate pair.
 *
 * @param text - Any text.
 * @param max - Longest result.
 */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text
  let end = Math.max(0, max)
  const code = text.charCodeAt(end - 1)
  if (code >= 0xd800 && code <= 0xdbff) end -= 1
  return text.slice(0, end)
}

/** Lines in a text (a trailing newline does not start another). */
export function lineCount(text: string): number {
  if (text === '') return 0
  let lines = 1
  for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1)) lines += 1
  return text.endsWith('\n') ? lines - 1 : lines
}

/** `3,000 lines, 123 kB` */
export function sizeLabel(text: string): string {
  const lines = lineCount(text)
  return `${formatCount(lines)} line${lines === 1 ? '' : 's'}, ${formatBytes(Buffer.byteLength(text))}`
}

/** Quotes a shell word when it needs it, so a printed command works when pasted. */
export function shellWord(word: string): string {
  return /^[\w./:@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
}

/** Texts longer than this (lines or characters) are collapsed behind their first lines. */
const COLLAPSE_LINES = 12
const COLLAPSE_CHARS = 1500
/** How much of a collapsed text stays visible. */
const PREVIEW_LINES = 6
const PREVIEW_CHARS = 600

/** How a long text is shown: its first lines, the rest behind `<details>`, cut at `cap` characters. */
export interface CollapseOptions {
  readonly className: string
  /** Most characters of this text the page may hold (the preview included). */
  readonly cap: number
  /** The command that prints the full text, for the truncation notice. */
  readonly fullTextCommand: string
}

/**
 * The truncation notice: how much is shown, and the command that prints everything.
 *
 * @param shown - Characters on the page.
 * @param text - The whole text.
 * @param command - The command printing it in full.
 */
export function truncationNotice(shown: number, text: string, command: string): string {
  return `<p class="truncated">Truncated: this page shows ${formatBytes(Buffer.byteLength(text.slice(0, shown)))} of ${escapeHtml(sizeLabel(text))}. Full text: <code>${escapeHtml(command)}</code></p>`
}

/**
 * A tool output or argument string: short ones whole, long ones collapsed (the first lines
 * visible, the rest behind a `<details>` with a line and byte count), and anything beyond
 * the cap left out with a notice naming the command that prints it.
 *
 * @param text - Untrusted text.
 * @param options - Class, cap and the full-text command.
 * @returns HTML.
 */
export function collapsible(text: string, options: CollapseOptions): string {
  const lines = lineCount(text)
  if (lines <= COLLAPSE_LINES && text.length <= COLLAPSE_CHARS && text.length <= options.cap) {
    return pre(text, options.className)
  }
  let headEnd = 0
  for (let line = 0; line < PREVIEW_LINES; line += 1) {
    const next = text.indexOf('\n', headEnd)
    if (next === -1) {
      headEnd = text.length
      break
    }
    headEnd = next + 1
  }
  const head = cut(text.slice(0, headEnd), Math.min(PREVIEW_CHARS, options.cap))
  const rest = text.slice(head.length)
  const shownRest = cut(rest, Math.max(0, options.cap - head.length))
  const truncated = shownRest.length < rest.length
  const notice = truncated
    ? truncationNotice(head.length + shownRest.length, text, options.fullTextCommand)
    : ''
  const body =
    shownRest === ''
      ? ''
      : `<details><summary>${escapeHtml(sizeLabel(text))}: show ${truncated ? 'more' : `the other ${formatCount(lineCount(rest))} line${lineCount(rest) === 1 ? '' : 's'}`}</summary><pre class="rest">${escapeHtml(shownRest)}</pre></details>`
  const label = shownRest === '' ? `<p class="size">${escapeHtml(sizeLabel(text))}</p>` : ''
  return `<div class="collapsible ${options.className}">${pre(head, 'preview')}${body}${label}${notice}</div>`
}
