/**
 * `agent-ledger copy` keeps the backend's code (issue 23 item 4, the table's "error codes"
 * row: a symlinked log was `BACKEND_FAILED ... ELOOP` from `copy`): JSONL to JSONL, no
 * PostgreSQL needed. The PostgreSQL copies are in copy.test.ts.
 */
import { existsSync, mkdtempSync, renameSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { cli, logPath, testStore, writeSession } from './support/sessions.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-copy-codes-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('agent-ledger copy: codes preserved', () => {
  it('a session whose log is a symbolic link fails with SYMLINK_REFUSED (never BACKEND_FAILED), the link never followed; the good one is copied', async () => {
    const source = join(scratch, 'from')
    const target = join(scratch, 'to')
    const store = testStore(source)
    await writeSession(store, 'good')
    await writeSession(store, 'linked')
    await store.close()
    const elsewhere = join(scratch, 'elsewhere.jsonl')
    renameSync(logPath(source, 'linked'), elsewhere)
    symlinkSync(elsewhere, logPath(source, 'linked'))

    const run = await cli(['copy', source, target, '--json', '--no-progress'], { env: {} })
    const report = JSON.parse(run.stdout) as {
      sessions: { id: string; action: string; error: { code: string } | null }[]
      failed: number
    }
    const byId = new Map(report.sessions.map((session) => [session.id, session]))
    expect(byId.get('linked')).toMatchObject({ action: 'failed', error: { code: 'SYMLINK_REFUSED' } })
    expect(byId.get('good')).toMatchObject({ action: 'copied', error: null })
    expect(report.failed).toBe(1)
    expect(run.code).not.toBe(0)
    expect(existsSync(logPath(target, 'linked'))).toBe(false)
  })
})
