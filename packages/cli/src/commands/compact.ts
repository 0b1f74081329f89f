import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'

import { planCompaction } from '@agent-ledger/session-projection'
import type { SessionWriter } from '@agent-ledger/session-store'

import { flag, JSON_OPTION, requiredText, seqOption, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import { coreEvent } from '../describe-event.ts'
import type { CommandContext } from '../context.ts'
import { readStdinText } from '../io.ts'
import { displayPath, ioError } from '../session-path.ts'
import { resolveTarget, STORE_OPTION } from '../store-target.ts'
import { terminalSafe } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger compact <session> --from <seq> --to <seq> (--summary <text> | --summary-file <file>)
                        [--reason <text>] [--id <compaction-id>] [--json] [--store <url|dir>]

Compacts a session: the model-visible messages with seqs <from>..<to> (surface order,
inclusive; see "agent-ledger messages", which prints each message's #seq) are replaced
by ONE user message carrying the summary. Four events are appended and flushed:
compaction/start, compaction/summary, the replacing user/message (surfaceOp replace, with
sourceEventSeqs citing every hidden message), compaction/end. The hidden events stay in
the log; "agent-ledger export" shows them greyed.

This is a WRITE open: it takes the writer lock (refused while another process writes,
SESSION_LOCKED), repairs a torn tail and answers unanswered tool calls with placeholders
(reported on stderr) before compacting, exactly as a resume would.

Options:
  --from <seq>            seq of the first message to hide (required)
  --to <seq>              seq of the last message to hide (required)
  --summary <text>        the summary the model will read instead
  --summary-file <file>   read the summary from a UTF-8 file instead (- reads standard input)
  --reason <text>         why (recorded on compaction/start; default "manual")
  --id <compaction-id>    the compaction id (default cmp-<8 hex>)
  --json                  print the result as JSON
  --store S               the store: a directory or a postgres:// URL (default
                          $AGENT_LEDGER_STORE); <session> is then a session id in it (on
                          PostgreSQL the writer lease is taken: SESSION_LOCKED while a live
                          writer holds it)
  -h, --help              show this help

Exit codes:
  0  compacted
  1  refused: BAD_COMPACTION_RANGE (not a valid range of current messages: a seq that is
     not visible, from after to, a leading system message, a range splitting tool results
     from their call), SESSION_LOCKED, or the log is damaged
  2  usage or I/O error
`

async function summaryOf(context: CommandContext, args: Parameters<CommandSpec['run']>[1]): Promise<string> {
  const inline = text(args, 'summary')
  const file = text(args, 'summary-file')
  if ((inline === undefined) === (file === undefined)) {
    throw usageError('compact: expected exactly one of --summary <text> or --summary-file <file>')
  }
  if (inline !== undefined) return inline
  if (file === '-') return readStdinText(context.io)
  const path = resolve(context.cwd, file!)
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    throw ioError(error, { path: displayPath(path, context.cwd), doing: 'read' })
  }
}

/** What compact uses of a writer: the JSONL store's or the core's. */
function reportRecovery(context: CommandContext, writer: SessionWriter): void {
  const recovery = writer.recovery
  for (const repair of recovery.backendRepairs) {
    if (repair.kind === 'torn-tail' && repair.quarantinedTo !== undefined) {
      context.notice('note', `the write open quarantined a torn tail into ${repair.quarantinedTo}`)
    }
  }
  for (const repair of recovery.repairs) {
    context.notice(
      'note',
      repair.code === 'CLOSE_TURN'
        ? `the write open closed turn ${repair.turn} as interrupted (#${repair.resultSeq})`
        : `the write open answered ${repair.name}(${repair.callId}) with a ${repair.code} placeholder (#${repair.resultSeq})`,
    )
  }
}

/** `agent-ledger compact`: replace a range of messages by a summary. */
export const compactCommand: CommandSpec = {
  name: 'compact',
  summary: 'replace messages <from>..<to> by a summary (originals stay in the log)',
  help: HELP,
  options: {
    from: { type: 'string' },
    to: { type: 'string' },
    summary: { type: 'string' },
    'summary-file': { type: 'string' },
    reason: { type: 'string' },
    id: { type: 'string' },
    json: JSON_OPTION,
    store: STORE_OPTION,
  },
  writes: true,
  positionals: ['<session>'],
  async run(context, args) {
    requiredText(args, { command: 'compact', name: 'from' })
    requiredText(args, { command: 'compact', name: 'to' })
    const startSeq = seqOption(args, { command: 'compact', name: 'from' })!
    const endSeq = seqOption(args, { command: 'compact', name: 'to' })!
    const summary = await summaryOf(context, args)
    const compactionId = text(args, 'id') ?? `cmp-${randomBytes(4).toString('hex')}`
    if (compactionId === '') throw usageError('compact: expected a non-empty --id, found ""')
    const target = await resolveTarget(context, args)
    const id = target.id
    const writer = await target.store.openWriter(id)
    let appended: number[]
    try {
      reportRecovery(context, writer)
      const inputs = planCompaction(writer.projection, {
        compactionId,
        startSeq,
        endSeq,
        summary,
        reason: text(args, 'reason') ?? 'manual',
      })
      appended = inputs.map((input) => writer.append(input).seq)
      await writer.flush()
    } finally {
      await writer.close()
    }
    const replacementSeq = appended[2]!
    const last = writer.projection.lastEvent
    const end = last === null ? null : coreEvent(last)
    const hiddenCount = end?.type === 'compaction/end' ? end.data.hiddenCount : endSeq - startSeq + 1
    if (flag(args, 'json')) {
      await context.out.write(
        `${stringifyJson({ session: id, compactionId, startSeq, endSeq, events: appended, replacementSeq, hiddenCount })}\n`,
      )
    } else {
      await context.out.write(
        `compacted ${terminalSafe(id)}: ${hiddenCount} message(s) #${startSeq}..#${endSeq} replaced by the summary #${replacementSeq} (compaction ${terminalSafe(compactionId)}, events #${appended[0]}..#${appended[3]})\n`,
      )
    }
    return ExitCode.OK
  },
}
