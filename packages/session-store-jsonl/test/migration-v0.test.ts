import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { createEventRegistry, defineEventType } from '@agent-ledger/session-events'
import type { LoggedEvent } from '@agent-ledger/session-events'
import { z } from 'zod'
import { afterAll, describe, expect, it } from 'vitest'

import { nodeFsOps } from '../src/fs-ops.ts'
import type { FsOps } from '../src/fs-ops.ts'
import { JsonlStoreError } from '../src/jsonl-store-error.ts'
import { crc32cHex, decodeLine } from '../src/line-codec.ts'
import { migrateSession } from '../src/migration/migrate-session.ts'
import type { MigrationProgress } from '../src/migration/migration-context.ts'
import { copyMembers, spliceTopLevelSeq, topLevelSeqValueRanges } from '../src/migration/raw-line.ts'
import { encodeJsonLine } from '../src/line-codec.ts'
import { V0SessionBuilder } from './fixtures/v0/generate-v0-session.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-v0-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let counter = 0

const FIXTURES = new URL('./fixtures/v0/', import.meta.url)

function fixture(name: string): string {
  return readFileSync(new URL(name, FIXTURES), 'utf8')
}

/** A session directory holding `text` as session.jsonl. */
function sessionWith(text: string | Buffer): string {
  counter += 1
  const directory = join(scratch, `s${counter}`)
  mkdirSync(directory, { mode: 0o700 })
  writeFileSync(join(directory, 'session.jsonl'), text, { mode: 0o600 })
  return directory
}

function v0Lines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

async function readMigrated(
  directory: string,
  options: { registry?: ReturnType<typeof createEventRegistry> } = {},
) {
  const result = await migrateSession({ mode: 'read', directory, ...options })
  const events: LoggedEvent[] = []
  for await (const event of result.events) events.push(event)
  return { ...result, events }
}

async function failure(promise: Promise<unknown>): Promise<JsonlStoreError> {
  try {
    await promise
  } catch (error) {
    if (JsonlStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a typed error')
}

async function drainFailure(directory: string): Promise<JsonlStoreError> {
  return failure(
    (async () => {
      const result = await migrateSession({ mode: 'read', directory })
      for await (const _event of result.events) {
        // consume
      }
    })(),
  )
}

/** The v0 event as v4 expects it, by the documented mapping. */
function expectedV4(v0: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    seq: (v0['seq'] as number) - 1,
    time: v0['time'],
    type: v0['type'],
    data: v0['data'],
  }
  const op = v0['surfaceOp'] as { op: string; startSeq: number; endSeq: number } | undefined
  if (op !== undefined && op.op === 'replace')
    out['surfaceOp'] = { op: 'replace', startSeq: op.startSeq - 1, endSeq: op.endSeq - 1 }
  if (v0['sourceEventSeqs'] !== undefined)
    out['sourceEventSeqs'] = (v0['sourceEventSeqs'] as number[]).map((seq) => seq - 1)
  return out
}

describe('v0 to v4 migration (read mode)', () => {
  it('V3: maps the normal fixture event for event: seq n becomes n - 1, every sourceEventSeqs moves with it, append ops vanish', async () => {
    const text = fixture('normal-tool-calls.jsonl')
    const v0 = v0Lines(text)
    const { events, header, lastSeq, source } = await readMigrated(sessionWith(text))
    expect(events).toHaveLength(v0.length - 1)
    expect(lastSeq).toBe(v0.length - 2)
    expect(events.map((event) => event.seq)).toEqual(v0.slice(1).map((_, index) => index))
    for (let index = 1; index < v0.length; index += 1)
      expect(events[index - 1]).toEqual(expectedV4(v0[index]!))
    expect(source.migratedFrom).toMatchObject({
      file: 'session.jsonl',
      version: 0,
      lastSeq: v0.length - 1,
      bytes: Buffer.byteLength(text),
    })
    expect(header).toMatchObject({
      format: 'agent-ledger.session',
      version: 4,
      createdAt: (v0[0] as { time: string }).time,
      cwd: '/home/dev/projects/todo-cli',
      delegationDepth: 0,
      metadata: { model: 'deepseek-chat', provider: 'deepseek' },
      integrity: 'crc32c',
      migratedFrom: source.migratedFrom,
    })
    const toolResult = events.find((event) => event.type === 'tool/result')!
    const call = events.find((event) => event.type === 'tool/call')!
    expect(toolResult.sourceEventSeqs).toEqual([call.seq])
  })

  it('V3: remaps a replace surfaceOp range and its citations (replace fixture)', async () => {
    const text = fixture('replace-tool-output.jsonl')
    const v0 = v0Lines(text)
    const { events } = await readMigrated(sessionWith(text))
    const v0Replace = v0.find((event) => typeof event['surfaceOp'] === 'object')!
    const replace = events.find((event) => typeof event.surfaceOp === 'object')!
    const v0Op = v0Replace['surfaceOp'] as { startSeq: number; endSeq: number }
    expect(replace.seq).toBe((v0Replace['seq'] as number) - 1)
    expect(replace.surfaceOp).toEqual({ op: 'replace', startSeq: v0Op.startSeq - 1, endSeq: v0Op.endSeq - 1 })
    expect(replace.sourceEventSeqs).toEqual((v0Replace['sourceEventSeqs'] as number[]).map((seq) => seq - 1))
    expect(
      events[
        replace.surfaceOp === undefined || typeof replace.surfaceOp === 'string'
          ? 0
          : replace.surfaceOp.startSeq
      ]?.type,
    ).toBe('tool/result')
  })

  it('V3: remaps compaction ranges, fills compactionId for start and summary, and never invents a compaction/end', async () => {
    const text = fixture('compaction.jsonl')
    const v0 = v0Lines(text)
    const { events } = await readMigrated(sessionWith(text))
    const start = events.find((event) => event.type === 'compaction/start') as LoggedEvent & {
      data: { compactionId: string; startSeq: number; endSeq: number }
    }
    const v0Start = v0.find((event) => event['type'] === 'compaction/start') as {
      data: { startSeq: number; endSeq: number }
    }
    expect(start.data.startSeq).toBe(v0Start.data.startSeq - 1)
    expect(start.data.endSeq).toBe(v0Start.data.endSeq - 1)
    expect(start.data.compactionId).toBe(`v0-${start.seq}`)
    const summary = events.find((event) => event.type === 'compaction/summary') as LoggedEvent & {
      data: { compactionId: string }
    }
    expect(summary.data.compactionId).toBe(start.data.compactionId)
    expect(events.some((event) => event.type === 'compaction/end')).toBe(false)
    const replacing = events.find((event) => typeof event.surfaceOp === 'object')!
    expect(replacing.surfaceOp).toEqual({
      op: 'replace',
      startSeq: start.data.startSeq,
      endSeq: start.data.endSeq,
    })
    const v0Replacing = v0.find(
      (event) =>
        typeof event['surfaceOp'] === 'object' && (event['surfaceOp'] as { op: string }).op === 'replace',
    )!
    expect(replacing.sourceEventSeqs).toEqual(
      (v0Replacing['sourceEventSeqs'] as number[]).map((seq) => seq - 1),
    )
    expect(events).toHaveLength(v0.length - 1)
  })

  it('leaves a dangling tool call dangling: migration adds no event (repair belongs to the v4 write open)', async () => {
    const text = fixture('crash-dangling-tool-call.jsonl')
    const v0 = v0Lines(text)
    const { events } = await readMigrated(sessionWith(text))
    expect(events).toHaveLength(v0.length - 1)
    expect(events[events.length - 1]).toMatchObject({ type: 'tool/call', data: { callId: 'call_02_mig' } })
    const placeholder = events.find(
      (event) => event.type === 'tool/result' && (event.data as { isError?: boolean }).isError === true,
    )!
    expect(placeholder.sourceEventSeqs).toEqual([placeholder.seq - 1])
  })

  it('normalises surfaceOp "append" given as a string or as {op:"append"} to absent, keeps unknown top-level members', async () => {
    const session = new V0SessionBuilder()
    session.header({})
    session.append(
      'user/message',
      { message: { role: 'user', content: 'a' } },
      { surfaceOp: { op: 'append' } },
    )
    session.lines.push(
      JSON.stringify({
        seq: 2,
        time: '2025-03-14T09:27:00.000Z',
        type: 'user/message',
        data: { message: { role: 'user', content: 'b' } },
        surfaceOp: 'append',
        traceId: 't-1',
      }),
    )
    const { events } = await readMigrated(sessionWith(session.text()))
    expect(events.map((event) => Object.hasOwn(event, 'surfaceOp'))).toEqual([false, false])
    expect((events[1] as unknown as Record<string, unknown>)['traceId']).toBe('t-1')
    expect(Object.keys(events[1]!)).toEqual(['seq', 'time', 'type', 'data', 'traceId'])
  })

  it('S3: keeps own __proto__ keys as data in the header metadata and in event data, without polluting prototypes', async () => {
    const header =
      '{"seq":0,"time":"2025-03-14T09:26:53.000Z","type":"session/header","data":{"version":0,"cwd":7,"__proto__":{"polluted":true}}}'
    const event =
      '{"seq":1,"time":"2025-03-14T09:26:54.000Z","type":"tool/call","data":{"callId":"c","name":"n","arguments":"{}","__proto__":{"polluted":true}}}'
    const { events, header: migrated } = await readMigrated(sessionWith(`${header}\n${event}\n`))
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
    expect(Object.hasOwn(migrated.metadata!, '__proto__')).toBe(true)
    expect(migrated.metadata!['cwd']).toBe(7)
    expect(migrated.cwd).toBeUndefined()
    expect(Object.hasOwn(events[0]!.data as object, '__proto__')).toBe(true)
  })

  it('V5: carries an ignorable unknown event byte for byte, except its renumbered seq, and counts it', async () => {
    const session = new V0SessionBuilder()
    session.header({})
    session.append('turn/start', { turn: 1 })
    // Odd formatting the v4 encoder would never produce: spaces, escapes, 1.50, key order, a nested "seq".
    const odd =
      '{ "type" : "future/thing", "seq" : 2, "time":"2025-03-14T09:27:00.000Z", "data":{"seq":99,"text":"caf\\u00e9 \\"q\\"","price":1.50,"list":[1,{"seq":3}]},"ignorable":true }  '
    session.lines.push(odd)
    session.lines.push(
      JSON.stringify({
        seq: 3,
        time: '2025-03-14T09:27:01.000Z',
        type: 'turn/end',
        data: { turn: 1, reason: 'completed' },
      }),
    )
    const directory = sessionWith(session.text())
    const { events, source } = await readMigrated(directory)
    expect(source.ignoredUnknown).toBe(1)
    expect(events.map((event) => event.seq)).toEqual([0, 1, 2])
    expect(events[1]).toMatchObject({
      seq: 1,
      type: 'future/thing',
      ignorable: true,
      data: { seq: 99, price: 1.5, list: [1, { seq: 3 }] },
    })
    const written = await migrateSession({ mode: 'write', directory })
    expect(written.outcome).toBe('published')
    const line = readFileSync(join(directory, 'session.v4.jsonl'), 'utf8').split('\n')[2]!
    const body = odd.trim().replace('"seq" : 2', '"seq" : 1').slice(0, -1)
    expect(line).toBe(`${body},"crc":"${crc32cHex(Buffer.from(body))}"}`)
    // The checksum suffix is one the v4 line decoder verifies.
    expect(decodeLine(Buffer.from(line), { maxLineBytes: 1000, maxDepth: 10 })).toMatchObject({ ok: true })
  })

  it('V6: refuses an unknown event type without ignorable before writing anything (UNKNOWN_EVENT_TYPE with type, seq, line, offset)', async () => {
    const session = new V0SessionBuilder()
    session.header({})
    session.append('turn/start', { turn: 1 })
    session.append('future/thing', { x: 1 })
    session.append('turn/end', { turn: 1, reason: 'completed' })
    const directory = sessionWith(session.text())
    const before = readdirSync(directory)
    const error = await failure(migrateSession({ mode: 'read', directory }))
    expect(error.code).toBe('UNKNOWN_EVENT_TYPE')
    expect(error).toMatchObject({
      seq: 2,
      line: 3,
      offset: Buffer.byteLength(`${session.lines[0]}\n${session.lines[1]}\n`),
      lastGoodSeq: 1,
    })
    expect(error.details['type']).toBe('future/thing')
    const written = await failure(migrateSession({ mode: 'write', directory }))
    expect(written.code).toBe('UNKNOWN_EVENT_TYPE')
    expect(readdirSync(directory)).toEqual(before)
  })

  it('migrates a registered plugin event type with its data as is', async () => {
    const registry = createEventRegistry([
      defineEventType('plan/update' as never, z.object({ steps: z.array(z.string()) }) as never),
    ])
    const session = new V0SessionBuilder()
    session.header({})
    session.append('plan/update', { steps: ['read', 'write'] })
    const { events } = await readMigrated(sessionWith(session.text()), { registry })
    expect(events[0]).toEqual({
      seq: 0,
      time: expect.any(String),
      type: 'plan/update',
      data: { steps: ['read', 'write'] },
    })
  })

  it('refuses a v0 event with a top-level crc member (the v4 checksum slot) naming the source line', async () => {
    const session = new V0SessionBuilder()
    session.header({})
    session.lines.push(
      JSON.stringify({
        seq: 1,
        time: '2025-03-14T09:27:00.000Z',
        type: 'turn/start',
        data: { turn: 1 },
        crc: 'abc',
      }),
    )
    const error = await drainFailure(sessionWith(session.text()))
    expect(error).toMatchObject({ code: 'INVALID_EVENT', line: 2, seq: 1 })
    expect(error.details['field']).toBe('crc')
  })

  it('refuses an event with no valid v4 form with INVALID_EVENT naming the v0 file, line and seq', async () => {
    const session = new V0SessionBuilder()
    session.header({})
    session.append('turn/start', { turn: 1 })
    session.append('turn/end', { turn: 1, reason: 'done' })
    const directory = sessionWith(session.text())
    const error = await drainFailure(directory)
    expect(error).toMatchObject({ code: 'INVALID_EVENT', line: 3, seq: 2 })
    expect(error.file).toBe(`${directory.split('/').pop()}/session.jsonl`)
    expect(error.details['field']).toBe('data.reason')
    // Write mode validates the staged file instead (one validation pass): same refusal, nothing published.
    const written = await failure(migrateSession({ mode: 'write', directory }))
    expect(written).toMatchObject({
      code: 'MIGRATION_FAILED',
      details: { step: 'verify', cause: 'INVALID_EVENT' },
    })
    expect((written.cause as JsonlStoreError).details).toMatchObject({ sourceSeq: 2 })
    expect(readdirSync(directory)).toEqual(['session.jsonl'])
  })

  it('reports progress through the scan and the migration phases', async () => {
    const session = new V0SessionBuilder()
    session.header({})
    for (let turn = 1; turn <= 30; turn += 1) {
      session.append('turn/start', { turn })
      session.append('turn/end', { turn, reason: 'completed' })
    }
    const calls: MigrationProgress[] = []
    const result = await migrateSession({
      mode: 'read',
      directory: sessionWith(session.text()),
      onProgress: (progress) => calls.push(progress),
      progressEvery: 10,
      // Small reads, so progress is reported between chunks of one file.
      limits: { readChunkBytes: 512 },
    })
    for await (const _event of result.events) {
      // consume
    }
    const scan = calls.filter((call) => call.phase === 'scan')
    const migrate = calls.filter((call) => call.phase === 'migrate')
    expect(scan.at(-1)).toMatchObject({ eventsDone: 60, eventsTotal: 60 })
    expect(migrate.at(-1)).toMatchObject({ eventsDone: 60, eventsTotal: 60 })
    expect(scan.at(-1)!.bytesRead).toBe(scan.at(-1)!.bytesTotal)
    expect(migrate.at(-1)!.bytesRead).toBe(migrate.at(-1)!.bytesTotal)
    for (const phase of [scan, migrate]) {
      for (let index = 1; index < phase.length; index += 1) {
        expect(phase[index]!.eventsDone).toBeGreaterThanOrEqual(phase[index - 1]!.eventsDone)
        expect(phase[index]!.bytesRead).toBeGreaterThanOrEqual(phase[index - 1]!.bytesRead)
      }
    }
    // The migrate phase reports the source bytes it has read, not 0 until the end (the CLI shows a percentage).
    expect(migrate.some((call) => call.bytesRead > 0 && call.bytesRead < call.bytesTotal)).toBe(true)
  })

  it('read mode writes nothing: no create, write, link, unlink, chmod or fsync reaches the file system', async () => {
    const calls: string[] = []
    const spy: FsOps = {
      ...nodeFsOps,
      async open(path, flags, mode) {
        calls.push(`open:${flags}`)
        const handle = await nodeFsOps.open(path, flags, mode)
        return {
          ...handle,
          path: handle.path,
          read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
          write: async (buffer, position) => {
            calls.push('write')
            return handle.write(buffer, position)
          },
          close: () => handle.close(),
          stat: () => handle.stat(),
        }
      },
      link: async (from, to) => {
        calls.push('link')
        return nodeFsOps.link(from, to)
      },
      unlink: async (path) => {
        calls.push('unlink')
        return nodeFsOps.unlink(path)
      },
      mkdir: async (path, mode) => {
        calls.push('mkdir')
        return nodeFsOps.mkdir(path, mode)
      },
      chmod: async (path, mode) => {
        calls.push('chmod')
        return nodeFsOps.chmod(path, mode)
      },
      rename: async (from, to) => {
        calls.push('rename')
        return nodeFsOps.rename(from, to)
      },
      fsyncDirectory: async (path) => {
        calls.push('fsyncDirectory')
        return nodeFsOps.fsyncDirectory(path)
      },
    }
    const directory = sessionWith(fixture('compaction.jsonl'))
    const before = readdirSync(directory)
    const result = await migrateSession({ mode: 'read', directory, fs: spy })
    let count = 0
    for await (const _event of result.events) count += 1
    expect(count).toBeGreaterThan(0)
    expect(readdirSync(directory)).toEqual(before)
    const { constants } = await import('node:fs')
    for (const call of calls) {
      if (call.startsWith('open:'))
        expect(Number(call.slice(5)) & (constants.O_WRONLY | constants.O_RDWR | constants.O_CREAT)).toBe(0)
      else throw new Error(`read mode made a ${call} call`)
    }
  })
})

describe('the v0 reader', () => {
  it('treats an unterminated last line as a torn tail: migrates the good prefix and reports the tail', async () => {
    const text = fixture('normal-tool-calls.jsonl')
    const bytes = Buffer.from(text)
    const cut = bytes.length - 7
    const { events, source } = await readMigrated(sessionWith(bytes.subarray(0, cut)))
    const lines = v0Lines(text)
    expect(events).toHaveLength(lines.length - 2)
    expect(source.tornTail).toMatchObject({
      reason: 'unterminated',
      offset: bytes.lastIndexOf(0x0a, bytes.length - 2) + 1,
      bytes: cut - bytes.lastIndexOf(0x0a, bytes.length - 2) - 1,
    })
    expect(source.migratedFrom.lastSeq).toBe(lines.length - 2)
    expect(source.migratedFrom.bytes).toBe(cut)
  })

  it('treats trailing garbage that never parses (zeros) as a torn tail (tailGarbage)', async () => {
    const text = fixture('replace-tool-output.jsonl')
    const { source, events } = await readMigrated(
      sessionWith(Buffer.concat([Buffer.from(text), Buffer.alloc(4096), Buffer.from('\n')])),
    )
    expect(source.tornTail).toMatchObject({
      reason: 'tailGarbage',
      offset: Buffer.byteLength(text),
      bytes: 4097,
    })
    expect(events).toHaveLength(v0Lines(text).length - 1)
  })

  it('refuses a garbled line followed by valid lines as CORRUPT_LINE with its line, offset and lastGoodSeq', async () => {
    const lines = fixture('normal-tool-calls.jsonl').split('\n')
    lines[5] = lines[5]!.slice(0, 40)
    const directory = sessionWith(lines.join('\n'))
    const error = await failure(migrateSession({ mode: 'write', directory }))
    expect(error).toMatchObject({ code: 'CORRUPT_LINE', line: 6, lastGoodSeq: 4 })
    expect(error.offset).toBe(Buffer.byteLength(lines.slice(0, 5).join('\n')) + 1)
    expect(readdirSync(directory)).toEqual(['session.jsonl'])
  })

  it('refuses a seq gap, a duplicated line and a conflicting seq', async () => {
    const lines = fixture('normal-tool-calls.jsonl').split('\n')
    const gap = [...lines]
    gap.splice(6, 1)
    expect(
      await failure(migrateSession({ mode: 'read', directory: sessionWith(gap.join('\n')) })),
    ).toMatchObject({ code: 'SEQ_GAP', seq: 7 })
    const duplicate = [...lines]
    duplicate.splice(6, 0, lines[6]!)
    expect(
      await failure(migrateSession({ mode: 'read', directory: sessionWith(duplicate.join('\n')) })),
    ).toMatchObject({ code: 'SEQ_DUPLICATE', seq: 6 })
    const conflict = [...lines]
    conflict.splice(6, 0, lines[6]!.replace('"seq":6', '"seq":5'))
    expect(
      await failure(migrateSession({ mode: 'read', directory: sessionWith(conflict.join('\n')) })),
    ).toMatchObject({ code: 'SEQ_CONFLICT' })
  })

  it('refuses a session.jsonl whose header says another version with GENERATION_VERSION_MISMATCH', async () => {
    const v3 = '{"seq":0,"time":"2025-03-14T09:26:53.000Z","type":"session/header","data":{"version":3}}\n'
    expect(await failure(migrateSession({ mode: 'read', directory: sessionWith(v3) }))).toMatchObject({
      code: 'GENERATION_VERSION_MISMATCH',
      details: { nameVersion: 0, headerVersion: 3 },
    })
    const v4Header = `${encodeJsonLine(JSON.stringify({ format: 'agent-ledger.session', version: 4, id: 'x', createdAt: 'now', integrity: 'crc32c' })).toString()}`
    expect(await failure(migrateSession({ mode: 'read', directory: sessionWith(v4Header) }))).toMatchObject({
      code: 'GENERATION_VERSION_MISMATCH',
      details: { headerVersion: 4 },
    })
  })

  it('refuses an empty or header-less v0 file with INVALID_HEADER (headerMissing) and a non-header first line', async () => {
    expect(await failure(migrateSession({ mode: 'write', directory: sessionWith('') }))).toMatchObject({
      code: 'INVALID_HEADER',
      details: { headerMissing: true },
    })
    expect(
      await failure(migrateSession({ mode: 'read', directory: sessionWith('{"seq":0,"ti') })),
    ).toMatchObject({ code: 'INVALID_HEADER' })
    const notHeader = '{"seq":0,"time":"2025-03-14T09:26:53.000Z","type":"turn/start","data":{"turn":1}}\n'
    expect(await failure(migrateSession({ mode: 'read', directory: sessionWith(notHeader) }))).toMatchObject({
      code: 'INVALID_HEADER',
      line: 1,
    })
  })

  it('refuses a line longer than maxLineBytes with LINE_TOO_LARGE, found while streaming', async () => {
    const session = new V0SessionBuilder()
    session.header({})
    session.append('user/message', { message: { role: 'user', content: 'x'.repeat(5000) } })
    session.append('turn/start', { turn: 1 })
    const error = await failure(
      migrateSession({
        mode: 'read',
        directory: sessionWith(session.text()),
        limits: { maxLineBytes: 1024, maxEventBytes: 1024, readChunkBytes: 256 },
      }),
    )
    expect(error).toMatchObject({ code: 'LINE_TOO_LARGE', line: 2 })
  })
})

describe('raw-line helpers', () => {
  it('finds only top-level seq members, never a "seq" inside a nested value or a string', () => {
    const line = Buffer.from('{"data":{"seq":1},"note":"\\"seq\\":2","seq":3,"list":[{"seq":4}]}')
    const ranges = topLevelSeqValueRanges(line)!
    expect(ranges.map(([start, end]) => line.subarray(start, end).toString())).toEqual(['3'])
    expect(spliceTopLevelSeq(line, 2)!.toString()).toBe(
      '{"data":{"seq":1},"note":"\\"seq\\":2","seq":2,"list":[{"seq":4}]}',
    )
  })

  it('returns null when seq is spelled with escapes, so the caller re-serializes', () => {
    expect(spliceTopLevelSeq(Buffer.from('{"s\\u0065q":3}'), 2)).toBeNull()
  })

  it('copyMembers defines members (so __proto__ stays an own key) and replaces in place', () => {
    const source = JSON.parse('{"a":1,"__proto__":{"x":1},"b":2}') as Record<string, unknown>
    const copy = copyMembers(source, { a: 9, c: 3, b: undefined })
    expect(Object.keys(copy)).toEqual(['a', '__proto__', 'c'])
    expect(copy['a']).toBe(9)
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
  })
})

describe('the one migration step (v0 to v4)', () => {
  it('refuses a source it has no step from with NO_MIGRATION_PATH naming the versions: a newer one, an unreadable one', async () => {
    const text = fixture('normal-tool-calls.jsonl')
    const newer = sessionWith('')
    writeFileSync(join(newer, 'session.v5.jsonl'), text)
    expect(await failure(migrateSession({ mode: 'read', directory: newer }))).toMatchObject({
      code: 'NO_MIGRATION_PATH',
      details: { from: 5, to: 4, reason: 'newer-source' },
    })
    const unreadable = sessionWith('')
    writeFileSync(join(unreadable, 'session.v2.jsonl'), text)
    expect(await failure(migrateSession({ mode: 'read', directory: unreadable }))).toMatchObject({
      code: 'NO_MIGRATION_PATH',
      details: { from: 2, reason: 'no-reader' },
    })
  })
})
