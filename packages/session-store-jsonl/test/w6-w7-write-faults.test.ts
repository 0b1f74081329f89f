import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'
import type { SessionWriter } from '@agent-ledger/session-store'

import { LOG_FILE_NAME } from '../src/format.ts'
import { crashStore, referenceLines, splitLines, tornTailBytes } from './support/crash-harness.ts'
import { createFaultFs } from './support/fault-fs.ts'
import type { FaultFs } from './support/fault-fs.ts'
import { workload, WORKLOAD_HEADER } from './support/workload.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-w6w7-'))
let counter = 0
const SEED = 42
const events = workload(SEED, 12)

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

interface Setup {
  readonly root: string
  readonly id: string
  readonly fs: FaultFs
  readonly writer: SessionWriter
  readonly logPath: string
}

/** A session with events 0..2 acknowledged, written through a fault-injecting FsOps. */
async function setup(): Promise<Setup> {
  counter += 1
  const root = join(scratch, `r${counter}`)
  mkdirSync(root, { mode: 0o700 })
  const id = `faults-${counter}`
  const fs = createFaultFs()
  const store = crashStore(root, fs)
  const writer = await store.create({ id, header: WORKLOAD_HEADER })
  for (const event of events.slice(0, 3)) writer.append(event)
  expect(await writer.flush()).toEqual({ durableSeq: 2 })
  return { root, id, fs, writer, logPath: join(root, id, LOG_FILE_NAME) }
}

/**
 * The log's handle: after `create` the writer may keep the handle of the temp file it linked
 * into place (same inode), so match anything but the lock's and the lease's files and
 * quarantine files.
 */
const isLog = (path: string): boolean => {
  const name = basename(path)
  return (
    !name.startsWith('.tmp-lock') &&
    !name.startsWith('.tmp-lease') &&
    !name.startsWith('writer.lock') &&
    !name.startsWith('writer.lease') &&
    !name.includes('.torn-')
  )
}

async function rejection(promise: Promise<unknown>): Promise<SessionStoreError> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a rejection')
}

function thrown(run: () => unknown): SessionStoreError {
  try {
    run()
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a throw')
}

/** Reopens with the real file system and returns the log's event lines (seq order), after repair. */
async function reopenLines(root: string, id: string): Promise<Buffer[]> {
  const store = crashStore(root)
  const writer = await store.openWriter(id)
  await writer.close()
  await store.close()
  return splitLines(readFileSync(join(root, id, LOG_FILE_NAME))).lines.slice(1)
}

async function expectAckedIntact(root: string, id: string, lastAck: number): Promise<Buffer[]> {
  const reference = await referenceLines({ id, seed: SEED, count: events.length })
  const lines = await reopenLines(root, id)
  for (let seq = 0; seq <= lastAck; seq += 1) expect(lines[seq]?.equals(reference[seq + 1]!)).toBe(true)
  return lines
}

describe('W6: fdatasync fails with EIO', () => {
  it('W6: a single EIO from fdatasync rejects FSYNC_FAILED, poisons the writer, and nothing of the batch is acked', async () => {
    const { root, id, fs, writer } = await setup()
    fs.addFault({ op: 'datasync', errno: 'EIO', path: isLog })
    for (const event of events.slice(3, 5)) writer.append(event)
    const failed = await rejection(writer.flush())
    expect(failed.code).toBe('FSYNC_FAILED')
    expect(failed.details['cause']).toBe('EIO')
    expect(writer.durableSeq).toBe(2)
    const syncsAfterFailure = fs.count('datasync')
    // Every later call rejects with WRITER_FAILED naming the cause; no retry of fsync can ack the batch.
    const appendError = thrown(() => writer.append(events[5]!))
    expect(appendError.code).toBe('WRITER_FAILED')
    expect(appendError.details['cause']).toBe('FSYNC_FAILED')
    expect((await rejection(writer.flush())).code).toBe('WRITER_FAILED')
    expect((await rejection(writer.flush())).code).toBe('WRITER_FAILED')
    expect(fs.count('datasync')).toBe(syncsAfterFailure)
    expect(writer.durableSeq).toBe(2)
    await writer.close().catch(() => undefined)
    // The lock was released; a fresh open reports what a fresh scan finds, acked events intact.
    await expectAckedIntact(root, id, 2)
  })

  it('W6: EIO from every fdatasync: the first flush fails, later ones never call fdatasync again', async () => {
    const { root, id, fs, writer } = await setup()
    fs.addFault({ op: 'datasync', errno: 'EIO', mode: 'forever', path: isLog })
    writer.append(events[3]!)
    expect((await rejection(writer.flush())).code).toBe('FSYNC_FAILED')
    const syncs = fs.count('datasync')
    for (let attempt = 0; attempt < 3; attempt += 1)
      expect((await rejection(writer.flush())).code).toBe('WRITER_FAILED')
    expect(fs.count('datasync')).toBe(syncs)
    expect(writer.durableSeq).toBe(2)
    await writer.close().catch(() => undefined)
    fs.clearFaults()
    await expectAckedIntact(root, id, 2)
  })
})

describe('W7: disk full during append/flush', () => {
  for (const errno of ['ENOSPC', 'EDQUOT'] as const) {
    it(`W7(b): ${errno} on write rejects DISK_FULL, rolls the file back to its durable size, and a retry after space is freed acks the same seqs`, async () => {
      const { root, id, fs, writer, logPath } = await setup()
      const durableSize = statSync(logPath).size
      const fault = fs.addFault({ op: 'write', errno, mode: 'forever', path: isLog, shortWriteBytes: 100 })
      for (const event of events.slice(3, 6)) writer.append(event)
      const failed = await rejection(writer.flush())
      expect(failed.code).toBe('DISK_FULL')
      expect(failed.details).toMatchObject({ cause: errno })
      expect(failed.details['bytesAttempted']).toBeGreaterThan(100)
      // The short write was rolled back: no partial line remains.
      expect(statSync(logPath).size).toBe(durableSize)
      expect(writer.durableSeq).toBe(2)
      expect(writer.bufferedEvents).toBe(3)
      expect((await rejection(writer.flush())).code).toBe('DISK_FULL')
      fault.remove()
      expect(await writer.flush()).toEqual({ durableSeq: 5 })
      writer.append(events[6]!)
      expect(await writer.flush()).toEqual({ durableSeq: 6 })
      await writer.close()
      const lines = await expectAckedIntact(root, id, 6)
      expect(
        lines.slice(0, 7).map((line) => (JSON.parse(line.toString('utf8')) as { seq: number }).seq),
      ).toEqual([0, 1, 2, 3, 4, 5, 6])
    })
  }

  it('W7(b): when the rollback truncate fails too, the writer is poisoned and the next open repairs the tail', async () => {
    const { root, id, fs, writer, logPath } = await setup()
    const durableSize = statSync(logPath).size
    fs.addFault({ op: 'write', errno: 'ENOSPC', path: isLog, shortWriteBytes: 50 })
    fs.addFault({ op: 'truncate', errno: 'EIO', path: isLog })
    for (const event of events.slice(3, 5)) writer.append(event)
    // The JSONL store API said DISK_FULL here; the backend says WRITER_FAILED (poisoned): freeing
    // space cannot revive this lease, so the retryable DISK_FULL would mislead.
    const failed = await rejection(writer.flush())
    expect(failed.code).toBe('WRITER_FAILED')
    expect(failed.details).toMatchObject({ cause: 'ENOSPC', poisoned: true })
    expect(statSync(logPath).size).toBe(durableSize + 50)
    expect(writer.state).toBe('failed')
    expect(thrown(() => writer.append(events[5]!)).code).toBe('WRITER_FAILED')
    expect(writer.durableSeq).toBe(2)
    await writer.close().catch(() => undefined)
    const store = crashStore(root)
    const reopened = await store.openWriter(id)
    expect(tornTailBytes(reopened)).toBe(50)
    await reopened.close()
    await store.close()
    await expectAckedIntact(root, id, 2)
  })

  it('W7(c): ENOSPC from fdatasync is handled as W6: FSYNC_FAILED and poisoned, never retried', async () => {
    const { root, id, fs, writer } = await setup()
    fs.addFault({ op: 'datasync', errno: 'ENOSPC', path: isLog })
    writer.append(events[3]!)
    const failed = await rejection(writer.flush())
    expect(failed.code).toBe('FSYNC_FAILED')
    expect(failed.details['cause']).toBe('ENOSPC')
    const syncs = fs.count('datasync')
    expect((await rejection(writer.flush())).code).toBe('WRITER_FAILED')
    expect(fs.count('datasync')).toBe(syncs)
    await writer.close().catch(() => undefined)
    await expectAckedIntact(root, id, 2)
  })
})
