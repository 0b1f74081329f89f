import { describeConnection, migratePostgres } from '@agent-ledger/session-store-postgres'

import { flag, JSON_OPTION, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import { STORE_ENV } from '../store-target.ts'

const HELP = `Usage: agent-ledger db migrate --store <postgres-url> [--json]

Applies the pending schema migrations of the PostgreSQL session store at <postgres-url>
(postgres://user:password@host:port/database), each once, in one transaction, recorded in
the ledger_schema_migrations table. Idempotent: a current schema is left as it is. Safe
to run from several processes at once (an advisory lock serializes them). Refuses a
schema newer than this version of agent-ledger, or one whose recorded migrations differ.
Without --store, the URL is read from ${STORE_ENV}. The password is never printed.

Options:
  --store <url>  the PostgreSQL store (default: $${STORE_ENV})
  --json         {"store", "applied": [versions], "version"}
  -h, --help     show this help

Exit codes:
  0  the schema is current (migrated now or already)
  2  usage error, the server cannot be reached, or the schema is refused
`

/** `agent-ledger db migrate`: brings a PostgreSQL store's schema to this version. */
export const dbCommand: CommandSpec = {
  name: 'db',
  summary: 'db migrate --store <postgres-url>: create or upgrade a PostgreSQL store schema',
  help: HELP,
  options: { store: { type: 'string' }, json: JSON_OPTION },
  positionals: ['<action>'],
  async run(context, args) {
    const action = args.positionals[0]
    if (action !== 'migrate') {
      throw usageError(
        `db: expected the action "migrate", found ${JSON.stringify(action)}; run agent-ledger db --help`,
      )
    }
    const store = text(args, 'store') ?? context.env[STORE_ENV]
    if (store === undefined || store === '') {
      throw usageError(`db migrate: expected --store <postgres-url> or ${STORE_ENV}, found neither`)
    }
    if (!/^postgres(ql)?:\/\//.test(store)) {
      throw usageError(
        `db migrate: expected a postgres:// or postgresql:// URL, found one starting ${JSON.stringify(store.split(':')[0] ?? '')}`,
      )
    }
    const report = await migratePostgres(store)
    const where = describeConnection(store)
    if (flag(args, 'json')) {
      await context.out.write(
        `${stringifyJson({ store: where, applied: report.applied, version: report.version }, 2)}\n`,
      )
    } else {
      await context.out.write(
        report.applied.length === 0
          ? `${where}: schema already at version ${report.version}\n`
          : `${where}: applied migration${report.applied.length === 1 ? '' : 's'} ${report.applied.join(', ')}; schema at version ${report.version}\n`,
      )
    }
    return ExitCode.OK
  },
}
