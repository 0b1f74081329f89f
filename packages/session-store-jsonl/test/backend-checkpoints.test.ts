/**
 * The JSONL backend's `checkpoints` capability through the session core, on real files,
 * plain and `.zstd`: the core's checkpoint is kept durably in `core.checkpoint` with a seek
 * point, a read from it starts at that point (proved by damage before it that only a full
 * read meets), a wrong seek point falls back to reading from byte 0 with the same result,
 * the JSONL store API's own checkpoint file is never read, and the write is temp + fsync +
 * rename + directory fsync (a failed rename leaves the old checkpoint).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import { createSessionStore } from '@agent-ledger/session-store'
import type {
  CheckpointOptions,
  SessionBackend,
  SessionStore,
  SessionStoreWarning,
} from '@agent-ledger/session-store'

import { createJsonlBackend } from '../src/index.ts'
import { nodeFsOps } from '../src/fs-ops.ts'
import type { FsOps } from '../src/fs-ops.ts'
import { decodeCheckpointFile, encodeCheckpointFile } from '../src/backend/checkpoint-envelope.ts'
import { CORE_CHECKPOINT_FILE_NAME } from '../src/layout.ts'
import { tempRoot } from './backend/jsonl-harness.ts'
import { writeTurns } from './support/sessions.ts'

/** The JSONL store API's own checkpoint file (another format; that API is gone, the file may be left). */
const LEGACY_CHECKPOINT_FILE_NAME = 'projection.checkpoint.msgpack'
const EAGER: CheckpointOptions = { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 }
const roots: string[] = []
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true })
})

async function newRoot(): Promise<string> {
  const root = await tempRoot()
  roots.push(root)
  return root
}

let tick = 0
const clock = (): string => new Date(Date.UTC(2026, 0, 1) + tick++).toISOString()

function backendOver(root: string, encoding: 'plain' | 'zstd', fs?: FsOps): SessionBackend {
  return createJsonlBackend({ root, encoding, lock: { heartbeatMs: 0 }, ...(fs === undefined ? {} : { fs }) })
}

function stores(backend: SessionBackend): { eager: SessionStore; replay: SessionStore } {
  return {
    eager: createSessionStore({ backend, clock, owner: 'eager', checkpoint: EAGER }),
    replay: createSessionStore({ backend, clock, owner: 'replay', checkpoint: { enabled: false } }),
  }
}

/** 12 turns (48 events), a checkpoint at seq 39 (after turn 10), 8 events after it. */
async function checkpointed(root: string, encoding: 'plain' | 'zstd', id: string) {
  const backend = backendOver(root, encoding)
  const s = stores(backend)
  await (await s.eager.create({ id, header: { cwd: '/bench' } })).close()
  await writeTurns(s.eager, id, 1, 10)
  await writeTurns(s.replay, id, 11, 2)
  expect(await backend.capabilities.checkpoints!.getCheckpoint(id)).toMatchObject({ seq: 39 })
  return { backend, s }
}

function logPath(root: string, id: string, encoding: 'plain' | 'zstd'): string {
  return join(root, id, encoding === 'plain' ? 'session.v4.jsonl' : 'session.v4.jsonl.zstd')
}

/** Flips one byte of the log early on (inside the first events, or the zstd log's second frame). */
function damageEarly(root: string, id: string, encoding: 'plain' | 'zstd'): void {
  const path = logPath(root, id, encoding)
  const bytes = readFileSync(path)
  if (encoding === 'plain') {
    const second = bytes.indexOf(0x0a, bytes.indexOf(0x0a) + 1)
    bytes[second + 20] = bytes[second + 20]! ^ 0x01
  } else {
    // Past the header frame and into the first event frame's compressed bytes.
    const at = Math.floor(bytes.length / 8)
    bytes[at] = bytes[at]! ^ 0x55
  }
  writeFileSync(path, bytes)
}

async function readAll(store: SessionStore, id: string, fromSeq: number): Promise<number[]> {
  const seqs: number[] = []
  for await (const event of store.readEvents(id, { fromSeq })) seqs.push(event.seq)
  return seqs
}

for (const encoding of ['plain', 'zstd'] as const) {
  describe(`JSONL backend checkpoints (${encoding})`, () => {
    it('keeps the core checkpoint in core.checkpoint (never the JSONL store API file) and opens from it', async () => {
      const root = await newRoot()
      const { s } = await checkpointed(root, encoding, 'a')
      expect(existsSync(join(root, 'a', CORE_CHECKPOINT_FILE_NAME))).toBe(true)
      expect(existsSync(join(root, 'a', LEGACY_CHECKPOINT_FILE_NAME))).toBe(false)
      const cold = stores(backendOver(root, encoding))
      const read = await cold.eager.openReader('a')
      expect(read.checkpoint).toEqual({ used: true, seq: 39, replayedEvents: 8 })
      const full = await s.replay.openReader('a')
      expect(read.projection.snapshot()).toEqual(full.projection.snapshot())
      expect(read.lastSeq).toBe(47)
    })

    it('a read from the checkpoint starts at its seek point: damage before it is met only by a full read', async () => {
      const root = await newRoot()
      const { s } = await checkpointed(root, encoding, 'b')
      damageEarly(root, 'b', encoding)
      const cold = stores(backendOver(root, encoding))
      const read = await cold.eager.openReader('b')
      expect(read.checkpoint).toMatchObject({ used: true, seq: 39 })
      expect(await readAll(cold.eager, 'b', 40)).toEqual([40, 41, 42, 43, 44, 45, 46, 47])
      const full = await s.replay.openReader('b', { allowDamaged: true })
      // The backend's own damage code reaches the caller: a line that fails its checksum on a
      // plain log, a frame that will not decode on a .zstd one.
      expect(full.error?.code).toBe(encoding === 'plain' ? 'CORRUPT_LINE' : 'CORRUPT_FRAME')
      expect((await cold.replay.verify('b')).status).toBe('damaged')
    })

    it('a seek point that does not match the log is not trusted: the read starts at byte 0, same result', async () => {
      const root = await newRoot()
      const { backend, s } = await checkpointed(root, encoding, 'c')
      const path = join(root, 'c', CORE_CHECKPOINT_FILE_NAME)
      const decoded = decodeCheckpointFile(readFileSync(path))!
      expect(decoded.seek).not.toBeNull()
      // A well-formed file whose seek point names another line (its checksum differs).
      const wrong = {
        ...decoded.seek!,
        firstCrc: decoded.seek!.firstCrc === '00000000' ? '00000001' : '00000000',
      }
      writeFileSync(path, encodeCheckpointFile(decoded.record, wrong))
      const cold = stores(backendOver(root, encoding))
      const read = await cold.eager.openReader('c')
      expect(read.checkpoint).toEqual({ used: true, seq: 39, replayedEvents: 8 })
      expect(read.projection.snapshot()).toEqual((await s.replay.openReader('c')).projection.snapshot())
      expect(await readAll(cold.eager, 'c', 41)).toEqual([41, 42, 43, 44, 45, 46, 47])
      await backend.close()
    })

    it('a damaged body is handed to the core, which ignores it with a warning (checksum); a damaged envelope line is no checkpoint (missing)', async () => {
      const root = await newRoot()
      await checkpointed(root, encoding, 'd')
      const path = join(root, 'd', CORE_CHECKPOINT_FILE_NAME)
      const good = readFileSync(path)
      const body = Buffer.from(good)
      body[body.length - 5] = body[body.length - 5]! ^ 0x01
      writeFileSync(path, body)
      expect(Buffer.from(decodeCheckpointFile(body)!.record.body)).toEqual(
        body.subarray(good.indexOf(0x0a) + 1),
      )
      const warnings: SessionStoreWarning[] = []
      const backend = backendOver(root, encoding)
      const eager = createSessionStore({
        backend,
        clock,
        owner: 'eager',
        checkpoint: EAGER,
        onWarning: (warning) => warnings.push(warning),
      })
      const read = await eager.openReader('d')
      expect(read.checkpoint).toMatchObject({ used: false, reason: 'checksum', replayedEvents: 48 })
      expect(warnings.map((warning) => [warning.code, warning.details['reason']])).toEqual([
        ['CHECKPOINT_IGNORED', 'checksum'],
      ])
      const envelope = Buffer.from(good)
      envelope[10] = envelope[10]! ^ 0x01
      writeFileSync(path, envelope)
      expect(decodeCheckpointFile(envelope)).toBeNull()
      const again = await stores(backendOver(root, encoding)).eager.openReader('d')
      // A damaged envelope is no checkpoint the backend can hand over: it says so (unreadable).
      expect(again.checkpoint).toMatchObject({ used: false, reason: 'unreadable', replayedEvents: 48 })
      expect(again.checkpoint).toMatchObject({ message: expect.stringContaining('d/core.checkpoint') })
      await backend.close()
    })

    it('a writer that opens and closes without appending stores a checkpoint a cold read can seek to', async () => {
      const root = await newRoot()
      const backend = backendOver(root, encoding)
      const s = stores(backend)
      const seed = Array.from({ length: 60 }, (_, index) => ({
        seq: index,
        time: clock(),
        type: 'user/message' as const,
        data: { message: { role: 'user' as const, content: `seeded ${index}` } },
      }))
      await (await s.replay.create({ id: 'e', header: { cwd: '/seeded' }, seed })).close()
      await (await s.eager.openWriter('e')).close()
      const stored = await backend.capabilities.checkpoints!.getCheckpoint('e')
      const lastSeq = (await s.replay.openReader('e')).lastSeq
      expect(stored).toMatchObject({ seq: lastSeq })
      const seek = decodeCheckpointFile(readFileSync(join(root, 'e', CORE_CHECKPOINT_FILE_NAME)))!.seek
      expect(seek).not.toBeNull()
      expect(seek!.fromSeq).toBeLessThanOrEqual(lastSeq)
      // Plain: the last line; zstd: the one frame the seed was written in (nothing before it to damage).
      if (encoding === 'plain') {
        expect(seek!.fromSeq).toBe(lastSeq)
        damageEarly(root, 'e', encoding)
      } else {
        expect(seek!.fromSeq).toBe(0)
        expect(seek!.offset).toBeGreaterThan(0)
      }
      const read = await stores(backendOver(root, encoding)).eager.openReader('e')
      expect(read.checkpoint).toMatchObject({ used: true, seq: lastSeq, replayedEvents: 0 })
    })
  })
}

describe('JSONL backend checkpoints: files and durability', () => {
  it('a left-over projection.checkpoint.msgpack of the retired JSONL store API is never read by the core (reported missing)', async () => {
    const root = await newRoot()
    const s = stores(backendOver(root, 'plain'))
    await (await s.replay.create({ id: 'legacy', header: { cwd: '/legacy' } })).close()
    await writeTurns(s.replay, 'legacy', 1, 30)
    // The old file's first bytes (a msgpack map with its format name), then filler: whatever
    // its content, the core's checkpoint is core.checkpoint and nothing else.
    const legacy = Buffer.concat([
      Buffer.from([0x86, 0xa6]),
      Buffer.from('format', 'utf8'),
      Buffer.from([0xd9, 0x20]),
      Buffer.from('agent-ledger.projection-checkpoint'.slice(0, 32), 'utf8'),
      Buffer.alloc(4096, 0x61),
    ])
    writeFileSync(join(root, 'legacy', LEGACY_CHECKPOINT_FILE_NAME), legacy, { mode: 0o600 })
    const backend = backendOver(root, 'plain')
    expect(await backend.capabilities.checkpoints!.getCheckpoint('legacy')).toBeNull()
    const read = await stores(backend).eager.openReader('legacy')
    expect(read.checkpoint).toMatchObject({ used: false, reason: 'missing', replayedEvents: 120 })
    expect(read.lastSeq).toBe(119)
    // A writer stores the core's checkpoint beside it and leaves the old file alone.
    await (await stores(backend).eager.openWriter('legacy')).close()
    expect(existsSync(join(root, 'legacy', CORE_CHECKPOINT_FILE_NAME))).toBe(true)
    expect(readFileSync(join(root, 'legacy', LEGACY_CHECKPOINT_FILE_NAME))).toEqual(legacy)
    expect((await stores(backendOver(root, 'plain')).eager.openReader('legacy')).checkpoint).toEqual({
      used: true,
      seq: 119,
      replayedEvents: 0,
    })
  })

  it('writes temp, fsync, rename, directory fsync; a failed rename leaves the old checkpoint and no temp file', async () => {
    const root = await newRoot()
    const calls: string[] = []
    const state = { failRename: false }
    const fs: FsOps = {
      ...nodeFsOps,
      async open(path, flags, mode) {
        const handle = await nodeFsOps.open(path, flags, mode)
        if (!path.includes('.tmp-checkpoint-')) return handle
        calls.push('open-temp')
        return {
          ...handle,
          path: handle.path,
          read: (...args) => handle.read(...args),
          write: (buffer, position) => (calls.push('write'), handle.write(buffer, position)),
          datasync: () => handle.datasync(),
          sync: () => (calls.push('sync'), handle.sync()),
          truncate: (length) => handle.truncate(length),
          stat: () => handle.stat(),
          chmod: (mode2) => handle.chmod(mode2),
          close: () => handle.close(),
        }
      },
      rename: async (from, to) => {
        if (!to.endsWith(CORE_CHECKPOINT_FILE_NAME)) return nodeFsOps.rename(from, to)
        calls.push('rename')
        if (state.failRename) {
          const error = new Error('EIO: injected rename failure')
          Object.defineProperty(error, 'code', { value: 'EIO', enumerable: true })
          throw error
        }
        return nodeFsOps.rename(from, to)
      },
      fsyncDirectory: async (directory) => {
        if (calls.at(-1) === 'rename') calls.push('fsync-dir')
        return nodeFsOps.fsyncDirectory(directory)
      },
    }
    const backend = backendOver(root, 'plain', fs)
    const s = stores(backend)
    await (await s.eager.create({ id: 'f', header: { cwd: '/f' } })).close()
    await writeTurns(s.eager, 'f', 1, 1)
    expect(calls.slice(0, 5)).toEqual(['open-temp', 'write', 'sync', 'rename', 'fsync-dir'])
    const before = readFileSync(join(root, 'f', CORE_CHECKPOINT_FILE_NAME))
    state.failRename = true
    const { lease } = await backend.acquire('f', { owner: 'tamper', leaseMs: 60_000, takeover: true })
    const record = decodeCheckpointFile(before)!.record
    await expect(backend.capabilities.checkpoints!.putCheckpoint(lease, { ...record })).rejects.toMatchObject(
      {
        code: 'BACKEND_FAILED',
      },
    )
    await backend.release(lease)
    expect(readFileSync(join(root, 'f', CORE_CHECKPOINT_FILE_NAME))).toEqual(before)
    expect(readdirSync(join(root, 'f')).filter((name) => name.startsWith('.tmp-'))).toEqual([])
  })
})
