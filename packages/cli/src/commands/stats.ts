import { readdir } from 'node:fs/promises'
import { resolve } from 'node:path'

import type { SessionStore } from '@agent-ledger/session-store'
import { LOG_FILE_PATTERN } from '@agent-ledger/session-store-jsonl/format'

import { flag, JSON_OPTION, NO_PAGER_OPTION, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import { errorJson, formatErrorLine } from '../report-error.ts'
import { duration, emptyStats, StatsCounter } from '../session-stats.ts'
import type { SessionStats } from '../session-stats.ts'
import { displayPath, jsonlStoreAt, resolveRoot, resolveSession } from '../session-path.ts'
import { listAllSessions, resolveSessionOrStore, scopeOf, STORE_OPTION } from '../store-target.ts'
import { countOf, formatCount, terminalSafe } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger stats <session|root> [--json] [--sort <column>]
       agent-ledger stats [<session-id>] --store <url|dir> [--json] [--sort <column>]

Counts what happened in a session, read-only: turns (and how they ended), messages by
role, tool calls by tool name with their error rate, repairs by code (placeholders
TOOL_OUTCOME_UNKNOWN / TOOL_NOT_STARTED and turns closed "interrupted"), compactions,
tokens (input, output, cached: the usage of every assistant message, summed) and
durations (per turn: turn/start to turn/end; total: first to last event).

Given a store root (a directory of sessions), prints one row per session and a totals
row; --sort orders the rows by a column, largest first (id: alphabetical).

Options:
  --json            one JSON document on stdout (a session, or {sessions, totals})
  --sort <column>   id, turns, messages, toolCalls, toolErrors, repairs, compactions,
                    inputTokens, outputTokens, cachedTokens, durationMs (default id)
  --store S         the store: a directory or a postgres:// URL (default $AGENT_LEDGER_STORE);
                    the argument is then a session id in it, or left out for every session
  --no-pager        print directly, not through the pager (a terminal only)
  -h, --help        show this help

Exit codes:
  0  counted
  1  a session is damaged (counted up to the damage; the error is printed)
  2  usage or I/O error
`

const SORT_COLUMNS = [
  'id',
  'turns',
  'messages',
  'toolCalls',
  'toolErrors',
  'repairs',
  'compactions',
  'inputTokens',
  'outputTokens',
  'cachedTokens',
  'durationMs',
] as const
type SortColumn = (typeof SORT_COLUMNS)[number]

async function sessionStats(store: SessionStore, id: string): Promise<SessionStats> {
  const counter = new StatsCounter(id)
  for await (const event of store.readEvents(id)) counter.add(event)
  return counter.finish()
}

function total(rows: readonly SessionStats[]): SessionStats {
  const sum = emptyStats('TOTAL')
  for (const row of rows) {
    sum.events += row.events
    sum.turns += row.turns
    for (const [key, value] of Object.entries(row.turnEnds))
      sum.turnEnds[key] = (sum.turnEnds[key] ?? 0) + value
    for (const role of ['system', 'user', 'assistant', 'tool'] as const)
      sum.messages[role] += row.messages[role]
    sum.toolCalls += row.toolCalls
    sum.toolErrors += row.toolErrors
    for (const [name, tool] of Object.entries(row.tools)) {
      const into = (sum.tools[name] ??= { calls: 0, errors: 0, errorRate: 0 })
      into.calls += tool.calls
      into.errors += tool.errors
    }
    for (const [key, value] of Object.entries(row.repairs)) sum.repairs[key] = (sum.repairs[key] ?? 0) + value
    sum.compactions += row.compactions
    sum.inputTokens += row.inputTokens
    sum.outputTokens += row.outputTokens
    sum.cachedTokens += row.cachedTokens
    sum.durationMs += row.durationMs
  }
  for (const tool of Object.values(sum.tools))
    tool.errorRate = tool.calls === 0 ? 0 : tool.errors / tool.calls
  return sum
}

function columnValue(row: SessionStats, column: SortColumn): number | string {
  if (column === 'id') return row.id
  if (column === 'messages')
    return row.messages.system + row.messages.user + row.messages.assistant + row.messages.tool
  if (column === 'repairs') return Object.values(row.repairs).reduce((a, b) => a + b, 0)
  return row[column]
}

function sessionText(stats: SessionStats): string {
  const n = formatCount
  const counts = (record: Record<string, number>): string =>
    Object.entries(record).length === 0
      ? 'none'
      : Object.entries(record)
          .map(([key, value]) => `${key} ${n(value)}`)
          .join(', ')
  const lines = [
    `session ${stats.id}: ${countOf(stats.events, 'event')} over ${duration(stats.durationMs)}`,
    `  turns: ${n(stats.turns)} (${counts(stats.turnEnds)})`,
    `  messages: ${n(stats.messages.system)} system, ${n(stats.messages.user)} user, ${n(stats.messages.assistant)} assistant, ${n(stats.messages.tool)} tool`,
    `  tool calls: ${n(stats.toolCalls)}, ${countOf(stats.toolErrors, 'error')}`,
    ...Object.entries(stats.tools)
      .sort((a, b) => b[1].calls - a[1].calls)
      .map(
        ([name, tool]) =>
          `    ${name}: ${countOf(tool.calls, 'call')}, ${countOf(tool.errors, 'error')} (${(tool.errorRate * 100).toFixed(0)}%)`,
      ),
    `  repairs: ${counts(stats.repairs)}`,
    `  compactions: ${n(stats.compactions)}`,
    `  tokens: ${n(stats.inputTokens)} input (${n(stats.cachedTokens)} cached), ${n(stats.outputTokens)} output`,
    ...stats.perTurn.map(
      (turn) =>
        `    turn ${turn.turn}: ${turn.durationMs === null ? 'not ended' : duration(turn.durationMs)}, ${n(turn.inputTokens)} in / ${n(turn.outputTokens)} out`,
    ),
  ]
  return `${lines.map((line) => terminalSafe(line)).join('\n')}\n`
}

function tableText(rows: readonly SessionStats[], totals: SessionStats): string {
  const header = [
    'id',
    'turns',
    'messages',
    'calls',
    'errors',
    'repairs',
    'compact',
    'in',
    'out',
    'cached',
    'duration',
  ]
  const cells = [...rows, totals].map((row) => [
    terminalSafe(row.id),
    formatCount(row.turns),
    formatCount(columnValue(row, 'messages') as number),
    formatCount(row.toolCalls),
    formatCount(row.toolErrors),
    formatCount(columnValue(row, 'repairs') as number),
    formatCount(row.compactions),
    formatCount(row.inputTokens),
    formatCount(row.outputTokens),
    formatCount(row.cachedTokens),
    duration(row.durationMs),
  ])
  const widths = header.map((title, column) =>
    Math.max(title.length, ...cells.map((row) => row[column]!.length)),
  )
  const line = (row: readonly string[]): string =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ')
  return `${[line(header), ...cells.map(line)].join('\n')}\n`
}

async function isSessionDirectory(path: string): Promise<boolean> {
  try {
    return (await readdir(path)).some((name) => LOG_FILE_PATTERN.test(name))
  } catch {
    return false
  }
}

/** `agent-ledger stats`: counts per session, or per session of a root with totals. */
export const statsCommand: CommandSpec = {
  name: 'stats',
  summary: 'turns, messages, tool calls and errors, repairs, compactions, tokens and durations',
  help: HELP,
  options: {
    'no-pager': NO_PAGER_OPTION,
    json: JSON_OPTION,
    sort: { type: 'string' },
    store: STORE_OPTION,
  },
  pages: () => true,
  stdin: true,
  positionals: ['<session|root>'],
  positionalsOptional: true,
  async run(context, args) {
    const json = flag(args, 'json')
    const sort = (text(args, 'sort') ?? 'id') as SortColumn
    if (!SORT_COLUMNS.includes(sort)) {
      throw usageError(`stats: expected --sort ${SORT_COLUMNS.join('|')}, found ${JSON.stringify(sort)}`)
    }
    const picked = await resolveSessionOrStore(context, args, 'stats')
    const argument = args.positionals[0]!
    if (
      picked?.kind === 'session' ||
      (picked === null && (await isSessionDirectory(resolve(context.cwd, argument))))
    ) {
      const one = picked?.kind === 'session' ? picked : null
      const location = one === null ? await resolveSession(argument, context) : null
      const stats = await sessionStats(
        one?.store ?? (await jsonlStoreAt(context, location!.root)),
        one?.id ?? location!.id,
      )
      await context.out.write(json ? `${stringifyJson(stats)}\n` : sessionText(stats))
      return ExitCode.OK
    }
    const scope =
      picked?.kind === 'store'
        ? picked.scope
        : await scopeOf(context, {
            kind: 'jsonl',
            root: await resolveRoot(argument, context.cwd),
            shown: displayPath(resolve(context.cwd, argument), context.cwd),
          })
    const store = scope.store
    const { sessions, problems } = await listAllSessions(store)
    const rows: SessionStats[] = []
    const failures: { id: string; error: unknown }[] = problems.map((problem) => ({
      id: problem.id,
      error: problem.error,
    }))
    for (const session of sessions) {
      try {
        rows.push(await sessionStats(store, session.id))
      } catch (error) {
        failures.push({ id: session.id, error })
      }
    }
    rows.sort((left, right) => {
      const a = columnValue(left, sort)
      const b = columnValue(right, sort)
      if (typeof a === 'string' || typeof b === 'string') return String(a).localeCompare(String(b))
      return b - a || left.id.localeCompare(right.id)
    })
    const totals = total(rows)
    if (json) {
      await context.out.write(
        `${stringifyJson({
          root: scope.where,
          sort,
          sessions: rows,
          totals,
          problems: failures.map((failure) => ({
            id: failure.id,
            error: errorJson(failure.error, context.errorContext),
          })),
        })}\n`,
      )
    } else {
      await context.out.write(tableText(rows, totals))
      for (const failure of failures) context.io.stderr(formatErrorLine(failure.error, context.errorContext))
    }
    return failures.length > 0 ? ExitCode.DAMAGE : ExitCode.OK
  },
}
