/**
 * The backend conformance suite over encrypted sessions (issue 27 item 2): every store the
 * suite makes seals its sessions under per-session data keys, on JSONL (plain and zstd logs)
 * and PostgreSQL. The checkpoint cases are skipped (an encrypted session stores none).
 */
import { randomBytes } from 'node:crypto'

// The `pgUrl` the global setup provides (its `ProvidedContext` declaration).
import type {} from '../../../tooling/pg/global-setup.ts'

import { openPostgresBackend } from '@agent-ledger/session-store-postgres'
import { runBackendConformance } from '@agent-ledger/session-store/conformance'
import { beforeAll, describe, it } from 'vitest'

import { jsonlHarness } from '../../session-store-jsonl/test/backend/jsonl-harness.ts'
import {
  adminUrl,
  createDatabase,
  postgresHarnessBackends,
} from '../../session-store-postgres/test/support/pg.ts'
import { testTime } from '../../../tooling/test-time.ts'
import { createEncryption, localKeyProvider, memoryKeyStore } from '../src/index.ts'

const keyText = `k1:${randomBytes(32).toString('base64')}`
const encryption = createEncryption({ keys: localKeyProvider(keyText), keyStore: memoryKeyStore() })

runBackendConformance({
  name: 'jsonl (plain), encrypted',
  describe,
  it,
  encryption,
  makeBackend: () => jsonlHarness('plain'),
})
runBackendConformance({
  name: 'jsonl (zstd), encrypted',
  describe,
  it,
  encryption,
  makeBackend: () => jsonlHarness('zstd'),
})

const pgUrl = adminUrl
describe.skipIf(pgUrl === null)('postgres, encrypted', () => {
  let url = ''
  beforeAll(async () => {
    url = await createDatabase(pgUrl!)
    const migrated = await openPostgresBackend({ connectionString: url })
    await migrated.close()
  })
  runBackendConformance({
    name: 'postgres, encrypted',
    describe,
    it,
    encryption,
    idPrefix: `pge${randomBytes(3).toString('hex')}`,
    leaseMs: testTime(600),
    makeBackend: () => postgresHarnessBackends(url),
  })
})
