/**
 * The session core's checkpointed open on PostgreSQL: a `ledger_checkpoints` row damaged
 * in place (body bytes flipped or cut, an older body version, a seq past the head, another
 * event's checksum) is ignored with a warning and the open equals a full replay; a writer
 * process SIGKILLed after its events were committed and while its checkpoint write was in
 * flight leaves a session whose open (from the older checkpoint) equals a full replay.
 */
import { createSessionStore } from '@agent-ledger/session-store'
import type { SessionStore, SessionStoreWarning } from '@agent-ledger/session-store'
import { expect, it } from 'vitest'

import type { PostgresBackend } from '../src/index.ts'
import { startWorker } from './support/children.ts'
import { describeOnServer, sessionId, sqlOnce, useDatabase } from './support/pg.ts'

const EAGER = { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 }

describeOnServer('session core checkpoints on PostgreSQL', () => {
  let url: string
  let backend: PostgresBackend
  const warnings: SessionStoreWarning[] = []
  let eager: SessionStore
  let replay: SessionStore

  useDatabase((database) => {
    url = database.url
    backend = database.backend
    const clock = (): string => new Date().toISOString()
    eager = createSessionStore({
      backend,
      clock,
      owner: 'eager',
      checkpoint: EAGER,
      onWarning: (w) => warnings.push(w),
    })
    replay = createSessionStore({ backend, clock, owner: 'replay', checkpoint: { enabled: false } })
  })

  /** Three turns with a checkpoint at their end (seq 11), then two more without one (seqs 12..19). */
  async function session(name: string): Promise<string> {
    const id = sessionId(name)
    const writer = await eager.create({ id })
    const turn = (target: typeof writer, n: number): void => {
      target.append({ type: 'turn/start', data: { turn: n } })
      target.append({ type: 'user/message', data: { message: { role: 'user', content: `q${n}` } } })
      target.append({
        type: 'assistant/message',
        data: { message: { role: 'assistant', content: `a${n}` } },
      })
      target.append({ type: 'turn/end', data: { turn: n, reason: 'completed' } })
    }
    for (let n = 1; n <= 3; n++) turn(writer, n)
    await writer.close()
    const more = await replay.openWriter(id)
    for (let n = 4; n <= 5; n++) turn(more, n)
    await more.close()
    return id
  }

  async function expectSameAsReplay(id: string): Promise<void> {
    const full = await replay.openReader(id)
    const fast = await eager.openReader(id)
    expect(fast.projection.snapshot()).toEqual(full.projection.snapshot())
    expect(fast.projection.deriveMessages()).toEqual(full.projection.deriveMessages())
    expect(fast.lastSeq).toBe(full.lastSeq)
  }

  it('an intact checkpoint row: the open replays only the 8 later events and equals a full replay', async () => {
    const id = await session('intact')
    warnings.length = 0
    expect((await eager.openReader(id)).checkpoint).toEqual({ used: true, seq: 11, replayedEvents: 8 })
    await expectSameAsReplay(id)
    const writer = await eager.openWriter(id)
    expect(writer.recovery.checkpoint).toEqual({ used: true, seq: 11, replayedEvents: 8 })
    expect(writer.projection.nextSeq).toBe(20)
    await writer.close()
    expect(warnings).toEqual([])
  })

  it.each([
    [
      'a flipped body byte',
      'checksum',
      `UPDATE ledger_checkpoints SET body = set_byte(body, length(body) - 3, get_byte(body, length(body) - 3) # 1) WHERE session_id = $1`,
    ],
    [
      'a cut body',
      'checksum',
      `UPDATE ledger_checkpoints SET body = substring(body FROM 1 FOR length(body) - 10) WHERE session_id = $1`,
    ],
    [
      'an older body version',
      'old-version',
      `UPDATE ledger_checkpoints SET body = overlay(body PLACING convert_to('"checkpointVersion":0', 'UTF8') FROM position(convert_to('"checkpointVersion":1', 'UTF8') IN body)) WHERE session_id = $1`,
    ],
    ['a seq past the head', 'past-head', `UPDATE ledger_checkpoints SET seq = 1000 WHERE session_id = $1`],
    [
      'another event checksum',
      'event',
      `UPDATE ledger_checkpoints SET event_crc = '00000000' WHERE session_id = $1`,
    ],
    [
      'a body that is not ours',
      'decode',
      `UPDATE ledger_checkpoints SET body = '\\x00ff'::bytea WHERE session_id = $1`,
    ],
  ])(
    'a checkpoint row with %s is ignored (%s) with a warning; the open equals a full replay',
    async (_what, reason, statement) => {
      const id = await session(`bad-${reason}`)
      const rows = await sqlOnce<{ n: string }>(
        url,
        `WITH u AS (${statement} RETURNING 1) SELECT count(*)::text AS n FROM u`,
        [id],
      )
      expect(rows[0]!.n).toBe('1')
      warnings.length = 0
      const read = await eager.openReader(id)
      expect(read.checkpoint).toMatchObject({ used: false, reason, replayedEvents: 20 })
      expect(warnings.map((warning) => [warning.code, warning.sessionId, warning.details.reason])).toEqual([
        ['CHECKPOINT_IGNORED', id, reason],
      ])
      await expectSameAsReplay(id)
      const writer = await eager.openWriter(id)
      expect(writer.recovery.checkpoint).toMatchObject({ used: false, reason })
      expect(writer.projection.nextSeq).toBe(20)
      writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'after' } } })
      await writer.close()
      // The writer replaced the bad row with a good one at its head.
      warnings.length = 0
      expect((await eager.openReader(id)).checkpoint).toEqual({ used: true, seq: 20, replayedEvents: 0 })
      expect(warnings).toEqual([])
    },
  )

  it('a checkpoint large enough to be TOASTed is stored lz4-compressed where the server offers lz4, and the open uses it', async () => {
    const [offer] = await sqlOnce<{ lz4: boolean }>(
      url,
      "SELECT coalesce('lz4' = ANY(enumvals), false) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'",
    )
    const id = sessionId('lz4')
    const writer = await eager.create({ id })
    for (let n = 0; n < 4; n++) {
      const content = `message ${n}: ${'the flush policy is applied in the writer. '.repeat(200)}`
      writer.append({ type: 'user/message', data: { message: { role: 'user', content } } })
    }
    await writer.close()
    const [stored] = await sqlOnce<{ method: string | null; bytes: number; size: number }>(
      url,
      'SELECT pg_column_compression(body) AS method, octet_length(body) AS bytes, pg_column_size(body) AS size FROM ledger_checkpoints WHERE session_id = $1',
      [id],
    )
    expect(stored!.bytes).toBeGreaterThan(8192)
    expect(stored!.size).toBeLessThan(stored!.bytes / 4)
    expect(stored!.method).toBe(offer?.lz4 === true ? 'lz4' : 'pglz')
    warnings.length = 0
    expect((await eager.openReader(id)).checkpoint).toMatchObject({ used: true, seq: 3 })
    await expectSameAsReplay(id)
    expect(warnings).toEqual([])
  })

  it('a writer SIGKILLed with its events committed and its checkpoint write in flight: the open uses the older checkpoint and equals a full replay', async () => {
    const id = sessionId('killed')
    const worker = startWorker([url, id, 'ckpt-worker', 'checkpoint', '-'])
    await worker.waitForLine((line) => line === 'checkpointed 11')
    await worker.waitForLine((line) => line === 'flushed 15')
    await worker.waitForLine((line) => line === 'stalled-checkpoint 15')
    process.kill(worker.pid, 'SIGKILL')
    expect((await worker.exited).code).toBeNull()
    const row = await sqlOnce<{ seq: string }>(
      url,
      'SELECT seq::text AS seq FROM ledger_checkpoints WHERE session_id = $1',
      [id],
    )
    expect(row.map((r) => r.seq)).toEqual(['11'])
    warnings.length = 0
    const read = await eager.openReader(id)
    expect(read.checkpoint).toEqual({ used: true, seq: 11, replayedEvents: 4 })
    expect(read.lastSeq).toBe(15)
    await expectSameAsReplay(id)
    const writer = await eager.openWriter(id, { takeover: true })
    expect(writer.recovery.checkpoint).toEqual({ used: true, seq: 11, replayedEvents: 4 })
    expect(writer.recovery.repairs).toEqual([])
    expect(writer.deriveMessages()).toEqual(read.projection.deriveMessages())
    await writer.close()
    await expectSameAsReplay(id)
    expect(warnings).toEqual([])
  })
})
