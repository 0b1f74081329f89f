import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type { StoredLine, WriterLease } from '@agent-ledger/session-store'
import pg from 'pg'
import { expect, it } from 'vitest'

import { testTime, waitUntil } from '../../../tooling/test-time.ts'
import { APPEND_CHANNEL, openPostgresBackend, PostgresBackend, PostgresFailureReason } from '../src/index.ts'
import {
  crcOf,
  createRequest,
  describeOnServer,
  eventLine,
  eventLines,
  sessionId,
  sqlOnce,
  storedRows,
  useDatabase,
} from './support/pg.ts'

async function collect(iterable: AsyncIterable<StoredLine>): Promise<StoredLine[]> {
  const out: StoredLine[] = []
  for await (const line of iterable) out.push(line)
  return out
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (SessionStoreError.is(error)) return error.code
    throw error
  }
  return 'resolved'
}

describeOnServer('PostgreSQL backend', () => {
  let url: string
  let backend: PostgresBackend

  useDatabase((database) => ({ url, backend } = database), { readPageSize: 7 })

  async function openWriter(id: string, owner = 'writer-a', leaseMs = 60_000): Promise<WriterLease> {
    return (await backend.acquire(id, { owner, leaseMs })).lease
  }

  it('create publishes the header and seed lines byte for byte; a second create is SESSION_EXISTS and changes nothing', async () => {
    const id = sessionId()
    const request = createRequest(id, { seedCount: 3, cwd: '/project' })
    await backend.create(request)
    expect((await backend.readHeader(id)).line).toBe(request.headerLine)
    expect((await collect(backend.read(id, { fromSeq: 0 }))).map((l) => l.line)).toEqual(request.lines)
    const head = await backend.head(id)
    expect(head).toMatchObject({
      nextSeq: 3,
      lastCrc: request.lastCrc,
      lastBatchId: null,
      epoch: 0,
      owner: null,
    })
    const other = createRequest(id, { seedCount: 1 })
    expect(
      await codeOf(backend.create({ ...other, headerLine: other.headerLine.replace('2026', '2027') })),
    ).toBe(SessionStoreErrorCode.SESSION_EXISTS)
    expect((await backend.readHeader(id)).line).toBe(request.headerLine)
    expect(await storedRows(url, id)).toHaveLength(3)
  })

  it('stores lines as exact text: escapes, \\u0000, unicode and key order survive', async () => {
    const id = sessionId()
    await backend.create(createRequest(id))
    const lease = await openWriter(id)
    const odd = [
      eventLine(0, 'nul \u0000 and "quotes" and \\ backslash'),
      '{"z":1,"a":2,"seq":1,"text":"\\u0000 kept escaped, é, 😀, \u2028","crc":"0badf00d"}',
    ]
    await backend.append(lease, { expectedSeq: 0, lines: odd, lastCrc: '0badf00d', batchId: 'b1' })
    expect((await collect(backend.read(id, { fromSeq: 0 }))).map((l) => l.line)).toEqual(odd)
  })

  it('acquire bumps the epoch; a live lease of another owner is SESSION_LOCKED naming the holder; takeover fences the old lease', async () => {
    const id = sessionId()
    await backend.create(createRequest(id))
    const first = await backend.acquire(id, { owner: 'host-a', leaseMs: 60_000 })
    expect(first.lease.epoch).toBe(1)
    expect(first.head).toMatchObject({ nextSeq: 0, epoch: 1, owner: 'host-a' })
    const locked = await backend
      .acquire(id, { owner: 'host-b', leaseMs: 60_000 })
      .catch((error: unknown) => error)
    expect(SessionStoreError.is(locked, SessionStoreErrorCode.SESSION_LOCKED)).toBe(true)
    expect((locked as SessionStoreError).details).toMatchObject({ holder: 'host-a' })
    expect((locked as SessionStoreError).message).toContain('host-a')

    const taken = await backend.acquire(id, { owner: 'host-b', leaseMs: 60_000, takeover: true })
    expect(taken.lease.epoch).toBe(2)
    const fenced = await backend
      .append(first.lease, { expectedSeq: 0, lines: eventLines(0, 2), lastCrc: 'aaaaaaaa', batchId: 'old' })
      .catch((error: unknown) => error)
    expect(SessionStoreError.is(fenced, SessionStoreErrorCode.FENCED)).toBe(true)
    expect((fenced as SessionStoreError).details).toMatchObject({ expected: 1, found: 2 })
    expect(await storedRows(url, id)).toEqual([])
    expect(await codeOf(backend.renew(first.lease))).toBe(SessionStoreErrorCode.FENCED)
  })

  it('append is dense and all or nothing; a wrong expectedSeq is CONFLICT with nothing written', async () => {
    const id = sessionId()
    await backend.create(createRequest(id, { seedCount: 2 }))
    const lease = await openWriter(id)
    const batch = eventLines(2, 5)
    await backend.append(lease, {
      expectedSeq: 2,
      lines: batch,
      lastCrc: crcOf(batch[4] as string),
      batchId: 'w:1:1',
    })
    expect(await backend.head(id)).toMatchObject({
      nextSeq: 7,
      lastCrc: crcOf(batch[4] as string),
      lastBatchId: 'w:1:1',
    })
    const conflict = await backend
      .append(lease, { expectedSeq: 5, lines: eventLines(5, 2), lastCrc: 'bbbbbbbb', batchId: 'w:1:2' })
      .catch((error: unknown) => error)
    expect(SessionStoreError.is(conflict, SessionStoreErrorCode.CONFLICT)).toBe(true)
    expect((conflict as SessionStoreError).details).toMatchObject({ expected: 5, found: 7 })
    const rows = await storedRows(url, id)
    expect(rows.map((row) => row.seq)).toEqual([0, 1, 2, 3, 4, 5, 6])
    expect(rows.slice(2).every((row) => row.epoch === lease.epoch)).toBe(true)
    expect(
      await codeOf(backend.append(lease, { expectedSeq: 7, lines: [], lastCrc: 'x', batchId: 'e' })),
    ).toBe(SessionStoreErrorCode.INVALID_OPTION)
    // The lines travel as one text split on newlines by the server: a line holding one is
    // refused before anything is sent (it would otherwise become two rows).
    const [first, second] = eventLines(7, 2) as [string, string]
    const withNewline = `${first.slice(0, 10)}\n${first.slice(10)}`
    expect(
      await codeOf(
        backend.append(lease, {
          expectedSeq: 7,
          lines: [withNewline, second],
          lastCrc: crcOf(second),
          batchId: 'w:1:3',
        }),
      ),
    ).toBe(SessionStoreErrorCode.INVALID_OPTION)
    expect((await storedRows(url, id)).length).toBe(7)
    expect(await backend.head(id)).toMatchObject({ nextSeq: 7, lastBatchId: 'w:1:1' })
  })

  it("a batch offered as the writer's UTF-8 bytes stores exactly its lines (non-ASCII text included); a line holding a newline is refused, nothing sent", async () => {
    const id = sessionId()
    await backend.create(createRequest(id))
    const lease = await openWriter(id)
    const lines = [eventLine(0, 'héllo ✓ 𝄞 "quoted" \\ back'), eventLine(1, 'plain'), eventLine(2, '日本語')]
    const bytes = new TextEncoder().encode(lines.map((line) => `${line}\n`).join(''))
    await backend.append(lease, { expectedSeq: 0, lines, bytes, lastCrc: crcOf(lines[2]!), batchId: 'w:1:1' })
    // The bytes are the caller's buffer, valid only until the append settles: overwrite them.
    bytes.fill(0x41)
    const rows = await storedRows(url, id)
    expect(rows.map((row) => row.line)).toEqual(lines)
    expect((await collect(backend.read(id, { fromSeq: 0 }))).map((line) => line.line)).toEqual(lines)
    expect(await backend.head(id)).toMatchObject({
      nextSeq: 3,
      lastCrc: crcOf(lines[2]!),
      lastBatchId: 'w:1:1',
    })
    // Bytes whose newlines do not match the lines (a line holding one) are refused before anything is sent.
    const next = eventLines(3, 2) as [string, string]
    const broken = new TextEncoder().encode(`${next[0].slice(0, 10)}\n${next[0].slice(10)}\n${next[1]}\n`)
    expect(
      await codeOf(
        backend.append(lease, {
          expectedSeq: 3,
          lines: next,
          bytes: broken,
          lastCrc: crcOf(next[1]),
          batchId: 'w:1:2',
        }),
      ),
    ).toBe(SessionStoreErrorCode.INVALID_OPTION)
    expect((await storedRows(url, id)).length).toBe(3)
  })

  it('a line without the checksum suffix is refused by the table check: nothing of the batch is written', async () => {
    const id = sessionId()
    await backend.create(createRequest(id))
    const lease = await openWriter(id)
    const error = await backend
      .append(lease, {
        expectedSeq: 0,
        lines: [eventLine(0), '{"seq":1}'],
        lastCrc: 'cccccccc',
        batchId: 'bad',
      })
      .catch((caught: unknown) => caught)
    expect(SessionStoreError.is(error, SessionStoreErrorCode.BACKEND_FAILED)).toBe(true)
    expect((error as SessionStoreError).details).toMatchObject({ sqlstate: '23514' })
    expect(await storedRows(url, id)).toEqual([])
    expect((await backend.head(id)).nextSeq).toBe(0)
  })

  it('renew extends a live lease; release is idempotent; a released lease cannot append or renew', async () => {
    const id = sessionId()
    await backend.create(createRequest(id))
    const lease = await openWriter(id, 'w', 5_000)
    const renewed = await backend.renew(lease)
    expect(Date.parse(renewed.expiresAt)).toBeGreaterThanOrEqual(Date.parse(lease.expiresAt))
    await backend.release(renewed)
    await backend.release(renewed)
    expect((await backend.head(id)).owner).toBeNull()
    expect(
      await codeOf(
        backend.append(renewed, { expectedSeq: 0, lines: eventLines(0, 1), lastCrc: 'a', batchId: 'r' }),
      ),
    ).toBe(SessionStoreErrorCode.FENCED)
    expect(await codeOf(backend.renew(renewed))).toBe(SessionStoreErrorCode.FENCED)
    const next = await backend.acquire(id, { owner: 'other', leaseMs: 5_000 })
    expect(next.lease.epoch).toBe(lease.epoch + 1)
  })

  it('reads from any seq by pages (page size 7 here) with bounded memory, up to toSeq', async () => {
    const id = sessionId()
    await backend.create(createRequest(id))
    const lease = await openWriter(id)
    const lines = eventLines(0, 40)
    await backend.append(lease, {
      expectedSeq: 0,
      lines,
      lastCrc: crcOf(lines[39] as string),
      batchId: 'x',
    })
    const all = await collect(backend.read(id, { fromSeq: 0 }))
    expect(all.map((l) => l.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i))
    expect(all.map((l) => l.line)).toEqual(lines)
    expect((await collect(backend.read(id, { fromSeq: 13, toSeq: 29 }))).map((l) => l.seq)).toEqual(
      Array.from({ length: 17 }, (_, i) => i + 13),
    )
    expect(await collect(backend.read(id, { fromSeq: 40 }))).toEqual([])
    expect(await codeOf(collect(backend.read('no-such', { fromSeq: 0 })))).toBe(
      SessionStoreErrorCode.SESSION_NOT_FOUND,
    )
  })

  it('a row deleted behind the backend is reported as CORRUPT_LINE after every good line before it', async () => {
    const id = sessionId()
    await backend.create(createRequest(id, { seedCount: 10 }))
    await sqlOnce(url, 'DELETE FROM ledger_events WHERE session_id = $1 AND seq = 8', [id])
    const seen: number[] = []
    const error = await (async () => {
      for await (const line of backend.read(id, { fromSeq: 0 })) seen.push(line.seq)
    })().catch((caught: unknown) => caught)
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
    expect(SessionStoreError.is(error, SessionStoreErrorCode.CORRUPT_LINE)).toBe(true)
    expect(error).toMatchObject({ seq: 8, lastGoodSeq: 7, location: { file: 'ledger_events' } })
  })

  it('lists by keyset pages, newest first, with cwd, parent and updatedSince filters; a foreign cursor is INVALID_OPTION', async () => {
    const cwd = `/list-${sessionId()}`
    const ids: string[] = []
    for (let index = 0; index < 5; index++) {
      const id = sessionId('l')
      ids.push(id)
      await backend.create(createRequest(id, { cwd }))
    }
    const child = sessionId('child')
    await backend.create(createRequest(child, { cwd: '/elsewhere', parentSession: ids[0] as string }))
    const seen: string[] = []
    let cursor: string | null | undefined
    do {
      const page = await backend.list({ limit: 2, cursor: cursor ?? undefined, filter: { cwd } })
      expect(page.entries.length).toBeLessThanOrEqual(2)
      seen.push(...page.entries.map((entry) => entry.id))
      cursor = page.cursor
    } while (cursor !== null)
    expect(seen).toEqual([...ids].reverse())
    const byParent = await backend.list({ limit: 10, filter: { parentSession: ids[0] as string } })
    expect(byParent.entries.map((entry) => entry.id)).toEqual([child])
    expect(byParent.entries[0]).toMatchObject({ nextSeq: 0 })
    const future = await backend.list({ limit: 10, filter: { updatedSince: '2999-01-01T00:00:00Z' } })
    expect(future.entries).toEqual([])
    expect(await codeOf(backend.list({ limit: 10, cursor: 'not-a-cursor' }))).toBe(
      SessionStoreErrorCode.INVALID_OPTION,
    )
  })

  it('fork copies the prefix server-side with the child lines in one statement; a changed boundary is CONFLICT', async () => {
    const parent = sessionId('p')
    await backend.create(createRequest(parent, { seedCount: 6 }))
    const parentLines = (await collect(backend.read(parent, { fromSeq: 0 }))).map((l) => l.line)
    const child = createRequest(sessionId('c'), { parentSession: parent })
    const marker = eventLine(4, 'end-seed')
    await backend.capabilities.fork?.fork({
      parentId: parent,
      boundarySeq: 3,
      boundaryCrc: crcOf(parentLines[3] as string),
      child: { ...child, lines: [marker], lastCrc: crcOf(marker) },
    })
    expect((await collect(backend.read(child.id, { fromSeq: 0 }))).map((l) => l.line)).toEqual([
      ...parentLines.slice(0, 4),
      marker,
    ])
    expect(await backend.head(child.id)).toMatchObject({ nextSeq: 5, lastCrc: crcOf(marker), epoch: 0 })
    const again = backend.capabilities.fork?.fork({
      parentId: parent,
      boundarySeq: 3,
      boundaryCrc: crcOf(parentLines[3] as string),
      child: { ...child, lines: [marker], lastCrc: crcOf(marker) },
    })
    expect(await codeOf(again as Promise<void>)).toBe(SessionStoreErrorCode.SESSION_EXISTS)
    const other = createRequest(sessionId('c'), { parentSession: parent })
    const wrong = backend.capabilities.fork?.fork({
      parentId: parent,
      boundarySeq: 3,
      boundaryCrc: '00000000',
      child: { ...other, lines: [], lastCrc: null },
    })
    expect(await codeOf(wrong as Promise<void>)).toBe(SessionStoreErrorCode.CONFLICT)
    expect(await codeOf(backend.head(other.id))).toBe(SessionStoreErrorCode.SESSION_NOT_FOUND)
  })

  it('checkpoints are written only by the lease holder, below the head, and read back byte for byte', async () => {
    const id = sessionId()
    await backend.create(createRequest(id, { seedCount: 4 }))
    const checkpoints = backend.capabilities.checkpoints
    if (checkpoints === undefined) throw new Error('checkpoints capability missing')
    expect(await checkpoints.getCheckpoint(id)).toBeNull()
    const lease = await openWriter(id, 'cp-a')
    const record = {
      seq: 3,
      eventCrc: 'abcdef01',
      headerCrc: '12345678',
      registryDigest: 'r1',
      body: new Uint8Array([0, 1, 255, 7]),
    }
    await checkpoints.putCheckpoint(lease, record)
    const read = await checkpoints.getCheckpoint(id)
    expect(read).toMatchObject({
      seq: 3,
      eventCrc: 'abcdef01',
      headerCrc: '12345678',
      registryDigest: 'r1',
    })
    if (read === null || 'unreadable' in read) throw new Error('expected the stored record back')
    expect(Array.from(read.body)).toEqual([0, 1, 255, 7])
    expect(await codeOf(checkpoints.putCheckpoint(lease, { ...record, seq: 4 }))).toBe(
      SessionStoreErrorCode.INVALID_OPTION,
    )
    await backend.acquire(id, { owner: 'cp-b', leaseMs: 60_000, takeover: true })
    expect(
      await codeOf(checkpoints.putCheckpoint(lease, { ...record, seq: 2, registryDigest: 'stale' })),
    ).toBe(SessionStoreErrorCode.FENCED)
    expect(await checkpoints.getCheckpoint(id)).toMatchObject({ registryDigest: 'r1' })
  })

  it('waitForAppend wakes a follower on another backend instance by LISTEN/NOTIFY, and rejects ABORTED on abort', async () => {
    const id = sessionId()
    await backend.create(createRequest(id))
    const follower = await openPostgresBackend({ connectionString: url })
    try {
      const follow = follower.capabilities.follow
      if (follow === undefined) throw new Error('follow capability missing')
      const waiting = follow.waitForAppend(id, { nextSeq: 0 })
      const lease = await openWriter(id)
      const lines = eventLines(0, 1)
      await backend.append(lease, {
        expectedSeq: 0,
        lines,
        lastCrc: crcOf(lines[0] as string),
        batchId: 'n1',
      })
      await waiting
      expect((await follower.head(id)).nextSeq).toBe(1)
      // Already past: resolves at once.
      await follow.waitForAppend(id, { nextSeq: 0 })
      const controller = new AbortController()
      const pending = follow.waitForAppend(id, { nextSeq: 1, signal: controller.signal })
      controller.abort(new Error('stop'))
      expect(await codeOf(pending)).toBe(SessionStoreErrorCode.ABORTED)
    } finally {
      await follower.close()
    }
  })

  it('NOTIFY is sent only for a followed session (it serializes commits database-wide); a missed one is caught by the poll', async () => {
    const followed = sessionId('fol')
    const quiet = sessionId('quiet')
    await backend.create(createRequest(followed))
    await backend.create(createRequest(quiet))
    const listener = new pg.Client({ connectionString: url })
    await listener.connect()
    const heard: string[] = []
    listener.on('notification', (message) => heard.push(message.payload ?? ''))
    await listener.query(`LISTEN ${APPEND_CHANNEL}`)
    const follower = await openPostgresBackend({ connectionString: url, followPollMs: 200 })
    try {
      const follow = follower.capabilities.follow
      if (follow === undefined) throw new Error('follow capability missing')
      const waiting = follow.waitForAppend(followed, { nextSeq: 0 })
      // The announcement is written asynchronously: append only once it is committed, or the
      // append rightly sends no NOTIFY and the follower wakes by its poll instead.
      await waitUntil(
        'the follower announcement',
        async () =>
          (await sqlOnce(url, 'SELECT 1 FROM ledger_followers WHERE session_id = $1', [followed])).length > 0,
        { pollMs: 20 },
      )
      for (const id of [quiet, followed]) {
        const lease = await openWriter(id)
        const lines = eventLines(0, 2)
        await backend.append(lease, {
          expectedSeq: 0,
          lines,
          lastCrc: crcOf(lines[1] as string),
          batchId: `${id}:1`,
        })
      }
      await waiting
      await follower.head(followed) // a round trip: the notification of the followed append has arrived by now
      await listener.query('SELECT 1')
      expect(heard).toEqual([`${followed} 2`])
      // A follower whose announcement vanished (no NOTIFY) still wakes, by the poll.
      await sqlOnce(url, 'DELETE FROM ledger_followers')
      const polled = follow.waitForAppend(quiet, { nextSeq: 2 })
      // The announcement is written asynchronously: delete it once it is there (deleting it
      // before it lands let it land afterwards, and the append then rightly sent a NOTIFY).
      await waitUntil(
        'the follower announcement',
        async () =>
          (await sqlOnce(url, 'SELECT 1 FROM ledger_followers WHERE session_id = $1', [quiet])).length > 0,
        { pollMs: 20 },
      )
      await sqlOnce(url, 'DELETE FROM ledger_followers')
      const lease = await openWriter(quiet)
      const more = eventLines(2, 1)
      await backend.append(lease, {
        expectedSeq: 2,
        lines: more,
        lastCrc: crcOf(more[0] as string),
        batchId: 'q:2',
      })
      await polled
      expect(heard).toEqual([`${followed} 2`])
    } finally {
      await follower.close()
      await listener.end()
    }
  })

  it('a closed backend refuses calls with BACKEND_CLOSED; an aborted signal is ABORTED before anything is sent', async () => {
    const other = await openPostgresBackend({ connectionString: url })
    await other.close()
    await other.close()
    expect(await codeOf(other.head('x'))).toBe(SessionStoreErrorCode.BACKEND_CLOSED)
    const controller = new AbortController()
    controller.abort()
    const id = sessionId()
    expect(await codeOf(backend.create({ ...createRequest(id), signal: controller.signal }))).toBe(
      SessionStoreErrorCode.ABORTED,
    )
    expect(await codeOf(backend.head(id))).toBe(SessionStoreErrorCode.SESSION_NOT_FOUND)
  })

  it('a server that cannot be reached is BACKEND_FAILED/CONNECTION_FAILED naming host and database, never the password', async () => {
    const error = await openPostgresBackend({
      connectionString: 'postgres://someone:s3cret-pa55@127.0.0.1:1/ledgerdb',
      connectTimeoutMs: testTime(2_000),
    }).catch((caught: unknown) => caught)
    expect(SessionStoreError.is(error, SessionStoreErrorCode.BACKEND_FAILED)).toBe(true)
    const failure = error as SessionStoreError
    expect(failure.details).toMatchObject({
      reason: PostgresFailureReason.CONNECTION_FAILED,
      host: '127.0.0.1',
      port: 1,
      database: 'ledgerdb',
    })
    expect(failure.message).toContain('127.0.0.1:1')
    expect(failure.message).toContain('ledgerdb')
    expect(failure.message).not.toContain('s3cret')
    expect(JSON.stringify(failure.details)).not.toContain('s3cret')
  })

  it('options out of range are INVALID_OPTION naming the option', () => {
    expect(() => new PostgresBackend({ connectionString: url, poolSize: 0 })).toThrow(
      /poolSize: expected a positive integer, found 0/,
    )
  })
})
