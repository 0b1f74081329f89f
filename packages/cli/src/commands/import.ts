import { stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { resolve } from 'node:path'

import {
  importEventRegistry,
  ImportError,
  importSource,
  planIncrement,
  SOURCE_FORMATS,
} from '@agent-ledger/import'
import type { ImportedSession, ImportReport, ImportResult, SourceFormat } from '@agent-ledger/import'
import type { LoggedEvent } from '@agent-ledger/session-events'
import {
  createSessionStore,
  DEFAULT_REDACTION_POLICY,
  JsonlErrorCode,
  JsonlStoreError,
} from '@agent-ledger/session-store-jsonl'
import { redactJson } from '@agent-ledger/session-store-jsonl/format'
import type { SessionStore } from '@agent-ledger/session-store-jsonl'
import { SessionStoreError } from '@agent-ledger/session-store'
import type { SessionStore as CoreStore } from '@agent-ledger/session-store'

import { flag, JSON_OPTION, NO_PROGRESS_OPTION, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { errorJson, formatErrorLine } from '../report-error.ts'
import { displayPath } from '../session-path.ts'
import { coreStore, openBackend } from '../open-store.ts'
import { parseStoreSpec, STORE_ENV, STORE_OPTION } from '../store-target.ts'
import { terminalSafe } from '../terminal-text.ts'
import { createThroughCore } from './import-core.ts'
import { defaultLocations, findSources, openSource } from './import-sources.ts'
import type { ImportSourceFile } from './import-sources.ts'

const HELP = `Usage: agent-ledger import <file|dir> [--from auto|claude-code|codex|pi|openhands]
                           [--root <dir> | --store <url|dir>] [--dry-run] [--lenient] [--json] [--no-progress]
       agent-ledger import --scan [--home <dir>] [--json]

Imports other agents' session logs into a store root as agent-ledger sessions (format v4):
Claude Code transcripts (~/.claude/projects/**.jsonl, sub-agent files included), Codex CLI
rollouts (~/.codex/sessions/**/rollout-*.jsonl and .jsonl.zst), pi-mono sessions (v1 to v3)
and OpenHands events (a V0 trajectory .json, or an events/ directory of V0 or V1 SDK events).

Each source becomes a session whose id is derived from the source's own id
(claude-<sessionId>, codex-<id>, pi-<id>, openhands-<name>); a tree's other branches become
forks of it (parentSession, seeded at the branch point), a Claude Code sidechain a session
of its own. Every source record is kept verbatim (an ignorable import/source-record event
with its line), so nothing is lost; what could not be mapped exactly is counted in the
report. Calls the source never answered get the placeholders a resume gives.

Importing again changes nothing; importing a source that grew appends only its new events.
A session is published complete or not at all.

Options:
  --from <format>   the source format (default auto: detected from the content, which
                    must agree when a format is given)
  --root <dir>      the store root to import into (default ~/.agent-ledger/sessions)
  --store S         or the store to import into: a directory or a postgres:// URL
                    (default $AGENT_LEDGER_STORE when --root is not given)
  --dry-run         import in memory and print the report; write nothing
  --lenient         skip and count lines that are not JSON instead of refusing the source
  --scan            list the sessions found under each agent's default location, import nothing
  --home <dir>      with --scan: where the default locations are (default your home directory)
  --json            print one JSON document on stdout
  --no-progress     no progress lines on stderr (printed every second for long imports)
  -h, --help        show this help

Exit codes:
  0  every source imported (or listed)
  1  a source was refused: unrecognised format, malformed or torn line (without
     --lenient), a stored session that is not a prefix of the new import (DIVERGED)
  2  usage or I/O error
`

interface SessionOutcome {
  readonly id: string
  readonly role: string
  readonly events: number
  readonly action: 'created' | 'unchanged' | 'appended' | 'would-create'
  readonly appended?: number
}

interface SourceOutcome {
  readonly file: string
  readonly format: SourceFormat
  readonly formatVersion: string
  readonly detection: string
  readonly report: ImportReport
  readonly sessions: readonly SessionOutcome[]
}

/** What the store would write for an event (its redaction), for comparing with what it holds. */
function redacted(event: LoggedEvent): LoggedEvent {
  const data = redactJson(event.data, (value) => DEFAULT_REDACTION_POLICY.redact(value))
  return data === event.data ? event : ({ ...event, data } as LoggedEvent)
}

async function storedEvents(store: SessionStore | CoreStore, id: string): Promise<LoggedEvent[] | null> {
  const events: LoggedEvent[] = []
  try {
    for await (const event of store.readEvents(id)) events.push(event)
  } catch (error) {
    if (JsonlStoreError.is(error) && error.code === JsonlErrorCode.SESSION_NOT_FOUND) return null
    if (SessionStoreError.is(error, 'SESSION_NOT_FOUND')) return null
    throw error
  }
  return events
}

async function writeSession(
  target: {
    readonly store: SessionStore | CoreStore
    readonly setTime: (time: string) => void
    readonly file: string
  },
  session: ImportedSession,
): Promise<SessionOutcome> {
  const { store } = target
  const base = { id: session.id, role: session.role, events: session.events.length }
  const stored = await storedEvents(store, session.id)
  if (stored === null) {
    target.setTime(session.header.createdAt)
    const writer =
      'backend' in store
        ? await createThroughCore(store, session, {
            registry: importEventRegistry,
            clock: () => session.header.createdAt,
          })
        : await store.create({ id: session.id, header: session.header, seed: session.events })
    await writer.close()
    return { ...base, action: 'created' }
  }
  const plan = planIncrement(stored, session.events, { file: target.file, normalize: redacted })
  if (plan.kind === 'unchanged') return { ...base, action: 'unchanged' }
  const writer = await store.openWriter(session.id)
  try {
    if (writer.projection.nextSeq !== plan.events[0]!.seq) {
      throw new ImportError({
        code: 'DIVERGED',
        file: target.file,
        message: `${target.file}: expected session ${session.id} to end at seq ${plan.events[0]!.seq - 1}, found it ends at seq ${writer.projection.nextSeq - 1} after opening (it was changed since it was read); nothing appended`,
      })
    }
    for (const event of plan.events) {
      target.setTime(event.time)
      const input: Record<string, unknown> = { type: event.type, data: event.data }
      if (event.surfaceOp !== undefined) input['surfaceOp'] = event.surfaceOp
      if (event.sourceEventSeqs !== undefined) input['sourceEventSeqs'] = event.sourceEventSeqs
      if (event.ignorable === true) input['ignorable'] = true
      writer.append(input as Parameters<typeof writer.append>[0])
    }
    await writer.flush()
  } finally {
    await writer.close()
  }
  return { ...base, action: 'appended', appended: plan.events.length }
}

function summary(outcome: SourceOutcome): string {
  const { report } = outcome
  const lossy = Object.entries(report.lossy)
    .map(([key, value]) => `${key} ${value}`)
    .join(', ')
  const repairs = Object.entries(report.repairs)
    .map(([key, value]) => `${key} ${value}`)
    .join(', ')
  const lines = [
    `${outcome.file}: ${outcome.format} ${outcome.formatVersion} (${outcome.detection})`,
    `  ${report.records} records in ${report.lines} lines${report.malformedLines > 0 ? `, ${report.malformedLines} malformed skipped` : ''}; ` +
      `messages ${report.messages.system} system, ${report.messages.user} user, ${report.messages.assistant} assistant, ${report.messages.tool} tool; ` +
      `${report.toolCalls} tool calls, ${report.turns} turns, ${report.compactions} compactions, ${report.forks} forks`,
    `  repairs: ${repairs === '' ? 'none' : repairs}`,
    `  lossy: ${lossy === '' ? 'none' : lossy}`,
    ...report.diagnostics
      .slice(0, 10)
      .map((finding) => `  line ${finding.line}: ${finding.code}: ${finding.message}`),
    ...outcome.sessions.map(
      (session) =>
        `  ${session.action} ${session.id} (${session.role}): ${session.action === 'appended' ? `${session.appended} new events` : `${session.events} events`}`,
    ),
  ]
  return `${lines.map((line) => terminalSafe(line)).join('\n')}\n`
}

async function runScan(context: CommandContext, home: string, json: boolean): Promise<number> {
  const found: { agent: string; file: string; bytes: number; modifiedAt: string }[] = []
  for (const location of defaultLocations(home)) {
    let sources: ImportSourceFile[]
    try {
      if (!(await stat(location.path)).isDirectory()) continue
      sources = await findSources(location.path, location.path)
    } catch {
      continue
    }
    for (const source of sources) {
      if (location.agent === 'codex' && !/rollout-.*\.jsonl(\.zst)?$/.test(source.path)) continue
      const info = await stat(source.path)
      found.push({
        agent: location.agent,
        file: displayPath(source.path, context.cwd),
        bytes: source.bytes,
        modifiedAt: info.mtime.toISOString(),
      })
    }
  }
  if (json) {
    await context.out.write(`${stringifyJson({ home, sessions: found })}\n`)
    return ExitCode.OK
  }
  for (const item of found) {
    await context.out.write(
      `${terminalSafe(`${item.agent}\t${item.file}\t${item.bytes} B\t${item.modifiedAt}`)}\n`,
    )
  }
  await context.out.write(`${found.length} session file(s) found under ${terminalSafe(home)}\n`)
  return ExitCode.OK
}

/** `agent-ledger import`: other agents' logs into a store root. */
export const importCommand: CommandSpec = {
  name: 'import',
  summary: 'import Claude Code, Codex, pi or OpenHands logs as sessions (or --scan for them)',
  help: HELP,
  options: {
    from: { type: 'string' },
    root: { type: 'string' },
    store: STORE_OPTION,
    home: { type: 'string' },
    'dry-run': { type: 'boolean' },
    lenient: { type: 'boolean' },
    scan: { type: 'boolean' },
    json: JSON_OPTION,
    'no-progress': NO_PROGRESS_OPTION,
  },
  positionals: ['<file|dir>'],
  positionalsOptional: true,
  writes: true,
  async run(context, args) {
    const json = flag(args, 'json')
    if (flag(args, 'scan')) {
      if (args.positionals.length > 0)
        throw usageError('import: expected no <file|dir> with --scan, found one')
      return runScan(context, resolve(context.cwd, text(args, 'home') ?? homedir()), json)
    }
    const target = args.positionals[0]
    if (target === undefined)
      throw usageError('import: expected <file|dir> (or --scan), found none; run agent-ledger import --help')
    const from = text(args, 'from') ?? 'auto'
    if (from !== 'auto' && !(SOURCE_FORMATS as readonly string[]).includes(from)) {
      throw usageError(
        `import: expected --from auto, ${SOURCE_FORMATS.join(', ')}, found ${JSON.stringify(from)}`,
      )
    }
    const dryRun = flag(args, 'dry-run')
    const path = resolve(context.cwd, target)
    const shown = displayPath(path, context.cwd)
    const sources = await findSources(path, shown)
    if (sources.length === 0) throw usageError(`import: expected session logs under ${shown}, found none`)
    if (text(args, 'root') !== undefined && text(args, 'store') !== undefined) {
      throw usageError('import: expected --root <dir> or --store <url|dir>, found both')
    }
    const storeValue =
      text(args, 'store') ??
      (text(args, 'root') === undefined ? context.env[STORE_ENV] || undefined : undefined)
    const spec = storeValue === undefined ? null : parseStoreSpec(storeValue, context.cwd)
    const root =
      spec?.kind === 'jsonl'
        ? spec.root
        : resolve(context.cwd, text(args, 'root') ?? resolve(homedir(), '.agent-ledger', 'sessions'))
    context.root = spec?.kind === 'postgres' ? null : root
    let now = '1970-01-01T00:00:00.000Z'
    // Appended events keep the source's times: the clock answers the time of the event being written.
    const store: SessionStore | CoreStore =
      spec?.kind === 'postgres'
        ? coreStore(await openBackend(spec, { migrate: true }), () => now, importEventRegistry)
        : createSessionStore({
            root,
            registry: importEventRegistry,
            clock: () => now,
            logger: { warn: (message) => context.notice('warning', message) },
          })
    if (spec?.kind === 'postgres') context.adopt(store as CoreStore)
    const outcomes: SourceOutcome[] = []
    const failures: { file: string; error: unknown }[] = []
    for (const source of sources) {
      const file = displayPath(source.path, context.cwd)
      const progress = new Progress(context.io, {
        label: `import ${file}`,
        unit: 'bytes',
        total: source.bytes,
        enabled: context.progressEnabled,
      })
      try {
        const opened = openSource(source, (bytes) => progress.update(bytes))
        const result: ImportResult = await importSource(opened.lines, {
          file,
          sha256: () => opened.digest(),
          from: from as SourceFormat | 'auto',
          lenient: flag(args, 'lenient'),
          sourceName: source.sourceName,
        })
        const sessions: SessionOutcome[] = []
        for (const session of result.sessions) {
          if (dryRun) {
            sessions.push({
              id: session.id,
              role: session.role,
              events: session.events.length,
              action: 'would-create',
            })
            continue
          }
          sessions.push(await writeSession({ store, file, setTime: (time) => (now = time) }, session))
        }
        const outcome: SourceOutcome = {
          file,
          format: result.format,
          formatVersion: result.formatVersion,
          detection: result.detection,
          report: result.report,
          sessions,
        }
        outcomes.push(outcome)
        if (!json) await context.out.write(summary(outcome))
      } catch (error) {
        if (sources.length === 1) throw error
        failures.push({ file, error })
        if (!json) context.io.stderr(formatErrorLine(error, context.errorContext))
      }
    }
    if (json) {
      await context.out.write(
        `${stringifyJson({
          root: dryRun ? null : spec?.kind === 'postgres' ? spec.shown : displayPath(root, context.cwd),
          dryRun,
          sources: outcomes,
          failures: failures.map((failure) => ({
            file: failure.file,
            error: errorJson(failure.error, context.errorContext),
          })),
        })}\n`,
      )
    }
    return failures.length > 0 ? ExitCode.DAMAGE : ExitCode.OK
  },
}
