/**
 * Issue 10 (the outside attack), store side: a complete header that fails is damage, never a
 * torn tail (T7); header checks in order (V7); the header id names its directory (S11); the
 * checksums of the prefix a checkpoint skips are checked by verify, and by a write open with
 * `writeOpenCheck: 'full'` (I9). Every fault is
 * injected for real into files the library wrote.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'

import { testTime } from '../../../tooling/test-time.ts'
import { CORE_CHECKPOINT_FILE_NAME } from '../src/layout.ts'
import { LOG_FILE_NAME } from '../src/format.ts'
import type { JsonlStore } from '../src/index.ts'
import { seededRandom } from './support/fault-fs.ts'
import {
  closedSessionInputs,
  collect,
  coreTestStore,
  fileIdentity,
  lineStarts,
  makeTempDir,
  namesIn,
  placeSession,
  turnInputs,
  writeCoreSession,
} from './support/sessions.ts'
import { placeZstdSession } from './support/zstd-sessions.ts'
import { cliCompress } from './zstd-helpers.ts'

let temp: { path: string; cleanup: () => void }
let store: JsonlStore

beforeEach(() => {
  temp = makeTempDir('al-harden-')
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

/** A 30-event session written through the library, as bytes. */
async function thirtyEvents(id: string): Promise<Buffer> {
  return readFileSync(await writeCoreSession(store, id, closedSessionInputs(30)))
}

/**
 * Asserts the whole contract of a damaged header on session `id`: verify says damaged
 * (CORRUPT_LINE on line 1, nothing acknowledged is claimed away), reads throw it (or return
 * it with allowDamaged), a write open refuses, list reports it, and nothing was moved,
 * created or deleted. Then salvage makes a new session and leaves the source untouched.
 */
async function expectDamagedHeader(id: string, path: string, code = 'CORRUPT_LINE'): Promise<void> {
  const before = fileIdentity(path)
  const names = namesIn(join(temp.path, id))
  const report = await store.verify(id)
  expect(report).toMatchObject({ status: 'damaged', tornTail: null, header: null })
  expect(report.damage).toMatchObject({ code, location: { line: 1, offset: 0 } })
  expect((await caught(store.openReader(id))).code).toBe(code)
  // The core refuses a session without a good header as a whole, allowDamaged or not (there
  // is no header to return a prefix under; the JSONL store API returned the error).
  expect((await caught(store.openReader(id, { allowDamaged: true }))).code).toBe(code)
  expect((await caught(store.openWriter(id))).code).toBe(code)
  expect((await caught(store.backend.capabilities.compress.compress(id))).code).toBe(code)
  const listed = await store.list()
  expect(listed.problems.find((problem) => problem.id === id)?.error.code).toBe(code)
  expect(fileIdentity(path)).toEqual(before)
  expect(namesIn(join(temp.path, id))).toEqual(names)
  // The core's salvage needs the source's header (the JSONL store API made an empty session
  // with a session/salvage event): refused with the same code, nothing published.
  expect((await caught(store.salvage(id, { to: `${id}-salvaged` }))).code).toBe(code)
  expect(existsSync(join(temp.path, `${id}-salvaged`))).toBe(false)
  expect(fileIdentity(path)).toEqual(before)
}

describe('T7: a complete first line that fails is damage, never a torn tail', () => {
  it('T7: a 30-event log converted to CRLF line endings is damage: exit-1 verify, writes refused, nothing moved or deleted', async () => {
    const content = await thirtyEvents('crlf-source')
    const path = placeSession(
      temp.path,
      'crlf',
      Buffer.from(content.toString('latin1').replaceAll('\n', '\r\n'), 'latin1'),
    )
    await expectDamagedHeader('crlf', path)
    expect((await store.verify('crlf')).damage?.details).toMatchObject({ reason: 'checksum', complete: true })
  })

  it('T7: upper-cased checksums are damage, not a torn tail', async () => {
    const content = (await thirtyEvents('upper-source')).toString('utf8')
    const upper = content.replace(
      /"crc":"([0-9a-f]{8})"/g,
      (_match, hex: string) => `"crc":"${hex.toUpperCase()}"`,
    )
    expect(upper).not.toBe(content)
    const path = placeSession(temp.path, 'upper', upper)
    await expectDamagedHeader('upper', path)
  })

  it('T7: a pretty-printed JSON file dropped into a session directory is damage; a write open moves nothing', async () => {
    const pretty = JSON.stringify(
      {
        name: 'not-a-session',
        items: Array.from({ length: 400 }, (_, index) => ({ index, text: 'x'.repeat(40) })),
      },
      null,
      2,
    )
    expect(pretty.length).toBeGreaterThan(25_000)
    const path = placeSession(temp.path, 'pretty', `${pretty}\n`)
    await expectDamagedHeader('pretty', path)
    expect((await store.verify('pretty')).damage?.details).toMatchObject({ reason: 'json' })
  })

  it('T7: a file of only complete lines, none of which parse, is damage (also a single complete line)', async () => {
    const many = placeSession(temp.path, 'noise', 'not json\nstill not json\n{"half":\n')
    await expectDamagedHeader('noise', many)
    const one = placeSession(temp.path, 'single', 'garbage\n')
    await expectDamagedHeader('single', one)
  })

  it('T7/T4: an unterminated first line is refused as damage (no header line) by verify and a write open; nothing changes', async () => {
    // The JSONL store API read a torn header as an empty session and re-initialised it on a
    // write open (RELIABILITY T4); the core refuses a log without a whole header (see
    // open-recover.test.ts T4).
    const path = placeSession(temp.path, 'torn-header', '{"format":"agent-ledger.session","vers')
    const before = fileIdentity(path)
    expect(await store.verify('torn-header')).toMatchObject({
      status: 'damaged',
      header: null,
      damage: { code: 'CORRUPT_LINE' },
    })
    expect((await caught(store.openWriter('torn-header'))).code).toBe('CORRUPT_LINE')
    expect(fileIdentity(path)).toEqual(before)
    expect(namesIn(join(temp.path, 'torn-header'))).toEqual([LOG_FILE_NAME])
  })

  it('T7: the same for a .zstd log: a complete header frame whose header fails is CORRUPT_FRAME, nothing moved', async () => {
    const content = await thirtyEvents('zstd-crlf-source')
    const crlf = Buffer.from(
      content.toString('latin1').replace('"zstd-crlf-source"', '"zcrlf"').replaceAll('\n', '\r\n'),
      'latin1',
    )
    const path = placeZstdSession(
      temp.path,
      'zcrlf',
      Buffer.concat([
        cliCompress(crlf.subarray(0, crlf.indexOf(0x0a) + 1)),
        cliCompress(crlf.subarray(crlf.indexOf(0x0a) + 1)),
      ]),
    )
    const before = fileIdentity(path)
    const report = await store.verify('zcrlf')
    expect(report.status).toBe('damaged')
    expect(report.damage).toMatchObject({ code: 'CORRUPT_FRAME' })
    expect(report.damage?.details).toMatchObject({ frameIndex: 0, reason: 'header-line-failing-its-checks' })
    expect((await caught(store.openWriter('zcrlf'))).code).toBe('CORRUPT_FRAME')
    expect(fileIdentity(path)).toEqual(before)
    expect(namesIn(join(temp.path, 'zcrlf'))).toEqual(['session.v4.jsonl.zstd'])
  })

  it('T7: the same for a v0 session.jsonl: a complete first line that does not parse is damage; no migration, nothing written', async () => {
    const directory = join(temp.path, 'oldcrlf')
    mkdirSync(directory, { mode: 0o700 })
    const path = join(directory, 'session.jsonl')
    writeFileSync(
      path,
      [
        '{"seq":0,"time":"2025-04-20T21:40:00.000Z","type":"session/header","data":{"version":0}\r',
        'garbage that is not json',
        '{"seq":1,"time":"2025-04-20T21:40:01.700Z","type":"turn/start","data":{"turn":1}}',
        '',
      ].join('\n'),
      { mode: 0o600 },
    )
    const before = fileIdentity(path)
    // A v0 line may end with \r (JSON whitespace); a line that is not JSON at all is damage.
    writeFileSync(path, readFileSync(path, 'utf8').replace('"data":{"version":0}\r', '"data":{"version":0'), {
      mode: 0o600,
    })
    const damaged = fileIdentity(path)
    expect(damaged.sha256).not.toBe(before.sha256)
    const report = await store.verify('oldcrlf')
    expect(report).toMatchObject({ status: 'damaged' })
    expect(report.damage).toMatchObject({ code: 'CORRUPT_LINE', location: { line: 1 } })
    expect((await caught(store.openWriter('oldcrlf'))).code).toBe('CORRUPT_LINE')
    expect(fileIdentity(path)).toEqual(damaged)
    expect(readdirSync(directory)).toEqual(['session.jsonl'])
  })
})

describe('V7: header checks in order: the line checksum first', () => {
  it('V7: every single-bit flip of the "4" in "version":4 and of each byte of the format value is damage, never VERSION_TOO_NEW or a thrown INVALID_HEADER', async () => {
    const content = await thirtyEvents('flips')
    const header = content.subarray(0, content.indexOf(0x0a)).toString('latin1')
    const versionAt = header.indexOf('"version":4') + '"version":'.length
    const formatStart = header.indexOf('"agent-ledger.session"') + 1
    const positions = [versionAt]
    for (let at = formatStart; at < formatStart + 'agent-ledger.session'.length; at += 1) positions.push(at)
    const path = join(temp.path, 'flips', LOG_FILE_NAME)
    let cases = 0
    for (const position of positions) {
      for (let bit = 0; bit < 8; bit += 1) {
        const flipped = Buffer.from(content)
        flipped[position] = flipped[position]! ^ (1 << bit)
        if (flipped[position] === 0x0a) continue // a new line break: covered by T7's other cases
        writeFileSync(path, flipped)
        const report = await store.verify('flips')
        expect([position, bit, report.status]).toEqual([position, bit, 'damaged'])
        expect(report.damage?.code).toBe('CORRUPT_LINE')
        expect(report.damage?.location?.line).toBe(1)
        expect((await caught(store.openWriter('flips'))).code).toBe('CORRUPT_LINE')
        expect(readFileSync(path).equals(flipped)).toBe(true)
        cases += 1
      }
    }
    expect(cases).toBeGreaterThan(150)
  })

  it('V7: a checksummed header with a newer version is still VERSION_TOO_NEW, before the rest of the header is judged', async () => {
    const line = JSON.stringify({ format: 'agent-ledger.session', version: 5, id: 'other', whatever: true })
    const { encodeJsonLine } = await import('../src/format.ts')
    placeSession(temp.path, 'newer', encodeJsonLine(line))
    // verify reports a header refusal as its damage (the core's VerifyReport), reads throw it.
    expect((await store.verify('newer')).damage?.code).toBe('VERSION_TOO_NEW')
    expect((await caught(store.openReader('newer'))).code).toBe('VERSION_TOO_NEW')
  })
})

describe('S11: the header id names the session directory', () => {
  it('S11: a log whose header says "id":"other" inside directory s is HEADER_ID_MISMATCH naming both ids, for every path; nothing written', async () => {
    // The core has its own code for a header naming another session (the JSONL store API said
    // INVALID_HEADER with details.field 'id').
    const content = await thirtyEvents('other')
    const directory = join(temp.path, 's')
    mkdirSync(directory, { mode: 0o700 })
    const path = join(directory, LOG_FILE_NAME)
    writeFileSync(path, content, { mode: 0o600 })
    const before = fileIdentity(path)
    for (const attempt of [
      async () => {
        const { damage } = await store.verify('s')
        throw damage ?? new Error('expected verify to report the damage')
      },
      () => store.openReader('s'),
      () => store.openReader('s', { allowDamaged: true }),
      () => store.openWriter('s'),
      () => store.fork('s', { to: 'forked', atSeq: 3 }),
      () => collect(store.readEvents('s')),
    ]) {
      const error = await caught(attempt())
      expect(error).toMatchObject({
        code: 'HEADER_ID_MISMATCH',
        location: { file: `s/${LOG_FILE_NAME}`, line: 1 },
      })
      expect(error.details).toMatchObject({ field: 'id', expected: 's', found: 'other' })
      expect(error.message).toContain('"s"')
      expect(error.message).toContain('"other"')
    }
    // The backend's compress capability checks the header itself: the same code.
    const compress = await caught(store.backend.capabilities.compress.compress('s'))
    expect(compress).toMatchObject({
      code: 'HEADER_ID_MISMATCH',
      location: { file: `s/${LOG_FILE_NAME}`, line: 1 },
    })
    expect(compress.details).toMatchObject({ field: 'id', expected: 's', found: 'other' })
    const listed = await store.list()
    expect(listed.sessions.map((session) => session.id)).toEqual(['other'])
    expect(listed.problems.map((problem) => [problem.id, problem.error.code])).toEqual([
      ['s', 'HEADER_ID_MISMATCH'],
    ])
    expect(fileIdentity(path)).toEqual(before)
    expect(readdirSync(directory)).toEqual([LOG_FILE_NAME])
    expect(readdirSync(temp.path).sort()).toEqual(['other', 's'])
  })

  it('S11: with a checkpoint, the id is checked too (the header is not replayed)', async () => {
    const { store: cached } = coreTestStore(temp.path, { checkpoint: { minLogBytes: 0, minGrowthRatio: 0 } })
    const writer = await cached.create({ id: 'cached' })
    for (const input of turnInputs(1)) writer.append(input)
    await writer.close()
    const log = readFileSync(join(temp.path, 'cached', LOG_FILE_NAME))
    const checkpoint = readFileSync(join(temp.path, 'cached', CORE_CHECKPOINT_FILE_NAME))
    const directory = join(temp.path, 'moved')
    mkdirSync(directory, { mode: 0o700 })
    writeFileSync(join(directory, LOG_FILE_NAME), log, { mode: 0o600 })
    writeFileSync(join(directory, CORE_CHECKPOINT_FILE_NAME), checkpoint, { mode: 0o600 })
    for (const error of [
      await caught(cached.openReader('moved')),
      await caught(cached.openWriter('moved')),
    ]) {
      expect(error).toMatchObject({
        code: 'HEADER_ID_MISMATCH',
        details: { expected: 'moved', found: 'cached' },
      })
    }
  })
})

/** A >1 MiB log written with the default checkpoint options (a checkpoint on close past 1 MiB): its bytes and the end of the prefix the checkpoint skips. */
async function checkpointedBigLog(
  real: JsonlStore,
): Promise<{ path: string; content: Buffer; starts: number[]; prefixEnd: number }> {
  const writer = await real.create({ id: 'big' })
  for (let turn = 1; statSync(join(temp.path, 'big', LOG_FILE_NAME)).size < 1.2 * 1024 * 1024; turn += 1) {
    for (const input of turnInputs(turn, { toolOutput: `output ${turn} ${'x'.repeat(2000)}` }))
      writer.append(input)
    await writer.flush()
  }
  await writer.close()
  const path = join(temp.path, 'big', LOG_FILE_NAME)
  const content = readFileSync(path)
  expect(content.length).toBeGreaterThan(1024 * 1024)
  const clean = await real.openReader('big')
  if (!clean.checkpoint.used)
    throw new Error(`expected the checkpoint used, found ${clean.checkpoint.reason}`)
  const starts = lineStarts(content)
  // The prefix the checkpoint skips ends where the line of its seq starts (the header is line 1).
  return { path, content, starts, prefixEnd: starts[clean.checkpoint.seq + 1]! }
}

describe('I9: the prefix a checkpoint skips: checked by verify always, by a write open with writeOpenCheck full', () => {
  it(
    "I9 (writeOpenCheck 'full'): 40 bit flips in the checkpointed prefix of a >1 MiB log: openWriter refuses every one, changing nothing; read-only opens use the checkpoint unless the flip is in a line they read back",
    async () => {
      const { store: real, warnings } = coreTestStore(temp.path, { jsonl: { writeOpenCheck: 'full' } })
      const { path, content, starts, prefixEnd } = await checkpointedBigLog(real)
      const random = seededRandom(10)
      let refused = 0
      let readBack = 0
      for (let flip = 0; flip < 40; flip += 1) {
        const at = starts[1]! + Math.floor(random() * (prefixEnd - starts[1]!))
        const damaged = Buffer.from(content)
        damaged[at] = damaged[at]! ^ (1 << Math.floor(random() * 8))
        writeFileSync(path, damaged)
        const before = fileIdentity(path)
        // Read-only opens keep trusting the checkpoint (documented: the prefix is not re-read),
        // unless the flip is in a line they read back (a visible node): then a full replay reports it.
        const read = await real.openReader('big', { allowDamaged: true })
        if (!read.checkpoint.used) {
          expect(['CORRUPT_LINE', 'SEQ_GAP', 'INVALID_EVENT']).toContain(read.error?.code)
          readBack += 1
        }
        const error = await caught(real.openWriter('big'))
        expect(['CORRUPT_LINE', 'SEQ_GAP', 'INVALID_EVENT']).toContain(error.code)
        expect(error.location?.offset).toBeLessThanOrEqual(at)
        expect(fileIdentity(path)).toEqual(before)
        expect(namesIn(join(temp.path, 'big')).filter((name) => name.includes('.torn-'))).toEqual([])
        refused += 1
      }
      expect(refused).toBe(40)
      // Each write open: the backend's scan under the lease stops its head at the flip, so the
      // checkpoint is past the head ('past-head', a full replay) and the replay finds the flip.
      // Read-only opens that could not use the checkpoint warned too (the JSONL store API
      // re-read the lines its projection referenced: 'reference'/'prefix' warnings).
      expect(warnings.filter((warning) => warning.details['reason'] === 'past-head')).toHaveLength(40)
      expect(warnings).toHaveLength(40 + readBack)
      expect(warnings.every((warning) => warning.code === 'CHECKPOINT_IGNORED')).toBe(true)
      // The intact log still opens for write from its checkpoint.
      writeFileSync(path, content)
      const again = await real.openWriter('big')
      expect(again.recovery.checkpoint).toMatchObject({ used: true })
      expect(again.recovery.headScan).toEqual({ from: 'start', fromSeq: 0 })
      await again.close()
    },
    testTime(120_000),
  )

  it(
    'I9 (default): 40 bit flips in the checkpointed prefix: verify reports every one; the write open trusts the checkpoint (its head scan starts at the seek point) unless the flip is in a line the core reads back',
    async () => {
      const { store: real } = coreTestStore(temp.path)
      const { path, content, starts, prefixEnd } = await checkpointedBigLog(real)
      const random = seededRandom(10)
      let opened = 0
      for (let flip = 0; flip < 40; flip += 1) {
        const at = starts[1]! + Math.floor(random() * (prefixEnd - starts[1]!))
        const damaged = Buffer.from(content)
        damaged[at] = damaged[at]! ^ (1 << Math.floor(random() * 8))
        writeFileSync(path, damaged)
        const report = await real.verify('big')
        expect(report.status).toBe('damaged')
        expect(['CORRUPT_LINE', 'SEQ_GAP', 'INVALID_EVENT']).toContain(report.damage?.code)
        expect(report.damage?.location?.offset).toBeLessThanOrEqual(at)
        try {
          const writer = await real.openWriter('big')
          expect(writer.recovery.headScan).toMatchObject({ from: 'checkpoint' })
          expect(writer.recovery.checkpoint).toMatchObject({ used: true })
          await writer.close()
          opened += 1
        } catch (error) {
          // A flip in a line the core reads back (a visible node the projection references).
          expect(['CORRUPT_LINE', 'SEQ_GAP', 'INVALID_EVENT']).toContain((error as SessionStoreError).code)
        }
        // Nothing before the flip was repaired or cut.
        expect(readFileSync(path).subarray(0, prefixEnd).equals(damaged.subarray(0, prefixEnd))).toBe(true)
        expect(namesIn(join(temp.path, 'big')).filter((name) => name.includes('.torn-'))).toEqual([])
      }
      // Most flips fall in lines nobody reads back: the default write open does not see them.
      expect(opened).toBeGreaterThan(0)
    },
    testTime(120_000),
  )
})

describe('W13/I10/S12: small ones', () => {
  it('W13: readEvents with fromSeq -1 or 1.5, toSeq -1 or 2.5, a non-number, or fromSeq > toSeq is INVALID_OPTION before any read', async () => {
    await writeCoreSession(store, 'range', closedSessionInputs(5))
    for (const options of [
      { fromSeq: -1 },
      { fromSeq: 1.5 },
      { toSeq: -1 },
      { toSeq: 2.5 },
      { fromSeq: Number.NaN },
      { fromSeq: '1' as unknown as number },
      { fromSeq: 3, toSeq: 2 },
    ]) {
      let error: unknown
      try {
        await collect(store.readEvents('range', options))
      } catch (thrown) {
        error = thrown
      }
      expect([options, SessionStoreError.is(error) && error.code]).toEqual([options, 'INVALID_OPTION'])
    }
    // Valid bounds still read exactly their range.
    expect(
      (await collect(store.readEvents('range', { fromSeq: 1, toSeq: 3 }))).map((event) => event.seq),
    ).toEqual([1, 2, 3])
    expect(
      (await collect(store.readEvents('range', { fromSeq: 2, toSeq: 2 }))).map((event) => event.seq),
    ).toEqual([2])
  })

  it('I10: create with a seeded header but no session/end-seed marker (or a marker without seeded) is refused; nothing published', async () => {
    await writeCoreSession(store, 'parent', closedSessionInputs(10))
    const inherited = await collect(store.readEvents('parent', { toSeq: 7 }))
    const error = await caught(
      store.create({
        id: 'child',
        header: { parentSession: 'parent', seeded: true, inheritedEventCount: 8 },
        seed: inherited,
      }),
    )
    // The core's code for a seed that does not end with its marker (was INVALID_HEADER, field seeded).
    expect(error).toMatchObject({
      code: 'INVALID_SEED',
      details: { expected: 'session/end-seed', found: 'turn/end' },
    })
    expect(readdirSync(temp.path).includes('child') ? readdirSync(join(temp.path, 'child')) : []).toEqual([])
    const marker = {
      seq: 8,
      time: inherited[7]!.time,
      type: 'session/end-seed',
      data: { inherited: true, parentSession: 'parent', boundarySeq: 7 },
    } as never
    const unflagged = await caught(store.create({ id: 'child2', seed: [...inherited, marker] }))
    expect(unflagged).toMatchObject({ code: 'INVALID_SEED', details: { field: 'seeded', markers: 1 } })
    const wrongCount = await caught(
      store.create({
        id: 'child3',
        header: { parentSession: 'parent', seeded: true, inheritedEventCount: 5 },
        seed: [...inherited, marker],
      }),
    )
    expect(wrongCount.code).toBe('INVALID_SEED')
    // The real thing is accepted (fork builds exactly this).
    const good = await store.create({
      id: 'child4',
      header: { parentSession: 'parent', seeded: true, inheritedEventCount: 8 },
      seed: [...inherited, marker],
    })
    await good.close()
    expect(await store.verify('child4')).toMatchObject({ status: 'ok', lastSeq: 8 })
  })

  it('S12: data with accessors is read once: a getter valid three times then 42 is validated, written and reopened as its first answer', async () => {
    const writer = await store.create({ id: 'getter' })
    let reads = 0
    const data = {
      message: {
        role: 'user',
        get content(): unknown {
          reads += 1
          return reads <= 3 ? 'the valid answer' : 42
        },
      },
    }
    const logged = writer.append({ type: 'user/message', data } as never)
    expect(reads).toBe(1)
    expect(logged.data).toEqual({ message: { role: 'user', content: 'the valid answer' } })
    await writer.flush()
    await writer.close()
    const events = await collect(store.readEvents('getter'))
    expect(events.map((event) => event.data)).toEqual([
      { message: { role: 'user', content: 'the valid answer' } },
    ])
    expect(await store.verify('getter')).toMatchObject({ status: 'ok', lastSeq: 0 })
    const again = await store.openWriter('getter')
    expect(again.durableSeq).toBe(0)
    await again.close()
  })

  it('S12: a getter that answers invalid data first is refused, and nothing is buffered', async () => {
    const writer = await store.create({ id: 'getter2' })
    let reads = 0
    const data = {
      message: {
        role: 'user',
        get content(): unknown {
          reads += 1
          return reads === 1 ? 42 : 'valid later'
        },
      },
    }
    expect(() => writer.append({ type: 'user/message', data } as never)).toThrow(SessionStoreError)
    expect(writer.bufferedEvents).toBe(0)
    await writer.close()
    expect(await store.verify('getter2')).toMatchObject({ status: 'ok', lastSeq: -1 })
  })
})
