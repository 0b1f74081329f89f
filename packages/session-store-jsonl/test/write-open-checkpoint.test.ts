/**
 * The JSONL write open starts its head scan at the stored checkpoint's seek point (RELIABILITY
 * I9, ADR 2026-12-03-write-open-trusts-the-checkpoint), plain and `.zstd`, on real files:
 * damage before the seek point does not stop it (and no byte before it is read), a torn or
 * damaged tail after it is repaired or refused exactly as by a scan of every line
 * (`writeOpenCheck: 'full'`), a log cut below the seek point (the binding does not match) and
 * an absent, unreadable or point-less checkpoint fall back to a scan of every line with the
 * head that scan finds.
 */
import { constants, existsSync, readFileSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import { createSessionStore } from '@agent-ledger/session-store'
import type {
  AcquireResult,
  CheckpointOptions,
  SessionBackend,
  SessionStore,
} from '@agent-ledger/session-store'

import { createJsonlBackend, nodeFsOps } from '../src/index.ts'
import type { FileHandleOps, FsOps, WriteOpenCheck } from '../src/index.ts'
import { decodeCheckpointFile, encodeCheckpointFile } from '../src/backend/checkpoint-envelope.ts'
import { CORE_CHECKPOINT_FILE_NAME } from '../src/layout.ts'
import type { SeekPoint } from '../src/backend/seek-point.ts'
import { tempRoot } from './backend/jsonl-harness.ts'
import { turnInputs, writeTurns } from './support/sessions.ts'
import { frameStarts } from './support/zstd-sessions.ts'

type Encoding = 'plain' | 'zstd'
const EAGER: CheckpointOptions = { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 }
const roots: string[] = []
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true })
})

let tick = 0
const clock = (): string => new Date(Date.UTC(2026, 0, 1) + tick++).toISOString()

function backendOver(
  root: string,
  encoding: Encoding,
  options: { readonly fs?: FsOps; readonly writeOpenCheck?: WriteOpenCheck } = {},
): SessionBackend {
  return createJsonlBackend({ root, encoding, lock: { heartbeatMs: 0 }, ...options })
}

function storeOver(backend: SessionBackend, checkpoint: CheckpointOptions): SessionStore {
  return createSessionStore({ backend, clock, owner: 'test', checkpoint })
}

/** 12 turns (48 events) in one batch per turn, a checkpoint at seq 39 (after turn 10), 8 events after it. */
async function checkpointed(encoding: Encoding): Promise<{ root: string; log: string; seek: SeekPoint }> {
  const root = await tempRoot()
  roots.push(root)
  const backend = backendOver(root, encoding)
  const eager = storeOver(backend, EAGER)
  await (await eager.create({ id: 's', header: { cwd: '/srv' } })).close()
  await writeTurns(eager, 's', 1, 10)
  await writeTurns(storeOver(backend, { enabled: false }), 's', 11, 2)
  await backend.close()
  const seek = decodeCheckpointFile(readFileSync(join(root, 's', CORE_CHECKPOINT_FILE_NAME)))!.seek!
  expect(seek.fromSeq).toBeGreaterThan(30)
  const log = join(root, 's', encoding === 'plain' ? 'session.v4.jsonl' : 'session.v4.jsonl.zstd')
  return { root, log, seek }
}

/** A write open on a new backend (no head published by it), released again. */
async function acquireOnce(
  root: string,
  encoding: Encoding,
  options: { readonly fs?: FsOps; readonly writeOpenCheck?: WriteOpenCheck } = {},
): Promise<AcquireResult> {
  const backend = backendOver(root, encoding, options)
  try {
    const acquired = await backend.acquire('s', { owner: 'test', leaseMs: 60_000 })
    await backend.release(acquired.lease)
    return acquired
  } finally {
    await backend.close()
  }
}

/**
 * The log's reads through handles opened for writing (the acquire's; not the header peeks of
 * the generation check, bounded and read-only): each as [position, position + bytes).
 */
function recordingFs(file: string): { fs: FsOps; reads: [number, number][] } {
  const reads: [number, number][] = []
  const fs: FsOps = {
    ...nodeFsOps,
    async open(path, flags, mode) {
      const handle = await nodeFsOps.open(path, flags, mode)
      if (path !== file || (flags & (constants.O_RDWR | constants.O_WRONLY)) === 0) return handle
      const wrapped: FileHandleOps = Object.create(handle) as FileHandleOps
      wrapped.read = async (buffer, offset, length, position) => {
        const count = await handle.read(buffer, offset, length, position)
        reads.push([position, position + count])
        return count
      }
      return wrapped
    },
  }
  return { fs, reads }
}

/** Flips one byte before the seek point, past the header (plain: inside the second event line; `.zstd`: inside the third frame). */
function damageBeforeSeek(log: string, encoding: Encoding, seek: SeekPoint): number {
  const bytes = readFileSync(log)
  let at: number
  if (encoding === 'plain') {
    const second = bytes.indexOf(0x0a, bytes.indexOf(0x0a) + 1)
    at = second + 20
  } else {
    at = frameStarts(bytes)[2]! + 12
  }
  expect(at).toBeLessThan(seek.offset)
  bytes[at] = bytes[at]! ^ 0x55
  writeFileSync(log, bytes)
  return at
}

for (const encoding of ['plain', 'zstd'] as const) {
  describe(`the write open starts at the checkpoint (${encoding})`, () => {
    it('(a) damage before the seek point does not stop the default write open, and no byte before the point is read; the full check stops at it', async () => {
      const { root, log, seek } = await checkpointed(encoding)
      damageBeforeSeek(log, encoding, seek)
      const before = readFileSync(log)
      const { fs, reads } = recordingFs(log)
      const acquired = await acquireOnce(root, encoding, { fs })
      expect(acquired.headScan).toEqual({ from: 'checkpoint', fromSeq: seek.fromSeq })
      expect(acquired.head.nextSeq).toBe(48)
      expect(acquired.repaired).toEqual([])
      expect(reads.length).toBeGreaterThan(0)
      expect(reads.every(([start]) => start >= seek.offset)).toBe(true)
      expect(readFileSync(log).equals(before)).toBe(true)
      // The same log with every line checked: the head stops before the flip.
      const full = await acquireOnce(root, encoding, { writeOpenCheck: 'full' })
      expect(full.headScan).toEqual({ from: 'start', fromSeq: 0 })
      expect(full.head.nextSeq).toBeLessThan(seek.fromSeq)
      // Through the core: the default write open appends after the checkpoint; verify reports the flip.
      const store = storeOver(backendOver(root, encoding), EAGER)
      const writer = await store.openWriter('s')
      expect(writer.recovery.headScan).toEqual({ from: 'checkpoint', fromSeq: seek.fromSeq })
      expect(writer.recovery.checkpoint).toMatchObject({ used: true, seq: 39 })
      // It appends, and its new checkpoint's seek point (from the head the scan found: a .zstd
      // log's plain offsets included) is right: a cold read from it never meets the flip.
      writer.append({ type: 'turn/start', data: { turn: 13 } })
      writer.append({ type: 'turn/end', data: { turn: 13, reason: 'completed' } })
      await writer.close()
      const cold = storeOver(backendOver(root, encoding), EAGER)
      const read = await cold.openReader('s')
      expect(read.checkpoint).toMatchObject({ used: true, seq: 49 })
      expect(read.lastSeq).toBe(49)
      await cold.close()
      const report = await store.verify('s')
      expect(report.status).toBe('damaged')
      expect(report.damage?.code).toBe(encoding === 'plain' ? 'CORRUPT_LINE' : 'CORRUPT_FRAME')
      await store.close()
    })

    it('(b) a torn tail after the seek point is repaired exactly as by the full check; damage after it is refused the same way', async () => {
      const { root, log, seek } = await checkpointed(encoding)
      const intact = readFileSync(log)
      const torn = Buffer.concat([
        intact,
        Buffer.from(encoding === 'plain' ? '{"seq":48,"type":"tu' : 'garbage'),
      ])
      const results: AcquireResult[] = []
      for (const writeOpenCheck of ['checkpoint', 'full'] as const) {
        writeFileSync(log, torn)
        const acquired = await acquireOnce(root, encoding, { writeOpenCheck })
        results.push(acquired)
        expect(readFileSync(log).equals(intact)).toBe(true)
        // The quarantined bytes are the torn tail; removed so the next run's file gets the same name.
        const kept = join(root, acquired.repaired[0]!.quarantinedTo!)
        expect(readFileSync(kept).equals(torn.subarray(intact.length))).toBe(true)
        unlinkSync(kept)
      }
      const [resumed, full] = results as [AcquireResult, AcquireResult]
      expect(resumed.headScan).toEqual({ from: 'checkpoint', fromSeq: seek.fromSeq })
      expect(resumed.head.nextSeq).toBe(48)
      expect(resumed.repaired).toHaveLength(1)
      expect(resumed.repaired[0]).toMatchObject({
        kind: 'torn-tail',
        droppedBytes: torn.length - intact.length,
      })
      expect(resumed.repaired).toEqual(full.repaired)
      expect(resumed.head.nextSeq).toBe(full.head.nextSeq)
      expect(resumed.head.lastCrc).toBe(full.head.lastCrc)

      // Damage after the seek point, followed by good data: refused by both, nothing cut.
      const damaged = Buffer.from(intact)
      const at =
        encoding === 'plain'
          ? intact.lastIndexOf(0x0a, intact.length - 2) - 30
          : frameStarts(intact).at(-2)! + 12
      expect(at).toBeGreaterThan(seek.offset)
      damaged[at] = damaged[at]! ^ 0x55
      const codes: string[] = []
      for (const writeOpenCheck of ['checkpoint', 'full'] as const) {
        writeFileSync(log, damaged)
        const store = createSessionStore({
          backend: backendOver(root, encoding, { writeOpenCheck }),
          clock,
          owner: 'test',
        })
        const error = await store.openWriter('s').then(
          () => null,
          (thrown: unknown) => thrown as { code: string },
        )
        codes.push(error?.code ?? 'opened')
        expect(readFileSync(log).equals(damaged)).toBe(true)
        await store.close()
      }
      expect(codes[0]).toBe(encoding === 'plain' ? 'CORRUPT_LINE' : 'CORRUPT_FRAME')
      expect(codes[1]).toBe(codes[0])
    })

    it('(c) a log cut below the seek point: the binding does not match, the scan of every line finds the head and repairs the cut', async () => {
      const { root, log, seek } = await checkpointed(encoding)
      const intact = readFileSync(log)
      // Exactly at the seek point (no line there), then inside an earlier line or frame.
      for (const cut of [seek.offset, seek.offset - 7]) {
        writeFileSync(log, intact)
        truncateSync(log, cut)
        const full = intact.subarray(0, cut)
        const acquired = await acquireOnce(root, encoding)
        expect(acquired.headScan).toEqual({ from: 'start', fromSeq: 0, fallback: 'binding-mismatch' })
        expect(acquired.head.nextSeq).toBeLessThanOrEqual(seek.fromSeq)
        // The head of a full scan of what is left (a fresh copy of the cut log).
        writeFileSync(log, full)
        const reference = await acquireOnce(root, encoding, { writeOpenCheck: 'full' })
        expect(acquired.head.nextSeq).toBe(reference.head.nextSeq)
        expect(acquired.head.lastCrc).toBe(reference.head.lastCrc)
        if (cut === seek.offset) {
          expect(acquired.repaired).toEqual([])
          expect(acquired.head.nextSeq).toBe(seek.fromSeq)
        } else {
          expect(acquired.repaired.map((repair) => repair.kind)).toEqual(['torn-tail'])
        }
      }
    })

    it('(c) a log rewritten under the seek point (another line there): the binding does not match, full scan', async () => {
      const { root, seek } = await checkpointed(encoding)
      const path = join(root, 's', CORE_CHECKPOINT_FILE_NAME)
      const decoded = decodeCheckpointFile(readFileSync(path))!
      // The point names another checksum than the line at its offset has.
      const wrong = { ...seek, firstCrc: seek.firstCrc === '00000000' ? '00000001' : '00000000' }
      writeFileSync(path, encodeCheckpointFile(decoded.record, wrong))
      const acquired = await acquireOnce(root, encoding)
      expect(acquired.headScan).toEqual({ from: 'start', fromSeq: 0, fallback: 'binding-mismatch' })
      expect(acquired.head.nextSeq).toBe(48)
      // And one that points one line/frame off (the seq at the offset differs).
      writeFileSync(path, encodeCheckpointFile(decoded.record, { ...seek, fromSeq: seek.fromSeq + 1 }))
      expect((await acquireOnce(root, encoding)).headScan).toMatchObject({ fallback: 'binding-mismatch' })
    })

    it('(d) an absent, unreadable or point-less checkpoint: a scan of every line, the reason reported', async () => {
      const { root, seek } = await checkpointed(encoding)
      const path = join(root, 's', CORE_CHECKPOINT_FILE_NAME)
      const good = readFileSync(path)
      const decoded = decodeCheckpointFile(good)!
      const cases: [string, () => void, string][] = [
        ['absent', () => unlinkSync(path), 'checkpoint-absent'],
        ['garbage', () => writeFileSync(path, 'not a checkpoint\n'), 'checkpoint-unreadable'],
        [
          'a flipped envelope byte',
          () => {
            const bytes = Buffer.from(good)
            bytes[30] = bytes[30]! ^ 0x01
            writeFileSync(path, bytes)
          },
          'checkpoint-unreadable',
        ],
        [
          'no seek point',
          () => writeFileSync(path, encodeCheckpointFile(decoded.record, null)),
          'no-seek-point',
        ],
        [
          "a point into the other encoding's log",
          () =>
            writeFileSync(
              path,
              encodeCheckpointFile(decoded.record, {
                ...seek,
                log: encoding === 'plain' ? 'session.v4.jsonl.zstd' : 'session.v4.jsonl',
              }),
            ),
          'no-seek-point',
        ],
      ]
      for (const [name, damage, fallback] of cases) {
        writeFileSync(path, good)
        damage()
        const acquired = await acquireOnce(root, encoding)
        expect([name, acquired.headScan]).toEqual([name, { from: 'start', fromSeq: 0, fallback }])
        expect(acquired.head.nextSeq).toBe(48)
      }
      expect(existsSync(path)).toBe(true)
    })
  })
}

describe('the write open after this instance’s own create', () => {
  it('reuses the published head (nothing read) and says so', async () => {
    const root = await tempRoot()
    roots.push(root)
    const backend = backendOver(root, 'plain')
    const store = storeOver(backend, { enabled: false })
    const seed = turnInputs(1).map((input, seq) => ({ ...input, seq, time: clock() }))
    const writer = await store.create({ id: 'p', seed })
    expect(writer.recovery.headScan).toEqual({ from: 'published', fromSeq: seed.length })
    await writer.close()
    const again = await store.openWriter('p')
    expect(again.recovery.headScan).toMatchObject({ from: 'start', fallback: 'checkpoint-absent' })
    await again.close()
    await store.close()
  })
})
