import { createHash } from 'node:crypto'
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { LoggedEvent } from '@agent-ledger/session-events'
import { afterAll, describe, expect, it } from 'vitest'

import { testTime } from '../../../tooling/test-time.ts'
import { nodeFsOps } from '../src/fs-ops.ts'
import { listGenerations, pickCurrentGeneration } from '../src/generations.ts'
import { JsonlStoreError } from '../src/jsonl-store-error.ts'
import { detectGenerationFork } from '../src/migration/generation-fork.ts'
import { migrateSession } from '../src/migration/migrate-session.ts'
import type { MigrationProgress } from '../src/migration/migration-context.ts'
import { readFileChunks, scanLog } from '../src/read-log.ts'
import { coreEventRegistry } from '@agent-ledger/session-events'
import { spawnTsChild } from './support/children.ts'
import type { Child } from './support/children.ts'
import { createFaultFs } from './support/fault-fs.ts'
import { largeV0SessionLines } from './fixtures/v0/generate-v0-session.ts'
import { coreTestStore } from './support/sessions.ts'

const scratch = mkdtempSync(join(tmpdir(), 'agent-ledger-migration-'))
const children: Child[] = []
afterAll(async () => {
  for (const child of children) {
    child.send(JSON.stringify({ cmd: 'exit' }))
    child.process.kill('SIGKILL')
    await child.exited
  }
  rmSync(scratch, { recursive: true, force: true })
})
let counter = 0

const FIXTURES = new URL('./fixtures/v0/', import.meta.url)

/** A fresh session directory `<scratch>/<root>/<id>` holding a v0 fixture (or text). */
function session(source: { fixture?: string; text?: string }): {
  root: string
  id: string
  directory: string
  v0: string
} {
  counter += 1
  const root = join(scratch, `root${counter}`)
  const id = `session-${counter}`
  const directory = join(root, id)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const v0 = join(directory, 'session.jsonl')
  if (source.fixture !== undefined) copyFileSync(new URL(source.fixture, FIXTURES), v0)
  else writeFileSync(v0, source.text ?? '', { mode: 0o600 })
  return { root, id, directory, v0 }
}

interface Identity {
  sha256: string
  size: number
  ino: number
  mtimeMs: number
  mode: number
  nlink: number
}

function identity(path: string): Identity {
  const stats = statSync(path)
  return {
    sha256: createHash('sha256').update(readFileSync(path)).digest('hex'),
    size: stats.size,
    ino: stats.ino,
    mtimeMs: stats.mtimeMs,
    mode: stats.mode,
    nlink: stats.nlink,
  }
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

async function v4Events(
  directory: string,
): Promise<{ events: LoggedEvent[]; damage: unknown; tornTail: unknown; header: unknown }> {
  const handle = await nodeFsOps.open(join(directory, 'session.v4.jsonl'), 0)
  try {
    const events: LoggedEvent[] = []
    const outcome = await scanLog(readFileChunks(handle, { chunkBytes: 65536 }), {
      limits: { maxLineBytes: 1 << 26, maxDepth: 256 },
      registry: coreEventRegistry,
      file: 'x',
      onEvent: (event) => void events.push(event),
    })
    return { events, damage: outcome.damage, tornTail: outcome.tornTail, header: outcome.header }
  } finally {
    await handle.close()
  }
}

describe('migrateSession (write mode)', () => {
  it('V3: publishes session.v4.jsonl, leaves the old file byte-identical (sha256, size, inode, mtime, mode), and a rerun is a no-op', async () => {
    const lines = [...largeV0SessionLines({ events: 1000, seed: 3 })]
    const text = `${lines.join('\n')}\n`
    const ignorable = lines.filter((line) => line.includes('"ignorable":true')).length
    expect(ignorable).toBeGreaterThan(0)
    const { root, id, directory, v0 } = session({ text })
    const before = identity(v0)
    const phases = new Set<string>()
    const result = await migrateSession({
      mode: 'write',
      directory,
      onProgress: (progress: MigrationProgress) => void phases.add(progress.phase),
    })
    expect(result.outcome).toBe('published')
    expect(identity(v0)).toEqual(before)
    expect([...phases]).toEqual(['scan', 'migrate', 'verify', 'publish'])
    const path = join(directory, 'session.v4.jsonl')
    expect(statSync(path).nlink).toBe(1)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(readdirSync(directory).sort()).toEqual(['session.jsonl', 'session.v4.jsonl'])
    const { events, damage, tornTail, header } = await v4Events(directory)
    expect(damage).toBeNull()
    expect(tornTail).toBeNull()
    expect(header).toMatchObject({
      version: 4,
      id,
      migratedFrom: {
        file: 'session.jsonl',
        version: 0,
        sha256: before.sha256,
        lastSeq: lines.length - 1,
        bytes: before.size,
      },
    })
    expect(events.map((event) => event.seq)).toEqual(lines.slice(1).map((_, index) => index))
    const v0Events = lines
      .slice(1)
      .map((line) => JSON.parse(line) as { seq: number; type: string; data: unknown })
    for (const [index, event] of events.entries()) {
      expect(event.type).toBe(v0Events[index]!.type)
      expect(event.seq).toBe(v0Events[index]!.seq - 1)
      if (!event.type.startsWith('compaction/')) expect(event.data).toEqual(v0Events[index]!.data)
    }
    expect(events.filter((event) => event.ignorable === true)).toHaveLength(ignorable)
    expect(result).toMatchObject({
      lastSeq: lines.length - 2,
      size: statSync(path).size,
      source: { ignoredUnknown: ignorable },
    })

    // Appends go to v4; reopening picks v4; the v0 file stays untouched.
    const { store } = coreTestStore(root)
    const writer = await store.openWriter(id)
    const appended = writer.append({
      type: 'user/message',
      data: { message: { role: 'user', content: 'after the migration' } },
    })
    await writer.flush()
    await writer.close()
    expect(appended.seq).toBe(lines.length - 1)
    expect(pickCurrentGeneration(await listGenerations(nodeFsOps, directory))?.current.file).toBe(
      'session.v4.jsonl',
    )
    const afterAppend = identity(path)
    const again = await migrateSession({ mode: 'write', directory })
    expect(again.outcome).toBe('up-to-date')
    expect(identity(path)).toEqual(afterAppend)
    expect(identity(v0)).toEqual(before)
    expect(await detectGenerationFork({ directory, header: again.header })).toEqual({ status: 'intact' })
    const explicit = await migrateSession({
      mode: 'write',
      directory,
      source: { file: 'session.jsonl', version: 0, encoding: 'plain' },
    })
    expect(explicit.outcome).toBe('up-to-date')
  })

  it('V3: the migrated fixtures open for write through the store; the dangling call is repaired in v4 only', async () => {
    for (const fixture of [
      'normal-tool-calls.jsonl',
      'replace-tool-output.jsonl',
      'crash-dangling-tool-call.jsonl',
      'compaction.jsonl',
    ]) {
      const { root, id, directory, v0 } = session({ fixture })
      const before = identity(v0)
      await migrateSession({ mode: 'write', directory })
      const writer = await coreTestStore(root).store.openWriter(id)
      const repairs = writer.recovery.repairs.length
      const messages = writer.deriveMessages()
      await writer.close()
      expect(repairs).toBe(fixture.startsWith('crash') ? 2 : 0)
      expect(messages.length).toBeGreaterThan(1)
      expect(identity(v0)).toEqual(before)
    }
  })

  it('a read-mode migration started once the v4 generation is current reads that generation as it is (the in-memory read of a v0 session racing the write open that migrates it)', async () => {
    const lines = [...largeV0SessionLines({ events: 40, seed: 5 })]
    const { directory } = session({ text: `${lines.join('\n')}\n` })
    await migrateSession({ mode: 'write', directory })
    const v4 = readFileSync(join(directory, 'session.v4.jsonl'), 'utf8').split('\n').slice(0, -1)
    const read = await migrateSession({ mode: 'read', directory })
    expect(read.source.generation).toMatchObject({ file: 'session.v4.jsonl', version: 4 })
    expect(read.headerLine).toBe(v4[0])
    const batches: string[] = []
    for await (const batch of read.lines) batches.push(...batch)
    expect(batches).toEqual(v4.slice(1))
    expect(read.lastSeq).toBe(v4.length - 2)
  })

  it('I7: reports events appended to the old generation after the migration as GENERATION_FORK, never merging them', async () => {
    const { directory, v0 } = session({ fixture: 'normal-tool-calls.jsonl' })
    const result = await migrateSession({ mode: 'write', directory })
    const lastSeq = result.source!.migratedFrom.lastSeq
    appendFileSync(
      v0,
      `${JSON.stringify({ seq: lastSeq + 1, time: '2025-03-14T10:00:00.000Z', type: 'turn/start', data: { turn: 3 } })}\n`,
    )
    const check = await detectGenerationFork({ directory, header: result.header })
    expect(check.status).toBe('forked')
    const error = (check as { error: JsonlStoreError }).error
    expect(error.code).toBe('GENERATION_FORK')
    expect(error.file).toBe(`${directory.split('/').pop()}/session.jsonl`)
    expect(error.details).toMatchObject({
      version: 0,
      lastSeq: lastSeq + 1,
      migratedFromLastSeq: lastSeq,
      reason: 'appended',
    })
    const rerun = await failure(
      migrateSession({
        mode: 'write',
        directory,
        source: { file: 'session.jsonl', version: 0, encoding: 'plain' },
      }),
    )
    expect(rerun.code).toBe('GENERATION_FORK')
    const v4 = await v4Events(directory)
    expect(v4.events).toHaveLength(lastSeq)
  })

  it('I7: tells a rewritten, a truncated and a deleted old generation apart; check "size" trusts an unchanged size', async () => {
    const { directory, v0 } = session({ fixture: 'compaction.jsonl' })
    const { header } = await migrateSession({ mode: 'write', directory })
    const original = readFileSync(v0)
    const rewritten = Buffer.from(original)
    rewritten[40] = rewritten[40] === 0x61 ? 0x62 : 0x61
    writeFileSync(v0, rewritten)
    expect(await detectGenerationFork({ directory, header })).toMatchObject({
      status: 'forked',
      error: { details: { reason: 'rewritten' } },
    })
    expect(await detectGenerationFork({ directory, header, check: 'size' })).toEqual({ status: 'intact' })
    writeFileSync(v0, original)
    truncateSync(v0, original.length - 100)
    expect(await detectGenerationFork({ directory, header })).toMatchObject({
      status: 'forked',
      error: { details: { reason: 'truncated' } },
    })
    unlinkSync(v0)
    expect(await detectGenerationFork({ directory, header })).toMatchObject({ status: 'missing' })
    expect(await detectGenerationFork({ directory, header: { ...header, migratedFrom: undefined } })).toEqual(
      { status: 'not-migrated' },
    )
  })

  it('refuses to migrate into a target that was not migrated from the source (MIGRATION_CONFLICT)', async () => {
    const { root, id, directory, v0 } = session({ fixture: 'normal-tool-calls.jsonl' })
    const v0Bytes = readFileSync(v0)
    unlinkSync(v0)
    const { store } = coreTestStore(root)
    await (await store.create({ id })).close()
    writeFileSync(v0, v0Bytes)
    const error = await failure(
      migrateSession({
        mode: 'write',
        directory,
        source: { file: 'session.jsonl', version: 0, encoding: 'plain' },
      }),
    )
    expect(error).toMatchObject({
      code: 'MIGRATION_CONFLICT',
      details: { reason: 'target-not-migrated-from-source' },
    })
  })

  it.each(['EXDEV', 'EPERM', 'ENOSPC'])(
    'M6: a link failing with %s leaves v0 current and untouched, removes the temp, and a rerun succeeds',
    async (errno) => {
      const { directory, v0 } = session({ fixture: 'compaction.jsonl' })
      const before = identity(v0)
      const fs = createFaultFs()
      fs.addFault({ op: 'link', errno })
      const error = await failure(migrateSession({ mode: 'write', directory, fs }))
      // A full disk is DISK_FULL wherever it happens (W12), with the publish's details.
      const code = errno === 'ENOSPC' ? 'DISK_FULL' : 'MIGRATION_FAILED'
      expect(error).toMatchObject({ code, details: { step: 'link', cause: errno } })
      expect(fs.count('rename')).toBe(0)
      expect(readdirSync(directory)).toEqual(['session.jsonl'])
      expect(identity(v0)).toEqual(before)
      expect(pickCurrentGeneration(await listGenerations(nodeFsOps, directory))?.current.file).toBe(
        'session.jsonl',
      )
      expect((await migrateSession({ mode: 'write', directory })).outcome).toBe('published')
    },
  )

  it('M6: a directory fsync EIO after the link reports poisoned and leaves v0 current', async () => {
    const { directory, v0 } = session({ fixture: 'normal-tool-calls.jsonl' })
    const before = identity(v0)
    const fs = createFaultFs()
    fs.addFault({ op: 'fsyncDirectory', errno: 'EIO' })
    const error = await failure(migrateSession({ mode: 'write', directory, fs }))
    expect(error).toMatchObject({
      code: 'MIGRATION_FAILED',
      details: { step: 'fsync-dir', cause: 'EIO', poisoned: true },
    })
    expect(readdirSync(directory)).toEqual(['session.jsonl'])
    expect(identity(v0)).toEqual(before)
  })

  it('fails with check-source when the source is appended to while it is being migrated, publishing nothing', async () => {
    const { directory, v0 } = session({ fixture: 'normal-tool-calls.jsonl' })
    let appended = false
    const error = await failure(
      migrateSession({
        mode: 'write',
        directory,
        onProgress: (progress) => {
          if (progress.phase === 'scan' && progress.eventsTotal !== null && !appended) {
            appended = true
            appendFileSync(
              v0,
              `${JSON.stringify({ seq: 21, time: '2025-03-14T10:00:00.000Z', type: 'turn/start', data: { turn: 3 } })}\n`,
            )
          }
        },
      }),
    )
    expect(error).toMatchObject({
      code: 'MIGRATION_FAILED',
      details: { step: 'check-source', cause: 'SOURCE_CHANGED' },
    })
    expect(readdirSync(directory)).toEqual(['session.jsonl'])
  })

  it('refuses a zstd source and a directory with mixed encodings before reading anything', async () => {
    const { directory } = session({ fixture: 'normal-tool-calls.jsonl' })
    writeFileSync(join(directory, 'session.v4.jsonl.zstd'), 'x')
    expect(await failure(migrateSession({ mode: 'write', directory }))).toMatchObject({
      code: 'MIXED_ENCODINGS',
    })
    const zstd = session({ text: '' })
    unlinkSync(zstd.v0)
    writeFileSync(join(zstd.directory, 'session.jsonl.zstd'), 'x')
    expect(await failure(migrateSession({ mode: 'write', directory: zstd.directory }))).toMatchObject({
      code: 'NO_MIGRATION_PATH',
      details: { reason: 'zstd-source' },
    })
  })

  it('refuses an invalid session id before any file-system call, and a missing session with SESSION_NOT_FOUND', async () => {
    const fs = createFaultFs()
    expect(
      await failure(migrateSession({ mode: 'write', directory: join(scratch, '..'), sessionId: '../x', fs })),
    ).toMatchObject({ code: 'INVALID_SESSION_ID' })
    expect(fs.calls).toHaveLength(0)
    const empty = join(scratch, 'empty-session')
    mkdirSync(empty)
    expect(await failure(migrateSession({ mode: 'read', directory: empty }))).toMatchObject({
      code: 'SESSION_NOT_FOUND',
    })
  })
})

describe('V4: two processes migrate the same session at once', () => {
  async function race(options: { lock: boolean; rounds: number }): Promise<void> {
    const pair = [spawnTsChild('migrate-child.ts'), spawnTsChild('migrate-child.ts')]
    children.push(...pair)
    const outcomes = new Map<string, number>()
    for (let round = 0; round < options.rounds; round += 1) {
      const { directory, v0 } = session({ fixture: 'compaction.jsonl' })
      const before = identity(v0)
      const barrier = join(directory, '..', `barrier-${round}`)
      const holdBarrier = join(directory, '..', `hold-${round}`)
      const from = pair.map((child) => child.lines.length)
      // Without the lock, both are held after verifying their staged file, so both reach link(): one gets EEXIST.
      const hold = options.lock ? {} : { holdAt: 'verified', holdBarrier }
      for (const child of pair)
        child.send(JSON.stringify({ cmd: 'migrate', dir: directory, barrier, lock: options.lock, ...hold }))
      await Promise.all(
        pair.map((child, index) =>
          child.waitForLine((line) => line.includes('"ready"'), { from: from[index]! }),
        ),
      )
      writeFileSync(barrier, '')
      if (!options.lock) {
        await Promise.all(
          pair.map((child, index) =>
            child.waitForLine((line) => line.includes('"holding"'), { from: from[index]! }),
          ),
        )
        writeFileSync(holdBarrier, '')
      }
      const results = await Promise.all(
        pair.map((child, index) =>
          child.waitForLine((line) => line.includes('"migrated"') || line.includes('"error"'), {
            from: from[index]!,
          }),
        ),
      )
      const parsed = results.map(
        (line) => JSON.parse(line) as { event: string; outcome?: string; code?: string; sha256?: string },
      )
      for (const result of parsed) {
        // With the lock, the loser may also give up waiting (SESSION_LOCKED), which V4 allows.
        if (options.lock && result.event === 'error') expect(result.code).toBe('SESSION_LOCKED')
        else expect(result.event, JSON.stringify(result)).toBe('migrated')
        const key = result.outcome ?? result.code!
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1)
      }
      expect(parsed.filter((result) => result.outcome === 'published')).toHaveLength(1)
      // After both finished (lock released), the directory holds the two generations and nothing else.
      await Promise.all(
        pair.map((child, index) =>
          child.waitForLine((line) => line.includes('"done"'), { from: from[index]! }),
        ),
      )
      expect(readdirSync(directory).sort()).toEqual(['session.jsonl', 'session.v4.jsonl'])
      expect(identity(v0)).toEqual(before)
      const winner = parsed.find((result) => result.outcome === 'published')!
      expect(identity(join(directory, 'session.v4.jsonl')).sha256).toBe(winner.sha256)
      const loser = parsed.find((result) => result !== winner)!
      if (loser.outcome === 'already-published') expect(loser.sha256).toBe(winner.sha256)
      const scanned = await v4Events(directory)
      expect(scanned.damage).toBeNull()
    }
    expect(outcomes.get('published')).toBe(options.rounds)
    if (options.lock) expect(outcomes.get('already-published')).toBeUndefined()
    else expect(outcomes.get('already-published')).toBe(options.rounds)
  }

  it(
    'V4 (lock bypassed): the link EEXIST loser accepts the winner identical bytes; exactly one v4, v0 untouched, no temp left (20 rounds)',
    async () => {
      await race({ lock: false, rounds: 20 })
    },
    testTime(120_000),
  )

  it(
    'V4 (with the writer lock): one migrates, the other waits and finds the session up to date (3 rounds)',
    async () => {
      await race({ lock: true, rounds: 3 })
    },
    testTime(120_000),
  )
})

describe('migration of a generated long session', () => {
  it('migrates 2,000 events with compactions and ignorable events, and the store opens the result', async () => {
    const lines = [...largeV0SessionLines({ events: 2000, seed: 9 })]
    expect(lines.some((line) => line.includes('"compaction/start"'))).toBe(true)
    const { root, id, directory } = session({ text: `${lines.join('\n')}\n` })
    const result = await migrateSession({ mode: 'write', directory, limits: { readChunkBytes: 4096 } })
    expect(result.lastSeq).toBe(lines.length - 2)
    const reader = await coreTestStore(root).store.openReader(id)
    expect(reader.lastSeq).toBe(lines.length - 2)
    expect(reader.projection.stats.ignoredUnknown).toBe(
      lines.filter((line) => line.includes('"ignorable":true')).length,
    )
    expect(existsSync(join(directory, 'session.jsonl'))).toBe(true)
  })
})
