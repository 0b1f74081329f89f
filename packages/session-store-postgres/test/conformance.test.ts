/** The port's conformance suite (from @agent-ledger/session-store) against a real PostgreSQL server. */
import { randomBytes } from 'node:crypto'

import { runBackendConformance } from '@agent-ledger/session-store/conformance'
import { beforeAll, describe, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { openPostgresBackend } from '../src/index.ts'
import { adminUrl, createDatabase, postgresHarnessBackends, skipReason, sqlOnce } from './support/pg.ts'

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
        const harness = await postgresHarnessBackends(url)
        const triggers: string[] = []
        return {
          ...harness,
          injectFault: async (id) => {
            // A real server-side refusal of this session's inserts: SQLSTATE P0001 from a trigger.
            const name = `conformance_fault_${triggers.length}_${randomBytes(3).toString('hex')}`
            triggers.push(name)
            await sqlOnce(
              url,
              `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN RAISE EXCEPTION 'conformance: inserts refused for %', NEW.session_id; END $$`,
            )
            await sqlOnce(
              url,
              `CREATE TRIGGER ${name} BEFORE INSERT ON ledger_events FOR EACH ROW
               WHEN (NEW.session_id = '${id}') EXECUTE FUNCTION ${name}()`,
            )
            return { code: 'BACKEND_FAILED', details: { reason: 'QUERY_FAILED', sqlstate: 'P0001' } }
          },
          cleanup: async () => {
            await harness.cleanup()
            for (const name of triggers) {
              await sqlOnce(url, `DROP TRIGGER ${name} ON ledger_events`)
              await sqlOnce(url, `DROP FUNCTION ${name}()`)
            }
          },
        }
      },
    })
  },
)
