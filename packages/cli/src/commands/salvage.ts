import { flag, JSON_OPTION, requiredText } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { SessionTarget } from '../open-store.ts'
import { errorJson, formatErrorLine, shownFile } from '../report-error.ts'
import { filesOf } from '../session-path.ts'
import { resolveTarget, STORE_OPTION } from '../store-target.ts'
import { terminalSafe } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger salvage <session> --to <new-id> [--json] [--store <url|dir>]

Copies the good prefix of a (damaged) session, byte for byte, into a NEW session
<new-id> in the same store root, and appends a session/salvage event naming what was
dropped (from which byte offset, and why). The damaged session is never modified: it
stays on disk for forensics. Works on intact and torn sessions too (nothing, or only
the torn tail, is dropped).

Options:
  --to <new-id>   the new session id (required; must not exist)
  --json          print the salvage report as JSON
  --store S       the store: a directory or a postgres:// URL (default $AGENT_LEDGER_STORE);
                  <session> is then a session id in it (on PostgreSQL the report names the
                  damaged seq; a database has no byte offsets)
  -h, --help      show this help

Exit codes:
  0  salvaged (the report says how many events were kept and how many bytes dropped)
  1  refused: the source's header is unreadable or too new
  2  usage or I/O error (SESSION_EXISTS when <new-id> is taken)
`

/** `agent-ledger salvage`: the good prefix of a damaged session into a new one. */
export const salvageCommand: CommandSpec = {
  name: 'salvage',
  summary: 'copy the good prefix of a damaged session into a new session',
  help: HELP,
  options: { to: { type: 'string' }, json: JSON_OPTION, store: STORE_OPTION },
  writes: true,
  positionals: ['<session>'],
  async run(context, args) {
    const to = requiredText(args, { command: 'salvage', name: 'to' })
    const target = await resolveTarget(context, args)
    const facts = target.location === null ? null : await droppedBytes(target)
    const report = await target.store.salvage(target.id, { to })
    // A directory store adds the file facts: the new log, and where the dropped bytes began.
    const file =
      target.location === null
        ? null
        : shownFile((await filesOf(target.store).sessionFiles(to)).current, context.errorContext)
    const droppedFromOffset =
      facts === null ? null : (report.sourceError?.location?.offset ?? facts.tornOffset ?? facts.bytes)
    const dropped = facts === null || droppedFromOffset === null ? null : facts.bytes - droppedFromOffset
    if (flag(args, 'json')) {
      await context.out.write(
        `${stringifyJson({
          ...report,
          ...(target.location === null
            ? { store: target.where }
            : { file, droppedBytes: dropped, droppedFromOffset }),
          sourceError:
            report.sourceError === null ? null : errorJson(report.sourceError, context.errorContext),
        })}\n`,
      )
    } else {
      const lost =
        target.location === null
          ? 'the rest dropped'
          : `${dropped} bytes dropped from offset ${droppedFromOffset}`
      await context.out.write(
        `salvaged ${terminalSafe(report.from)} into ${terminalSafe(report.to)} (${terminalSafe(file ?? target.where)}): ${report.copiedEvents} events kept (seq 0..${report.lastGoodSeq}), ${lost} (${terminalSafe(report.reason)}); session/salvage is #${report.salvageSeq}\n`,
      )
    }
    await context.out.flush()
    if (report.sourceError !== null) {
      context.io.stderr(
        `agent-ledger: note: the source damage was: ${formatErrorLine(report.sourceError, context.errorContext).replace(/^agent-ledger: /, '')}`,
      )
    }
    return ExitCode.OK
  },
}

/** The source log's size and where a torn tail begins, before the salvage (a directory store's file facts). */
async function droppedBytes(
  target: SessionTarget,
): Promise<{ readonly bytes: number; readonly tornOffset: number | null }> {
  const files = await filesOf(target.store).sessionFiles(target.id)
  const bytes = files.files.find((entry) => entry.current)?.bytes ?? 0
  const verified = await target.store.verify(target.id)
  return { bytes, tornOffset: verified.tornTail?.location?.offset ?? null }
}
