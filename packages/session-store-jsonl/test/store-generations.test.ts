/*
 * Generations and migration through the one store API (issue 5, moved in issue 23): the core
 * over the JSONL backend. A v0 session (the seed chapter's `session.jsonl`) opened read-only
 * (migrated in memory), refused for write until `backend.capabilities.migrate.migrate`
 * publishes v4, migrated, listed and verified; the version, fork and encoding refusals of the
 * open paths. The migration module itself is tested in migration*.test.ts.
 */
import {
  appendFileSync,
  copyFileSync,
  mkdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'

import type { SessionEvent } from '@agent-ledger/session-events'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { SessionStoreError } from '@agent-ledger/session-store'
import type { BackendProgress, SessionStoreWarning } from '@agent-ledger/session-store'

import { encodeJsonLine } from '../src/format.ts'
import type { JsonlStore } from '../src/index.ts'
import {
  collect,
  coreTestStore,
  fileIdentity,
  makeTempDir,
  namesIn,
  turnInputs,
  writeCoreSession,
} from './support/sessions.ts'

const FIXTURES = new URL('./fixtures/v0/', import.meta.url)
const FIXTURE_NAMES = [
  'normal-tool-calls.jsonl',
  'replace-tool-output.jsonl',
  'crash-dangling-tool-call.jsonl',
  'compaction.jsonl',
] as const

let temp: { path: string; cleanup: () => void }
let store: JsonlStore
let warnings: SessionStoreWarning[]
beforeEach(() => {
  temp = makeTempDir('al-generations-')
  ;({ store, warnings } = coreTestStore(temp.path))
})

/** The backend's migrate capability (the one way to migrate). */
function migrate(
  id: string,
  options: { dryRun?: boolean; onProgress?: (progress: BackendProgress) => void } = {},
): Promise<{ changed: boolean; details?: Readonly<Record<string, unknown>> }> {
  return store.backend.capabilities.migrate.migrate(id, options)
}

/** The session's current log, as the files capability names it. */
async function currentFile(id: string): Promise<string> {
  return (await store.backend.capabilities.files.sessionFiles(id)).current
}
afterEach(() => temp.cleanup())

/** Places a v0 fixture as session `id` (0700 directory, 0600 file). */
function placeV0(id: string, fixture: string): { directory: string; v0: string } {
  const directory = join(temp.path, id)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const v0 = join(directory, 'session.jsonl')
  copyFileSync(new URL(fixture, FIXTURES), v0)
  return { directory, v0 }
}

/** Lines of a v0 fixture (header event included). */
function v0Lines(fixture: string): Record<string, unknown>[] {
  return readFileSync(new URL(fixture, FIXTURES), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

/** Every file of a directory with its identity (sha256, size, inode, mtime): "no file written" means equal. */
function files(directory: string): unknown {
  return namesIn(directory).map((name) => [name, fileIdentity(join(directory, name))])
}

/** The logs of a session directory (every generation, sorted). */
function logs(directory: string): string[] {
  return namesIn(directory).filter((name) => /^session(\.v\d+)?\.jsonl(\.zstd)?$/.test(name))
}

/** {@link files} plus the directory's own mtime: "nothing written at all" (no lock, no temp file) means equal. */
function snapshot(directory: string): unknown {
  return { directoryMtimeMs: statSync(directory).mtimeMs, files: files(directory) }
}

async function failure(promise: Promise<unknown>): Promise<SessionStoreError> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error
    throw error
  }
  throw new Error('expected a SessionStoreError')
}

describe('a v0 session opened read-only', () => {
  it.each(FIXTURE_NAMES)(
    'V3: openReader and readEvents give the migrated events of %s and write nothing',
    async (fixture) => {
      const { directory } = placeV0('old', fixture)
      const before = snapshot(directory)
      const lines = v0Lines(fixture)
      const read = await store.openReader('old')
      expect(await currentFile('old')).toBe('old/session.jsonl')
      expect(read.error).toBeNull()
      expect(read.tornTail).toBeNull()
      // v0 seq n becomes v4 seq n - 1: the header no longer takes a seq.
      expect(read.lastSeq).toBe(lines.length - 2)
      expect(read.projection.stats.events).toBe(lines.length - 1)
      expect(read.header).toMatchObject({
        version: 4,
        id: 'old',
        createdAt: lines[0]!['time'],
        migratedFrom: { file: 'session.jsonl', version: 0, lastSeq: lines.length - 1 },
      })
      expect(read.projection.nextSeq).toBe(lines.length - 1)
      expect(read.pendingToolCalls.length).toBe(fixture.startsWith('crash') ? 1 : 0)
      const events = await collect(store.readEvents('old'))
      expect(events.map((event) => event.seq)).toEqual(lines.slice(1).map((_line, index) => index))
      expect(events.map((event) => event.type)).toEqual(lines.slice(1).map((line) => line['type']))
      const middle = await collect(store.readEvents('old', { fromSeq: 2, toSeq: 4 }))
      expect(middle.map((event) => event.seq)).toEqual([2, 3, 4])
      expect(snapshot(directory)).toEqual(before)
    },
  )

  it('V3: remaps sourceEventSeqs so a tool result still cites its tool call', async () => {
    placeV0('old', 'normal-tool-calls.jsonl')
    const events = await collect(store.readEvents('old'))
    const bySeq = new Map(events.map((event) => [event.seq, event]))
    const results = events.filter((event) => event.type === 'tool/result')
    expect(results.length).toBeGreaterThan(0)
    for (const result of results) {
      const cited = bySeq.get(result.sourceEventSeqs![0]!)
      expect(cited?.type).toBe('tool/call')
      expect((cited as SessionEvent<'tool/call'>).data.callId).toBe(
        (result as SessionEvent<'tool/result'>).data.message.tool_call_id,
      )
    }
  })

  it('reports a torn v0 tail without touching it, and migrates the good prefix', async () => {
    const { directory, v0 } = placeV0('torn', 'normal-tool-calls.jsonl')
    appendFileSync(v0, '{"seq":22,"time":"2025-0')
    const before = snapshot(directory)
    const read = await store.openReader('torn')
    expect(read.tornTail).toMatchObject({ reason: 'unterminated' })
    expect(read.lastSeq).toBe(v0Lines('normal-tool-calls.jsonl').length - 2)
    expect(snapshot(directory)).toEqual(before)
  })
})

describe('a v0 session opened for write', () => {
  it('a write open migrates first (FORMAT.md 14.3): session.v4.jsonl is published and written, session.jsonl stays byte-identical', async () => {
    const { directory, v0 } = placeV0('crash', 'crash-dangling-tool-call.jsonl')
    const before = fileIdentity(v0)
    expect(namesIn(directory)).toEqual(['session.jsonl'])
    const writer = await store.openWriter('crash')
    expect(await currentFile('crash')).toBe('crash/session.v4.jsonl')
    expect(writer.header.migratedFrom).toMatchObject({ file: 'session.jsonl', version: 0 })
    await writer.close()
    expect(fileIdentity(v0)).toEqual(before)
    expect(namesIn(directory)).toContain('session.v4.jsonl')
  })

  it('V3: after migrate, the write open is on session.v4.jsonl with the repair of the dangling call; v0 stays byte-identical; reopening adds nothing', async () => {
    const { directory, v0 } = placeV0('crash', 'crash-dangling-tool-call.jsonl')
    const before = fileIdentity(v0)
    const lines = v0Lines('crash-dangling-tool-call.jsonl')
    expect((await migrate('crash')).changed).toBe(true)
    const writer = await store.openWriter('crash')
    expect(await currentFile('crash')).toBe('crash/session.v4.jsonl')
    expect(writer.header.migratedFrom).toMatchObject({
      file: 'session.jsonl',
      version: 0,
      sha256: before.sha256,
      bytes: before.size,
      lastSeq: lines.length - 1,
    })
    // The placeholder result for the dangling call, then turn/end{interrupted}: in v4 only.
    expect(writer.recovery.repairs).toHaveLength(2)
    const appended = writer.append({ type: 'turn/start', data: { turn: 99 } })
    expect(appended.seq).toBe(lines.length - 1 + 2)
    writer.append({ type: 'turn/end', data: { turn: 99, reason: 'completed' } })
    await writer.close()
    expect(fileIdentity(v0)).toEqual(before)
    expect(logs(directory)).toEqual(['session.jsonl', 'session.v4.jsonl'])
    const v4 = statSync(join(directory, 'session.v4.jsonl'))
    expect(v4.nlink).toBe(1)
    expect(v4.mode & 0o777).toBe(0o600)
    const v4Lines = readFileSync(join(directory, 'session.v4.jsonl'), 'utf8').trimEnd().split('\n')
    expect(v4Lines).toHaveLength(1 + (lines.length - 1) + 2 + 2)
    expect(JSON.parse(v4Lines.at(-4)!)).toMatchObject({ type: 'tool/result', data: { isError: true } })
    expect(JSON.parse(v4Lines.at(-3)!)).toMatchObject({ type: 'turn/end', data: { reason: 'interrupted' } })

    const again = await store.openWriter('crash')
    expect(again.recovery.repairs).toHaveLength(0)
    expect(again.projection.nextSeq).toBe(appended.seq + 2)
    await again.close()
    expect(readFileSync(join(directory, 'session.v4.jsonl'), 'utf8').trimEnd().split('\n')).toEqual(v4Lines)
    expect(fileIdentity(v0)).toEqual(before)
  })

  it('M1/M2: a temp file a crashed migration left is removed by the next lock holder (migrate), and the migration runs', async () => {
    const { directory } = placeV0('left', 'normal-tool-calls.jsonl')
    writeFileSync(join(directory, '.tmp-migrate-0123456789abcdef'), 'half a migrated file', { mode: 0o600 })
    expect((await migrate('left')).changed).toBe(true)
    expect(namesIn(directory).filter((name) => name.startsWith('.tmp-'))).toEqual([])
    expect(logs(directory)).toEqual(['session.jsonl', 'session.v4.jsonl'])
  })
})

describe('capabilities.migrate.migrate', () => {
  it('dry run migrates in memory, reports what would be written, and writes nothing', async () => {
    const { directory } = placeV0('dry', 'compaction.jsonl')
    const before = snapshot(directory)
    const lines = v0Lines('compaction.jsonl')
    const phases = new Set<string>()
    const result = await migrate('dry', {
      dryRun: true,
      onProgress: (progress) => void phases.add(progress.phase),
    })
    expect(result.changed).toBe(false)
    const report = result.details as { header?: { migratedFrom?: { version?: number } } }
    expect(report).toMatchObject({
      id: 'dry',
      dryRun: true,
      outcome: 'dry-run',
      from: 'dry/session.jsonl',
      fromVersion: 0,
      to: 'dry/session.v4.jsonl',
      toVersion: 4,
      events: lines.length - 1,
      lastSeq: lines.length - 2,
      bytesWritten: 0,
      sha256: null,
      sourceTornTail: null,
    })
    expect(report.header?.migratedFrom?.version).toBe(0)
    expect([...phases]).toEqual(['scan', 'migrate'])
    expect(snapshot(directory)).toEqual(before)
  })

  it('V3: publishes the new generation under the writer lock and releases it; a rerun is up to date', async () => {
    const { directory, v0 } = placeV0('real', 'replace-tool-output.jsonl')
    const before = fileIdentity(v0)
    const phases: string[] = []
    const calls: BackendProgress[] = []
    const result = await migrate('real', {
      onProgress: (progress) => {
        calls.push(progress)
        if (phases.at(-1) !== progress.phase) phases.push(progress.phase)
      },
    })
    expect(result.changed).toBe(true)
    const v4Path = join(directory, 'session.v4.jsonl')
    expect(result.details).toMatchObject({
      dryRun: false,
      outcome: 'migrated',
      from: 'real/session.jsonl',
      to: 'real/session.v4.jsonl',
      bytesWritten: statSync(v4Path).size,
      sha256: fileIdentity(v4Path).sha256,
    })
    expect(phases).toEqual(['scan', 'migrate', 'verify', 'publish'])
    // Progress through the port counts events: every v0 event after the header, in both phases.
    const events = v0Lines('replace-tool-output.jsonl').length - 1
    expect(calls.filter((call) => call.phase === 'verify').at(-1)).toMatchObject({
      done: events,
      total: events,
    })
    expect(calls.filter((call) => call.phase === 'migrate').at(-1)).toMatchObject({
      done: events,
      total: events,
    })
    expect(namesIn(directory)).toEqual(['session.jsonl', 'session.v4.jsonl'])
    expect(fileIdentity(v0)).toEqual(before)
    const v4Before = fileIdentity(v4Path)
    expect(await migrate('real')).toMatchObject({
      changed: false,
      details: { outcome: 'up-to-date', from: null, events: null },
    })
    expect(await migrate('real', { dryRun: true })).toMatchObject({
      changed: false,
      details: { outcome: 'up-to-date' },
    })
    expect(fileIdentity(v4Path)).toEqual(v4Before)
    // The lock was released: a writer opens at once.
    const writer = await store.openWriter('real')
    expect(writer.recovery.repairs).toHaveLength(0)
    await writer.close()
  })

  it('is up to date on a session created in the current format, writing nothing', async () => {
    await writeCoreSession(store, 'fresh', turnInputs(1))
    const directory = join(temp.path, 'fresh')
    const before = snapshot(directory)
    expect((await migrate('fresh')).details).toMatchObject({
      outcome: 'up-to-date',
      from: null,
      fromVersion: null,
      to: 'fresh/session.v4.jsonl',
      bytesWritten: 0,
      header: { id: 'fresh', version: 4 },
    })
    expect(snapshot(directory)).toEqual(before)
  })

  it('V6: refuses a v0 session with an unknown event type without ignorable, writing nothing', async () => {
    const { directory, v0 } = placeV0('unknown', 'normal-tool-calls.jsonl')
    const seq = v0Lines('normal-tool-calls.jsonl').length
    appendFileSync(
      v0,
      `${JSON.stringify({ seq, time: '2025-03-14T10:00:00.000Z', type: 'future/thing', data: {} })}\n`,
    )
    const before = snapshot(directory)
    for (const attempt of [() => migrate('unknown', { dryRun: true }), () => store.openReader('unknown')]) {
      const error = await failure(attempt())
      expect(error).toMatchObject({ code: 'UNKNOWN_EVENT_TYPE', location: { file: 'unknown/session.jsonl' } })
      expect(error.seq).toBe(seq)
    }
    expect(snapshot(directory)).toEqual(before)
    // The write path takes the writer lock, then refuses before any temp file: no file is written.
    const error = await failure(migrate('unknown'))
    expect(error).toMatchObject({ code: 'UNKNOWN_EVENT_TYPE', location: { file: 'unknown/session.jsonl' } })
    expect(error.seq).toBe(seq)
    expect(files(directory)).toEqual((before as { files: unknown }).files)
  })
})

describe('generation refusals through the open paths', () => {
  it('I7: events appended to v0 after the migration make openWriter refuse writes with GENERATION_FORK', async () => {
    const { directory, v0 } = placeV0('forked', 'normal-tool-calls.jsonl')
    await migrate('forked')
    const lastSeq = v0Lines('normal-tool-calls.jsonl').length - 1
    appendFileSync(
      v0,
      `${JSON.stringify({ seq: lastSeq + 1, time: '2025-03-14T10:00:00.000Z', type: 'turn/start', data: { turn: 3 } })}\n`,
    )
    const before = files(directory)
    const error = await failure(store.openWriter('forked'))
    expect(error).toMatchObject({ code: 'GENERATION_FORK', location: { file: 'forked/session.jsonl' } })
    expect(error.details).toMatchObject({
      version: 0,
      lastSeq: lastSeq + 1,
      migratedFromLastSeq: lastSeq,
      reason: 'appended',
    })
    // No file written, the lock released (no writer.lock left).
    expect(files(directory)).toEqual(before)
    expect((await failure(store.openReader('forked'))).code).toBe('GENERATION_FORK')
    expect((await failure(migrate('forked'))).code).toBe('GENERATION_FORK')
    expect(files(directory)).toEqual(before)
  })

  it('MIXED_ENCODINGS: openReader, openWriter and list name both files of a plain v0 beside a zstd v4', async () => {
    const { directory } = placeV0('mixed', 'normal-tool-calls.jsonl')
    writeFileSync(join(directory, 'session.v4.jsonl.zstd'), Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), {
      mode: 0o600,
    })
    const before = snapshot(directory)
    for (const attempt of [() => store.openReader('mixed'), () => store.openWriter('mixed')]) {
      const error = await failure(attempt())
      expect(error.code).toBe('MIXED_ENCODINGS')
      expect(error.details['files']).toEqual(['mixed/session.v4.jsonl.zstd', 'mixed/session.jsonl'])
      expect(error.sessionId).toBe('mixed')
    }
    const listed = await store.list()
    expect(listed.problems.map((problem) => [problem.id, problem.error.code])).toEqual([
      ['mixed', 'MIXED_ENCODINGS'],
    ])
    expect(snapshot(directory)).toEqual(before)
  })

  it('GENERATION_VERSION_MISMATCH: a file whose name and header disagree is refused before any lock', async () => {
    await writeCoreSession(store, 'renamed', turnInputs(1))
    const directory = join(temp.path, 'renamed')
    // A v4 log renamed to the v0 name.
    const v4 = readFileSync(join(directory, 'session.v4.jsonl'))
    copyFileSync(join(directory, 'session.v4.jsonl'), join(directory, 'session.jsonl'))
    unlinkSync(join(directory, 'session.v4.jsonl'))
    const before = snapshot(directory)
    for (const attempt of [
      () => store.openReader('renamed'),
      () => store.openWriter('renamed'),
      () => store.verify('renamed'),
      () => migrate('renamed'),
    ]) {
      const error = await failure(attempt())
      expect(error).toMatchObject({
        code: 'GENERATION_VERSION_MISMATCH',
        location: { file: 'renamed/session.jsonl', line: 1 },
      })
      expect(error.details).toMatchObject({ nameVersion: 0, headerVersion: 4 })
    }
    expect(snapshot(directory)).toEqual(before)
    // A v0 file under the v4 name.
    writeFileSync(
      join(directory, 'session.v4.jsonl'),
      readFileSync(new URL('normal-tool-calls.jsonl', FIXTURES)),
    )
    writeFileSync(join(directory, 'session.jsonl'), v4)
    const error = await failure(store.openReader('renamed'))
    expect(error).toMatchObject({
      code: 'GENERATION_VERSION_MISMATCH',
      location: { file: 'renamed/session.v4.jsonl' },
    })
    expect(error.details).toMatchObject({ nameVersion: 4, headerVersion: 0 })
  })

  it('V1: a newer generation (session.v5.jsonl) beside a v4 log is VERSION_TOO_NEW for every path, touching nothing', async () => {
    await writeCoreSession(store, 'future', turnInputs(1))
    const directory = join(temp.path, 'future')
    writeFileSync(
      join(directory, 'session.v5.jsonl'),
      encodeJsonLine(
        JSON.stringify({
          format: 'agent-ledger.session',
          version: 5,
          id: 'future',
          createdAt: '2030-01-01T00:00:00.000Z',
          integrity: 'crc32c',
        }),
      ),
      { mode: 0o600 },
    )
    const before = snapshot(directory)
    for (const attempt of [
      () => store.openReader('future', { allowDamaged: true }),
      () => store.openWriter('future'),
      () => migrate('future'),
      () => collect(store.readEvents('future')),
    ]) {
      const error = await failure(attempt())
      expect(error).toMatchObject({ code: 'VERSION_TOO_NEW', location: { file: 'future/session.v5.jsonl' } })
      expect(error.details).toMatchObject({ found: 5, supportedMax: 4 })
      expect(error.message).toMatch(/upgrade/)
    }
    // The core's verify reports what it cannot read as damage instead of throwing.
    const report = await store.verify('future')
    expect(report.status).toBe('damaged')
    expect(report.damage).toMatchObject({
      code: 'VERSION_TOO_NEW',
      location: { file: 'future/session.v5.jsonl' },
    })
    const listed = await store.list()
    expect(listed.problems.map((problem) => [problem.id, problem.error.code])).toEqual([
      ['future', 'VERSION_TOO_NEW'],
    ])
    expect(snapshot(directory)).toEqual(before)
  })

  it('create refuses an id whose directory holds an older generation (SESSION_EXISTS)', async () => {
    const { directory, v0 } = placeV0('taken', 'normal-tool-calls.jsonl')
    const before = fileIdentity(v0)
    const error = await failure(store.create({ id: 'taken' }))
    expect(error).toMatchObject({ code: 'SESSION_EXISTS', sessionId: 'taken' })
    expect(error.message).toContain('taken/session.jsonl')
    expect(namesIn(directory)).toEqual(['session.jsonl'])
    expect(fileIdentity(v0)).toEqual(before)
  })
})

describe('verify and list of a v0 session', () => {
  it('verify checks session.jsonl through the in-memory migration (v4 numbering), writing nothing', async () => {
    const { directory, v0 } = placeV0('check', 'compaction.jsonl')
    const lines = v0Lines('compaction.jsonl')
    const before = snapshot(directory)
    expect(await store.verify('check')).toMatchObject({
      id: 'check',
      status: 'ok',
      events: lines.length - 1,
      lastSeq: lines.length - 2,
      header: { version: 4, migratedFrom: { file: 'session.jsonl', version: 0 } },
      damage: null,
    })
    expect(snapshot(directory)).toEqual(before)
    appendFileSync(v0, '{"seq":')
    expect(await store.verify('check')).toMatchObject({
      status: 'torn-tail',
      tornTail: { reason: 'unterminated' },
    })
    const text = readFileSync(v0, 'utf8').split('\n')
    text[3] = text[3]!.replace('"seq":3', '"seq":4')
    writeFileSync(v0, text.join('\n'))
    const damaged = await store.verify('check')
    expect(damaged.status).toBe('damaged')
    expect(damaged.damage).toMatchObject({
      code: 'SEQ_GAP',
      location: { file: 'check/session.jsonl', line: 4 },
    })
    expect(namesIn(directory)).toEqual(['session.jsonl'])
  })

  it('list shows a v0 session with its migrated header, writing nothing; once migrated it lists with the header its migration wrote', async () => {
    const { directory } = placeV0('listed-v0', 'normal-tool-calls.jsonl')
    await writeCoreSession(store, 'listed-v4', turnInputs(1))
    const lines = v0Lines('normal-tool-calls.jsonl')
    const header = lines[0]!
    const listed = await store.list()
    expect(listed.sessions.map((session) => session.id).sort()).toEqual(['listed-v0', 'listed-v4'])
    expect(listed.problems).toEqual([])
    expect(listed.sessions.find((session) => session.id === 'listed-v0')!.header).toMatchObject({
      version: 4,
      id: 'listed-v0',
      migratedFrom: { file: 'session.jsonl', version: 0 },
    })
    expect(namesIn(directory)).toEqual(['session.jsonl'])
    await migrate('listed-v0')
    const again = await store.list()
    expect(again.problems).toEqual([])
    const described = await Promise.all(
      ['listed-v0', 'listed-v4'].map(async (id) => {
        const found = await store.backend.capabilities.files.sessionFiles(id)
        return [id, found.version, found.current]
      }),
    )
    expect(described).toEqual([
      ['listed-v0', 4, 'listed-v0/session.v4.jsonl'],
      ['listed-v4', 4, 'listed-v4/session.v4.jsonl'],
    ])
    const v0 = again.sessions.find((session) => session.id === 'listed-v0')!
    expect(v0.header).toMatchObject({
      version: 4,
      id: 'listed-v0',
      createdAt: header['time'],
      cwd: (header['data'] as Record<string, unknown>)['cwd'],
      migratedFrom: { file: 'session.jsonl', version: 0 },
    })
    expect(warnings).toEqual([])
  })
})
