import { lstat } from 'node:fs/promises'
import { join } from 'node:path'

import { SessionStoreError } from '@agent-ledger/session-store'
import type { SessionSummary } from '@agent-ledger/session-store'

import { flag, JSON_OPTION, NO_PAGER_OPTION } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import type { CommandContext } from '../context.ts'
import { stringifyJson } from '../context.ts'
import { errorJson, formatErrorLine } from '../report-error.ts'
import { filesOf, resolveRoot } from '../session-path.ts'
import { listAllSessions, resolveScope, scopeOf, STORE_OPTION } from '../store-target.ts'
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
    const scope =
      (await resolveScope(context, args, 'list')) ??
      (await scopeOf(context, {
        kind: 'jsonl',
        root: await resolveRoot(args.positionals[0]!, context.cwd),
        shown: args.positionals[0]!,
      }))
    return listStore(context, scope, flag(args, 'json'))
  },
}

/** One session's file facts (a directory store): its current log, the log's size and modification time. */
interface FileFacts {
  readonly file: string
  readonly bytes: number
  readonly modifiedAt: string
}

/**
 * Lists every session of a store, page by page. A directory store adds each session's file
 * facts (the JSONL backend's `files` capability: log, size, modification time) where a
 * database shows the event count.
 */
async function listStore(context: CommandContext, scope: StoreScope, json: boolean): Promise<number> {
  const listing = await listAllSessions(scope.store)
  const problems = [...listing.problems]
  const sessions: (SessionSummary & { readonly facts: FileFacts | null })[] = []
  for (const session of listing.sessions) {
    if (scope.root === null) {
      sessions.push({ ...session, facts: null })
      continue
    }
    try {
      sessions.push({ ...session, facts: await fileFacts(scope, session.id) })
    } catch (error) {
      if (!SessionStoreError.is(error)) throw error
      problems.push({ id: session.id, error })
    }
  }
  // The order of a directory listing: by id (the files are the facts, not the update times).
  if (scope.root !== null) sessions.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  if (scope.root !== null && json) {
    await context.out.write(
      `${stringifyJson(
        {
          sessions: sessions.map((session) => ({
            id: session.id,
            createdAt: session.header.createdAt,
            parentSession: session.header.parentSession ?? null,
            file: session.facts?.file,
            bytes: session.facts?.bytes,
            modifiedAt: session.facts?.modifiedAt,
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
  if (scope.root !== null) {
    if (sessions.length === 0 && problems.length === 0) {
      await context.out.write('no sessions\n')
      return ExitCode.OK
    }
    for (const session of sessions) {
      const parent = session.header.parentSession
      await context.out.write(
        `${terminalSafe(session.id)}  created ${terminalSafe(session.header.createdAt)}${parent === undefined ? '' : `  fork of ${terminalSafe(parent)}`}  ${formatBytes(session.facts?.bytes ?? 0)}  modified ${session.facts?.modifiedAt ?? '?'}\n`,
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
  }
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

/** The current log of a session in a directory store, its size and modification time. */
async function fileFacts(scope: StoreScope, id: string): Promise<FileFacts> {
  const files = await filesOf(scope.store).sessionFiles(id)
  const current = files.files.find((entry) => entry.current)
  const modified = (await lstat(join(scope.root!, files.current))).mtime.toISOString()
  return { file: files.current, bytes: current?.bytes ?? 0, modifiedAt: modified }
}
