/**
 * Projection checkpoints (issue 7): written after the log is durable, atomic, bound to the
 * log; a cold open restores them and replays only the tail; anything that does not match is
 * ignored with a warning and the open equals a full replay.
 */
import {
  existsSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'

import { encode } from '@msgpack/msgpack'
import { crc32c } from '@node-rs/crc32'
import { coreEventRegistry, createEventRegistry, defineEventType } from '@agent-ledger/session-events'
import type { EventInput, LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { createProjection, planCompaction } from '@agent-ledger/session-projection'
import type { Projection } from '@agent-ledger/session-projection'
import { z } from 'zod'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import { JsonlErrorCode, JsonlStoreError, nodeFsOps } from '../src/index.ts'
import {
  CHECKPOINT_FILE_NAME,
  CHECKPOINT_FORMAT,
  decodeCheckpointBody,
  decodeCheckpointHead,
  encodeCheckpoint,
  encodeEventLine,
  LOG_FILE_NAME,
  resolveCheckpointOptions,
  resolveLimits,
  V4_FORMAT,
} from '../src/format.ts'
import { CheckpointWriter } from '../src/checkpoint-writer.ts'
import type {
  FileHandleOps,
  FsOps,
  SessionReadResult,
  SessionStoreOptions,
  SessionWriter,
} from '../src/index.ts'
import type { CheckpointBinding, CheckpointRecord } from '../src/format.ts'
import { createFaultFs } from './support/fault-fs.ts'
import { collect, makeTempDir, testStore, turnInputs } from './support/sessions.ts'

let temp: { path: string; cleanup: () => void }

beforeEach(() => {
  temp = makeTempDir('al-ckpt-')
})

afterEach(() => {
  temp.cleanup()
})

/** Checkpoints on for any log size; no throttle unless a test asks. */
const ON = { minLogBytes: 0, everyEvents: 1_000_000, minIntervalMs: 0, minGrowthRatio: 0 } as const

function checkpointStore(options: Partial<SessionStoreOptions> = {}): ReturnType<typeof testStore> {
  return testStore(temp.path, { ...options, checkpoint: { ...ON, ...options.checkpoint } })
}

function plainStore(options: Partial<SessionStoreOptions> = {}): ReturnType<typeof testStore> {
  return testStore(temp.path, { ...options, checkpoint: { enabled: false } })
}

function logPath(id: string): string {
  return join(temp.path, id, LOG_FILE_NAME)
}

function checkpointPath(id: string): string {
  return join(temp.path, id, CHECKPOINT_FILE_NAME)
}

function readRecord(id: string): CheckpointRecord {
  const head = decodeCheckpointHead(readFileSync(checkpointPath(id)))
  if (!head.ok) throw new Error(`checkpoint head: ${head.reason} ${head.detail}`)
  const headerEndOffset = readFileSync(logPath(id)).indexOf(0x0a) + 1
  const body = decodeCheckpointBody(head.head, {
    body: head.body,
    bodyCrc32c: head.bodyCrc32c,
    headerEndOffset,
  })
  if (!body.ok) throw new Error(`checkpoint body: ${body.reason} ${body.detail}`)
  return {
    checkpointVersion: 2,
    binding: head.head.binding,
    state: body.state,
    surface: body.surface,
    seqIndex: head.head.seqIndex,
  }
}

function writeRecord(id: string, record: CheckpointRecord): void {
  writeFileSync(checkpointPath(id), encodeCheckpoint(record, { maxDepth: 300 }), { mode: 0o600 })
}

function rebind(id: string, change: Partial<CheckpointBinding>): void {
  const record = readRecord(id)
  writeRecord(id, { ...record, binding: { ...record.binding, ...change } })
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
async function writeTurns(id: string, turns: number, first = 1): Promise<void> {
  const { store } = checkpointStore()
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
            line: error.line,
            offset: error.offset,
            seq: error.seq,
            lastGoodSeq: error.lastGoodSeq,
            details: error.details,
          },
  }
}

/** Opens read-only with and without checkpoints and asserts the results are the same. */
async function expectSameAsFullReplay(
  id: string,
  options: Partial<SessionStoreOptions> = {},
): Promise<{ read: SessionReadResult; warnings: { message: string; details?: Record<string, unknown> }[] }> {
  const { store, warnings } = checkpointStore(options)
  const read = await store.openReader(id, { allowDamaged: true })
  const full = await plainStore(options).store.openReader(id, { allowDamaged: true })
  expect(full.checkpoint).toBeNull()
  expect(withoutProjection(read)).toEqual(withoutProjection(full))
  expect(read.projection.snapshot()).toEqual(full.projection.snapshot())
  expect(read.projection.deriveMessages()).toEqual(full.projection.deriveMessages())
  expect(read.projection.repairState).toEqual(full.projection.repairState)
  return { read, warnings }
}

function ignoredReasons(warnings: readonly { details?: Record<string, unknown> }[]): unknown[] {
  return warnings
    .filter((warning) => {
      const file = warning.details?.['file']
      return typeof file === 'string' && file.endsWith(CHECKPOINT_FILE_NAME)
    })
    .map((warning) => warning.details?.['reason'])
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

describe('writing checkpoints', () => {
  it('writes one after the flush that makes a turn/end durable, bound to that event, 0600, with no temp file left', async () => {
    const { store } = checkpointStore()
    const writer = await store.create({ id: 'turns' })
    for (const input of turnInputs(1)) writer.append(input)
    const { durableSeq } = await writer.flush()
    await vi.waitFor(() => {
      expect(existsSync(checkpointPath('turns'))).toBe(true)
    })
    const record = readRecord('turns')
    expect(record.binding.seq).toBe(durableSeq)
    expect(record.state.nextSeq).toBe(durableSeq + 1)
    expect(record.binding.sessionId).toBe('turns')
    expect(record.binding.createdAt).toBe(writer.header.createdAt)
    expect(record.binding.generationFile).toBe(LOG_FILE_NAME)
    expect(record.binding.offset).toBe(statSync(logPath('turns')).size)
    expect(record.binding.frameOffset).toBeNull()
    expect(statSync(checkpointPath('turns')).mode & 0o777).toBe(0o600)
    await writer.close()
    expect(readdirSync(join(temp.path, 'turns')).filter((name) => name.startsWith('.tmp-'))).toEqual([])
  })

  it('binds the CRC-32C of the whole prefix, extended across writers (after create, a checkpointed open, a full-replay open), and refers to the visible lines', async () => {
    const expectPrefixCrc = (): void => {
      const record = readRecord('crc')
      const log = readFileSync(logPath('crc'))
      expect(record.binding.prefixCrc32c).toBe(crc32c(log.subarray(0, record.binding.offset)) >>> 0)
      // Every reference is a whole line of the log with the recorded crc.
      for (const ref of record.surface) {
        const line = log.subarray(ref.offset, ref.offset + ref.length)
        expect(line.at(-1)).toBe(0x0a)
        expect(log[ref.offset - 1]).toBe(0x0a)
        expect(JSON.parse(line.toString('utf8'))).toMatchObject({
          seq: ref.seq,
          crc: ref.crc.toString(16).padStart(8, '0'),
        })
      }
    }
    await writeTurns('crc', 2)
    expectPrefixCrc()
    await writeTurns('crc', 2, 3)
    expect(readRecord('crc').binding.seq).toBe(27)
    expectPrefixCrc()
    unlinkSync(checkpointPath('crc'))
    await writeTurns('crc', 1, 5)
    expectPrefixCrc()
    expect(readRecord('crc').surface).toHaveLength(20)
  })

  it('close() writes a last checkpoint covering every durable event', async () => {
    const { store } = checkpointStore()
    const writer = await store.create({ id: 'close' })
    for (const input of turnInputs(1)) writer.append(input)
    await writer.flush()
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'after the turn' } } })
    await writer.close()
    expect(readRecord('close').binding.seq).toBe(writer.durableSeq)
    expect(readRecord('close').binding.offset).toBe(statSync(logPath('close')).size)
  })

  it('the throttle writes one once everyEvents are durable, without a turn/end', async () => {
    const { store } = checkpointStore({ checkpoint: { everyEvents: 5, minIntervalMs: 0 } })
    const writer = await store.create({ id: 'throttle' })
    for (let index = 0; index < 6; index += 1) {
      writer.append({ type: 'user/message', data: { message: { role: 'user', content: `note ${index}` } } })
    }
    await writer.flush()
    await vi.waitFor(() => {
      expect(existsSync(checkpointPath('throttle'))).toBe(true)
    })
    expect(readRecord('throttle').binding.seq).toBe(5)
    await writer.close()
  })

  it('writes nothing while the log is smaller than minLogBytes, and nothing at all when disabled', async () => {
    const small = testStore(temp.path, { checkpoint: { minLogBytes: 1024 * 1024 } }).store
    const writer = await small.create({ id: 'small' })
    for (const input of turnInputs(1)) writer.append(input)
    await writer.close()
    expect(existsSync(checkpointPath('small'))).toBe(false)
    const off = plainStore().store
    const other = await off.create({ id: 'off' })
    for (const input of turnInputs(1)) other.append(input)
    await other.close()
    expect(readdirSync(join(temp.path, 'off'))).toEqual([LOG_FILE_NAME])
  })

  it('a failed checkpoint write (rename EIO) is a warning: the old checkpoint stays, the writer and the log are unaffected', async () => {
    await writeTurns('faulty', 1)
    const before = readFileSync(checkpointPath('faulty'))
    const fs = createFaultFs()
    const { store, warnings } = checkpointStore({ fs })
    const writer = await store.openWriter('faulty')
    fs.addFault({ op: 'rename', errno: 'EIO', mode: 'forever' })
    for (const input of turnInputs(2)) writer.append(input)
    await writer.flush()
    await writer.close()
    expect(readFileSync(checkpointPath('faulty')).equals(before)).toBe(true)
    expect(
      warnings.some((warning) => warning.message.includes('Could not write the projection checkpoint')),
    ).toBe(true)
    expect(readdirSync(join(temp.path, 'faulty')).filter((name) => name.startsWith('.tmp-'))).toEqual([])
    const { read } = await expectSameAsFullReplay('faulty')
    expect(read.lastSeq).toBe(13)
    expect(read.checkpoint?.seq).toBe(6)
  })

  it('S5: a symlink at the checkpoint name is never followed: ignored on read, replaced (not written through) on write', async () => {
    await writeTurns('linked', 1)
    const victim = join(temp.path, 'victim.txt')
    writeFileSync(victim, 'victim', { mode: 0o600 })
    unlinkSync(checkpointPath('linked'))
    symlinkSync(victim, checkpointPath('linked'))
    const { warnings } = await expectSameAsFullReplay('linked')
    expect(ignoredReasons(warnings)).toEqual(['not-a-file'])
    await writeTurns('linked', 1, 2)
    expect(readFileSync(victim, 'utf8')).toBe('victim')
    expect(readRecord('linked').binding.seq).toBe(13)
  })

  it('messages msgpack could not carry (a lone surrogate, an own __proto__ key) are read back from the log, so they get a checkpoint', async () => {
    for (const [id, content] of [
      ['surrogate', `broken \ud800 text`],
      ['proto', 'fine'],
    ] as const) {
      const { store, warnings } = checkpointStore()
      const writer = await store.create({ id })
      const message =
        id === 'proto'
          ? (JSON.parse('{"role":"user","content":"fine","__proto__":{"polluted":true}}') as never)
          : { role: 'user' as const, content }
      writer.append({ type: 'turn/start', data: { turn: 1 } })
      writer.append({ type: 'user/message', data: { message } })
      writer.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
      await writer.close()
      expect(warnings).toEqual([])
      expect(readRecord(id).surface.map((ref) => ref.seq)).toEqual([1])
      const { read, warnings: opened } = await expectSameAsFullReplay(id)
      expect(read.checkpoint).toMatchObject({ seq: 2, replayedEvents: 0 })
      expect(opened).toEqual([])
    }
  })

  it('stops (with one warning) when the stored state has what msgpack cannot give back: a lone surrogate in a pending call', async () => {
    const { store, warnings } = checkpointStore()
    const writer = await store.create({ id: 'pending' })
    const args = `{"path":"broken \ud800"}`
    writer.append({ type: 'turn/start', data: { turn: 1 } })
    writer.append({
      type: 'assistant/message',
      data: {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: args } }],
        },
      },
    })
    writer.append({ type: 'tool/call', data: { callId: 'call_1', name: 'read_file', arguments: args } })
    await writer.close()
    expect(existsSync(checkpointPath('pending'))).toBe(false)
    expect(warnings.filter((warning) => warning.details?.['reason'] === 'unencodable')).toHaveLength(1)
    await expectSameAsFullReplay('pending')
  })
})

describe('cold open from a checkpoint', () => {
  it('restores the snapshot, replays only the tail, and equals a full replay (reader and stats)', async () => {
    await writeTurns('cold', 3)
    const { read, warnings } = await expectSameAsFullReplay('cold')
    expect(warnings).toEqual([])
    expect(read.checkpoint).toEqual({ seq: 20, offset: statSync(logPath('cold')).size, replayedEvents: 0 })
  })

  it('a stale checkpoint (events appended after it) replays more, and still equals a full replay', async () => {
    await writeTurns('stale', 2)
    const old = readFileSync(checkpointPath('stale'))
    await writeTurns('stale', 2, 3)
    writeFileSync(checkpointPath('stale'), old)
    const counting = countingFs()
    const { read, warnings } = await expectSameAsFullReplay('stale', { fs: counting.fs })
    expect(warnings).toEqual([])
    expect(read.checkpoint).toMatchObject({ seq: 13, replayedEvents: 14 })
  })

  it('reads the header, event N, the visible nodes and the tail: after a compaction, far fewer log bytes than a full replay', async () => {
    const writer = await checkpointStore().store.create({ id: 'bytes' })
    for (let turn = 1; turn <= 600; turn += 1) for (const input of turnInputs(turn)) writer.append(input)
    await compactAll(writer)
    await writer.close()
    expect(readRecord('bytes').surface).toHaveLength(1)
    const checkpointed = countingFs()
    const read = await checkpointStore({ fs: checkpointed.fs }).store.openReader('bytes')
    expect(read.checkpoint).not.toBeNull()
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
    expect(writer.recovery.checkpoint).toEqual({ seq: 13, offset: full.bytes, replayedEvents: 0 })
    expect(writer.projection.snapshot()).toEqual(full.projection.snapshot())
    const appended = writer.append({
      type: 'user/message',
      data: { message: { role: 'user', content: 'more' } },
    })
    expect(appended.seq).toBe(14)
    await writer.close()
    expect(warnings).toEqual([])
    const { read } = await expectSameAsFullReplay('resume')
    expect(read.lastSeq).toBe(14)
    expect(read.checkpoint?.seq).toBe(14)
  })

  it('R1: the repair state comes from the snapshot: a dangling call before N is repaired exactly as after a full replay', async () => {
    const inputs: EventInput[] = turnInputs(1).slice(0, 4)
    const build = async (id: string, enabled: boolean): Promise<Buffer> => {
      const { store } = testStore(temp.path, { checkpoint: enabled ? ON : { enabled: false } })
      const writer = await store.create({ id })
      for (const input of inputs) writer.append(input)
      await writer.flush()
      // Simulate a crash: the lock is dropped without a clean end of turn.
      await writer.close()
      return readFileSync(logPath(id))
    }
    const lengths = new Map([
      ['dangling', (await build('dangling', true)).length],
      ['dangling-full', (await build('dangling-full', false)).length],
    ])
    expect(readRecord('dangling').state.repairState.pendingCalls).toHaveLength(1)
    const reopened = await testStore(temp.path, { checkpoint: ON }).store.openWriter('dangling')
    expect(reopened.recovery.checkpoint?.seq).toBe(3)
    const full = await testStore(temp.path, { checkpoint: { enabled: false } }).store.openWriter(
      'dangling-full',
    )
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

describe('checkpoints that are not used (warning, then a full replay)', () => {
  it('another session: a checkpoint copied from a different session', async () => {
    await writeTurns('one', 2)
    await writeTurns('two', 2)
    writeFileSync(checkpointPath('two'), readFileSync(checkpointPath('one')))
    const { read, warnings } = await expectSameAsFullReplay('two')
    expect(read.checkpoint).toBeNull()
    expect(ignoredReasons(warnings)).toEqual(['binding'])
    expect(warnings[0]!.message).toContain('session id')
  })

  it('another generation: a checkpoint bound to session.v3.jsonl', async () => {
    await writeTurns('gen', 2)
    rebind('gen', { generationFile: 'session.v3.jsonl', formatVersion: 3 })
    const { read, warnings } = await expectSameAsFullReplay('gen')
    expect(read.checkpoint).toBeNull()
    expect(ignoredReasons(warnings)).toEqual(['binding'])
  })

  it('another creation: same id, header createdAt differs (a deleted and re-created session)', async () => {
    await writeTurns('again', 2)
    rebind('again', { createdAt: '1999-01-01T00:00:00.000Z' })
    const { warnings } = await expectSameAsFullReplay('again')
    expect(ignoredReasons(warnings)).toEqual(['binding'])
  })

  it('T1: a truncated log (the checkpoint offset is past the end)', async () => {
    await writeTurns('short', 3)
    const size = statSync(logPath('short')).size
    truncateSync(logPath('short'), size - 40)
    const { read, warnings } = await expectSameAsFullReplay('short')
    expect(read.checkpoint).toBeNull()
    expect(read.tornTail).not.toBeNull()
    expect(ignoredReasons(warnings)).toEqual(['binding'])
  })

  it('a salvaged or rewritten log: event N is a different line (another crc) at the same offset', async () => {
    await writeTurns('rewritten', 2)
    const record = readRecord('rewritten')
    // Rewrite the log from the same header: the same events except a different last one.
    const content = readFileSync(logPath('rewritten'))
    const prefix = content.subarray(0, record.binding.eventOffset)
    truncateSync(logPath('rewritten'), prefix.length)
    const { store } = plainStore({ clock: () => '2026-01-01T00:00:00.000Z' })
    const writer = await store.openWriter('rewritten')
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'x' } } })
    await writer.close()
    const { read, warnings } = await expectSameAsFullReplay('rewritten')
    expect(read.checkpoint).toBeNull()
    expect(ignoredReasons(warnings)).toEqual(['binding'])
  })

  it('a referenced line changed under the checkpoint (a valid line, another crc): reference (read) or prefix (write), then a full replay', async () => {
    await writeTurns('changed', 2)
    const record = readRecord('changed')
    const ref = record.surface.find((node) => node.seq === 1)!
    const content = readFileSync(logPath('changed'))
    const original = JSON.parse(
      content.subarray(ref.offset, ref.offset + ref.length - 1).toString('utf8'),
    ) as LoggedEvent & {
      crc?: string
    }
    const { crc: _crc, ...event } = original
    const edited = encodeEventLine({
      ...event,
      data: { message: { role: 'user', content: 'Please read file 9.' } },
    })
    // Same length, so every other offset of the checkpoint still holds.
    expect(edited.length).toBe(ref.length)
    writeFileSync(
      logPath('changed'),
      Buffer.concat([content.subarray(0, ref.offset), edited, content.subarray(ref.offset + ref.length)]),
    )
    const { read, warnings } = await expectSameAsFullReplay('changed')
    expect(read.checkpoint).toBeNull()
    expect(ignoredReasons(warnings)).toEqual(['reference'])
    expect(warnings[0]!.message).toContain('the line changed')
    expect(read.projection.deriveMessages()[0]).toMatchObject({ content: 'Please read file 9.' })
    const { store, warnings: writeWarnings } = checkpointStore()
    const writer = await store.openWriter('changed')
    expect(writer.recovery.checkpoint).toBeNull()
    expect(ignoredReasons(writeWarnings)).toEqual(['prefix'])
    expect(writer.projection.deriveMessages()[0]).toMatchObject({ content: 'Please read file 9.' })
    await writer.close()
  })

  it('a checkpoint of the old layout (checkpointVersion 1) is ignored with a warning, never trusted, and replaced by the next writer', async () => {
    await writeTurns('old', 2)
    const record = readRecord('old')
    // A version 1 file: the same envelope, its body the whole snapshot (messages copied in).
    const head = encode(
      { binding: { ...record.binding, prefixCrc32c: undefined }, seqIndex: [] },
      { ignoreUndefined: true },
    )
    const full = await plainStore().store.openReader('old')
    const body = encode({ ...full.projection.snapshot(), surface: [] })
    writeFileSync(
      checkpointPath('old'),
      encode({
        format: CHECKPOINT_FORMAT,
        checkpointVersion: 1,
        headCrc32c: crc32c(head) >>> 0,
        head,
        bodyCrc32c: crc32c(body) >>> 0,
        body,
      }),
    )
    const { read, warnings } = await expectSameAsFullReplay('old')
    expect(read.checkpoint).toBeNull()
    expect(ignoredReasons(warnings)).toEqual(['old-version'])
    expect(warnings[0]!.message).toContain('checkpointVersion 1')
    expect(warnings[0]!.message).toContain('the next checkpoint replaces it')
    // The next writer's close replaces it, though nothing was appended.
    const { store } = checkpointStore()
    await (await store.openWriter('old')).close()
    expect(decodeCheckpointHead(readFileSync(checkpointPath('old')))).toMatchObject({ ok: true })
    const again = await expectSameAsFullReplay('old')
    expect(again.warnings).toEqual([])
    expect(again.read.checkpoint).toMatchObject({ seq: 13, replayedEvents: 0 })
  })

  it('a reference past the end of the checkpointed events, or past a truncated log, is never followed', async () => {
    await writeTurns('past', 2)
    const record = readRecord('past')
    const first = record.surface[0]!
    writeRecord('past', { ...record, surface: [{ ...first, offset: record.binding.offset }] })
    const beyond = await expectSameAsFullReplay('past')
    expect(ignoredReasons(beyond.warnings)).toEqual(['schema'])
    expect(beyond.warnings[0]!.message).toContain('not inside the checkpointed events')
    // The log cut inside a referenced line, then grown back to the same size with other bytes.
    writeRecord('past', record)
    const size = statSync(logPath('past')).size
    truncateSync(logPath('past'), first.offset + 5)
    const { read, warnings } = await expectSameAsFullReplay('past')
    expect(read.checkpoint).toBeNull()
    expect(ignoredReasons(warnings)).toEqual(['binding'])
    truncateSync(logPath('past'), size)
    const regrown = await expectSameAsFullReplay('past')
    expect(regrown.read.checkpoint).toBeNull()
    expect(ignoredReasons(regrown.warnings)).toEqual(['binding'])
  })

  it('a salvaged copy: salvage() into a new session with the source checkpoint copied beside it', async () => {
    await writeTurns('source', 2)
    const { store } = plainStore()
    await store.salvage('source', { to: 'salvaged' })
    writeFileSync(checkpointPath('salvaged'), readFileSync(checkpointPath('source')))
    const { warnings } = await expectSameAsFullReplay('salvaged')
    expect(ignoredReasons(warnings)).toEqual(['binding'])
  })

  it('corrupted files: garbage (decode), a flipped byte in the snapshot (checksum), a valid msgpack of the wrong shape (schema)', async () => {
    await writeTurns('bad', 2)
    const good = readFileSync(checkpointPath('bad'))
    const cases: [Buffer, string][] = [
      [Buffer.from([0xc1, 0x00, 0x17]), 'decode'],
      [
        Buffer.concat([
          good.subarray(0, good.length - 7),
          Buffer.from([good[good.length - 7]! ^ 0x20]),
          good.subarray(good.length - 6),
        ]),
        'checksum',
      ],
      [Buffer.from(encode({ format: CHECKPOINT_FORMAT, checkpointVersion: 2, head: 'nope' })), 'schema'],
      [Buffer.from(encode([1, 2, 3])), 'schema'],
      [good.subarray(0, good.length >> 1), 'decode'],
    ]
    for (const [bytes, reason] of cases) {
      writeFileSync(checkpointPath('bad'), bytes)
      const { read, warnings } = await expectSameAsFullReplay('bad')
      expect(read.checkpoint).toBeNull()
      expect(ignoredReasons(warnings)).toEqual([reason])
    }
  })

  it('a state that passes the CRC but not restoreProjection (malformed stats, a repeated surface node)', async () => {
    await writeTurns('snap', 1)
    const record = readRecord('snap')
    writeRecord('snap', { ...record, state: { ...record.state, stats: { events: -1 } as never } })
    const stats = await expectSameAsFullReplay('snap')
    expect(ignoredReasons(stats.warnings)).toEqual(['snapshot'])
    writeRecord('snap', { ...record, surface: [...record.surface, record.surface[0]!] })
    const repeated = await expectSameAsFullReplay('snap')
    expect(ignoredReasons(repeated.warnings)).toEqual(['schema'])
    expect(repeated.warnings[0]!.message).toContain('not a unique seq')
  })

  it('a checkpoint written by a newer checkpointVersion', async () => {
    await writeTurns('newer', 1)
    writeFileSync(
      checkpointPath('newer'),
      encode({ format: CHECKPOINT_FORMAT, checkpointVersion: 3, anything: { new: true } }),
    )
    const { warnings } = await expectSameAsFullReplay('newer')
    expect(ignoredReasons(warnings)).toEqual(['newer-version'])
    expect(warnings[0]!.message).toContain('checkpointVersion 3')
  })

  it('a reader that knows other event types, or enforces smaller line limits', async () => {
    await writeTurns('judged', 2)
    const registry = createEventRegistry([
      defineEventType('plugin/note' as never, z.object({ text: z.string() }) as never),
    ])
    const plugin = await expectSameAsFullReplay('judged', { registry })
    expect(ignoredReasons(plugin.warnings)).toEqual(['binding'])
    const limits = await expectSameAsFullReplay('judged', {
      limits: { maxLineBytes: 1024 * 1024, maxEventBytes: 1024 * 1024 },
    })
    expect(ignoredReasons(limits.warnings)).toEqual(['binding'])
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
    expect(read.checkpoint).toBeNull()
    expect(warnings).toEqual([])
  })
})

describe('the tail after a checkpoint keeps every check', () => {
  it('T2: an unterminated last line after N is a torn tail, reported as by a full replay; openWriter quarantines it', async () => {
    await writeTurns('torn', 2)
    const size = statSync(logPath('torn')).size
    const { store } = plainStore()
    const writer = await store.openWriter('torn')
    writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'half' } } })
    await writer.close()
    truncateSync(logPath('torn'), statSync(logPath('torn')).size - 1)
    const { read } = await expectSameAsFullReplay('torn')
    expect(read.checkpoint?.seq).toBe(13)
    expect(read.tornTail).toMatchObject({ offset: size, reason: 'unterminated' })
    const reopened = await checkpointStore().store.openWriter('torn')
    expect(reopened.recovery.checkpoint?.seq).toBe(13)
    expect(reopened.recovery.tornTail?.offset).toBe(size)
    expect(reopened.recovery.quarantineFile).not.toBeNull()
    await reopened.close()
  })

  it('I1: a flipped checksum in a tail line followed by valid lines is CORRUPT_LINE with the same line, offset and lastGoodSeq', async () => {
    await writeTurns('damaged', 2)
    const checkpoint = readFileSync(checkpointPath('damaged'))
    await writeTurns('damaged', 2, 3)
    writeFileSync(checkpointPath('damaged'), checkpoint)
    const content = readFileSync(logPath('damaged'))
    const start = readRecord('damaged').binding.offset
    const lineEnd = content.indexOf(0x0a, start)
    const flipped = Buffer.from(content)
    flipped[lineEnd - 3] = flipped[lineEnd - 3] === 0x30 ? 0x31 : 0x30
    writeFileSync(logPath('damaged'), flipped)
    const { read } = await expectSameAsFullReplay('damaged')
    expect(read.checkpoint?.seq).toBe(13)
    expect(read.error).toMatchObject({ code: JsonlErrorCode.CORRUPT_LINE, offset: start, lastGoodSeq: 13 })
    const refused = await checkpointStore()
      .store.openWriter('damaged')
      .catch((error: unknown) => error)
    expect(JsonlStoreError.is(refused) && refused.code).toBe(JsonlErrorCode.CORRUPT_LINE)
  })

  it('verify never uses the checkpoint: damage inside the checkpointed prefix is reported by verify', async () => {
    await writeTurns('prefix', 3)
    const content = readFileSync(logPath('prefix'))
    const firstEventEnd = content.indexOf(0x0a, content.indexOf(0x0a) + 1)
    const flipped = Buffer.from(content)
    flipped[firstEventEnd - 3] = flipped[firstEventEnd - 3] === 0x30 ? 0x31 : 0x30
    writeFileSync(logPath('prefix'), flipped)
    const { store } = checkpointStore()
    // The cold open trusts the verified prefix (documented): it reads only the header, event N and the tail.
    expect((await store.openReader('prefix')).checkpoint?.seq).toBe(20)
    const report = await store.verify('prefix')
    expect(report.status).toBe('damaged')
    expect(report.damage?.code).toBe(JsonlErrorCode.CORRUPT_LINE)
  })
})

describe('reading from a seq', () => {
  it('readEvents from N + 1 or later seeks to the checkpoint offset; earlier seqs use the sparse index; results equal a full read', async () => {
    const { store } = checkpointStore()
    const writer = await store.create({ id: 'seek' })
    for (let index = 0; index < 9000; index += 1) {
      writer.append({ type: 'user/message', data: { message: { role: 'user', content: `note ${index}` } } })
      if (index % 1000 === 999) await writer.flush()
    }
    // What the model sees is the summary: the checkpoint refers to one line.
    await compactAll(writer)
    await writer.close()
    const record = readRecord('seek')
    expect(record.binding.seq).toBe(9003)
    expect(record.seqIndex.map(([seq]) => seq)).toEqual([0, 4096, 8192])
    const tailWriter = await plainStore().store.openWriter('seek')
    for (let index = 0; index < 10; index += 1) {
      tailWriter.append({
        type: 'user/message',
        data: { message: { role: 'user', content: `tail ${index}` } },
      })
    }
    await tailWriter.close()
    const size = statSync(logPath('seek')).size
    for (const [fromSeq, maxBytes] of [
      [9007, size - record.binding.offset + 256 * 1024],
      [8500, size - record.seqIndex[2]![1] + 256 * 1024],
      [5000, size - record.seqIndex[1]![1] + 256 * 1024],
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
    const start = readRecord('readdamage').binding.offset
    const secondLine = content.indexOf(0x0a, start) + 1
    const flipped = Buffer.from(content)
    const target = content.indexOf(0x0a, secondLine) - 3
    flipped[target] = flipped[target]! ^ 0x01
    writeFileSync(logPath('readdamage'), flipped)
    const seen: number[] = []
    const error = await (async () => {
      for await (const event of checkpointStore().store.readEvents('readdamage', { fromSeq: 14 }))
        seen.push(event.seq)
    })().catch((caught: unknown) => caught)
    expect(seen).toEqual([14])
    expect(JsonlStoreError.is(error) && error.code).toBe(JsonlErrorCode.CORRUPT_LINE)
  })
})

describe('options', () => {
  it('INVALID_OPTION for out-of-range checkpoint options', () => {
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
        testStore(temp.path, { checkpoint: checkpoint as never })
      } catch (error) {
        caught = error
      }
      expect(JsonlStoreError.is(caught) && caught.code).toBe(JsonlErrorCode.INVALID_OPTION)
      expect((caught as JsonlStoreError).message).toContain(Object.keys(checkpoint)[0]!)
    }
    expect(resolveCheckpointOptions({ minGrowthRatio: 0.5 }).minGrowthRatio).toBe(0.5)
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
    // The log's handle keeps the temp name it was published from: fail every write but the lock's and checkpoints'.
    fs.addFault({
      op: 'write',
      errno: 'ENOSPC',
      mode: 'forever',
      path: (path) => !path.includes('.tmp-checkpoint-') && !path.includes('.tmp-lock'),
    })
    const failure = await writer.close().catch((error: unknown) => error)
    expect(JsonlStoreError.is(failure) && failure.code).toBe(JsonlErrorCode.DISK_FULL)
    // The turn-1 checkpoint may still be on its way (off the flush path); never one past seq 6.
    if (existsSync(checkpointPath('full'))) expect(readRecord('full').binding.seq).toBeLessThanOrEqual(6)
    // close() keeps the lock and the buffered events (W12); once space is freed it finishes.
    fs.clearFaults()
    await writer.close()
    expect(readRecord('full').binding.seq).toBe(13)
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
      writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'meanwhile' } } })
    }
    await writer.flush()
    expect(writer.bufferedEvents).toBe(1)
    await vi.waitFor(() => {
      expect(existsSync(checkpointPath('during'))).toBe(true)
    })
    const record = readRecord('during')
    expect(record.binding.seq).toBe(6)
    expect(record.state.nextSeq).toBe(7)
    await writer.close()
    expect(readRecord('during').binding.seq).toBe(7)
    await expectSameAsFullReplay('during')
  })
})

describe('CheckpointWriter policy', () => {
  function policyWriter(
    options: { everyEvents: number; minIntervalMs: number; minLogBytes: number; minGrowthRatio?: number },
    now: () => number,
  ): CheckpointWriter {
    return new CheckpointWriter({
      context: {
        fs: nodeFsOps,
        directory: temp.path,
        id: 'policy',
        file: `policy/${LOG_FILE_NAME}`,
        generationFile: LOG_FILE_NAME,
        format: V4_FORMAT,
        limits: resolveLimits(),
        registry: coreEventRegistry,
        logger: { warn: () => undefined },
        options: resolveCheckpointOptions({ minGrowthRatio: 0, ...options }),
      },
      handle: { path: '' } as FileHandleOps,
      header: {} as SessionHeader,
      lastLine: null,
      seqIndex: [],
      coveredSeq: -1,
      now,
    })
  }

  function lines(
    projection: Projection,
    inputs: readonly EventInput[],
    time = '2026-01-01T00:00:00.000Z',
  ): { seq: number; bytes: Buffer }[] {
    return inputs.map((input) => {
      const event = { seq: projection.nextSeq, time, ...input } as LoggedEvent
      projection.apply(event)
      return { seq: event.seq, bytes: encodeEventLine(event) }
    })
  }

  it('a batch holding a turn/end is due; one without is due only past everyEvents and minIntervalMs; minLogBytes holds all back', () => {
    let clock = 0
    const projection = createProjection()
    const writer = policyWriter({ everyEvents: 3, minIntervalMs: 1000, minLogBytes: 0 }, () => clock)
    const turn = lines(projection, turnInputs(1))
    expect(writer.prepare(turn, projection, 100).snapshot).not.toBeNull()
    const first = writer.prepare(turn, projection, 100)
    writer.committed(first)
    const note = (text: string): EventInput => ({
      type: 'user/message',
      data: { message: { role: 'user', content: text } },
    })
    // Two events since the checkpoint: below everyEvents.
    expect(writer.prepare(lines(projection, [note('a'), note('b')]), projection, 900).snapshot).toBeNull()
    // Three more, but within minIntervalMs of the last checkpoint.
    const batch = lines(projection, [note('c')])
    expect(writer.prepare(batch, projection, 1000).snapshot).toBeNull()
    clock = 1000
    expect(writer.prepare(batch, projection, 1000).snapshot).not.toBeNull()
    // A projection already past the batch (events buffered after it) is never snapshotted.
    const ahead = lines(projection, [note('d'), turnInputs(2).at(-1)!])
    expect(writer.prepare(ahead.slice(0, 1), projection, 1100).snapshot).toBeNull()
    const small = policyWriter({ everyEvents: 1, minIntervalMs: 0, minLogBytes: 1 << 20 }, () => 0)
    const other = createProjection()
    expect(small.prepare(lines(other, turnInputs(1)), other, 100).snapshot).toBeNull()
  })

  it('amortisation: even a turn/end is due only once the log grew by minGrowthRatio times the last checkpoint cost', () => {
    const projection = createProjection()
    const writer = policyWriter(
      { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 2 },
      () => 0,
    )
    const turn = lines(projection, turnInputs(1))
    const bytes = turn.reduce((sum, line) => sum + line.bytes.length, 0)
    // The log would end below 2 x 4 KiB (the cost of a checkpoint write before any was written).
    expect(writer.prepare(turn, projection, 2 * 4096 - bytes - 1).snapshot).toBeNull()
    const first = writer.prepare(turn, projection, 2 * 4096 - bytes)
    expect(first.snapshot).not.toBeNull()
    writer.committed(first)
    const next = lines(projection, turnInputs(2))
    const nextBytes = next.reduce((sum, line) => sum + line.bytes.length, 0)
    expect(writer.prepare(next, projection, 4 * 4096 - nextBytes - 1).snapshot).toBeNull()
    expect(writer.prepare(next, projection, 4 * 4096 - nextBytes).snapshot).not.toBeNull()
  })

  it('the last line and the sparse index entries come from the batch offsets; the crc is the line suffix', () => {
    const projection = createProjection()
    const writer = policyWriter({ everyEvents: 1_000_000, minIntervalMs: 0, minLogBytes: 0 }, () => 0)
    const batch = lines(projection, turnInputs(1))
    const prepared = writer.prepare(batch, projection, 500)
    const total = batch.reduce((sum, line) => sum + line.bytes.length, 0)
    const last = batch.at(-1)!.bytes
    expect(prepared.lastLine).toEqual({
      seq: 6,
      eventOffset: 500 + total - last.length,
      offset: 500 + total,
      crc: last.subarray(last.length - 11, last.length - 3).toString('latin1'),
    })
    expect(prepared.indexEntries).toEqual([[0, 500]])
  })
})
