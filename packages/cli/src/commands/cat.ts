import { flag, JSON_OPTION, seqOption } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import { describeEvent } from '../describe-event.ts'
import { resolveSession } from '../session-path.ts'

const HELP = `Usage: agent-ledger cat <session> [--from N] [--to N] [--json]

Prints the events of a session in seq order, read-only, checked like an open (checksum,
seq, types). Default: one readable line per event,
  #<seq> <time> <type> <summary> [replaces a..b] <- <cited seqs> (ignorable)
with untrusted text quoted and terminal control characters escaped.

Options:
  --from N      first seq to print (inclusive, default 0)
  --to N        last seq to print (inclusive, default: the end)
  --json        JSON Lines: one event object per line, exactly as logged (without the
                per-line "crc" member), for jq and other tools
  -h, --help    show this help

A torn tail (an unacknowledged or in-progress last line) ends the output quietly.
Damage in the middle: the events before it are printed, then the error on stderr.

Exit codes:
  0  printed
  1  the log is damaged after the printed prefix, or its header is refused
  2  usage or I/O error
`

/** `agent-ledger cat`: the events of a session. */
export const catCommand: CommandSpec = {
  name: 'cat',
  summary: 'print events (readable lines, or JSONL with --json), optionally a seq range',
  help: HELP,
  streams: true,
  options: { json: JSON_OPTION, from: { type: 'string' }, to: { type: 'string' } },
  positionals: ['<session>'],
  async run(context, args) {
    const json = flag(args, 'json')
    const fromSeq = seqOption(args, { command: 'cat', name: 'from' })
    const toSeq = seqOption(args, { command: 'cat', name: 'to' })
    if (fromSeq !== undefined && toSeq !== undefined && fromSeq > toSeq) {
      throw usageError(`cat: expected --from <= --to, found --from ${fromSeq} --to ${toSeq}`)
    }
    const location = await resolveSession(args.positionals[0]!, context)
    const store = context.store(location.root)
    const range = {
      ...(fromSeq === undefined ? {} : { fromSeq }),
      ...(toSeq === undefined ? {} : { toSeq }),
    }
    for await (const event of store.readEvents(location.id, range)) {
      await context.out.write(`${json ? stringifyJson(event) : describeEvent(event)}\n`)
    }
    await context.out.flush()
    return ExitCode.OK
  },
}
