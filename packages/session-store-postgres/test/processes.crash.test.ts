/** The long race (`pnpm test:crash`): two worker processes, 100 rounds each, for one session. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { openPostgresBackend } from '../src/index.ts'
import type { PostgresBackend } from '../src/index.ts'
import { adminUrl, createDatabase, skipReason } from './support/pg.ts'
import { raceRounds } from './support/race.ts'

describe.skipIf(adminUrl === null)(
  `PostgreSQL worker race${skipReason === null ? '' : ` (skipped: ${skipReason})`}`,
  () => {
    let url: string
    let backend: PostgresBackend

    beforeAll(async () => {
      url = await createDatabase(adminUrl as string)
      backend = await openPostgresBackend({ connectionString: url })
    })
    afterAll(async () => {
      await backend?.close()
    })

    it('two worker processes racing for one session, 100 rounds each: exactly one writer per grant, dense seq', async () => {
      const result = await raceRounds(backend, url, 100)
      console.log(`postgres race: ${JSON.stringify(result)}`)
      expect(result.wins + result.locked).toBe(200)
    })
  },
)
