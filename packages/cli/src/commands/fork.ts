import { randomBytes } from 'node:crypto'

import { flag, JSON_OPTION, requiredText, seqOption, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import { displayPath, filesOf } from '../session-path.ts'
import { resolveTarget, STORE_OPTION } from '../store-target.ts'
import { terminalSafe } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger fork <session> --at <seq> [--id <new-id>] [--open-turn close|refuse] [--json] [--store <url|dir>]

Forks a session at <seq> into a NEW session in the same store root: the new log starts
with events 0..<seq> of the parent (copied), then a session/end-seed event marking the
cut; its header records parentSession. The parent is never modified.

A cut inside an open turn gets the same synthetic closers as a crash at that point
(placeholder results for unanswered tool calls, turn/end "interrupted"), unless
--open-turn refuse is given: then such a fork is refused (exit 1).

Options:
  --at <seq>                  the last parent event to inherit (required)
  --id <new-id>               the new session id (default: <session id>-fork-<8 hex>)
  --open-turn close|refuse    what to do with a cut inside an open turn (default close)
  --json                      print the result as JSON
  --store S                   the store: a directory or a postgres:// URL (default
                              $AGENT_LEDGER_STORE); <session> is then a session id in it.
                              On PostgreSQL the prefix is copied server-side in one statement
  -h, --help                  show this help

Exit codes:
  0  forked (the new id is printed)
  1  refused: FORK_REFUSED (seq out of range, or an open turn with --open-turn refuse),
     or the parent is damaged
  2  usage or I/O error (SESSION_EXISTS when --id is taken, INVALID_SESSION_ID)
`

/** `agent-ledger fork`: a new session from a prefix of another. */
export const forkCommand: CommandSpec = {
  name: 'fork',
  summary: 'fork a session at a seq into a new session (the parent is untouched)',
  help: HELP,
  options: {
    at: { type: 'string' },
    id: { type: 'string' },
    'open-turn': { type: 'string' },
    json: JSON_OPTION,
    store: STORE_OPTION,
  },
  writes: true,
  positionals: ['<session>'],
  async run(context, args) {
    requiredText(args, { command: 'fork', name: 'at' })
    const atSeq = seqOption(args, { command: 'fork', name: 'at' })!
    const openTurn = text(args, 'open-turn') ?? 'close'
    if (openTurn !== 'close' && openTurn !== 'refuse') {
      throw usageError(`fork: expected --open-turn close or refuse, found ${JSON.stringify(openTurn)}`)
    }
    const target = await resolveTarget(context, args)
    const parent = target.id
    const to = text(args, 'id') ?? `${parent.slice(0, 100)}-fork-${randomBytes(4).toString('hex')}`
    const writer = await target.store.fork(parent, { to, atSeq, openTurn })
    const events = writer.projection.nextSeq
    const repairs = writer.recovery.repairs.length
    await writer.close()
    // A directory store names the new session's directory; a database, the store.
    const where: { directory: string } | { store: string } =
      target.location === null
        ? { store: target.where }
        : { directory: displayPath(filesOf(target.store).sessionDirectory(to), context.cwd) }
    if (flag(args, 'json')) {
      await context.out.write(`${stringifyJson({ parent, id: to, ...where, atSeq, events, openTurn })}\n`)
    } else {
      const place = 'directory' in where ? where.directory : where.store
      await context.out.write(
        `forked ${terminalSafe(parent)} at seq ${atSeq} into ${terminalSafe(to)} (${terminalSafe(place)}): ${events} events${repairs > 0 ? `, ${repairs} repair events` : ''}\n`,
      )
    }
    return ExitCode.OK
  },
}
