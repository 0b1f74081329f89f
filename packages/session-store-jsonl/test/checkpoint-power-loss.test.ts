/**
 * Issue 7, W2-style: a power loss at every I/O op index of a writer that writes checkpoints
 * (turn/end flushes and close) leaves the old checkpoint or a new one, never part of one,
 * and never one that leads the log: every image opens with its checkpoint (or none) exactly
 * as a full replay does, with no checkpoint warning other than none at all.
 */
import { mkdirSync, readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import {
  CHECKPOINT_FILE_NAME,
  LOG_FILE_NAME,
  decodeCheckpointBody,
  decodeCheckpointHead,
} from '../src/format.ts'
import type { SessionReadResult } from '../src/index.ts'
import { createPowerLossRecorder } from './support/fault-fs.ts'
import type { Damage } from './support/fault-fs.ts'
import { makeTempDir, testStore, turnInputs } from './support/sessions.ts'

let temp: { path: string; cleanup: () => void }

beforeEach(() => {
  temp = makeTempDir('al-ckpt-power-')
})

afterEach(() => {
  temp.cleanup()
})

const ON = { minLogBytes: 0, everyEvents: 1_000_000, minIntervalMs: 0, minGrowthRatio: 0 } as const

function comparable(read: SessionReadResult): Record<string, unknown> {
  const { projection, checkpoint: _checkpoint, error, ...rest } = read
  return {
    ...rest,
    error: error === null ? null : { code: error.code, offset: error.offset },
    snapshot: projection.snapshot(),
  }
}

describe('checkpoint writes under power loss', () => {
  it(
    'W2: at every op index (drop, cut, garble), the checkpoint is the old or a new one, whole, never ahead of the durable log',
    async () => {
      const root = join(temp.path, 'root')
      mkdirSync(root, { mode: 0o700 })
      {
        const { store } = testStore(root, { checkpoint: ON })
        const writer = await store.create({ id: 'power' })
        for (const input of turnInputs(1)) writer.append(input)
        await writer.close()
      }
      const recorder = await createPowerLossRecorder(root)
      const { store } = testStore(root, { fs: recorder, checkpoint: ON })
      const writer = await store.openWriter('power')
      for (const turn of [2, 3]) {
        for (const input of turnInputs(turn)) writer.append(input)
        await writer.flush()
      }
      writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'last words' } } })
      await writer.close()
      const seen = new Set<number>()
      let images = 0
      for (let opIndex = 0; opIndex <= recorder.opCount; opIndex += 1) {
        for (const damage of ['drop', 'cut', 'garble'] as Damage[]) {
          const target = join(temp.path, `image-${opIndex}-${damage}`)
          mkdirSync(target, { mode: 0o700 })
          await recorder.materialise(opIndex, { damage, seed: opIndex }, target)
          images += 1
          const path = join(target, 'power', CHECKPOINT_FILE_NAME)
          if (existsSync(path)) {
            const head = decodeCheckpointHead(readFileSync(path))
            expect(head.ok).toBe(true)
            if (!head.ok) continue
            const headerEndOffset = readFileSync(join(target, 'power', LOG_FILE_NAME)).indexOf(0x0a) + 1
            const body = decodeCheckpointBody(head.head, {
              body: head.body,
              bodyCrc32c: head.bodyCrc32c,
              headerEndOffset,
            })
            expect(body.ok).toBe(true)
            seen.add(head.head.binding.seq)
          }
          const withCheckpoints = testStore(target, { checkpoint: ON })
          const read = await withCheckpoints.store.openReader('power', { allowDamaged: true })
          const full = await testStore(target, { checkpoint: { enabled: false } }).store.openReader('power', {
            allowDamaged: true,
          })
          expect(comparable(read)).toEqual(comparable(full))
          expect(read.checkpoint).not.toBeNull()
          expect(withCheckpoints.warnings).toEqual([])
        }
      }
      // The images saw the old checkpoint and the new ones (a queued one may be replaced by a newer one before it starts).
      expect(seen.has(6) && seen.has(21)).toBe(true)
      expect([...seen].every((seq) => [6, 13, 20, 21].includes(seq))).toBe(true)
      expect(images).toBeGreaterThan(30)
    },
    testTime(120_000),
  )
})
