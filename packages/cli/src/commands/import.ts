import { stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { resolve } from 'node:path'

import { ImportError, ImportErrorCode, importEventRegistry, SOURCE_FORMATS } from '@agent-ledger/import'
import type { SourceFormat } from '@agent-ledger/import'

import { flag, JSON_OPTION, NO_PROGRESS_OPTION, seqOption, text } from '../args.ts'
import type { ParsedArgs } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { errorJson, formatErrorLine } from '../report-error.ts'
import { displayPath } from '../session-path.ts'
import { openStore } from '../open-store.ts'
import { parseStoreSpec, STORE_ENV, STORE_OPTION } from '../store-target.ts'
import { terminalSafe } from '../terminal-text.ts'
import { followSource } from './import-follow.ts'
import { defaultLocations, findSources } from './import-sources.ts'
import type { ImportSourceFile } from './import-sources.ts'
import { StoreSink } from './import-write.ts'
import { importOne } from './import-write.ts'
import type { SourceOutcome } from './import-write.ts'

function interval(args: ParsedArgs): number {
  const ms = seqOption(args, { command: 'import', name: 'interval' }) ?? 500
  if (ms < 10 || ms > 60_000)
    throw usageError(`import: expected --interval between 10 and 60000 ms, found ${ms}`)
  return ms
}

const HELP = `Usage: agent-ledger import <file|dir> [--from auto|claude-code|codex|pi|openhands]
                           [--root <dir> | --store <url|dir>] [--dry-run] [--lenient] [--json] [--no-progress]
       agent-ledger import --follow <file> [--interval <ms>] [--root <dir> | --store <url|dir>] [--json]
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
The file is read twice and never held: the events go through the store in batches. A
session of one batch is published complete or not at all; a larger one is created, then
appended batch by batch, and an import stopped in the middle is completed by the next one.

--follow keeps importing a log an agent is still writing, each time it changes, until
Ctrl-C: only what the complete lines settle is appended (a last line still being written is
waited for); on Ctrl-C one final import closes what the agent left open and adds the forks.

Options:
  --from <format>   the source format (default auto: detected from the content, which
                    must agree when a format is given)
  --root <dir>      the store root to import into (default ~/.agent-ledger/sessions)
  --store S         or the store to import into: a directory or a postgres:// URL
                    (default $AGENT_LEDGER_STORE when --root is not given)
  --dry-run         import in memory and print the report; write nothing
  --lenient         skip and count lines that are not JSON, lines over the store's line limit
                    and records the store cannot hold, instead of refusing the source
  --follow          keep importing one log file (or events directory) as it grows, until Ctrl-C
  --interval <ms>   with --follow: how often to look for changes (default 500)
  --scan            list the sessions found under each agent's default location, import nothing
  --home <dir>      with --scan: where the default locations are (default your home directory)
  --json            print one JSON document on stdout
  --no-progress     no progress lines on stderr (printed every second for long imports)
  -h, --help        show this help

Exit codes:
  0  every source imported (or listed)
  1  a source was refused: unrecognised format, malformed or torn line, a line too
     long or a record the store cannot hold (without --lenient), a .zst frame past
     the decompression limit, a FIFO or device (NOT_REGULAR_FILE), a stored session
     that is not a prefix of the new import (DIVERGED)
  2  usage or I/O error
`

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

/** A refusal that says the file is no session at all (in a directory walk, skipped rather than failed). */
function notASession(error: unknown): error is ImportError {
  return (
    ImportError.is(error) &&
    (error.code === ImportErrorCode.UNRECOGNIZED_FORMAT || error.code === ImportErrorCode.EMPTY_SOURCE)
  )
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
      // Claude Code transcripts are .jsonl; the .json files beside them are indexes and metadata.
      if (location.agent === 'claude-code' && !source.path.endsWith('.jsonl')) continue
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
      `${[item.agent, item.file, `${item.bytes} B`, item.modifiedAt].map((field) => terminalSafe(field)).join('\t')}\n`,
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
    follow: { type: 'boolean' },
    interval: { type: 'string' },
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
    const store = await openStore(
      spec ?? { kind: 'jsonl', root, shown: displayPath(root, context.cwd) },
      context.storeOptions({ clock: () => now, migrate: true, registry: importEventRegistry }),
    )
    context.adopt(store)
    const setTime = (time: string): void => {
      now = time
    }
    if (flag(args, 'follow')) {
      if (sources.length !== 1 || sources[0]!.kind === 'zst') {
        throw usageError(
          `import --follow: expected one log file or events directory still being written, found ${sources.length === 1 ? 'a compressed rollout (it is complete)' : `${sources.length} sources under ${shown}`}`,
        )
      }
      if (dryRun) throw usageError('import --follow: --dry-run cannot follow; run it without --follow')
      return followSource(context, {
        source: sources[0]!,
        file: displayPath(sources[0]!.path, context.cwd),
        from: from as SourceFormat | 'auto',
        lenient: flag(args, 'lenient'),
        store,
        setTime,
        json,
        pollMs: interval(args),
        root: spec?.kind === 'postgres' ? spec.shown : displayPath(root, context.cwd),
      })
    }
    const outcomes: SourceOutcome[] = []
    const failures: { file: string; error: unknown }[] = []
    // In a directory, a file that is no session (an agent's index or metadata .json, an empty
    // transcript) is skipped and listed, not a failure: ~/.claude/projects holds such files.
    const skipped: { file: string; code: string; reason: string }[] = []
    for (const source of sources) {
      const file = displayPath(source.path, context.cwd)
      const progress = new Progress(context.io, {
        label: `import ${file}`,
        unit: 'bytes',
        total: source.bytes,
        enabled: context.progressEnabled,
      })
      const sink = new StoreSink({ store, file, setTime, dryRun })
      try {
        const outcome = await importOne({
          source,
          file,
          from: from as SourceFormat | 'auto',
          lenient: flag(args, 'lenient'),
          sink,
          progress,
        })
        outcomes.push(outcome)
        if (!json) await context.out.write(summary(outcome))
      } catch (error) {
        await sink.close()
        if (sources.length === 1) throw error
        if (notASession(error)) {
          skipped.push({ file, code: error.code, reason: error.message })
          if (!json) context.notice('note', `skipped (${error.code}): ${error.message}`)
          continue
        }
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
          skipped,
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
