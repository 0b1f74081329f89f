import type { PruneReport } from '@agent-ledger/session-store'

import { flag, JSON_OPTION, NO_PROGRESS_OPTION, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import { Progress } from '../progress.ts'
import { resolveRoot } from '../session-path.ts'
import { resolveScope, scopeOf, STORE_OPTION } from '../store-target.ts'
import { countOf, formatBytes, terminalSafe } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger prune <root> --older-than <duration> [--keep N] [--compress-idle <duration>] [--dry-run] [--json] [--no-progress]
       agent-ledger prune --store <url|dir> --older-than <duration> [--keep N] [--compress-idle <duration>] [--dry-run] [--json]

Deletes whole sessions by age and count: every session last updated more than <duration>
ago, except the newest N (--keep). It first prints every session it is about to delete,
then deletes them one by one (each delete is atomic: a session is listed and opened whole
or not at all, also after a crash), and reports the bytes freed. A session with a live
writer lease is never deleted (reported as kept), nor one written after it was listed.
Forks are sessions of their own: deleting a parent leaves its forks whole. With
--compress-idle, the sessions it keeps that were last updated more than that long ago are
compressed instead (JSONL: zstd, the lines stay identical; a backend without compression
refuses the option and changes nothing).

Options:
  --older-than D  retire sessions last updated more than D ago: <n>s, <n>m, <n>h, <n>d, <n>w
                  (e.g. 90d)
  --keep N        keep the N most recently updated sessions whatever their age; with no
                  --older-than, retire all the others
  --compress-idle D
                  compress the kept sessions last updated more than D ago (same units);
                  alone, it deletes nothing
  --dry-run       print what would be deleted (and compressed) and the bytes it would free;
                  change nothing
  --json          the report: {"dryRun", "now", "cutoff", "keep", "examined",
                  "deleted": [{"id", "updatedAt", "bytes"}], "skipped": [{"id", "reason",
                  "message", "holder"?}], "bytesFreed", "compressed": [{"id",
                  "updatedAt", "changed"}]}
  --no-progress   no progress lines on stderr (else one a second on a long run)
  --store S       the store: a directory or a postgres:// URL (default $AGENT_LEDGER_STORE
                  when <root> is left out)
  -h, --help      show this help

Exit codes:
  0  pruned (or measured, with --dry-run); sessions kept for a live lease are listed
  2  usage or I/O error (no --older-than, --keep or --compress-idle, a bad duration, a
     missing root, --compress-idle on a backend that cannot compress)
`

const UNITS: Readonly<Record<string, number>> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
}

/**
 * A duration such as `90d` in milliseconds.
 *
 * @param value - `<n><unit>`, unit one of s, m, h, d, w.
 * @returns The milliseconds.
 * @throws {@link CliError} `USAGE` for anything else.
 */
function parseDuration(value: string, option = 'older-than'): number {
  const match = /^([1-9][0-9]{0,8})([smhdw])$/.exec(value)
  if (match === null) {
    throw usageError(
      `prune: --${option} expects a duration such as 90d (<n>s, <n>m, <n>h, <n>d or <n>w), found ${JSON.stringify(value)}`,
    )
  }
  return Number(match[1]) * UNITS[match[2]!]!
}

function parseKeep(value: string): number {
  if (!/^(0|[1-9][0-9]{0,8})$/.test(value)) {
    throw usageError(`prune: --keep expects a non-negative integer, found ${JSON.stringify(value)}`)
  }
  return Number(value)
}

function summary(report: PruneReport): string {
  const verb = report.dryRun ? 'would delete' : 'deleted'
  const live = report.skipped.filter((skip) => skip.reason === 'live-lease').length
  const compressed = report.compressed.filter((session) => session.changed).length
  const compressing =
    report.compressed.length === 0
      ? ''
      : `; ${report.dryRun ? 'would compress' : 'compressed'} ${countOf(compressed, 'idle session')}`
  return `prune: ${verb} ${countOf(report.deleted.length, 'session')} of ${report.examined}, ${report.dryRun ? 'would free' : 'freed'} ${formatBytes(report.bytesFreed)}${compressing}${live === 0 ? '' : `; kept ${countOf(live, 'session')} with a live lease`}${report.skipped.length > live ? `; ${report.skipped.length - live} other skipped` : ''}\n`
}

/** `agent-ledger prune`: retention by age and count through the store's delete. */
export const pruneCommand: CommandSpec = {
  name: 'prune',
  summary: 'delete sessions older than a duration (keeping the newest N), never a live one',
  help: HELP,
  options: {
    'older-than': { type: 'string' },
    keep: { type: 'string' },
    'compress-idle': { type: 'string' },
    'dry-run': { type: 'boolean' },
    json: JSON_OPTION,
    'no-progress': NO_PROGRESS_OPTION,
    store: STORE_OPTION,
  },
  writes: true,
  positionals: ['<root>'],
  positionalsOptional: true,
  async run(context, args) {
    if (args.positionals.length > 0 && args.values['store'] !== undefined) {
      throw usageError('prune: expected either <root> or --store, found both; run agent-ledger prune --help')
    }
    const olderThan = text(args, 'older-than')
    const keepText = text(args, 'keep')
    const compressIdle = text(args, 'compress-idle')
    if (olderThan === undefined && keepText === undefined && compressIdle === undefined) {
      throw usageError(
        'prune: expected --older-than <duration>, --keep <N>, --compress-idle <duration> or a mix, found none; run agent-ledger prune --help',
      )
    }
    const compressIdleMs =
      compressIdle === undefined ? undefined : parseDuration(compressIdle, 'compress-idle')
    const olderThanMs = olderThan === undefined ? undefined : parseDuration(olderThan)
    const keep = keepText === undefined ? undefined : parseKeep(keepText)
    const scope =
      (await resolveScope(context, args, 'prune')) ??
      (await scopeOf(context, {
        kind: 'jsonl',
        root: await resolveRoot(args.positionals[0]!, context.cwd),
        shown: args.positionals[0]!,
      }))
    const json = flag(args, 'json')
    const dryRun = flag(args, 'dry-run')
    const progress = new Progress(context.io, {
      label: 'prune',
      unit: 'sessions',
      total: null,
      enabled: context.progressEnabled,
    })
    const report = await scope.store.prune({
      olderThanMs,
      keep,
      compressIdleMs,
      dryRun,
      onPlan: async (sessions, plan) => {
        if (json) return
        const listing = (planned: readonly { id: string; updatedAt: string | undefined }[]): string =>
          planned
            .map(
              (session) => `  ${terminalSafe(session.id)}  last updated ${session.updatedAt ?? 'unknown'}\n`,
            )
            .join('')
        // The plan first, on stdout, before anything is deleted.
        await context.out.write(
          `prune: the policy retires ${countOf(sessions.length, 'session')} of ${terminalSafe(scope.where)} (${dryRun ? 'measuring' : 'deleting'} each unless a live writer holds it):\n${listing(sessions)}${
            compressIdleMs === undefined
              ? ''
              : `prune: ${countOf(plan.compress.length, 'kept session')} idle for more than ${compressIdle!}, ${dryRun ? 'to compress' : 'compressing each'} (already compressed ones are left as they are):\n${listing(plan.compress)}`
          }`,
        )
        await context.out.flush()
      },
      onProgress: (step) => {
        progress.total = step.total ?? null
        progress.update(step.done, step.phase)
      },
    })
    if (json) {
      await context.out.write(`${stringifyJson({ store: scope.where, ...report })}\n`)
    } else {
      let output = ''
      for (const deleted of report.deleted) {
        output += `${dryRun ? 'would delete' : 'deleted'} ${terminalSafe(deleted.id)} (${formatBytes(deleted.bytes)})\n`
      }
      for (const session of report.compressed) {
        output += `${dryRun ? 'would compress' : session.changed ? 'compressed' : 'already compressed'} ${terminalSafe(session.id)}\n`
      }
      for (const skip of report.skipped) {
        output += `kept ${terminalSafe(skip.id)} (${skip.reason}): ${terminalSafe(skip.message)}\n`
      }
      await context.out.write(output + summary(report))
    }
    await context.out.flush()
    return ExitCode.OK
  },
}
