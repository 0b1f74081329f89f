/**
 * Issue 7, W2-style: a power loss at every I/O op index of a writer that writes checkpoints
 * (turn/end flushes and close) leaves the old checkpoint or a new one, never part of one,
 * and never one that leads the log: every image opens with its checkpoint (or none) exactly
 * as a full replay does. The core's checkpoint (`core.checkpoint`) over the JSONL backend
 * (issue 23): the only warning an image may give is `CHECKPOINT_IGNORED` for `tail` (its log
 * ends in bytes the power loss cut or garbled after the checkpoint: the core replays fully).
 */
import { mkdirSync, readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { crc32c } from '@node-rs/crc32'
import type { SessionReadResult } from '@agent-ledger/session-store'

import { testTime } from '../../../tooling/test-time.ts'
import { decodeCheckpointFile } from '../src/backend/checkpoint-envelope.ts'
import { CORE_CHECKPOINT_FILE_NAME } from '../src/layout.ts'
import { createPowerLossRecorder } from './support/fault-fs.ts'
import type { Damage } from './support/fault-fs.ts'
import { coreTestStore, makeTempDir, turnInputs } from './support/sessions.ts'

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
    error:
      error === null ? null : { code: error.code, location: error.location, lastGoodSeq: error.lastGoodSeq },
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
        const { store } = coreTestStore(root, { checkpoint: ON })
        const writer = await store.create({ id: 'power' })
        for (const input of turnInputs(1)) writer.append(input)
        await writer.close()
      }
      const recorder = await createPowerLossRecorder(root)
      const { store } = coreTestStore(root, { fs: recorder, checkpoint: ON })
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
          const path = join(target, 'power', CORE_CHECKPOINT_FILE_NAME)
          if (existsSync(path)) {
            // Whole: the envelope decodes, and the body's own checksum holds.
            const decoded = decodeCheckpointFile(readFileSync(path))
            expect(decoded).not.toBeNull()
            if (decoded === null) continue
            const body = Buffer.from(decoded.record.body)
            const newline = body.indexOf(0x0a)
            const preamble = JSON.parse(body.toString('utf8', 0, newline)) as { payloadCrc32c: string }
            expect(preamble.payloadCrc32c).toBe(
              (crc32c(body.subarray(newline + 1)) >>> 0).toString(16).padStart(8, '0'),
            )
            seen.add(decoded.record.seq)
          }
          const withCheckpoints = coreTestStore(target, { checkpoint: ON })
          const read = await withCheckpoints.store.openReader('power', { allowDamaged: true })
          const full = await coreTestStore(target, { checkpoint: { enabled: false } }).store.openReader(
            'power',
            {
              allowDamaged: true,
            },
          )
          expect(comparable(read)).toEqual(comparable(full))
          // Never ahead of the durable log: a checkpoint used covers only events the image holds.
          if (read.checkpoint.used) expect(read.checkpoint.seq).toBeLessThanOrEqual(read.lastSeq)
          for (const warning of withCheckpoints.warnings) {
            expect([warning.code, warning.details['reason']]).toEqual(['CHECKPOINT_IGNORED', 'tail'])
            expect(read.tornTail !== null || read.error !== null).toBe(true)
          }
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
