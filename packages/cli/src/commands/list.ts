import { flag, JSON_OPTION, NO_PAGER_OPTION } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import type { CommandContext } from '../context.ts'
import { stringifyJson } from '../context.ts'
import { errorJson, formatErrorLine } from '../report-error.ts'
import { resolveRoot } from '../session-path.ts'
import { listAllSessions, resolveScope, STORE_OPTION } from '../store-target.ts'
import type { StoreScope } from '../store-target.ts'
import { formatBytes, terminalSafe } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger list <root> [--json]
       agent-ledger list --store <url|dir> [--json]

Lists the sessions of a store root (a directory of session directories), from their
header lines only (fast: logs are not scanned; run "agent-ledger verify" for that).
A session that cannot be read (no header, damaged or too-new header, permission...)
is listed as a problem with its error code; it never stops the listing.

Output: one line per session: id, created, parent (for forks), log size, last change;
then one line per problem. On a PostgreSQL store the size is the event count (a database
has no log file), and sessions come most recently updated first.

Options:
  --store S     the store: a directory or a postgres:// URL (default $AGENT_LEDGER_STORE
                when <root> is left out)
  --json        {"sessions": [...], "problems": [{"id", "error": {code, message, ...}}]}
  --no-pager    print directly, not through the pager (a terminal only)
  -h, --help    show this help

Exit codes:
  0  listed (also when some sessions are problems: they are in the output)
  2  usage or I/O error (the root does not exist, is not a directory, is unsafe)
`

/** `agent-ledger list`: the sessions of a root. */
export const listCommand: CommandSpec = {
  name: 'list',
  summary: 'list the sessions of a store root (broken ones listed as problems)',
  help: HELP,
  options: {
    'no-pager': NO_PAGER_OPTION,
    json: JSON_OPTION,
    store: STORE_OPTION,
  },
  pages: () => true,
  positionals: ['<root>'],
  positionalsOptional: true,
  async run(context, args) {
    if (args.positionals.length > 0 && args.values['store'] !== undefined) {
      throw usageError('list: expected either <root> or --store, found both; run agent-ledger list --help')
    }
    const scope = await resolveScope(context, args, 'list')
    if (scope?.kind === 'database') return listDatabase(context, scope, flag(args, 'json'))
    const root = await resolveRoot(scope?.root ?? args.positionals[0]!, context.cwd)
    const store = context.store(root)
    const { sessions, problems } = await store.list()
    if (flag(args, 'json')) {
      await context.out.write(
        `${stringifyJson(
          {
            sessions: sessions.map((session) => ({
              id: session.id,
              createdAt: session.header.createdAt,
              parentSession: session.header.parentSession ?? null,
              file: session.file,
              bytes: session.bytes,
              modifiedAt: session.modifiedAt,
              header: session.header,
            })),
            problems: problems.map((problem) => ({
              id: problem.id,
              error: errorJson(problem.error, context.errorContext),
            })),
          },
          2,
        )}\n`,
      )
      return ExitCode.OK
    }
    if (sessions.length === 0 && problems.length === 0) {
      await context.out.write('no sessions\n')
      return ExitCode.OK
    }
    for (const session of sessions) {
      const parent = session.header.parentSession
      await context.out.write(
        `${terminalSafe(session.id)}  created ${terminalSafe(session.header.createdAt)}${parent === undefined ? '' : `  fork of ${terminalSafe(parent)}`}  ${formatBytes(session.bytes)}  modified ${session.modifiedAt}\n`,
      )
    }
    for (const problem of problems) {
      await context.out.write(
        `${terminalSafe(problem.id)}  PROBLEM ${formatErrorLine(problem.error, context.errorContext).replace(/^agent-ledger: /, '')}`,
      )
    }
    await context.out.write(
      `${sessions.length} session${sessions.length === 1 ? '' : 's'}${problems.length === 0 ? '' : `, ${problems.length} problem${problems.length === 1 ? '' : 's'}`}\n`,
    )
    return ExitCode.OK
  },
}

/** `list` on a database store: every page, with the event count where a root shows the log size. */
async function listDatabase(
  context: CommandContext,
  scope: Extract<StoreScope, { kind: 'database' }>,
  json: boolean,
): Promise<number> {
  const { sessions, problems } = await listAllSessions(scope.store)
  if (json) {
    await context.out.write(
      `${stringifyJson(
        {
          store: scope.where,
          sessions: sessions.map((session) => ({
            id: session.id,
            createdAt: session.header.createdAt,
            parentSession: session.header.parentSession ?? null,
            events: session.events ?? null,
            modifiedAt: session.updatedAt ?? null,
            header: session.header,
          })),
          problems: problems.map((problem) => ({
            id: problem.id,
            error: errorJson(problem.error, context.errorContext),
          })),
        },
        2,
      )}\n`,
    )
    return ExitCode.OK
  }
  if (sessions.length === 0 && problems.length === 0) {
    await context.out.write(`no sessions in ${scope.where}\n`)
    return ExitCode.OK
  }
  for (const session of sessions) {
    const parent = session.header.parentSession
    await context.out.write(
      `${terminalSafe(session.id)}  created ${terminalSafe(session.header.createdAt)}${parent === undefined ? '' : `  fork of ${terminalSafe(parent)}`}  ${session.events ?? '?'} events  modified ${session.updatedAt ?? '?'}\n`,
    )
  }
  for (const problem of problems) {
    await context.out.write(
      `${terminalSafe(problem.id)}  PROBLEM ${formatErrorLine(problem.error, context.errorContext).replace(/^agent-ledger: /, '')}`,
    )
  }
  await context.out.write(
    `${sessions.length} session${sessions.length === 1 ? '' : 's'}${problems.length === 0 ? '' : `, ${problems.length} problem${problems.length === 1 ? '' : 's'}`} in ${scope.where}\n`,
  )
  return ExitCode.OK
}
