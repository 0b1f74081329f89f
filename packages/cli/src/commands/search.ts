import type { SearchHit } from '@agent-ledger/session-store'

import { flag, JSON_OPTION, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import { resolveScope, STORE_OPTION } from '../store-target.ts'
import { countOf, terminalSafe } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger search <query> --store <url|dir> [--session ID[,ID...]] [--limit N] [--cursor C] [--json]

Full-text search across the sessions of a store: message text (user, assistant, system,
reasoning, compaction summaries), tool names, tool-call arguments and tool results.

Query: words separated by spaces; each word matches case-insensitively anywhere in the
text (a substring: "migrat" finds "Migration"); every word must match in the same field of
one event; "a quoted phrase" matches its words in that order (any whitespace between).

On PostgreSQL the search uses the store's trigram index; on a directory store it scans the
logs (streaming: memory stays small, time grows with the store).

Output: one line per hit, in session id then seq order: session id, seq, field (text,
tool, arguments, result), and the text around the match (highlighted on a terminal).
Then the count, and the --cursor of the next page when there are more hits.

Options:
  --store S      the store: a directory or a postgres:// URL (default $AGENT_LEDGER_STORE)
  --session IDS  only these sessions (ids separated by commas)
  --limit N      at most N hits (1-1000, default 20)
  --cursor C     the next page of an earlier search (printed after a full page)
  --json         {"store", "query", "hits": [{"sessionId", "seq", "eventType", "field",
                 "snippet", "match": {"start", "end"}, "at"}], "nextCursor",
                 "unsearched": [{"sessionId", "code", "keyId"}]}; the snippet
                 is verbatim (escape it to show it), match offsets in UTF-16 code units
  -h, --help     show this help

Exit codes:
  0  searched (also when nothing matched)
  2  usage or I/O error (an empty query, a bad --limit or --cursor, no store)
`

const DEFAULT_LIMIT = 20

const HIGHLIGHT_ON = '\u001b[1;31m'
const HIGHLIGHT_OFF = '\u001b[0m'

function limitOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_LIMIT
  if (!/^[1-9][0-9]{0,3}$/.test(value) || Number(value) > 1000) {
    throw usageError(`search: --limit expects an integer from 1 to 1000, found ${JSON.stringify(value)}`)
  }
  return Number(value)
}

/** One hit as a line: the snippet on one line, control characters made visible, the match highlighted on a terminal. */
function hitLine(hit: SearchHit, highlight: boolean): string {
  const { snippet, match } = hit
  const before = terminalSafe(snippet.slice(0, match.start))
  const found = terminalSafe(snippet.slice(match.start, match.end))
  const after = terminalSafe(snippet.slice(match.end))
  const marked = highlight ? `${HIGHLIGHT_ON}${found}${HIGHLIGHT_OFF}` : found
  return `${terminalSafe(hit.sessionId)}  seq ${hit.seq}  ${hit.field}  ${before}${marked}${after}\n`
}

/** `agent-ledger search`: full-text search through `store.search`. */
export const searchCommand: CommandSpec = {
  name: 'search',
  summary: 'full-text search of message text, tool names, arguments and results across sessions',
  help: HELP,
  options: {
    store: STORE_OPTION,
    session: { type: 'string' },
    limit: { type: 'string' },
    cursor: { type: 'string' },
    json: JSON_OPTION,
  },
  positionals: ['<query>'],
  async run(context, args) {
    const [query] = args.positionals as [string]
    // The positional is the query, not a store root: the store comes from --store or the environment.
    const scope = await resolveScope(context, { ...args, positionals: [] }, 'search')
    if (scope === null) {
      throw usageError('search: expected --store <url|dir> or $AGENT_LEDGER_STORE, found neither')
    }
    const sessionIds = text(args, 'session')?.split(',')
    const page = await scope.store.search(query, {
      limit: limitOf(text(args, 'limit')),
      cursor: text(args, 'cursor') ?? null,
      ...(sessionIds === undefined ? {} : { sessionIds }),
      signal: context.io.signal,
    })
    if (flag(args, 'json')) {
      await context.out.write(
        `${stringifyJson({ store: scope.where, query, hits: page.hits, nextCursor: page.nextCursor, unsearched: page.unsearched ?? [] }, 2)}\n`,
      )
      return ExitCode.OK
    }
    const highlight = context.io.stdoutIsTerminal === true && context.env['NO_COLOR'] === undefined
    let output = ''
    for (const hit of page.hits) output += hitLine(hit, highlight)
    output += `${countOf(page.hits.length, 'hit')} in ${terminalSafe(scope.where)}${
      page.nextCursor === null ? '' : `; more: --cursor ${page.nextCursor}`
    }\n`
    await context.out.write(output)
    for (const skipped of page.unsearched ?? []) {
      context.io.stderr(
        `agent-ledger: warning: session ${terminalSafe(skipped.sessionId)} is encrypted under key ${terminalSafe(skipped.keyId)} and its data key is unavailable: not searched\n`,
      )
    }
    return ExitCode.OK
  },
}
