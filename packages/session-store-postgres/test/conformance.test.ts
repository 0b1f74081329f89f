/** The port's conformance suite (from @agent-ledger/session-store) against a real PostgreSQL server. */
import { randomBytes } from 'node:crypto'

import { runBackendConformance } from '@agent-ledger/session-store/conformance'
import { beforeAll, describe, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { openPostgresBackend } from '../src/index.ts'
import type { PostgresBackend } from '../src/index.ts'
import { adminUrl, createDatabase, skipReason } from './support/pg.ts'

describe.skipIf(adminUrl === null)(
  `conformance${skipReason === null ? '' : ` (skipped: ${skipReason})`}`,
  () => {
    let url = ''
    beforeAll(async () => {
      url = await createDatabase(adminUrl as string)
      const migrated = await openPostgresBackend({ connectionString: url })
      await migrated.close()
    })

    runBackendConformance({
      name: 'postgres',
      describe,
      it,
      idPrefix: `pg${randomBytes(3).toString('hex')}`,
      // The refusal while the lease is live must not race the lease on a busy machine.
      leaseMs: testTime(600),
      makeBackend: async () => {
        const instances: PostgresBackend[] = []
        const make = async (): Promise<PostgresBackend> => {
          const backend = await openPostgresBackend({ connectionString: url, poolSize: 4, migrate: false })
          instances.push(backend)
          return backend
        }
        return {
          backend: await make(),
          reopen: make,
          cleanup: async () => {
            for (const instance of instances) await instance.close()
          },
        }
      },
    })
  },
)
