/** The long race (`pnpm test:crash`): two worker processes, 100 rounds each, for one session. */
import { expect, it } from 'vitest'

import type { PostgresBackend } from '../src/index.ts'
import { describeOnServer, useDatabase } from './support/pg.ts'
import { raceRounds } from './support/race.ts'

describeOnServer('PostgreSQL worker race', () => {
  let url: string
  let backend: PostgresBackend

  useDatabase((database) => ({ url, backend } = database))

  it('two worker processes racing for one session, 100 rounds each: exactly one writer per grant, dense seq', async () => {
    const result = await raceRounds(backend, url, 100)
    console.log(`postgres race: ${JSON.stringify(result)}`)
    expect(result.wins + result.locked).toBe(200)
  })
})
