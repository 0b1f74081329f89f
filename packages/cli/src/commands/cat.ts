import { flag, JSON_OPTION, NO_PAGER_OPTION, seqOption, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { CliError, CliErrorCode, ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import { describeEvent } from '../describe-event.ts'
import { fullEventText } from '../event-text.ts'
import { resolveTarget, STORE_OPTION } from '../store-target.ts'
import { countOf, formatCount } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger cat <session> [--from N] [--to N | --seq N] [--json] [--store <url|dir>]

Prints the events of a session in seq order, read-only, checked like an open (checksum,
seq, types). Default: one readable line per event,
  #<seq> <time> <type> <summary> [replaces a..b] <- <cited seqs> (ignorable)
with untrusted text quoted and terminal control characters escaped.

Options:
  --from N      first seq to print (inclusive, default 0)
  --to N        last seq to print (inclusive, default: the end)
  --seq N       one event, in full: its line, then every text it holds (message content,
                reasoning, tool call arguments, summary) whole; what a transcript that cut
                a long text short tells you to run
  --json        JSON Lines: one event object per line, exactly as logged (without the
                per-line "crc" member), for jq and other tools
  --store S     the store: a directory or a postgres:// URL (default $AGENT_LEDGER_STORE);
                <session> is then a session id in it
  --no-pager    print directly, not through the pager (a terminal only)
  -h, --help    show this help

A torn tail (an unacknowledged or in-progress last line) ends the output quietly.
Damage in the middle: the events before it are printed, then the error on stderr.

Exit codes:
  0  printed
  1  the log is damaged after the printed prefix, or its header is refused, or --from /
     --seq is past the last event (PAST_END: the message says how many events there are)
  2  usage or I/O error
`

/** `agent-ledger cat`: the events of a session. */
export const catCommand: CommandSpec = {
  name: 'cat',
  summary: 'print events (readable lines, or JSONL with --json), optionally a seq range',
  help: HELP,
  streams: true,
  options: {
    'no-pager': NO_PAGER_OPTION,

    json: JSON_OPTION,
    from: { type: 'string' },
    to: { type: 'string' },
    seq: { type: 'string' },
    store: STORE_OPTION,
  },
  pages: () => true,
  stdin: true,
  positionals: ['<session>'],
  async run(context, args) {
    const json = flag(args, 'json')
    const oneSeq = seqOption(args, { command: 'cat', name: 'seq' })
    if (oneSeq !== undefined && (text(args, 'from') !== undefined || text(args, 'to') !== undefined)) {
      throw usageError('cat: expected --seq N alone or --from/--to, found both')
    }
    const fromSeq = oneSeq ?? seqOption(args, { command: 'cat', name: 'from' })
    const toSeq = oneSeq ?? seqOption(args, { command: 'cat', name: 'to' })
    if (fromSeq !== undefined && toSeq !== undefined && fromSeq > toSeq) {
      throw usageError(`cat: expected --from <= --to, found --from ${fromSeq} --to ${toSeq}`)
    }
    const target = await resolveTarget(context, args)
    const range = {
      ...(fromSeq === undefined ? {} : { fromSeq }),
      ...(toSeq === undefined ? {} : { toSeq }),
    }
    const events = target.store.readEvents(target.id, range)
    let found = false
    for await (const event of events) {
      found = true
      await context.out.write(`${json ? stringifyJson(event) : describeEvent(event)}\n`)
      if (oneSeq !== undefined && !json) await context.out.write(fullEventText(event))
    }
    await context.out.flush()
    if (!found && fromSeq !== undefined) {
      // Seqs are dense from 0: nothing printed from a given seq means the log ends before it.
      let count = 0
      for await (const _event of target.store.readEvents(target.id)) count++
      const asked = oneSeq === undefined ? `--from ${fromSeq}` : `--seq ${oneSeq}`
      throw new CliError({
        code: CliErrorCode.PAST_END,
        exitCode: ExitCode.DAMAGE,
        message: `session ${args.positionals[0]!} has ${countOf(count, 'event')}; ${asked} is past the end (the last seq is ${count === 0 ? 'none' : formatCount(count - 1)})`,
        details: { events: count, ...(oneSeq === undefined ? { from: fromSeq } : { seq: oneSeq }) },
      })
    }
    return ExitCode.OK
  },
}
