/**
 * The long versions of store-core rows, run by `pnpm test:crash` only: W10 with 10^5
 * appends, and T1 on a larger fixture with real fsync at every byte offset of its last line.
 */
import { readFileSync } from 'node:fs'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'

import { tornTailBytes } from './support/crash-harness.ts'
import { recordCrashSection } from './support/crash-summary.ts'
import { createFaultFs } from './support/fault-fs.ts'
import { roundTripHugeToolOutput } from './support/huge-output.ts'
import {
  closedSessionInputs,
  coreTestStore,
  forEachConcurrently,
  lineStarts,
  makeTempDir,
  placeSession,
  range,
  withHeaderId,
  writeCoreSession,
} from './support/sessions.ts'

let temp: { path: string; cleanup: () => void }

beforeEach(() => {
  temp = makeTempDir()
})

afterEach(() => {
  temp.cleanup()
})

describe('store core, long runs', () => {
  it('W9 (full): a 100 MB tool output round-trips byte-identical (sha256), read back in chunks', () =>
    roundTripHugeToolOutput(temp.path, 100 * 1024 * 1024))

  it('W10: 10^5 appends without awaiting against a 50 ms write delay stay within maxBufferedBytes; close() flushes all', async () => {
    const fs = createFaultFs()
    fs.writeDelayMs = 50
    const { store } = coreTestStore(temp.path, { fs, limits: { maxBufferedBytes: 1024 * 1024 } })
    const writer = await store.create({ id: 'pressure' })
    const total = 100_000
    let refusals = 0
    for (let index = 0; index < total; index += 1) {
      const input = {
        type: 'user/message',
        data: { message: { role: 'user', content: `small event ${index}` } },
      } as const
      try {
        writer.append(input)
      } catch (error) {
        if (!SessionStoreError.is(error, 'BUFFER_FULL')) throw error
        refusals += 1
        await writer.flush()
        writer.append(input)
      }
    }
    await writer.close()
    expect(refusals).toBeGreaterThan(5)
    expect((await store.openReader('pressure')).lastSeq).toBe(total - 1)
    await store.close()
  })

  it('T1: a 200-event fixture torn at every byte offset of its last line, with real fsync throughout', async () => {
    const { store } = coreTestStore(temp.path)
    const inputs = closedSessionInputs(199)
    inputs.push({ type: 'user/message', data: { message: { role: 'user', content: 'x'.repeat(2000) } } })
    const content = readFileSync(await writeCoreSession(store, 'fixture-of-two-hundred-events', inputs))
    const lastStart = lineStarts(content).at(-1)!
    let tested = 0
    await forEachConcurrently(range(lastStart, content.length), 8, async (cut) => {
      const id = `cut${cut}`
      const path = placeSession(temp.path, id, content.subarray(0, cut))
      const writer = await store.openWriter(id)
      expect(tornTailBytes(writer)).toBe(cut - lastStart)
      expect(writer.append({ type: 'turn/start', data: { turn: 99 } }).seq).toBe(199)
      await writer.close()
      expect(
        readFileSync(path)
          .subarray(0, lastStart)
          .equals(withHeaderId(content.subarray(0, lastStart), id)),
      ).toBe(true)
      expect(await store.verify(id)).toMatchObject({ status: 'ok', lastSeq: 199 })
      tested += 1
    })
    expect(tested).toBe(content.length - lastStart)
    await store.close()
    await recordCrashSection('T1-long', {
      crash_points_injected: 0,
      acked_events_lost: 0,
      torn_tail_offsets_tested: tested,
      torn_tail_offsets_passed: tested,
    })
  })
})
