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
 * Lists every session of a store, page by page: one path for every store. A directory store
 * adds each session's file facts (the JSONL backend's `files` capability: log, size,
 * modification time) and lists by id; a database shows the event count and lists most
 * recently updated first.
 */
async function listStore(context: CommandContext, scope: StoreScope, json: boolean): Promise<number> {
  const listing = await listAllSessions(scope.store)
  const problems = [...listing.problems]
  const rows: { readonly session: SessionSummary; readonly facts: FileFacts | null }[] = []
  for (const session of listing.sessions) {
    try {
      rows.push({ session, facts: scope.root === null ? null : await fileFacts(scope, session.id) })
    } catch (error) {
      if (!SessionStoreError.is(error)) throw error
      problems.push({ id: session.id, error })
    }
  }
  // The order of a directory listing: by id (the files are the facts, not the update times).
  if (scope.root !== null)
    rows.sort((a, b) => (a.session.id < b.session.id ? -1 : a.session.id > b.session.id ? 1 : 0))
  if (json) {
    await context.out.write(
      `${stringifyJson(
        {
          ...(scope.root === null ? { store: scope.where } : {}),
          sessions: rows.map(({ session, facts }) => ({
            id: session.id,
            createdAt: session.header.createdAt,
            parentSession: session.header.parentSession ?? null,
            ...(facts === null
              ? { events: session.events ?? null, modifiedAt: session.updatedAt ?? null }
              : { file: facts.file, bytes: facts.bytes, modifiedAt: facts.modifiedAt }),
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
  // A database is named in the text; a directory is the argument the user typed.
  const where = scope.root === null ? ` in ${scope.where}` : ''
  if (rows.length === 0 && problems.length === 0) {
    await context.out.write(`no sessions${where}\n`)
    return ExitCode.OK
  }
  for (const { session, facts } of rows) {
    const parent = session.header.parentSession
    const size = facts === null ? `${session.events ?? '?'} events` : formatBytes(facts.bytes)
    await context.out.write(
      `${terminalSafe(session.id)}  created ${terminalSafe(session.header.createdAt)}${parent === undefined ? '' : `  fork of ${terminalSafe(parent)}`}  ${size}  modified ${facts?.modifiedAt ?? session.updatedAt ?? '?'}\n`,
    )
  }
  for (const problem of problems) {
    await context.out.write(
      `${terminalSafe(problem.id)}  PROBLEM ${formatErrorLine(problem.error, context.errorContext).replace(/^agent-ledger: /, '')}`,
    )
  }
  await context.out.write(
    `${rows.length} session${rows.length === 1 ? '' : 's'}${problems.length === 0 ? '' : `, ${problems.length} problem${problems.length === 1 ? '' : 's'}`}${where}\n`,
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
