/**
 * Projection checkpoints over JSONL (issue 7, moved onto the one store API in issue 23): the
 * core's checkpoint (`<id>/core.checkpoint`, the core's body in the JSONL backend's envelope)
 * is written after the log is durable, atomically, bound to the log by the header line's and
 * event N's checksums; a cold open restores it and replays only the tail; anything that does
 * not match is ignored with a `CHECKPOINT_IGNORED` warning and the open equals a full replay.
 *
 * Expectations come from the files on disk (the log's own `crc` members, its sizes, the
 * body's JSON), never from the code under test; the full replay (checkpoints disabled) is the
 * reference every checkpointed open is compared with.
 *
 * Not moved (they tested the retired `projection.checkpoint.msgpack` layout, which the core's
 * checkpoint does not have): a binding to another generation file, the surface references
 * (a changed, out-of-range or cut referenced line), the sparse seq index, and the unit tests
 * of the old `CheckpointWriter` (the core's schedule is tested in packages/session-store,
 * and through JSONL by the amortisation case below).
 */
import {
  existsSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'

import { crc32c } from '@node-rs/crc32'
import { createEventRegistry, defineEventType } from '@agent-ledger/session-events'
import type { EventInput } from '@agent-ledger/session-events'
import { planCompaction } from '@agent-ledger/session-projection'
import { CORE_CHECKPOINT_FORMAT, SessionStoreError } from '@agent-ledger/session-store'
import type {
  CheckpointCapability,
  CheckpointRecord,
  SessionReadResult,
  SessionStoreWarning,
  SessionWriter,
} from '@agent-ledger/session-store'
import { z } from 'zod'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import { nodeFsOps } from '../src/index.ts'
import type { FileHandleOps, FsOps, JsonlStoreOptions } from '../src/index.ts'
import { decodeCheckpointFile, encodeCheckpointFile } from '../src/backend/checkpoint-envelope.ts'
import type { SeekPoint } from '../src/backend/seek-point.ts'
import { CORE_CHECKPOINT_FILE_NAME, LOG_FILE_NAME } from '../src/layout.ts'
import { createFaultFs } from './support/fault-fs.ts'
import { collect, coreTestStore, lineStarts, makeTempDir, turnInputs } from './support/sessions.ts'

/** The checkpoint is written after the flush resolves: wait for it without a deadline that a loaded machine misses. */
const WAIT = { timeout: 50_000, interval: 20 }

let temp: { path: string; cleanup: () => void }

beforeEach(() => {
  temp = makeTempDir('al-ckpt-')
})

afterEach(() => {
  temp.cleanup()
})

/** Checkpoints on for any log size; no throttle unless a test asks. */
const ON = { minLogBytes: 0, everyEvents: 1_000_000, minIntervalMs: 0, minGrowthRatio: 0 } as const

type Options = Partial<Omit<JsonlStoreOptions, 'root'>>

function checkpointStore(options: Options = {}): ReturnType<typeof coreTestStore> {
  return coreTestStore(temp.path, { ...options, checkpoint: { ...ON, ...options.checkpoint } })
}

function plainStore(options: Options = {}): ReturnType<typeof coreTestStore> {
  return coreTestStore(temp.path, { ...options, checkpoint: { enabled: false } })
}

function logPath(id: string): string {
  return join(temp.path, id, LOG_FILE_NAME)
}

function checkpointPath(id: string): string {
  return join(temp.path, id, CORE_CHECKPOINT_FILE_NAME)
}

/** The log's lines (without `\n`): line 0 is the header, line `seq + 1` holds event `seq`. */
function logLines(id: string): string[] {
  return readFileSync(logPath(id), 'utf8').split('\n').slice(0, -1)
}

/** The `crc` member a log line carries (read with JSON.parse, not the library). */
function crcOf(line: string): string {
  return (JSON.parse(line) as { crc: string }).crc
}

/** The log's size after its header line: the core's `logChars` (ASCII content, so bytes are chars). */
function eventBytes(id: string): number {
  return statSync(logPath(id)).size - Buffer.byteLength(logLines(id)[0]!, 'utf8') - 1
}

const hex = (value: number): string => (value >>> 0).toString(16).padStart(8, '0')

interface Payload {
  seq: number
  logChars: number
  maxDepth: number
  maxLineLength: number
  snapshot: Record<string, unknown> & { nextSeq: number; repairState: { pendingCalls: unknown[] } }
}

/** The stored record, its seek point, and its body's payload decoded here (preamble, CRC-32C, JSON). */
function readStored(id: string): { record: CheckpointRecord; seek: SeekPoint | null; payload: Payload } {
  const decoded = decodeCheckpointFile(readFileSync(checkpointPath(id)))
  if (decoded === null) throw new Error(`${checkpointPath(id)} is not a checkpoint file`)
  const body = Buffer.from(decoded.record.body)
  const newline = body.indexOf(0x0a)
  const preamble = JSON.parse(body.toString('utf8', 0, newline)) as Record<string, unknown>
  expect(preamble).toEqual({
    format: CORE_CHECKPOINT_FORMAT,
    checkpointVersion: 1,
    payloadCrc32c: hex(crc32c(body.subarray(newline + 1))),
  })
  const payload = JSON.parse(body.toString('utf8', newline + 1)) as Payload
  return { ...decoded, payload }
}

/** A core checkpoint body built here: `preamble` overrides, then `payload` as JSON. */
function bodyOf(payload: unknown, preamble: Record<string, unknown> = {}): Uint8Array {
  const data = Buffer.from(JSON.stringify(payload), 'utf8')
  const first = {
    format: CORE_CHECKPOINT_FORMAT,
    checkpointVersion: 1,
    payloadCrc32c: hex(crc32c(data)),
    ...preamble,
  }
  return new Uint8Array(Buffer.concat([Buffer.from(`${JSON.stringify(first)}\n`, 'utf8'), data]))
}

/** Rewrites the session's checkpoint file with `change` applied to its record (the seek point kept). */
function rewrite(id: string, change: (record: CheckpointRecord, payload: Payload) => CheckpointRecord): void {
  const { record, seek, payload } = readStored(id)
  writeFileSync(checkpointPath(id), encodeCheckpointFile(change(record, payload), seek), { mode: 0o600 })
}

/** Appends a compaction folding the whole surface into one summary, and flushes it. */
async function compactAll(writer: SessionWriter): Promise<void> {
  const surface = writer.projection.surface()
  const plan = planCompaction(writer.projection, {
    compactionId: 'all',
    startSeq: surface[0]!.seq,
    endSeq: surface.at(-1)!.seq,
    summary: 'everything so far',
    reason: 'context-window',
  })
  for (const input of plan) writer.append(input)
  await writer.flush()
}

/** Writes `turns` complete turns, flushing after each (each flush makes a turn/end durable), then closes. */
async function writeTurns(id: string, turns: number, first = 1, options: Options = {}): Promise<void> {
  const { store } = checkpointStore(options)
  const writer = first === 1 ? await store.create({ id }) : await store.openWriter(id)
  for (let turn = first; turn < first + turns; turn += 1) {
    for (const input of turnInputs(turn)) writer.append(input)
    await writer.flush()
  }
  await writer.close()
}

function withoutProjection(read: SessionReadResult): Record<string, unknown> {
  const { projection: _projection, checkpoint: _checkpoint, error, ...rest } = read
  return {
    ...rest,
    error:
      error === null
        ? null
        : {
            code: error.code,
            message: error.message,
            location: error.location,
            lastGoodSeq: error.lastGoodSeq,
            details: error.details,
          },
  }
}

/** Opens read-only with and without checkpoints and asserts the results are the same. */
async function expectSameAsFullReplay(
  id: string,
  options: Options = {},
): Promise<{ read: SessionReadResult; warnings: SessionStoreWarning[] }> {
  const { store, warnings } = checkpointStore(options)
  const read = await store.openReader(id, { allowDamaged: true })
  const full = await plainStore(options).store.openReader(id, { allowDamaged: true })
  expect(full.checkpoint).toMatchObject({ used: false, reason: 'disabled' })
  expect(withoutProjection(read)).toEqual(withoutProjection(full))
  expect(read.projection.snapshot()).toEqual(full.projection.snapshot())
  expect(read.projection.deriveMessages()).toEqual(full.projection.deriveMessages())
  expect(read.projection.repairState).toEqual(full.projection.repairState)
  expect(read.checkpoint.replayedEvents).toBe(
    read.checkpoint.used ? read.lastSeq - read.checkpoint.seq : full.checkpoint.replayedEvents,
  )
  return { read, warnings }
}

function ignoredReasons(warnings: readonly SessionStoreWarning[]): unknown[] {
  return warnings
    .filter((warning) => warning.code === 'CHECKPOINT_IGNORED')
    .map((warning) => warning.details['reason'])
}

/** An FsOps that counts the bytes read from log files. */
function countingFs(): { fs: FsOps; logBytesRead: () => number } {
  let bytes = 0
  const fs: FsOps = {
    ...nodeFsOps,
    async open(path, flags, mode) {
      const handle = await nodeFsOps.open(path, flags, mode)
      if (!path.endsWith('.jsonl')) return handle
      const counted: FileHandleOps = {
        ...handle,
        path: handle.path,
        async read(buffer, offset, length, position) {
          const count = await handle.read(buffer, offset, length, position)
          bytes += count
          return count
        },
      }
      return counted
    },
  }
  return { fs, logBytesRead: () => bytes }
}

const note = (text: string): EventInput => ({
  type: 'user/message',
  data: { message: { role: 'user', content: text } },
})

describe('writing checkpoints', () => {
  it('writes core.checkpoint after the flush that makes a turn/end durable, bound to that event and the header, 0600, with no temp file left', async () => {
    const { store } = checkpointStore()
    const writer = await store.create({ id: 'turns' })
    for (const input of turnInputs(1)) writer.append(input)
    const { durableSeq } = await writer.flush()
    await vi.waitFor(() => {
      expect(existsSync(checkpointPath('turns'))).toBe(true)
    }, WAIT)
    const { record, payload } = readStored('turns')
    const lines = logLines('turns')
    expect(record.seq).toBe(durableSeq)
    expect(payload.seq).toBe(durableSeq)
    expect(payload.snapshot.nextSeq).toBe(durableSeq + 1)
    expect(record.headerCrc).toBe(crcOf(lines[0]!))
    expect(record.eventCrc).toBe(crcOf(lines[durableSeq + 1]!))
    expect(payload.logChars).toBe(eventBytes('turns'))
    expect(statSync(checkpointPath('turns')).mode & 0o777).toBe(0o600)
    await writer.close()
    expect(readdirSync(join(temp.path, 'turns')).filter((name) => name.startsWith('.tmp-'))).toEqual([])
  })

  it('binds the header line and event N across writers (after create, a checkpointed open, a full-replay open)', async () => {
    const expectBound = (seq: number): void => {
      const { record, payload } = readStored('crc')
      const lines = logLines('crc')
      expect(record.seq).toBe(seq)
      expect(record.headerCrc).toBe(crcOf(lines[0]!))
      expect(record.eventCrc).toBe(crcOf(lines[seq + 1]!))
      expect(payload.logChars).toBe(eventBytes('crc'))
      expect(payload.snapshot.nextSeq).toBe(seq + 1)
    }
    await writeTurns('crc', 2)
    expectBound(13)
    await writeTurns('crc', 2, 3)
    expectBound(27)
    unlinkSync(checkpointPath('crc'))
    await writeTurns('crc', 1, 5)
    expectBound(34)
  })

  it('close() writes a last checkpoint covering every durable event', async () => {
    const { store } = checkpointStore()
    const writer = await store.create({ id: 'close' })
    for (const input of turnInputs(1)) writer.append(input)
    await writer.flush()
    writer.append(note('after the turn'))
    await writer.close()
    expect(readStored('close').record.seq).toBe(writer.durableSeq)
    expect(readStored('close').record.eventCrc).toBe(crcOf(logLines('close').at(-1)!))
    expect(readStored('close').payload.logChars).toBe(eventBytes('close'))
  })

  it('the throttle writes one once everyEvents are durable, without a turn/end', async () => {
    const { store } = checkpointStore({ checkpoint: { everyEvents: 5, minIntervalMs: 0 } })
    const writer = await store.create({ id: 'throttle' })
    for (let index = 0; index < 6; index += 1) writer.append(note(`note ${index}`))
    await writer.flush()
    await vi.waitFor(() => {
      expect(existsSync(checkpointPath('throttle'))).toBe(true)
    }, WAIT)
    expect(readStored('throttle').record.seq).toBe(5)
    await writer.close()
  })

  it('writes nothing while the log is smaller than minLogBytes, and nothing at all when disabled', async () => {
    const small = coreTestStore(temp.path, { checkpoint: { minLogBytes: 1024 * 1024 } }).store
    const writer = await small.create({ id: 'small' })
    for (const input of turnInputs(1)) writer.append(input)
    await writer.close()
    expect(existsSync(checkpointPath('small'))).toBe(false)
    const off = plainStore().store
    const other = await off.create({ id: 'off' })
    for (const input of turnInputs(1)) other.append(input)
    await other.close()
    expect(readdirSync(join(temp.path, 'off')).filter((name) => name.includes('checkpoint'))).toEqual([])
  })

  it('a failed checkpoint write (rename EIO) is a CHECKPOINT_WRITE_FAILED warning: the old checkpoint stays, the writer and the log are unaffected', async () => {
    await writeTurns('faulty', 1)
    const before = readFileSync(checkpointPath('faulty'))
    const fs = createFaultFs()
    const { store, warnings } = checkpointStore({ fs })
    const writer = await store.openWriter('faulty')
    fs.addFault({
      op: 'rename',
      errno: 'EIO',
      mode: 'forever',
      path: (path) => path.endsWith(CORE_CHECKPOINT_FILE_NAME),
    })
    for (const input of turnInputs(2)) writer.append(input)
    await writer.flush()
    await writer.close()
    expect(readFileSync(checkpointPath('faulty')).equals(before)).toBe(true)
    expect(warnings.map((warning) => warning.code)).toContain('CHECKPOINT_WRITE_FAILED')
    expect(warnings.find((warning) => warning.code === 'CHECKPOINT_WRITE_FAILED')?.message).toContain(
      'faulty',
    )
    expect(readdirSync(join(temp.path, 'faulty')).filter((name) => name.startsWith('.tmp-'))).toEqual([])
    const { read } = await expectSameAsFullReplay('faulty')
    expect(read.lastSeq).toBe(13)
    expect(read.checkpoint).toMatchObject({ used: true, seq: 6 })
  })

  it('S5: a symlink at the checkpoint name is never followed: an unreadable checkpoint on read (a warning naming it), replaced (not written through) on write', async () => {
    await writeTurns('linked', 1)
    const victim = join(temp.path, 'victim.txt')
    writeFileSync(victim, 'victim', { mode: 0o600 })
    unlinkSync(checkpointPath('linked'))
    symlinkSync(victim, checkpointPath('linked'))
    const { read, warnings } = await expectSameAsFullReplay('linked')
    // The port's getCheckpoint never throws for a file that is not a checkpoint: it says what it found.
    expect(read.checkpoint).toMatchObject({ used: false, reason: 'unreadable' })
    expect(ignoredReasons(warnings)).toEqual(['unreadable'])
    expect(warnings[0]!.message).toContain(
      'linked/core.checkpoint: expected a regular file, found a symbolic link',
    )
    await writeTurns('linked', 1, 2)
    expect(readFileSync(victim, 'utf8')).toBe('victim')
    expect(readStored('linked').record.seq).toBe(13)
  })

  it('what a binary format could not carry (a lone surrogate in a message and in a pending call, an own __proto__ key) round-trips through the JSON body: written and used', async () => {
    const args = `{"path":"broken \ud800"}`
    const cases: [string, EventInput[]][] = [
      ['surrogate', [note(`broken \ud800 text`)]],
      [
        'proto',
        [
          {
            type: 'user/message',
            data: {
              message: JSON.parse('{"role":"user","content":"fine","__proto__":{"polluted":true}}') as never,
            },
          },
        ],
      ],
      [
        'pending',
        [
          {
            type: 'assistant/message',
            data: {
              message: {
                role: 'assistant',
                content: null,
                tool_calls: [
                  { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: args } },
                ],
              },
            },
          },
          { type: 'tool/call', data: { callId: 'call_1', name: 'read_file', arguments: args } },
        ],
      ],
    ]
    for (const [id, inputs] of cases) {
      const { store, warnings } = checkpointStore()
      const writer = await store.create({ id })
      writer.append({ type: 'turn/start', data: { turn: 1 } })
      for (const input of inputs) writer.append(input)
      if (id !== 'pending') writer.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
      await writer.close()
      expect(warnings).toEqual([])
      const lastSeq = inputs.length + (id === 'pending' ? 0 : 1)
      expect(readStored(id).record.seq).toBe(lastSeq)
      const { read, warnings: opened } = await expectSameAsFullReplay(id)
      expect(read.checkpoint).toEqual({ used: true, seq: lastSeq, replayedEvents: 0 })
      expect(opened).toEqual([])
      expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
    }
  })
})

describe('cold open from a checkpoint', () => {
  it('restores the snapshot, replays only the tail, and equals a full replay', async () => {
    await writeTurns('cold', 3)
    const { read, warnings } = await expectSameAsFullReplay('cold')
    expect(warnings).toEqual([])
    expect(read.checkpoint).toEqual({ used: true, seq: 20, replayedEvents: 0 })
  })

  it('a stale checkpoint (events appended after it) replays more, and still equals a full replay', async () => {
    await writeTurns('stale', 2)
    const old = readFileSync(checkpointPath('stale'))
    await writeTurns('stale', 2, 3)
    writeFileSync(checkpointPath('stale'), old)
    const { read, warnings } = await expectSameAsFullReplay('stale')
    expect(warnings).toEqual([])
    expect(read.checkpoint).toEqual({ used: true, seq: 13, replayedEvents: 14 })
  })

  it('reads the header, event N from its seek point and the tail: far fewer log bytes than a full replay', async () => {
    const writer = await checkpointStore().store.create({ id: 'bytes' })
    for (let turn = 1; turn <= 600; turn += 1) for (const input of turnInputs(turn)) writer.append(input)
    await compactAll(writer)
    await writer.close()
    const checkpointed = countingFs()
    const read = await checkpointStore({ fs: checkpointed.fs }).store.openReader('bytes')
    expect(read.checkpoint).toMatchObject({ used: true, seq: read.lastSeq })
    const size = statSync(logPath('bytes')).size
    expect(checkpointed.logBytesRead()).toBeLessThan(size / 4)
    const full = countingFs()
    await plainStore({ fs: full.fs }).store.openReader('bytes')
    expect(full.logBytesRead()).toBeGreaterThanOrEqual(size)
  })

  it('openWriter starts from the checkpoint (recovery.checkpoint) with the state of a full replay, and continues the seqs', async () => {
    await writeTurns('resume', 2)
    const full = await plainStore().store.openReader('resume')
    const { store, warnings } = checkpointStore()
    const writer = await store.openWriter('resume')
    expect(writer.recovery.checkpoint).toEqual({ used: true, seq: 13, replayedEvents: 0 })
    expect(writer.projection.snapshot()).toEqual(full.projection.snapshot())
    const appended = writer.append(note('more'))
    expect(appended.seq).toBe(14)
    await writer.close()
    expect(warnings).toEqual([])
    const { read } = await expectSameAsFullReplay('resume')
    expect(read.lastSeq).toBe(14)
    expect(read.checkpoint).toMatchObject({ used: true, seq: 14 })
  })

  it('R1: the repair state comes from the snapshot: a dangling call before N is repaired exactly as after a full replay', async () => {
    const inputs: EventInput[] = turnInputs(1).slice(0, 4)
    const build = async (id: string, enabled: boolean): Promise<number> => {
      const { store } = enabled ? checkpointStore() : plainStore()
      const writer = await store.create({ id })
      for (const input of inputs) writer.append(input)
      await writer.flush()
      // The writer stops without a clean end of turn.
      await writer.close()
      return readFileSync(logPath(id)).length
    }
    const lengths = new Map([
      ['dangling', await build('dangling', true)],
      ['dangling-full', await build('dangling-full', false)],
    ])
    expect(readStored('dangling').payload.snapshot.repairState.pendingCalls).toHaveLength(1)
    const reopened = await checkpointStore().store.openWriter('dangling')
    expect(reopened.recovery.checkpoint).toMatchObject({ used: true, seq: 3 })
    const full = await plainStore().store.openWriter('dangling-full')
    expect(reopened.recovery.repairs).toEqual(full.recovery.repairs)
    expect(reopened.recovery.repairs.length).toBeGreaterThan(0)
    await reopened.close()
    await full.close()
    const tail = (id: string): unknown[] =>
      readFileSync(logPath(id))
        .subarray(lengths.get(id))
        .toString('utf8')
        .trim()
        .split('\n')
        .map((line) => {
          const { time: _time, crc: _crc, ...rest } = JSON.parse(line) as Record<string, unknown>
          return rest
        })
    expect(tail('dangling')).toEqual(tail('dangling-full'))
  })
})

describe('checkpoints that are not used (CHECKPOINT_IGNORED, then a full replay)', () => {
  it('another session: a checkpoint copied from a different session (its header line differs)', async () => {
    await writeTurns('one', 2)
    await writeTurns('two', 2)
    writeFileSync(checkpointPath('two'), readFileSync(checkpointPath('one')))
    const { read, warnings } = await expectSameAsFullReplay('two')
    expect(read.checkpoint).toMatchObject({ used: false, reason: 'header' })
    expect(ignoredReasons(warnings)).toEqual(['header'])
    expect(warnings[0]!.message).toContain('header crc')
    expect(warnings[0]!.sessionId).toBe('two')
  })

  it('another creation: same id, the session deleted and created again (another createdAt), the old checkpoint left', async () => {
    await writeTurns('again', 2)
    const old = readFileSync(checkpointPath('again'))
    rmSync(join(temp.path, 'again'), { recursive: true })
    let tick = 0
    await writeTurns('again', 2, 1, {
      clock: () => new Date(Date.UTC(2027, 5, 1) + 1000 * tick++).toISOString(),
    })
    writeFileSync(checkpointPath('again'), old)
    const { warnings } = await expectSameAsFullReplay('again')
    expect(ignoredReasons(warnings)).toEqual(['header'])
  })

  it('T1: a truncated log (the checkpoint event is no longer stored)', async () => {
    await writeTurns('short', 3)
    const size = statSync(logPath('short')).size
    truncateSync(logPath('short'), size - 40)
    const { read, warnings } = await expectSameAsFullReplay('short')
    expect(read.checkpoint).toMatchObject({ used: false, reason: 'past-head' })
    expect(read.tornTail).not.toBeNull()
    expect(read.lastSeq).toBe(19)
    expect(ignoredReasons(warnings)).toEqual(['past-head'])
  })

  it('a salvaged or rewritten log: event N is a different line (another crc)', async () => {
    await writeTurns('rewritten', 2)
    // Rewrite the log from the same header: the same events except a different last one.
    const content = readFileSync(logPath('rewritten'))
    truncateSync(logPath('rewritten'), lineStarts(content)[14])
    const { store } = plainStore()
    const writer = await store.openWriter('rewritten')
    writer.append(note('x'))
    await writer.close()
    const { read, warnings } = await expectSameAsFullReplay('rewritten')
    expect(read.checkpoint).toMatchObject({ used: false, reason: 'event' })
    expect(ignoredReasons(warnings)).toEqual(['event'])
    expect(warnings[0]!.message).toContain(readStored('rewritten').record.eventCrc)
  })

  it('a salvaged copy: salvage() into a new session with the source checkpoint copied beside it', async () => {
    await writeTurns('source', 2)
    const { store } = plainStore()
    await store.salvage('source', { to: 'salvaged' })
    writeFileSync(checkpointPath('salvaged'), readFileSync(checkpointPath('source')))
    const { warnings } = await expectSameAsFullReplay('salvaged')
    expect(ignoredReasons(warnings)).toEqual(['header'])
  })

  it('a checkpoint of an older body version (checkpointVersion 0) is ignored, never trusted, and replaced by the next writer', async () => {
    await writeTurns('old', 2)
    rewrite('old', (record, payload) => ({ ...record, body: bodyOf(payload, { checkpointVersion: 0 }) }))
    const { read, warnings } = await expectSameAsFullReplay('old')
    expect(read.checkpoint).toMatchObject({ used: false, reason: 'old-version' })
    expect(ignoredReasons(warnings)).toEqual(['old-version'])
    expect(warnings[0]!.message).toContain('found 0')
    // The next writer's close replaces it, though nothing was appended.
    const { store } = checkpointStore()
    await (await store.openWriter('old')).close()
    expect(readStored('old').record.seq).toBe(13)
    const again = await expectSameAsFullReplay('old')
    expect(again.warnings).toEqual([])
    expect(again.read.checkpoint).toEqual({ used: true, seq: 13, replayedEvents: 0 })
  })

  it('a checkpoint written by a newer checkpointVersion', async () => {
    await writeTurns('newer', 1)
    rewrite('newer', (record) => ({
      ...record,
      body: bodyOf({ anything: { new: true } }, { checkpointVersion: 2 }),
    }))
    const { warnings } = await expectSameAsFullReplay('newer')
    expect(ignoredReasons(warnings)).toEqual(['newer-version'])
    expect(warnings[0]!.message).toContain('found 2')
  })

  it('corrupted files: a flipped byte in the body or a cut file (checksum), a body of another format (decode), a payload of the wrong shape (schema); garbage or a damaged envelope line is an unreadable checkpoint (unreadable, with a warning)', async () => {
    await writeTurns('bad', 2)
    const good = readFileSync(checkpointPath('bad'))
    const envelopeEnd = good.indexOf(0x0a)
    const flipAt = (index: number): Buffer => {
      const copy = Buffer.from(good)
      copy[index] = copy[index]! ^ 0x20
      return copy
    }
    const { record, seek, payload } = readStored('bad')
    const cases: [Buffer, string][] = [
      [Buffer.from([0xc1, 0x00, 0x17]), 'unreadable'],
      [flipAt(20), 'unreadable'],
      [good.subarray(0, envelopeEnd - 3), 'unreadable'],
      [flipAt(good.length - 7), 'checksum'],
      [good.subarray(0, envelopeEnd + 1 + ((good.length - envelopeEnd) >> 1)), 'checksum'],
      [
        encodeCheckpointFile({ ...record, body: new TextEncoder().encode('{"format":"other"}\n{}') }, seek),
        'decode',
      ],
      [encodeCheckpointFile({ ...record, body: bodyOf({ ...payload, logChars: 'many' }) }, seek), 'schema'],
      [encodeCheckpointFile({ ...record, body: bodyOf([1, 2, 3]) }, seek), 'schema'],
    ]
    for (const [bytes, reason] of cases) {
      writeFileSync(checkpointPath('bad'), bytes)
      const { read, warnings } = await expectSameAsFullReplay('bad')
      expect({ reason, use: read.checkpoint }).toMatchObject({ reason, use: { used: false, reason } })
      expect(ignoredReasons(warnings)).toEqual([reason])
    }
  })

  it('a payload that passes the CRC but not restoreProjection (malformed stats), or is for another seq (schema)', async () => {
    await writeTurns('snap', 1)
    rewrite('snap', (record, payload) => ({
      ...record,
      body: bodyOf({ ...payload, snapshot: { ...payload.snapshot, stats: { events: -1 } } }),
    }))
    const stats = await expectSameAsFullReplay('snap')
    expect(ignoredReasons(stats.warnings)).toEqual(['snapshot'])
    await writeTurns('snap', 1, 2)
    rewrite('snap', (record, payload) => ({ ...record, body: bodyOf({ ...payload, seq: payload.seq - 1 }) }))
    const other = await expectSameAsFullReplay('snap')
    expect(ignoredReasons(other.warnings)).toEqual(['schema'])
    expect(other.warnings[0]!.message).toContain(`found ${readStored('snap').record.seq - 1}`)
  })

  it('a reader that knows other event types (registry), or enforces smaller line limits (limits)', async () => {
    await writeTurns('judged', 2)
    const registry = createEventRegistry([
      defineEventType('plugin/note' as never, z.object({ text: z.string() }) as never),
    ])
    const plugin = await expectSameAsFullReplay('judged', { registry })
    expect(ignoredReasons(plugin.warnings)).toEqual(['registry'])
    const limits = await expectSameAsFullReplay('judged', { limits: { maxLineLength: 1024 * 1024 } })
    expect(ignoredReasons(limits.warnings)).toEqual(['limits'])
    const depth = await expectSameAsFullReplay('judged', { limits: { maxDepth: 64 } })
    expect(ignoredReasons(depth.warnings)).toEqual(['limits'])
  })

  it('a checkpoint larger than maxBytes is not read', async () => {
    await writeTurns('big', 1)
    const { warnings } = await expectSameAsFullReplay('big', { checkpoint: { maxBytes: 16 } })
    expect(ignoredReasons(warnings)).toEqual(['too-large'])
  })

  it('with checkpoints disabled an existing (even corrupt) checkpoint is never read', async () => {
    await writeTurns('disabled', 1)
    writeFileSync(checkpointPath('disabled'), 'garbage')
    const { store, warnings } = plainStore()
    const read = await store.openReader('disabled')
    expect(read.checkpoint).toEqual({ used: false, reason: 'disabled', message: '', replayedEvents: 7 })
    expect(warnings).toEqual([])
  })
})

describe('the tail after a checkpoint keeps every check', () => {
  it('T2: an unterminated last line after N is a torn tail: the read replays fully (tail) and reports it as a full replay; openWriter quarantines it and opens from the checkpoint', async () => {
    await writeTurns('torn', 2)
    const size = statSync(logPath('torn')).size
    const { store } = plainStore()
    const writer = await store.openWriter('torn')
    writer.append(note('half'))
    await writer.close()
    truncateSync(logPath('torn'), statSync(logPath('torn')).size - 1)
    const { read, warnings } = await expectSameAsFullReplay('torn')
    expect(read.checkpoint).toMatchObject({ used: false, reason: 'tail' })
    expect(ignoredReasons(warnings)).toEqual(['tail'])
    expect(read.tornTail).toMatchObject({ reason: 'unterminated', location: { offset: size } })
    const reopened = await checkpointStore().store.openWriter('torn')
    expect(reopened.recovery.checkpoint).toMatchObject({ used: true, seq: 13 })
    expect(reopened.recovery.backendRepairs).toHaveLength(1)
    expect(reopened.recovery.backendRepairs[0]).toMatchObject({
      kind: 'torn-tail',
      location: { offset: size },
    })
    expect(reopened.recovery.backendRepairs[0]!.quarantinedTo).toBeDefined()
    await reopened.close()
  })

  it('I1: a flipped checksum in a tail line followed by valid lines is CORRUPT_LINE with the same line, offset and lastGoodSeq', async () => {
    await writeTurns('damaged', 2)
    const checkpoint = readFileSync(checkpointPath('damaged'))
    await writeTurns('damaged', 2, 3)
    writeFileSync(checkpointPath('damaged'), checkpoint)
    const content = readFileSync(logPath('damaged'))
    // Line 15 holds seq 14, the first event after the checkpoint's seq 13.
    const start = lineStarts(content)[15]!
    const lineEnd = content.indexOf(0x0a, start)
    const flipped = Buffer.from(content)
    flipped[lineEnd - 3] = flipped[lineEnd - 3] === 0x30 ? 0x31 : 0x30
    writeFileSync(logPath('damaged'), flipped)
    const { read, warnings } = await expectSameAsFullReplay('damaged')
    expect(ignoredReasons(warnings)).toEqual(['tail'])
    expect(read.error).toMatchObject({
      code: 'CORRUPT_LINE',
      location: { offset: start, line: 16 },
      lastGoodSeq: 13,
    })
    const refused = await checkpointStore()
      .store.openWriter('damaged')
      .catch((error: unknown) => error)
    expect(SessionStoreError.is(refused) && refused.code).toBe('CORRUPT_LINE')
  })

  it('verify never uses the checkpoint: damage inside the checkpointed prefix is reported by verify', async () => {
    await writeTurns('prefix', 3)
    const content = readFileSync(logPath('prefix'))
    const firstEventEnd = content.indexOf(0x0a, content.indexOf(0x0a) + 1)
    const flipped = Buffer.from(content)
    flipped[firstEventEnd - 3] = flipped[firstEventEnd - 3] === 0x30 ? 0x31 : 0x30
    writeFileSync(logPath('prefix'), flipped)
    const { store } = checkpointStore()
    // The cold open trusts the prefix it skips (documented): it reads the header, event N and the tail.
    expect((await store.openReader('prefix')).checkpoint).toMatchObject({ used: true, seq: 20 })
    const report = await store.verify('prefix')
    expect(report.status).toBe('damaged')
    expect(report.damage?.code).toBe('CORRUPT_LINE')
  })
})

describe('reading from a seq', () => {
  it('readEvents from the checkpoint seq on starts at its seek point; earlier seqs read from byte 0; results equal a full read', async () => {
    const { store } = checkpointStore()
    const writer = await store.create({ id: 'seek' })
    for (let index = 0; index < 9000; index += 1) {
      writer.append(note(`note ${index}`))
      if (index % 1000 === 999) await writer.flush()
    }
    // What the model sees is the summary; the close writes the checkpoint at the compaction's end.
    await compactAll(writer)
    await writer.close()
    const { record, seek } = readStored('seek')
    expect(record.seq).toBe(9003)
    expect(seek).not.toBeNull()
    const starts = lineStarts(readFileSync(logPath('seek')))
    // The seek point of a plain log is the checkpoint's own line (the last of its batch).
    expect(seek).toMatchObject({ fromSeq: 9003, offset: starts[9004], plainOffset: starts[9004] })
    const tailWriter = await plainStore().store.openWriter('seek')
    for (let index = 0; index < 10; index += 1) tailWriter.append(note(`tail ${index}`))
    await tailWriter.close()
    const size = statSync(logPath('seek')).size
    for (const [fromSeq, maxBytes] of [
      [9007, size - starts[9004]! + 256 * 1024],
      [9003, size - starts[9004]! + 256 * 1024],
      [9002, Number.POSITIVE_INFINITY],
      [5000, Number.POSITIVE_INFINITY],
    ] as const) {
      const counting = countingFs()
      const seeking = checkpointStore({ fs: counting.fs })
      const events = await collect(seeking.store.readEvents('seek', { fromSeq }))
      const full = await collect(plainStore().store.readEvents('seek', { fromSeq }))
      expect(events).toEqual(full)
      expect(events[0]!.seq).toBe(fromSeq)
      expect(events.at(-1)!.seq).toBe(9013)
      expect(seeking.warnings).toEqual([])
      expect(counting.logBytesRead()).toBeLessThan(maxBytes)
    }
  })

  it('a damaged tail still throws after the good events when reading from a checkpoint', async () => {
    await writeTurns('readdamage', 2)
    const checkpoint = readFileSync(checkpointPath('readdamage'))
    await writeTurns('readdamage', 2, 3)
    writeFileSync(checkpointPath('readdamage'), checkpoint)
    const content = readFileSync(logPath('readdamage'))
    // Damage the line of seq 15: seq 14 is good.
    const target = content.indexOf(0x0a, lineStarts(content)[16]) - 3
    const flipped = Buffer.from(content)
    flipped[target] = flipped[target]! ^ 0x01
    writeFileSync(logPath('readdamage'), flipped)
    const seen: number[] = []
    const error = await (async () => {
      for await (const event of checkpointStore().store.readEvents('readdamage', { fromSeq: 14 }))
        seen.push(event.seq)
    })().catch((caught: unknown) => caught)
    expect(seen).toEqual([14])
    expect(SessionStoreError.is(error) && error.code).toBe('CORRUPT_LINE')
  })
})

describe('options', () => {
  it('INVALID_OPTION for out-of-range checkpoint options, naming the option; a fractional minGrowthRatio is allowed', () => {
    for (const checkpoint of [
      { everyEvents: 0 },
      { minIntervalMs: -1 },
      { maxBytes: 1.5 },
      { minLogBytes: -2 },
      { enabled: 'yes' },
      { minGrowthRatio: -1 },
      { minGrowthRatio: Number.NaN },
      { minGrowthRatio: 2048 },
    ]) {
      let caught: unknown
      try {
        coreTestStore(temp.path, { checkpoint: checkpoint as never })
      } catch (error) {
        caught = error
      }
      expect(SessionStoreError.is(caught) && caught.code).toBe('INVALID_OPTION')
      expect((caught as SessionStoreError).message).toContain(`checkpoint.${Object.keys(checkpoint)[0]!}`)
    }
    expect(() => coreTestStore(temp.path, { checkpoint: { minGrowthRatio: 0.5 } })).not.toThrow()
  })
})

describe('the checkpoint never leads the log', () => {
  it('W7: when the last flush fails (ENOSPC), close() writes no checkpoint past the acknowledged events', async () => {
    const fs = createFaultFs()
    const { store } = checkpointStore({ fs })
    const writer = await store.create({ id: 'full' })
    for (const input of turnInputs(1)) writer.append(input)
    await writer.flush()
    for (const input of turnInputs(2)) writer.append(input)
    // The log's handle keeps the temp name it was published from: fail every write but the lease's and checkpoints'.
    fs.addFault({
      op: 'write',
      errno: 'ENOSPC',
      mode: 'forever',
      path: (path) =>
        !path.includes('.tmp-checkpoint-') && !path.includes('.tmp-lease') && !path.includes('.tmp-lock'),
    })
    const failure = await writer.close().catch((error: unknown) => error)
    expect(SessionStoreError.is(failure) && failure.code).toBe('DISK_FULL')
    // The turn-1 checkpoint may still be on its way (off the flush path); never one past seq 6.
    if (existsSync(checkpointPath('full'))) expect(readStored('full').record.seq).toBeLessThanOrEqual(6)
    // close() keeps the lease and the buffered events; once space is freed it finishes.
    fs.clearFaults()
    await writer.close()
    expect(readStored('full').record.seq).toBe(13)
    const { read, warnings } = await expectSameAsFullReplay('full')
    expect(warnings).toEqual([])
    expect(read.lastSeq).toBe(13)
  })

  it('events appended during a flush are not in the checkpoint of that flush (the snapshot is taken when the batch is cut)', async () => {
    let duringWrite: (() => void) | undefined
    const fs: FsOps = {
      ...nodeFsOps,
      async open(path, flags, mode) {
        const handle = await nodeFsOps.open(path, flags, mode)
        return {
          ...handle,
          path: handle.path,
          write(buffer, position) {
            const hook = duringWrite
            duringWrite = undefined
            hook?.()
            return handle.write(buffer, position)
          },
        }
      },
    }
    const { store } = checkpointStore({ fs })
    const writer = await store.create({ id: 'during' })
    for (const input of turnInputs(1)) writer.append(input)
    // Appended while the batch is being written: not durable when the turn/end checkpoint is taken.
    duringWrite = () => {
      writer.append(note('meanwhile'))
    }
    await writer.flush()
    expect(writer.bufferedEvents).toBe(1)
    await vi.waitFor(() => {
      expect(existsSync(checkpointPath('during'))).toBe(true)
    }, WAIT)
    const { record, payload } = readStored('during')
    expect(record.seq).toBe(6)
    expect(payload.snapshot.nextSeq).toBe(7)
    await writer.close()
    expect(readStored('during').record.seq).toBe(7)
    await expectSameAsFullReplay('during')
  })
})

describe('amortisation over JSONL', () => {
  it('even a turn/end is due only once the log grew by minGrowthRatio x (last checkpoint body + 4 KiB): sizes read from the files', async () => {
    // Counts the checkpoint stores the writer starts and settles (the core starts one before the flush resolves).
    const { store } = checkpointStore({ checkpoint: { everyEvents: 1, minGrowthRatio: 2 } })
    const inner = store.backend.capabilities.checkpoints!
    let started = 0
    let settled = 0
    ;(store.backend.capabilities as { checkpoints: CheckpointCapability }).checkpoints = {
      getCheckpoint: (id, options) => inner.getCheckpoint(id, options),
      putCheckpoint: async (lease, record, options) => {
        started += 1
        try {
          await inner.putCheckpoint(lease, record, options)
        } finally {
          settled += 1
        }
      },
    }
    const writer = await store.create({ id: 'growth' })
    let base = { size: 0, bodyBytes: 0 }
    const due: number[] = []
    const expected: number[] = []
    for (let turn = 1; turn <= 30; turn += 1) {
      for (const input of turnInputs(turn)) writer.append(input)
      const { durableSeq } = await writer.flush()
      await vi.waitFor(() => {
        expect(settled).toBe(started)
      }, WAIT)
      const size = eventBytes('growth')
      if (size - base.size >= 2 * (base.bodyBytes + 4096)) expected.push(durableSeq)
      if (existsSync(checkpointPath('growth')) && readStored('growth').record.seq === durableSeq) {
        due.push(durableSeq)
        base = { size, bodyBytes: readStored('growth').record.body.byteLength }
      }
      // What the rule allowed is what was written, turn by turn.
      expect(due).toEqual(expected)
    }
    await writer.close({ discardUnflushed: true })
    expect(due.length).toBeGreaterThan(1)
    expect(due.length).toBeLessThan(30)
  })
})
