import { join } from 'node:path'

import { flag, JSON_OPTION, NO_PROGRESS_OPTION } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { Progress } from '../progress.ts'
import { errorJson, formatErrorLine, shownFile } from '../report-error.ts'
import { displayPath, filesOf } from '../session-path.ts'
import { resolveTarget, STORE_OPTION } from '../store-target.ts'
import type { SessionTarget } from '../open-store.ts'
import { formatBytes } from '../terminal-text.ts'
import { tornTailView } from '../torn-tail.ts'
import type { TornTailView } from '../torn-tail.ts'

const HELP = `Usage: agent-ledger verify <session> [--strict] [--json] [--no-progress] [--store <url|dir>]

Scans the whole log of a session, read-only, and checks every line: the newline
terminator, size, UTF-8, JSON, nesting depth, CRC-32C checksum, seq density (dense from
0), known event types and the projection rules. Nothing is written, locked or repaired.

<session> is a session directory (its parent is the store root, its name the session id)
or a log file inside one (session.v4.jsonl, session.v4.jsonl.zstd, or an older
generation such as session.jsonl, read through an in-memory migration).

Outcomes:
  ok          every byte is a good line.
  torn tail   good lines, then bytes that were never acknowledged (a crash cut a write
              short, or garbage after the last newline). This is expected crash debris:
              the next write open quarantines the bytes to <log>.torn-<offset> and
              truncates the log to its last good line. A live writer's line in progress
              also shows as a torn tail.
  damaged     a bad line FOLLOWED by valid data (bit flip, seq gap, duplicate, unknown
              type...): writes are refused; "agent-ledger salvage" copies the good prefix
              into a new session.

Options:
  --strict        treat a torn tail as a failure (exit 1)
  --json          print the report as one JSON object on stdout
  --no-progress   no progress lines on stderr (printed every second for long scans)
  --store S       the store: a directory or a postgres:// URL (default $AGENT_LEDGER_STORE);
                  <session> is then a session id in it. On PostgreSQL every stored line is
                  checked the same way (checksum, dense seq, types, rules)
  -h, --help      show this help

Exit codes:
  0  intact, or a torn tail without --strict (a warning line is printed on stderr)
  1  damaged (the typed code, line, byte offset, seq and last good seq are printed),
     a refused header (VERSION_TOO_NEW, INVALID_HEADER), or a torn tail with --strict
  2  usage or I/O error (no such session, permission denied...)
`

function tornTailText(tail: TornTailView): string {
  const why =
    tail.reason === 'unterminated'
      ? 'an unterminated last line (a write cut short, or a live writer in progress)'
      : 'bytes failing the line checks after the last good line'
  return `${tail.bytes} byte${tail.bytes === 1 ? '' : 's'} from line ${tail.line} (offset ${tail.offset}): ${why}`
}

/**
 * The full scan of a session, reported the same way on every store; a directory store adds
 * its file facts (the log read, its size) from the JSONL backend's `files` capability.
 */
async function runVerify(
  context: CommandContext,
  target: SessionTarget,
  options: { readonly json: boolean; readonly strict: boolean },
): Promise<number> {
  const { location } = target
  const progress = new Progress(context.io, {
    label: 'verify',
    unit: 'bytes',
    total: location?.logBytes ?? null,
    enabled: context.progressEnabled && location !== null,
  })
  if (location !== null) context.watchReads(location.logFile, (bytes) => progress.update(bytes))
  const report = await target.store.verify(target.id)
  const tornTail = tornTailView(report.tornTail)
  // The file the store verified (any encoding or generation), as the user sees paths.
  const file =
    location === null
      ? null
      : (report.damage?.location?.file ??
        report.tornTail?.location?.file ??
        (await filesOf(target.store).sessionFiles(target.id)).current)
  const bytes = location === null ? null : (location.logBytes ?? 0)
  const shown =
    file === null
      ? `session ${target.id} in ${target.where}`
      : displayPath(join(location!.root, file), context.cwd)
  const torn = report.status === 'torn-tail'
  const failed = report.status === 'damaged' || (torn && options.strict)
  if (options.json) {
    await context.out.write(
      `${stringifyJson({
        status: report.status,
        session: target.id,
        ...(file === null ? { store: target.where } : { file: shownFile(file, context.errorContext), bytes }),
        events: report.events,
        lastSeq: report.lastSeq,
        headerMissing: report.header === null,
        tornTail,
        damage: report.damage === null ? null : errorJson(report.damage, context.errorContext),
        ...(report.sealed === undefined ? {} : { sealed: report.sealed }),
        exitCode: failed ? ExitCode.DAMAGE : ExitCode.OK,
      })}\n`,
    )
  } else {
    const size = bytes === null ? '' : `, ${formatBytes(bytes)}`
    const readSize = bytes === null ? '' : `; ${formatBytes(bytes)} read`
    const good = `${report.events} good event${report.events === 1 ? '' : 's'} (last good seq ${report.lastSeq})`
    if (report.status === 'ok') {
      await context.out.write(
        `ok: ${shown}: ${report.events} event${report.events === 1 ? '' : 's'}, last seq ${report.lastSeq}${size}\n`,
      )
    } else if (torn) {
      await context.out.write(`torn tail: ${shown}: ${good}, then an unacknowledged tail${readSize}\n`)
    } else {
      await context.out.write(`damaged: ${shown}: ${good} before the damage${readSize}\n`)
    }
    if (report.sealed !== undefined) {
      context.notice(
        'note',
        `${shown} is encrypted under key ${report.sealed.keyId}, not available here: checksums, the encrypted form and seqs were checked, the event data and history rules were not`,
      )
    }
    if (report.header === null) {
      await context.out.write(
        `  no valid header line (a crash during creation?): nothing was ever acknowledged in this log\n`,
      )
    }
  }
  await context.out.flush()
  if (report.damage !== null) {
    context.io.stderr(formatErrorLine(report.damage, context.errorContext))
  } else if (tornTail !== null) {
    const where = location === null ? shown : `${shown} line ${tornTail.line} (offset ${tornTail.offset})`
    const what = location === null ? `${tornTail.bytes} unacknowledged bytes` : tornTailText(tornTail)
    context.io.stderr(
      `agent-ledger: ${options.strict ? '' : 'warning: '}TORN_TAIL in ${where}: ${what}; never acknowledged, quarantined and truncated by the next write open [last good seq ${report.lastSeq}]\n`,
    )
  }
  return failed ? ExitCode.DAMAGE : ExitCode.OK
}

/** `agent-ledger verify`: the full integrity scan. */
export const verifyCommand: CommandSpec = {
  name: 'verify',
  summary: 'full integrity scan of a session log (exit 0 intact, 1 damaged, 2 usage/I-O)',
  help: HELP,
  options: {
    json: JSON_OPTION,
    strict: { type: 'boolean' },
    'no-progress': NO_PROGRESS_OPTION,
    store: STORE_OPTION,
  },
  stdin: true,
  positionals: ['<session>'],
  async run(context, args) {
    const target = await resolveTarget(context, args)
    const options = { json: flag(args, 'json'), strict: flag(args, 'strict') }
    return runVerify(context, target, options)
  },
}
