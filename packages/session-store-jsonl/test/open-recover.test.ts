import {
  appendFileSync,
  existsSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'
import type { AcquireRepair, SessionWriter } from '@agent-ledger/session-store'

import { encodeEventLine, encodeJsonLine, LOG_FILE_NAME } from '../src/format.ts'
import type { JsonlStore } from '../src/index.ts'
import { recordCrashSection } from './support/crash-summary.ts'
import { seededRandom } from './support/fault-fs.ts'
import {
  closedSessionInputs,
  collect,
  coreTestStore,
  fileIdentity,
  forEachConcurrently,
  lineStarts,
  makeTempDir,
  namesIn,
  noSyncFsOps,
  placeSession,
  range,
  turnInputs,
  withFlippedByte,
  withHeaderId,
  writeCoreSession,
} from './support/sessions.ts'

let temp: { path: string; cleanup: () => void }
let store: JsonlStore

beforeEach(() => {
  temp = makeTempDir()
  ;({ store } = coreTestStore(temp.path))
})

afterEach(() => {
  temp.cleanup()
})

async function caught(promise: Promise<unknown>): Promise<SessionStoreError> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError, found success')
}

/** The torn-tail repair the backend made when the writer took the lease, or null. */
function tornRepair(writer: SessionWriter): AcquireRepair | null {
  return writer.recovery.backendRepairs.find((repair) => repair.kind === 'torn-tail') ?? null
}

const extraNote = {
  type: 'user/message',
  data: { message: { role: 'user', content: 'after recovery' } },
} as const

/** Twenty events (seqs 0..19) whose every prefix ending before the last line needs no repair. */
async function fixture20(): Promise<Buffer> {
  // A long id: placeSession gives each copy its own id at the same length (withHeaderId).
  const path = await writeCoreSession(store, 'fixture-session-with-twenty-events', closedSessionInputs(20))
  return readFileSync(path)
}

describe('open and recover', () => {
  it('T1/T2: a torn last line at every byte offset is quarantined, truncated and repaired; read-only opens change nothing', async () => {
    const content = await fixture20()
    const realStore = store
    const starts = lineStarts(content)
    const lastStart = starts[starts.length - 1]!
    expect(content.length - lastStart).toBeGreaterThan(100)
    let tested = 0
    let passed = 0
    // Durability is W1/W2's subject: most offsets run without fsync, every 16th on the real calls.
    const fast = coreTestStore(temp.path, { fs: noSyncFsOps }).store
    await forEachConcurrently(range(lastStart, content.length), 8, async (cut) => {
      tested += 1
      const store = cut % 16 === 0 || cut === content.length - 1 ? realStore : fast
      const id = `cut${cut}`
      const path = placeSession(temp.path, id, content.subarray(0, cut))
      const before = fileIdentity(path)
      const read = await store.openReader(id)
      expect(fileIdentity(path)).toEqual(before)
      expect(read.lastSeq).toBe(18)
      const writer = await store.openWriter(id)
      const torn = cut - lastStart
      if (torn === 0) {
        expect(read.tornTail).toBeNull()
        expect(tornRepair(writer)).toBeNull()
      } else {
        const location = { file: `${id}/${LOG_FILE_NAME}`, line: 21, offset: lastStart }
        expect(read.tornTail).toEqual({ reason: 'unterminated', bytes: torn, location })
        expect(tornRepair(writer)).toMatchObject({
          location,
          droppedBytes: torn,
          quarantinedTo: `${id}/${LOG_FILE_NAME}.torn-${lastStart}`,
        })
        const quarantined = readFileSync(join(temp.path, tornRepair(writer)!.quarantinedTo!))
        expect(quarantined.equals(content.subarray(lastStart, cut))).toBe(true)
      }
      // Kept: every line whose `\n` was on disk, byte for byte.
      expect(readFileSync(path).equals(withHeaderId(content.subarray(0, lastStart), id))).toBe(true)
      expect(writer.recovery.repairs).toEqual([])
      expect(writer.durableSeq).toBe(18)
      const next = writer.append(extraNote)
      expect(next.seq).toBe(19)
      await writer.close()
      const after = readFileSync(path)
      expect(after.subarray(0, lastStart).equals(withHeaderId(content.subarray(0, lastStart), id))).toBe(true)
      expect(after.subarray(lastStart).toString('utf8')).toMatch(/^\{"seq":19,.*"crc":"[0-9a-f]{8}"\}\n$/)
      const report = await store.verify(id)
      expect(report).toMatchObject({ status: 'ok', lastSeq: 19 })
      passed += 1
    })
    expect(passed).toBe(tested)
    expect(tested).toBe(content.length - lastStart)
    await recordCrashSection('T1', {
      crash_points_injected: 0,
      acked_events_lost: 0,
      torn_tail_offsets_tested: tested,
      torn_tail_offsets_passed: passed,
    })
  })

  it('T2: a complete, checksummed last line without its newline is a torn tail, never an event', async () => {
    const content = await fixture20()
    const lastStart = lineStarts(content).at(-1)!
    const path = placeSession(temp.path, 'nonl', content.subarray(0, content.length - 1))
    const read = await store.openReader('nonl')
    expect(read.lastSeq).toBe(18)
    expect(read.tornTail).toEqual({
      bytes: content.length - 1 - lastStart,
      reason: 'unterminated',
      location: { file: `nonl/${LOG_FILE_NAME}`, line: 21, offset: lastStart },
    })
    const writer = await store.openWriter('nonl')
    expect(tornRepair(writer)).toMatchObject({ droppedBytes: content.length - 1 - lastStart })
    await writer.close()
    expect(readFileSync(path).equals(withHeaderId(content.subarray(0, lastStart), 'nonl'))).toBe(true)
  })

  it('T1: the header-only file torn at every offset is refused as damage, changing nothing; the one-event file torn at every offset opens one event shorter', async () => {
    const headerOnly = readFileSync(await writeCoreSession(store, 'header-only-fixture-session', []))
    const oneEvent = readFileSync(
      await writeCoreSession(store, 'one-event-fixture-session-x', closedSessionInputs(1)),
    )
    const headerEnd = headerOnly.length
    expect(oneEvent.subarray(0, headerEnd).subarray(0, 40).toString()).toBe(
      headerOnly.subarray(0, 40).toString(),
    )
    let tested = 0
    const realStore = store
    const fast = coreTestStore(temp.path, { fs: noSyncFsOps }).store
    // Not RELIABILITY T4 as the JSONL store API held it (an empty session, the header
    // re-initialised under the lock): through the core a log without a whole header is refused
    // as damage by read, verify and write alike, before any lock, and nothing changes.
    await forEachConcurrently(range(0, headerOnly.length), 8, async (cut) => {
      const store = cut % 16 === 0 ? realStore : fast
      const id = `h0cut${cut}`
      const path = placeSession(temp.path, id, headerOnly.subarray(0, cut))
      const before = fileIdentity(path)
      expect((await caught(store.openReader(id))).code).toBe('CORRUPT_LINE')
      expect(await store.verify(id)).toMatchObject({ status: 'damaged', damage: { code: 'CORRUPT_LINE' } })
      expect((await caught(store.openWriter(id))).code).toBe('CORRUPT_LINE')
      expect(fileIdentity(path)).toEqual(before)
      expect(namesIn(join(temp.path, id))).toEqual([LOG_FILE_NAME])
      tested += 1
    })
    await forEachConcurrently(range(headerEnd, oneEvent.length), 8, async (cut) => {
      const store = cut % 16 === 0 ? realStore : fast
      const id = `h1cut${cut}`
      const path = placeSession(temp.path, id, oneEvent.subarray(0, cut))
      const writer = await store.openWriter(id)
      expect(writer.durableSeq).toBe(-1)
      expect(readFileSync(path).equals(withHeaderId(oneEvent.subarray(0, headerEnd), id))).toBe(true)
      expect(writer.projection.nextSeq).toBe(0)
      await writer.close()
      tested += 1
    })
    expect(tested).toBe(oneEvent.length)
  })

  it('T3: zeros, random bytes and half a line from another session after the last newline are tail garbage, never events', async () => {
    const content = await fixture20()
    const other = encodeEventLine({
      seq: 20,
      time: '2026-01-01T00:00:00.000Z',
      type: 'user/message',
      data: { message: { role: 'user', content: 'from another session' } },
    })
    const random = seededRandom(7)
    const randomTails = Array.from({ length: 12 }, (_, index) => {
      const length = 1 + Math.floor(random() * 4096)
      const bytes = Buffer.alloc(length)
      for (let at = 0; at < length; at += 1) bytes[at] = Math.floor(random() * 256)
      if (index % 2 === 0) bytes[0] = 0 // not the start of a line
      return bytes
    })
    const tails: Buffer[] = [
      Buffer.alloc(4096),
      ...randomTails,
      other.subarray(Math.floor(other.length / 2)),
      // Valid JSON that parses as an event but has no checksum: still never accepted.
      Buffer.from('{"seq":20,"time":"2026-01-01T00:00:00.000Z","type":"turn/start","data":{"turn":9}}\n'),
    ]
    for (const [index, tail] of tails.entries()) {
      const id = `garbage${index}`
      const path = placeSession(temp.path, id, Buffer.concat([content, tail]))
      const read = await store.openReader(id)
      expect(read.lastSeq).toBe(19)
      expect(read.tornTail?.location?.offset).toBe(content.length)
      expect(read.tornTail?.bytes).toBe(tail.length)
      if (tail[0] !== 0x7b || tail.includes(0x0a)) expect(read.tornTail?.reason).toBe('tailGarbage')
      const writer = await store.openWriter(id)
      expect(writer.projection.nextSeq).toBe(20)
      await writer.close()
      expect(readFileSync(path).equals(withHeaderId(content, id))).toBe(true)
      expect(readFileSync(join(temp.path, tornRepair(writer)!.quarantinedTo!)).equals(tail)).toBe(true)
    }
  })

  it('T4: a zero-length log is refused as damage (no header line) by read, write and verify, and stays zero-length', async () => {
    // The JSONL store API read it as an empty session and re-initialised the header on a
    // write open; the core never publishes a log without its header (see T1 above).
    const path = placeSession(temp.path, 'empty', Buffer.alloc(0))
    const read = await caught(store.openReader('empty'))
    expect(read).toMatchObject({ code: 'CORRUPT_LINE', sessionId: 'empty' })
    expect(read.message).toContain('no header line')
    expect((await caught(store.openWriter('empty'))).code).toBe('CORRUPT_LINE')
    expect(await store.verify('empty')).toMatchObject({ status: 'damaged', header: null })
    expect(statSync(path).size).toBe(0)
    expect(namesIn(join(temp.path, 'empty'))).toEqual([LOG_FILE_NAME])
  })

  it('T6: (a) an append after a torn tail goes through repair first and lands on its own line', async () => {
    const content = await fixture20()
    const path = placeSession(
      temp.path,
      'torn',
      Buffer.concat([content, Buffer.from('{"seq":20,"time":"2026-0')]),
    )
    const writer = await store.openWriter('torn')
    writer.append(extraNote)
    await writer.close()
    const after = readFileSync(path)
    expect(after.subarray(0, content.length).equals(withHeaderId(content, 'torn'))).toBe(true)
    expect(after.subarray(content.length).toString()).toMatch(/^\{"seq":20,[^\n]*\}\n$/)
    expect(await store.verify('torn')).toMatchObject({ status: 'ok', lastSeq: 20 })
  })

  it('T6: (b) a valid line glued onto a torn one by a foreign append is CORRUPT_LINE; writes refused; salvage makes a new session', async () => {
    const content = await fixture20()
    const torn = Buffer.from('{"seq":20,"time":"2026-0')
    const path = placeSession(temp.path, 'glued', Buffer.concat([content, torn]))
    const glued = encodeEventLine({
      seq: 20,
      time: '2026-01-01T00:01:00.000Z',
      type: 'user/message',
      data: { message: { role: 'user', content: 'glued' } },
    })
    appendFileSync(path, glued)
    const before = fileIdentity(path)
    const error = await caught(store.openWriter('glued'))
    expect(error).toMatchObject({
      code: 'CORRUPT_LINE',
      location: { line: 22, offset: content.length },
      lastGoodSeq: 19,
    })
    expect(error.details).toMatchObject({ gluedAt: torn.length })
    expect(fileIdentity(path)).toEqual(before)
    expect(existsSync(join(temp.path, 'glued', 'writer.lock'))).toBe(false)
    const read = await store.openReader('glued', { allowDamaged: true })
    expect(read.lastSeq).toBe(19)
    expect(read.error?.code).toBe('CORRUPT_LINE')
    const report = await store.salvage('glued', { to: 'glued-salvaged' })
    expect(report).toMatchObject({
      copiedEvents: 20,
      lastGoodSeq: 19,
      salvageSeq: 20,
      reason: 'CORRUPT_LINE',
    })
    expect(fileIdentity(path)).toEqual(before)
    expect(await store.verify('glued-salvaged')).toMatchObject({ status: 'ok', lastSeq: 20 })
  })

  it('V1: a header version newer than the library is refused before any lock, temp or write', async () => {
    const header = encodeJsonLine(
      JSON.stringify({
        format: 'agent-ledger.session',
        version: 99,
        id: 'future',
        createdAt: '2030-01-01T00:00:00.000Z',
        integrity: 'crc32c',
      }),
    )
    const path = placeSession(
      temp.path,
      'future',
      Buffer.concat([header, Buffer.from('{"whatever":"v99 lines"}\n')]),
    )
    const before = fileIdentity(path)
    const namesBefore = namesIn(join(temp.path, 'future'))
    const attempts = [
      () => store.openWriter('future'),
      () => store.openReader('future', { allowDamaged: true }),
      // verify reports a header refusal as its damage instead of throwing (the core's VerifyReport).
      async () => {
        const report = await store.verify('future')
        expect(report).toMatchObject({ status: 'damaged', header: null })
        throw report.damage ?? new Error('expected verify to report the damage')
      },
    ]
    for (const attempt of attempts) {
      const error = await caught(attempt())
      expect(error).toMatchObject({ code: 'VERSION_TOO_NEW', sessionId: 'future' })
      expect(error.details).toMatchObject({ found: 99, expected: 4 })
      expect(error.message).toMatch(/upgrade/)
    }
    expect(fileIdentity(path)).toEqual(before)
    expect(namesIn(join(temp.path, 'future'))).toEqual(namesBefore)
    const listed = await store.list()
    expect(listed.problems.map((problem) => [problem.id, problem.error.code])).toEqual([
      ['future', 'VERSION_TOO_NEW'],
    ])
  })

  it('S3/V1: a header "__proto__" member cannot supply the version: 99 as an own member is VERSION_TOO_NEW', async () => {
    const header = encodeJsonLine(
      '{"format":"agent-ledger.session","__proto__":{"version":4},"version":99,"id":"proto","createdAt":"2030-01-01T00:00:00.000Z","integrity":"crc32c"}',
    )
    placeSession(temp.path, 'proto', header)
    expect((await caught(store.openReader('proto'))).code).toBe('VERSION_TOO_NEW')
    const sneaky = encodeJsonLine(
      '{"format":"agent-ledger.session","__proto__":{"version":4},"id":"proto2","createdAt":"2030-01-01T00:00:00.000Z","integrity":"crc32c"}',
    )
    placeSession(temp.path, 'proto2', sneaky)
    const error = await caught(store.openReader('proto2'))
    expect(error).toMatchObject({ code: 'INVALID_HEADER' })
    expect(error.details).toMatchObject({ field: 'version' })
    expect(({} as Record<string, unknown>)['version']).toBeUndefined()
  })

  it('R1: a dangling tool call is closed on open for write with a durable placeholder, once; read-only only reports it', async () => {
    const writer = await store.create({ id: 'dangling' })
    const [turnStart, user, assistant, toolCall] = turnInputs(1)
    for (const input of [turnStart!, user!, assistant!, toolCall!]) writer.append(input)
    await writer.close()
    const path = join(temp.path, 'dangling', LOG_FILE_NAME)
    const before = fileIdentity(path)
    const read = await store.openReader('dangling')
    expect(read.pendingToolCalls).toMatchObject([{ callId: 'call_1', toolCallSeq: 3, assistantSeq: 2 }])
    expect(fileIdentity(path)).toEqual(before)
    const repaired = await store.openWriter('dangling')
    expect(repaired.recovery.repairs).toMatchObject([
      { code: 'TOOL_OUTCOME_UNKNOWN', callId: 'call_1', resultSeq: 4 },
      { code: 'CLOSE_TURN', turn: 1, resultSeq: 5 },
    ])
    expect(repaired.durableSeq).toBe(5)
    expect(repaired.deriveMessages().at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_1' })
    await repaired.close()
    const events = await collect(store.readEvents('dangling'))
    expect(events.slice(4).map((event) => event.type)).toEqual(['tool/result', 'turn/end'])
    expect(events[4]).toMatchObject({
      data: { isError: true, code: 'TOOL_OUTCOME_UNKNOWN' },
      sourceEventSeqs: [3],
    })
    expect(events[5]).toMatchObject({ data: { turn: 1, reason: 'interrupted' } })
    const again = await store.openWriter('dangling')
    expect(again.recovery.repairs).toEqual([])
    await again.close()
    expect((await collect(store.readEvents('dangling'))).length).toBe(6)
  })

  it('T1: quarantine files are never deleted: at maxQuarantineFiles a write open refuses with QUARANTINE_FULL naming them, changing nothing', async () => {
    ;({ store } = coreTestStore(temp.path, { jsonl: { limits: { maxQuarantineFiles: 3 } } }))
    const path = await writeCoreSession(store, 'many', closedSessionInputs(3))
    for (let round = 0; round < 3; round += 1) {
      appendFileSync(path, `{"torn ${round}`)
      const writer = await store.openWriter('many')
      expect(tornRepair(writer)?.quarantinedTo).toBeDefined()
      await writer.close()
    }
    appendFileSync(path, '{"torn 3')
    const before = readFileSync(path)
    const error = await caught(store.openWriter('many'))
    expect(error.code).toBe('QUARANTINE_FULL')
    const quarantined = namesIn(join(temp.path, 'many'))
      .filter((name) => name.includes('.torn-'))
      .sort()
    expect(quarantined).toHaveLength(3)
    expect(error.details).toMatchObject({ limit: 3, files: quarantined.map((name) => `many/${name}`) })
    for (const name of quarantined) expect(error.message).toContain(name)
    // Nothing moved, nothing deleted, no lock left behind.
    expect(readFileSync(path).equals(before)).toBe(true)
    const contents = quarantined.map((name) => readFileSync(join(temp.path, 'many', name), 'utf8')).sort()
    expect(contents).toEqual(['{"torn 0', '{"torn 1', '{"torn 2'])
    expect(existsSync(join(temp.path, 'many', 'writer.lock'))).toBe(false)
    // Once the user removed one, the repair goes through.
    rmSync(join(temp.path, 'many', quarantined[0]!))
    const writer = await store.openWriter('many')
    expect(tornRepair(writer)?.droppedBytes).toBe(Buffer.byteLength('{"torn 3'))
    await writer.close()
  })
})

describe('create, list, salvage, fork', () => {
  it('create publishes a complete file by link: 0600, one link, no temp left, never overwrites', async () => {
    const writer = await store.create({ id: 'fresh', header: { cwd: '/tmp/x', metadata: { model: 'test' } } })
    const path = join(temp.path, 'fresh', LOG_FILE_NAME)
    const stats = statSync(path)
    expect(stats.mode & 0o777).toBe(0o600)
    expect(stats.nlink).toBe(1)
    expect(statSync(join(temp.path, 'fresh')).mode & 0o777).toBe(0o700)
    expect(namesIn(join(temp.path, 'fresh'))).toEqual([LOG_FILE_NAME, 'writer.lease', 'writer.lock'])
    expect(writer.header).toMatchObject({
      format: 'agent-ledger.session',
      version: 4,
      id: 'fresh',
      integrity: 'crc32c',
      cwd: '/tmp/x',
    })
    await writer.close()
    // The lease file keeps the fencing epoch across writers; the lock goes with the writer.
    expect(namesIn(join(temp.path, 'fresh'))).toEqual([LOG_FILE_NAME, 'writer.lease'])
    const before = fileIdentity(path)
    const error = await caught(store.create({ id: 'fresh' }))
    expect(error.code).toBe('SESSION_EXISTS')
    expect(fileIdentity(path)).toEqual(before)
  })

  it('removes temp files a crashed publish left, under the lock', async () => {
    await writeCoreSession(store, 'leftover', [])
    const stale = join(temp.path, 'leftover', '.tmp-create-0123456789abcdef')
    writeFileSync(stale, 'half a header', { mode: 0o600 })
    const writer = await store.openWriter('leftover')
    expect(existsSync(stale)).toBe(false)
    await writer.close()
  })

  it('list() reads headers only and reports broken sessions without failing', async () => {
    await writeCoreSession(store, 'a-good', closedSessionInputs(3))
    await writeCoreSession(store, 'b-good', [])
    placeSession(temp.path, 'c-garbage', Buffer.from('\u0000\u0000\u0000 not a header\n'))
    placeSession(temp.path, 'd-empty', Buffer.alloc(0))
    writeFileSync(join(temp.path, '.not-a-session'), 'x')
    const listed = await store.list()
    // Most recently updated first (the core's order).
    expect(listed.sessions.map((session) => session.id)).toEqual(['b-good', 'a-good'])
    expect(listed.sessions[1]).toMatchObject({ header: { id: 'a-good', cwd: '/srv/project' } })
    expect(listed.problems.map((problem) => problem.id).sort()).toEqual(['c-garbage', 'd-empty'])
    for (const problem of listed.problems) expect(SessionStoreError.is(problem.error)).toBe(true)
  })

  it('salvage copies the good prefix byte for byte into a new session and leaves the damaged one untouched', async () => {
    const content = await fixture20()
    const starts = lineStarts(content)
    const damaged = withFlippedByte(content, starts[8]! + 20, 0x01) // inside line 9 = seq 7, JSON still valid
    const path = placeSession(temp.path, 'broken', damaged)
    const before = fileIdentity(path)
    const report = await store.salvage('broken', { to: 'rescued' })
    expect(report).toMatchObject({
      from: 'broken',
      to: 'rescued',
      copiedEvents: 7,
      lastGoodSeq: 6,
      salvageSeq: 7,
      reason: 'CORRUPT_LINE',
      sourceError: { location: { offset: starts[8] } },
    })
    expect(fileIdentity(path)).toEqual(before)
    const rescued = readFileSync(join(temp.path, 'rescued', LOG_FILE_NAME))
    const rescuedStarts = lineStarts(rescued)
    expect(
      rescued.subarray(rescuedStarts[1], rescuedStarts[8]).equals(content.subarray(starts[1], starts[8])),
    ).toBe(true)
    const events = await collect(store.readEvents('rescued'))
    expect(events.at(-1)).toMatchObject({
      seq: 7,
      type: 'session/salvage',
      data: { sourceSession: 'broken', lastGoodSeq: 6, droppedFromOffset: starts[8], reason: 'CORRUPT_LINE' },
    })
    expect((await caught(store.salvage('broken', { to: 'rescued' }))).code).toBe('SESSION_EXISTS')
  })

  it('fork copies a prefix, closes an open turn (or refuses), marks the cut, and never touches the parent', async () => {
    const path = await writeCoreSession(store, 'parent', [...turnInputs(1), ...turnInputs(2)])
    const before = fileIdentity(path)
    const refused = await caught(store.fork('parent', { to: 'child-refused', atSeq: 9, openTurn: 'refuse' }))
    expect(refused.code).toBe('FORK_REFUSED')
    expect(refused.details).toMatchObject({ projectionCode: 'OPEN_TURN' })
    const child = await store.fork('parent', { to: 'child', atSeq: 9 })
    expect(child.header).toMatchObject({
      parentSession: 'parent',
      seeded: true,
      inheritedEventCount: 10,
      cwd: '/srv/project',
    })
    expect(child.recovery.repairs).toEqual([])
    await child.close()
    const events = await collect(store.readEvents('child'))
    expect(events.slice(10).map((event) => event.type)).toEqual([
      'tool/result',
      'turn/end',
      'session/end-seed',
    ])
    expect(fileIdentity(path)).toEqual(before)
    const out = await caught(store.fork('parent', { to: 'child-far', atSeq: 99 }))
    expect(out).toMatchObject({ code: 'FORK_REFUSED' })
    expect(existsSync(join(temp.path, 'child-refused', LOG_FILE_NAME))).toBe(false)
  })

  it('refuses to write to a session with damage in the middle, leaving it byte-identical', async () => {
    const content = await fixture20()
    const starts = lineStarts(content)
    const path = placeSession(
      temp.path,
      'middle',
      Buffer.concat([content.subarray(0, starts[5]), content.subarray(starts[6])]),
    )
    truncateSync(path, statSync(path).size)
    const before = fileIdentity(path)
    const error = await caught(store.openWriter('middle'))
    expect(error).toMatchObject({ code: 'SEQ_GAP', location: { line: 6, offset: starts[5] }, lastGoodSeq: 3 })
    expect(fileIdentity(path)).toEqual(before)
    // The refused write open took the lease first: its epoch file stays, no lock.
    expect(namesIn(join(temp.path, 'middle'))).toEqual([LOG_FILE_NAME, 'writer.lease'])
  })
})
