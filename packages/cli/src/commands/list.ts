import { flag, JSON_OPTION } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import { errorJson, formatErrorLine } from '../report-error.ts'
import { resolveRoot } from '../session-path.ts'
import { formatBytes, terminalSafe } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger list <root> [--json]

Lists the sessions of a store root (a directory of session directories), from their
header lines only (fast: logs are not scanned; run "agent-ledger verify" for that).
A session that cannot be read (no header, damaged or too-new header, permission...)
is listed as a problem with its error code; it never stops the listing.

Output: one line per session: id, created, parent (for forks), log size, last change;
then one line per problem.

Options:
  --json        {"sessions": [...], "problems": [{"id", "error": {code, message, ...}}]}
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
  options: { json: JSON_OPTION },
  positionals: ['<root>'],
  async run(context, args) {
    const root = await resolveRoot(args.positionals[0]!, context.cwd)
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
