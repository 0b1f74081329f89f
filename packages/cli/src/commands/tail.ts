import type { LoggedEvent } from '@agent-ledger/session-events'
import { SessionStoreError } from '@agent-ledger/session-store'

import { flag, JSON_OPTION, seqOption } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { CliError, CliErrorCode, ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import type { CommandContext } from '../context.ts'
import { describeEvent } from '../describe-event.ts'
import { displayPath } from '../session-path.ts'
import { resolveTarget, STORE_OPTION } from '../store-target.ts'
import type { SessionTarget } from '../open-store.ts'

const HELP = `Usage: agent-ledger tail [-f] [-n N] [--json] [--interval MS] [--store <url|dir>] <session>

Prints the last N events of a session (default 10). With -f, keeps following the log
as other processes append to it, until interrupted (Ctrl+C / SIGINT).

Works on every log the store reads: session.v4.jsonl, its compressed encoding
session.v4.jsonl.zstd, and older generations (read through an in-memory migration).

Following is strictly READ-ONLY: the log is polled; only complete (newline-terminated)
lines are read, each checked like an open (checksum, seq, type, projection rules). An
unterminated last line is a write in progress, never an error: it is read again once its
newline lands. Nothing is ever truncated, repaired or locked. If a writer's open repairs a
torn tail under the follower (quarantine + truncate), the file is replaced, or the session
is compressed or migrated into another file, the follower reads on from the next event and
prints only events it has not printed yet.

On a PostgreSQL store (--store postgres://...), -f wakes on the server's notifications
(LISTEN/NOTIFY), so it follows sessions written on other machines; it re-reads the head
at least every 2 s when a notification is missed.

Options:
  -f, --follow        keep following appends until SIGINT
  -n, --lines N       how many existing events to print first (default 10; 0 = none)
  --json              JSON Lines: one event object per line (without the "crc" member)
  --interval MS       polling interval with -f (default 250)
  --store S           the store: a directory or a postgres:// URL (default $AGENT_LEDGER_STORE);
                      <session> is then a session id in it
  -h, --help          show this help

Exit codes:
  0  printed; with -f: stopped by SIGINT
  1  damage found in the log (printed on stderr), or its header is refused
  2  usage or I/O error; with -f also when the session's log is removed: FILE_GONE
`

/** What a follower prints, and how. */
interface FollowOptions {
  readonly json: boolean
  readonly lines: number
  readonly follow: boolean
  readonly intervalMs: number
}

/** Reads and follows one session, whatever its store. */
interface TailSource {
  readEvents(): AsyncIterable<LoggedEvent>
  follow(
    fromSeq: number,
    options: { intervalMs: number; signal: AbortSignal | undefined },
  ): AsyncIterable<LoggedEvent>
  /** Where the session is, as messages show it. */
  readonly shown: string
}

function tailSource(context: CommandContext, target: SessionTarget): TailSource {
  const { store, id, location } = target
  return {
    readEvents: () => store.readEvents(id),
    follow: (fromSeq, options) =>
      store.follow(id, {
        fromSeq,
        pollMs: options.intervalMs,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      }),
    shown:
      location === null ? `session ${id} in ${target.where}` : displayPath(location.directory, context.cwd),
  }
}

async function runTail(
  context: CommandContext,
  target: SessionTarget,
  options: FollowOptions,
): Promise<number> {
  const format = (event: LoggedEvent): string =>
    `${options.json ? stringifyJson(event) : describeEvent(event)}\n`
  const source = tailSource(context, target)
  // The last N existing events, in one pass over whatever log the store reads (plain, zstd,
  // an older generation through migration, or a database): a ring of N.
  const last: LoggedEvent[] = []
  let nextSeq = 0
  let damage: Error | null = null
  try {
    for await (const event of source.readEvents()) {
      nextSeq = event.seq + 1
      if (options.lines === 0) continue
      last.push(event)
      if (last.length > options.lines) last.shift()
    }
  } catch (error) {
    // The good prefix is printed first, then the damage (exit 1).
    damage = error instanceof Error ? error : new Error(String(error))
  }
  for (const event of last) await context.out.write(format(event))
  await context.out.flush()
  if (damage !== null) throw damage
  if (!options.follow) return ExitCode.OK
  const signal = context.io.signal
  try {
    const events = source.follow(nextSeq, { intervalMs: options.intervalMs, signal })
    for await (const event of events) {
      await context.out.write(format(event))
      await context.out.flush()
    }
  } catch (error) {
    if (SessionStoreError.is(error, 'SESSION_NOT_FOUND')) {
      const shown = source.shown
      throw new CliError({
        code: CliErrorCode.FILE_GONE,
        message: `the log of ${shown} was removed while following it: expected the session to keep a log, found none`,
        path: shown,
        cause: error,
      })
    }
    throw error
  }
  return ExitCode.OK
}

/** `agent-ledger tail`: the last events, and `-f` to follow a live session read-only. */
export const tailCommand: CommandSpec = {
  name: 'tail',
  summary: 'last events of a session; -f follows a live session read-only until SIGINT',
  help: HELP,
  streams: true,
  options: {
    follow: { type: 'boolean', short: 'f' },
    lines: { type: 'string', short: 'n' },
    json: JSON_OPTION,
    interval: { type: 'string' },
    store: STORE_OPTION,
  },
  positionals: ['<session>'],
  async run(context, args) {
    const lines = seqOption(args, { command: 'tail', name: 'lines' }) ?? 10
    const intervalMs = seqOption(args, { command: 'tail', name: 'interval' }) ?? 250
    if (intervalMs < 10 || intervalMs > 60_000) {
      throw usageError(`tail: expected --interval between 10 and 60000 ms, found ${intervalMs}`)
    }
    const target = await resolveTarget(context, args)
    return runTail(context, target, {
      json: flag(args, 'json'),
      lines,
      follow: flag(args, 'follow'),
      intervalMs,
    })
  },
}
