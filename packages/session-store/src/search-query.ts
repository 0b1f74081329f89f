/**
 * Full-text search, the pure part: what of an event is searchable (its fields), the query
 * language (case-insensitive terms, all required, `"quoted phrases"`), the matcher, the
 * snippet around a match, and the opaque page cursor. Every backend's hits go through this
 * one matcher, so a query means the same on every backend; a backend index only narrows the
 * lines the core looks at (see `SearchCapability`).
 */
import type { LoggedEvent } from '@agent-ledger/session-events'

import { invalidOption } from './checks.ts'

/** The searchable fields of an event, in the order hits of one event are listed. */
export const SEARCH_FIELDS = ['text', 'tool', 'arguments', 'result'] as const
/** Which part of an event a hit is in: message text, a tool name, tool-call arguments, a tool result. */
export type SearchField = (typeof SEARCH_FIELDS)[number]

/** The longest query accepted, in characters. */
const MAX_QUERY_LENGTH = 1000
/** The most terms and phrases in one query. */
const MAX_QUERY_TERMS = 32
/** Characters of context kept before and after the match in a snippet. */
const SNIPPET_BEFORE = 60
const SNIPPET_AFTER = 100
const ELLIPSIS = '…'

/** A parsed query: every term and every phrase must match the same field of one event. */
export interface ParsedQuery {
  /** Bare terms, as written (matched case-insensitively as substrings). */
  readonly terms: readonly string[]
  /** Quoted phrases, each its words (matched in order, separated by any whitespace). */
  readonly phrases: readonly (readonly string[])[]
  /**
   * Lowercase ASCII fragments every matching event line contains as written in its JSON
   * text (terms and phrase words of printable ASCII without `"` and `\`, which JSON
   * escapes): what an index or a raw-line prefilter may require. Empty: no prefilter.
   */
  readonly fragments: readonly string[]
}

/** A match in a field's text: [start, end) in UTF-16 code units. */
interface Span {
  readonly start: number
  readonly end: number
}

/** A compiled query: tests a field's text and finds where to cut its snippet. */
export interface QueryMatcher {
  readonly query: ParsedQuery
  /** The earliest match of any term when every term and phrase matches `text`; null otherwise. */
  match(text: string): Span | null
  /**
   * Whether a raw event line may match: every fragment present, case-insensitively as the
   * matcher compares (ASCII case, and U+212A and U+017F, which fold to `k` and `s`).
   */
  lineMayMatch(line: string): boolean
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/gu, '\\$&')
}

/** Printable ASCII other than `"` and `\`: written verbatim by `JSON.stringify`. */
const VERBATIM_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/u

/**
 * Parses a query: whitespace separates terms; `"..."` is a phrase (an unclosed quote runs
 * to the end). Terms and phrases are matched case-insensitively as substrings.
 *
 * @param query - The user's query.
 * @returns The terms and phrases.
 * @throws {@link SessionStoreError} `INVALID_OPTION` (option `query`): not a string, empty or
 *   only quotes and whitespace, longer than 1000 characters, more than 32 terms.
 */
export function parseQuery(query: unknown): ParsedQuery {
  if (typeof query !== 'string') throw invalidOption('query', 'a string', query)
  if (query.length > MAX_QUERY_LENGTH) {
    throw invalidOption('query', `at most ${MAX_QUERY_LENGTH} characters`, `${query.length} characters`)
  }
  const terms: string[] = []
  const phrases: string[][] = []
  const parts = query.split('"')
  for (const [index, part] of parts.entries()) {
    const words = part.split(/\s+/u).filter((word) => word !== '')
    if (words.length === 0) continue
    // Odd parts are inside quotes (an unclosed quote's tail too).
    if (index % 2 === 1 && words.length > 1) phrases.push(words)
    else terms.push(...words)
  }
  if (terms.length + phrases.length === 0) {
    throw invalidOption('query', 'at least one term (a word or a "quoted phrase")', query)
  }
  if (terms.length + phrases.length > MAX_QUERY_TERMS) {
    throw invalidOption('query', `at most ${MAX_QUERY_TERMS} terms and phrases`, query)
  }
  const fragments = new Set<string>()
  for (const word of [...terms, ...phrases.flat()]) {
    if (VERBATIM_ASCII.test(word)) fragments.add(word.toLowerCase())
  }
  return { terms, phrases, fragments: [...fragments] }
}

/**
 * Compiles a parsed query.
 *
 * @param query - From {@link parseQuery}.
 * @returns The matcher.
 */
export function compileQuery(query: ParsedQuery): QueryMatcher {
  const patterns = [
    ...query.terms.map((term) => escapeRegExp(term)),
    ...query.phrases.map((words) => words.map((word) => escapeRegExp(word)).join('\\s+')),
  ].map((source) => new RegExp(source, 'iu'))
  // `u` as the matcher: `/k/iu` also finds U+212A KELVIN SIGN and `/s/iu` U+017F LONG S.
  const fragments = query.fragments.map((fragment) => new RegExp(escapeRegExp(fragment), 'iu'))
  return {
    query,
    match(text) {
      let best: Span | null = null
      for (const pattern of patterns) {
        const found = pattern.exec(text)
        if (found === null) return null
        const span = { start: found.index, end: found.index + found[0].length }
        if (best === null || span.start < best.start) best = span
      }
      return best
    },
    lineMayMatch(line) {
      for (const fragment of fragments) if (!fragment.test(line)) return false
      return true
    },
  }
}

function messageText(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((part: unknown) => {
      const { type, text } = record(part)
      return type === 'text' && typeof text === 'string' ? text : ''
    })
    .filter((text) => text !== '')
    .join('\n')
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {}
}

function joined(parts: readonly unknown[]): string {
  return parts.filter((part): part is string => typeof part === 'string' && part !== '').join('\n')
}

/**
 * The searchable text of an event, by field: message text (content text parts, reasoning,
 * a compaction summary), tool names and tool-call arguments (of `tool/call` and of an
 * assistant message's `tool_calls`), tool results. Several parts of one field are joined by
 * newlines. Other events have no searchable text.
 *
 * @param event - A logged event (checked by the core).
 * @returns The non-empty fields, in {@link SEARCH_FIELDS} order.
 */
export function searchableFields(event: LoggedEvent): readonly { field: SearchField; text: string }[] {
  const data = record(event.data)
  const message = record(data['message'])
  const fields: Partial<Record<SearchField, string>> = {}
  switch (event.type) {
    case 'system/message':
    case 'user/message':
      fields.text = messageText(message['content'])
      break
    case 'assistant/message': {
      fields.text = joined([messageText(message['content']), message['reasoning_content']])
      const calls = Array.isArray(message['tool_calls']) ? message['tool_calls'] : []
      const functions = calls.map((call) => record(record(call)['function']))
      fields.tool = joined(functions.map((fn) => fn['name']))
      fields.arguments = joined(functions.map((fn) => fn['arguments']))
      break
    }
    case 'tool/call':
      fields.tool = joined([data['name']])
      fields.arguments = joined([data['arguments']])
      break
    case 'tool/result':
      fields.result = messageText(message['content'])
      break
    case 'compaction/summary':
      fields.text = joined([data['summary']])
      break
    default:
      break
  }
  return SEARCH_FIELDS.flatMap((field) => {
    const text = fields[field]
    return text === undefined || text === '' ? [] : [{ field, text }]
  })
}

function isLowSurrogate(text: string, index: number): boolean {
  const code = text.charCodeAt(index)
  return code >= 0xdc00 && code <= 0xdfff
}

/**
 * The text around a match, verbatim (no escaping: a renderer escapes), with `…` where it
 * was cut; never splits a surrogate pair.
 *
 * @param text - The field's text.
 * @param span - The match in `text`.
 * @returns The snippet and the match's place in it.
 */
export function snippetOf(text: string, span: Span): { snippet: string; match: Span } {
  let start = Math.max(0, span.start - SNIPPET_BEFORE)
  let end = Math.min(text.length, span.end + SNIPPET_AFTER)
  if (start > 0 && isLowSurrogate(text, start)) start -= 1
  if (end < text.length && isLowSurrogate(text, end)) end += 1
  const prefix = start > 0 ? ELLIPSIS : ''
  const snippet = `${prefix}${text.slice(start, end)}${end < text.length ? ELLIPSIS : ''}`
  const offset = prefix.length - start
  return { snippet, match: { start: span.start + offset, end: span.end + offset } }
}

/** Where a page of hits ended: the last hit's session, seq and field (hits are in that order). */
export interface SearchPosition {
  readonly sessionId: string
  readonly seq: number
  /** The index of the hit's field in {@link SEARCH_FIELDS}. */
  readonly field: number
}

const CURSOR_PREFIX = 's1.'

/** The opaque cursor of a position. */
export function encodeCursor(position: SearchPosition): string {
  return `${CURSOR_PREFIX}${position.seq}.${position.field}.${position.sessionId}`
}

/**
 * The position of a cursor {@link encodeCursor} made.
 *
 * @throws {@link SessionStoreError} `INVALID_OPTION` (option `cursor`) for anything else.
 */
export function decodeCursor(cursor: unknown): SearchPosition {
  const found =
    typeof cursor === 'string'
      ? /^s1\.(0|[1-9]\d{0,15})\.([0-3])\.([A-Za-z0-9_-]{1,128})$/u.exec(cursor)
      : null
  const seq = found === null ? NaN : Number(found[1])
  if (found === null || !Number.isSafeInteger(seq)) {
    throw invalidOption('cursor', 'the nextCursor of an earlier search page, or null', cursor)
  }
  return { seq, field: Number(found[2]), sessionId: found[3] as string }
}
