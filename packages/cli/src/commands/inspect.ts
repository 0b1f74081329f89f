import type { PendingToolCall } from '@agent-ledger/loop-repair'
import type { SessionHeader } from '@agent-ledger/session-events'
import type { SessionStore } from '@agent-ledger/session-store'

import { flag, JSON_OPTION, NO_PAGER_OPTION, NO_PROGRESS_OPTION } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { errorJson, formatErrorLine } from '../report-error.ts'
import { displayPath } from '../session-path.ts'
import { tornTailView } from '../torn-tail.ts'
import { requireFiles, resolveTarget, STORE_OPTION } from '../store-target.ts'
import type { SessionLocation } from '../session-path.ts'
import { formatBytes, terminalSafe, truncate } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger inspect <session> [--json] [--no-progress]

Reads a session (read-only: no lock, no repair) and prints what it holds:
  - the header (id, created, cwd, parent session, seeded, format version, integrity),
  - the log files in the directory: every generation and encoding, quarantined torn
    tails (<log>.torn-<offset>), the writer lock (and who holds it), temp files,
  - event count, turns, surface size (model-visible messages), counters,
  - pending tool calls: assistant tool calls with no result yet; the next write open
    answers them with isError placeholders (TOOL_OUTCOME_UNKNOWN when a tool/call was
    logged, TOOL_NOT_STARTED when it was not),
  - an open compaction (a compaction/start without its compaction/end: harmless),
  - a torn tail or damage, if any.

Options:
  --json          one JSON object on stdout
  --no-progress   no progress lines on stderr
  --store S       a store directory (<session> is then a session id in it); a PostgreSQL
                  store is refused with UNSUPPORTED_BACKEND: this command works on files
  --no-pager      print directly, not through the pager (a terminal only)
  -h, --help      show this help

Exit codes:
  0  read (a torn tail is reported, not an error)
  1  the log is damaged (the good prefix is still described) or its header is refused
  2  usage or I/O error
`

function pendingText(call: PendingToolCall): string {
  const state =
    call.toolCallSeq === null
      ? `not started (would be answered TOOL_NOT_STARTED)`
      : `started at #${call.toolCallSeq} (would be answered TOOL_OUTCOME_UNKNOWN)`
  return `${terminalSafe(call.name)}(${terminalSafe(truncate(call.callId, 60))}) asked at #${call.assistantSeq}, ${state}`
}

function headerLines(read: { readonly header: SessionHeader | null }): string[] {
  const header = read.header
  if (header === null) return ['header: none (a crash during creation?): read as an empty session']
  const lines = [
    `session:     ${terminalSafe(header.id)}`,
    `created:     ${terminalSafe(header.createdAt)}`,
    `format:      ${terminalSafe(header.format)} v${header.version}${header.integrity === undefined ? '' : `, integrity ${terminalSafe(String(header.integrity))}`}`,
  ]
  if (header.cwd !== undefined) lines.push(`cwd:         ${terminalSafe(header.cwd)}`)
  if (header.parentSession !== undefined) lines.push(`parent:      ${terminalSafe(header.parentSession)}`)
  if (header.seeded !== undefined) {
    lines.push(
      `seeded:      ${String(header.seeded)}${header.inheritedEventCount === undefined ? '' : ` (${header.inheritedEventCount} inherited events)`}`,
    )
  }
  if (header.migratedFrom !== undefined)
    lines.push(`migrated:    from ${terminalSafe(JSON.stringify(header.migratedFrom))}`)
  return lines
}

async function runInspect(
  context: CommandContext,
  target: { readonly store: SessionStore; readonly location: SessionLocation },
  options: { readonly json: boolean },
): Promise<number> {
  const { location } = target
  const progress = new Progress(context.io, {
    label: 'inspect',
    unit: 'bytes',
    total: null,
    enabled: context.progressEnabled,
  })
  // The store classifies the directory: which log is current, whatever its encoding or generation.
  const entries = location.files.files
  progress.total = location.logBytes
  context.watchReads(location.logFile, (bytes) => progress.update(bytes))
  const opened = await target.store.openReader(location.id, { allowDamaged: true })
  const lock = location.files.lock
  const projection = opened.projection
  const surface = projection.surface()
  const events = opened.lastSeq + 1
  // The file facts beside the core's read: the log's size (read whole: no checkpoint is used).
  const read = {
    ...opened,
    headerMissing: false,
    tornTail: tornTailView(opened.tornTail),
    bytes: location.logBytes ?? 0,
    stats: {
      goodLines: events + 1,
      events,
      ignoredUnknown: projection.stats.ignoredUnknown,
      projection: projection.stats,
    },
  }
  const stats = read.stats
  const failed = read.error !== null
  if (options.json) {
    await context.out.write(
      `${stringifyJson(
        {
          session: location.id,
          directory: displayPath(location.directory, context.cwd),
          header: read.header,
          headerMissing: read.headerMissing,
          files: entries,
          generation:
            entries
              .filter((entry) => entry.current)
              .map((entry) => ({ file: entry.name, version: entry.version, encoding: entry.encoding }))[0] ??
            null,
          lock,
          events: stats.events,
          lastSeq: read.lastSeq,
          bytes: read.bytes,
          turns: stats.projection.turns,
          openTurn: projection.repairState.openTurn,
          surfaceSize: surface.length,
          pendingToolCalls: read.pendingToolCalls,
          openCompaction: projection.openCompaction,
          stats,
          tornTail: read.tornTail,
          damage: read.error === null ? null : errorJson(read.error, context.errorContext),
        },
        2,
      )}\n`,
    )
  } else {
    const lines = headerLines(read)
    lines.push(`directory:   ${displayPath(location.directory, context.cwd)}`)
    lines.push('files:')
    for (const entry of entries) {
      const what =
        entry.kind === 'log'
          ? `log v${entry.version} ${entry.encoding}${entry.current ? ' (current generation)' : ''}`
          : entry.kind === 'quarantine'
            ? 'quarantined torn tail'
            : entry.kind === 'lock'
              ? 'writer lock'
              : entry.kind === 'temp'
                ? 'temp file of an unfinished publish'
                : entry.kind === 'checkpoint'
                  ? 'projection checkpoint'
                  : entry.kind === 'search-index'
                    ? 'search index (derived from the log)'
                    : 'other'
      lines.push(`  ${terminalSafe(entry.name).padEnd(32)} ${formatBytes(entry.bytes).padStart(9)}  ${what}`)
    }
    if (lock !== null) {
      lines.push(
        `writer lock: held by pid ${terminalSafe(String(lock.pid))} on ${terminalSafe(String(lock.host))} since ${terminalSafe(String(lock.acquiredAt))} (heartbeat ${terminalSafe(String(lock.heartbeatAt))}); it may be stale`,
      )
    }
    lines.push(`events:      ${stats.events} (seq 0..${read.lastSeq}), ${formatBytes(read.bytes)} read`)
    const openTurn = projection.repairState.openTurn
    lines.push(
      `turns:       ${stats.projection.turns}${openTurn === null ? '' : `, turn ${openTurn.turn} open since #${openTurn.seq}`}`,
    )
    lines.push(`surface:     ${surface.length} model-visible message${surface.length === 1 ? '' : 's'}`)
    const counters: string[] = []
    if (stats.projection.replaces > 0) counters.push(`${stats.projection.replaces} replace(s)`)
    if (stats.ignoredUnknown > 0) counters.push(`${stats.ignoredUnknown} ignorable unknown event(s)`)
    if (stats.projection.pluginEvents > 0) counters.push(`${stats.projection.pluginEvents} plugin event(s)`)
    if (stats.projection.orphanToolResults > 0)
      counters.push(`${stats.projection.orphanToolResults} orphan tool result(s)`)
    if (stats.projection.duplicateToolResults > 0)
      counters.push(`${stats.projection.duplicateToolResults} duplicate tool result(s)`)
    if (stats.projection.nonMonotonicTime > 0)
      counters.push(`${stats.projection.nonMonotonicTime} event(s) with time going backwards`)
    if (counters.length > 0) lines.push(`counters:    ${counters.join(', ')}`)
    if (read.pendingToolCalls.length === 0) {
      lines.push('pending:     no unanswered tool calls')
    } else {
      lines.push(
        `pending:     ${read.pendingToolCalls.length} unanswered tool call(s); the next write open appends placeholders:`,
      )
      for (const call of read.pendingToolCalls) lines.push(`  ${pendingText(call)}`)
    }
    const open = projection.openCompaction
    lines.push(
      open === null
        ? 'compaction:  none open'
        : `compaction:  ${terminalSafe(open.compactionId)} open since #${open.seq} (hides ${open.startSeq}..${open.endSeq}, never finished: harmless, the surface is unchanged)`,
    )
    if (read.tornTail !== null) {
      lines.push(
        `torn tail:   ${read.tornTail.bytes} byte(s) at offset ${read.tornTail.offset} (${read.tornTail.reason}), never acknowledged; repaired on the next write open`,
      )
    }
    if (read.error !== null)
      lines.push(`damage:      ${read.error.code} (details on stderr); writes are refused`)
    await context.out.write(`${lines.join('\n')}\n`)
  }
  await context.out.flush()
  if (read.error !== null) context.io.stderr(formatErrorLine(read.error, context.errorContext))
  return failed ? ExitCode.DAMAGE : ExitCode.OK
}

/** `agent-ledger inspect`: what a session holds. */
export const inspectCommand: CommandSpec = {
  name: 'inspect',
  summary: 'header, files, generation, events, turns, surface size, pending calls, open compaction',
  help: HELP,
  options: {
    'no-pager': NO_PAGER_OPTION,
    json: JSON_OPTION,
    'no-progress': NO_PROGRESS_OPTION,
    store: STORE_OPTION,
  },
  pages: () => true,
  stdin: true,
  positionals: ['<session>'],
  async run(context, args) {
    const target = await resolveTarget(context, args)
    const location = requireFiles('inspect', target)
    return runInspect(context, { store: target.store, location }, { json: flag(args, 'json') })
  },
}
