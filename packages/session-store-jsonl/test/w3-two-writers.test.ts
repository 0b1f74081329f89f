import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { createSessionStore } from '../src/index.ts'
import { CRASH_STORE_OPTIONS } from './support/crash-harness.ts'
import { workload, WORKLOAD_HEADER } from './support/workload.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-w3-'))
let counter = 0
const events = workload(3, 8)

function freshRoot(): string {
  counter += 1
  const root = join(scratch, `r${counter}`)
  mkdirSync(root, { mode: 0o700 })
  return root
}

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

describe('W3: two writers on one session', () => {
  it('W3: a second openWriter in the same process gets SESSION_LOCKED naming the holder; the first keeps writing', async () => {
    const root = freshRoot()
    const first = createSessionStore({ root, ...CRASH_STORE_OPTIONS })
    const writer = await first.create({ id: 'shared', header: WORKLOAD_HEADER })
    writer.append(events[0]!)
    await writer.flush()
    const second = createSessionStore({ root, ...CRASH_STORE_OPTIONS })
    await expect(second.openWriter('shared')).rejects.toMatchObject({
      code: 'SESSION_LOCKED',
      details: {
        holderPid: process.pid,
        holderHost: hostname(),
        lockFile: join(root, 'shared', 'writer.lock'),
      },
    })
    // Same store object, asked twice: the same answer.
    await expect(first.openWriter('shared')).rejects.toMatchObject({ code: 'SESSION_LOCKED' })
    writer.append(events[1]!)
    expect(await writer.flush()).toEqual({ durableSeq: 1 })
    await writer.close()
    const again = await second.openWriter('shared')
    expect(again.durableSeq).toBeGreaterThanOrEqual(1)
    await again.close()
  })
})
