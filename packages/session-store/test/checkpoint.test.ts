/**
 * The core's projection checkpoints on the memory backend, beyond the conformance cases:
 * when a writer stores one (the amortisation rules), damage and gaps after the checkpoint,
 * a foreign registry or larger limits, a failing `putCheckpoint`, compactions.
 */
import { createEventRegistry, defineEventType } from '@agent-ledger/session-events'
import { planCompaction } from '@agent-ledger/session-projection'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

import { decodeCheckpointBody, encodeCheckpointBody } from '../src/checkpoint-body.ts'
import type { CheckpointPayload } from '../src/checkpoint-body.ts'
import { crc32c } from '../src/crc32c.ts'
import { createMemoryBackend, createSessionStore, SessionStoreError } from '../src/index.ts'
import type {
  CheckpointOptions,
  CheckpointRecord,
  MemoryBackend,
  SessionBackend,
  SessionStore,
  SessionStoreOptions,
  SessionStoreWarning,
  SessionWriter,
} from '../src/index.ts'

declare module '@agent-ledger/session-events' {
  interface SessionEventMap {
    'acme/note': { readonly text: string }
  }
}

declare const setTimeout: (run: () => void, ms: number) => unknown

/** One macrotask: a checkpoint put runs off the flush path, and the memory backend's settles within it. */
function nextTask(): Promise<void> {
  return new Promise<void>((resolve) => {
    setTimeout(resolve, 0)
  })
}

const EAGER: CheckpointOptions = { everyEvents: 1, minIntervalMs: 0, minLogBytes: 0, minGrowthRatio: 0 }

function clock(stepMs = 1000): () => string {
  let tick = 0
  return () => new Date(Date.UTC(2026, 0, 1) + ++tick * stepMs).toISOString()
}

function makeStore(
  backend: SessionBackend,
  options: Partial<SessionStoreOptions> = {},
): { store: SessionStore; warnings: SessionStoreWarning[] } {
  const warnings: SessionStoreWarning[] = []
  const store = createSessionStore({
    backend,
    clock: clock(),
    onWarning: (warning) => warnings.push(warning),
    ...options,
  })
  return { store, warnings }
}

const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

function appendTurn(writer: SessionWriter, turn: number, text = `turn ${turn}`): void {
  writer.append({ type: 'turn/start', data: { turn } })
  writer.append(user(text))
  writer.append({
    type: 'assistant/message',
    data: { message: { role: 'assistant', content: `answer ${turn}` } },
  })
  writer.append({ type: 'turn/end', data: { turn, reason: 'completed' } })
}

/** The memory backend's stored record (it never answers `unreadable`). */
async function storedRecord(backend: SessionBackend, id: string): Promise<CheckpointRecord | null> {
  const stored = await backend.capabilities.checkpoints!.getCheckpoint(id)
  if (stored !== null && 'unreadable' in stored) throw new Error(`unreadable: ${stored.unreadable}`)
  return stored
}

async function checkpointSeq(backend: SessionBackend, id: string): Promise<number | null> {
  await nextTask()
  return (await storedRecord(backend, id))?.seq ?? null
}

describe('core checkpoints: when a writer stores one', () => {
  it('after the flush that makes a turn/end durable, without waiting for close', async () => {
    const backend = createMemoryBackend()
    const { store } = makeStore(backend, { checkpoint: { ...EAGER, everyEvents: 1000 } })
    const writer = await store.create({ id: 'turn-end' })
    writer.append({ type: 'turn/start', data: { turn: 1 } })
    writer.append(user('no turn/end yet'))
    await writer.flush()
    expect(await checkpointSeq(backend, 'turn-end')).toBeNull()
    writer.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
    await writer.flush()
    expect(await checkpointSeq(backend, 'turn-end')).toBe(2)
    await writer.close()
  })

  it('once everyEvents events became durable, with no turn/end', async () => {
    const backend = createMemoryBackend()
    const { store } = makeStore(backend, { checkpoint: { ...EAGER, everyEvents: 3 } })
    const writer = await store.create({ id: 'every' })
    writer.append(user('a'))
    writer.append(user('b'))
    await writer.flush()
    expect(await checkpointSeq(backend, 'every')).toBeNull()
    writer.append(user('c'))
    await writer.flush()
    expect(await checkpointSeq(backend, 'every')).toBe(2)
    writer.append(user('d'))
    await writer.flush()
    expect(await checkpointSeq(backend, 'every')).toBe(2)
    await writer.close()
  })

  it('not again before minIntervalMs by the store clock', async () => {
    const backend = createMemoryBackend()
    // The clock moves 1 s per reading: a 60 s interval is not over within a few turns.
    const { store } = makeStore(backend, { checkpoint: { ...EAGER, minIntervalMs: 60_000 } })
    const writer = await store.create({ id: 'interval' })
    appendTurn(writer, 1)
    await writer.flush()
    expect(await checkpointSeq(backend, 'interval')).toBe(3)
    appendTurn(writer, 2)
    await writer.flush()
    expect(await checkpointSeq(backend, 'interval')).toBe(3)
    await writer.close({ discardUnflushed: true })
  })

  it('never while the log is below minLogBytes (the default 1 MiB), not even on close', async () => {
    const backend = createMemoryBackend()
    const { store } = makeStore(backend)
    const writer = await store.create({ id: 'small' })
    for (let turn = 1; turn <= 5; turn++) appendTurn(writer, turn)
    await writer.close()
    expect(await checkpointSeq(backend, 'small')).toBeNull()
  })

  it('only after the log grew by minGrowthRatio x (last body + 4 KiB)', async () => {
    const backend = createMemoryBackend()
    const { store } = makeStore(backend, { checkpoint: { ...EAGER, minGrowthRatio: 2 } })
    const writer = await store.create({ id: 'growth' })
    const big = 'x'.repeat(3000)
    appendTurn(writer, 1, big)
    await writer.flush()
    // 3 KB of log < 2 x (0 + 4 KiB): no checkpoint yet.
    expect(await checkpointSeq(backend, 'growth')).toBeNull()
    appendTurn(writer, 2, big)
    appendTurn(writer, 3, big)
    await writer.flush()
    expect(await checkpointSeq(backend, 'growth')).toBe(11)
    const first = (await storedRecord(backend, 'growth'))!.body.byteLength
    // The body now holds three 3 KB messages: the next one needs 2 x (body + 4 KiB) more log.
    let turn = 4
    let grown = 0
    while (grown < 2 * (first + 4096) - 3200) {
      appendTurn(writer, turn++, big)
      grown += 3200
      await writer.flush()
      expect(await checkpointSeq(backend, 'growth')).toBe(11)
    }
    appendTurn(writer, turn, big)
    appendTurn(writer, turn + 1, big)
    await writer.flush()
    expect(await checkpointSeq(backend, 'growth')).toBe(writer.durableSeq)
    await writer.close()
  })

  it('a failing putCheckpoint is a CHECKPOINT_WRITE_FAILED warning; flushes and close succeed', async () => {
    const memory = createMemoryBackend()
    const getCheckpoint = memory.capabilities.checkpoints!.getCheckpoint.bind(memory)
    const failing = new Proxy(memory, {
      get(target, property) {
        if (property === 'capabilities') {
          return {
            ...target.capabilities,
            checkpoints: {
              getCheckpoint,
              putCheckpoint: () =>
                Promise.reject(
                  new SessionStoreError({ code: 'BACKEND_FAILED', message: 'checkpoint table gone' }),
                ),
            },
          }
        }
        const value = Reflect.get(target, property, target) as unknown
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
      },
    })
    const { store, warnings } = makeStore(failing, { checkpoint: EAGER })
    const writer = await store.create({ id: 'put-fails' })
    appendTurn(writer, 1)
    await expect(writer.flush()).resolves.toEqual({ durableSeq: 3 })
    await writer.close()
    // One for the flush's checkpoint, one for close()'s (nothing was stored, so it tries again).
    expect(warnings.map((warning) => [warning.code, warning.details.code])).toEqual([
      ['CHECKPOINT_WRITE_FAILED', 'BACKEND_FAILED'],
      ['CHECKPOINT_WRITE_FAILED', 'BACKEND_FAILED'],
    ])
    expect(warnings[0]!.message).toContain('put-fails')
    expect((await store.openReader('put-fails')).lastSeq).toBe(3)
  })
})

describe('core checkpoints: opens that must not trust one', () => {
  async function session(backend: MemoryBackend, id: string): Promise<void> {
    const { store } = makeStore(backend, { checkpoint: EAGER })
    const writer = await store.create({ id })
    for (let turn = 1; turn <= 3; turn++) appendTurn(writer, turn)
    await writer.close() // checkpoint at 11
    const { store: plain } = makeStore(backend, { checkpoint: { enabled: false } })
    const more = await plain.openWriter(id)
    for (let turn = 4; turn <= 5; turn++) appendTurn(more, turn)
    await more.close() // events 12..19, no checkpoint
  }

  it('damage after the checkpoint: the full replay reports it exactly (same error, same good prefix)', async () => {
    const backend = createMemoryBackend()
    await session(backend, 'tail-damage')
    const lines: string[] = []
    for await (const stored of backend.read('tail-damage', { fromSeq: 0 })) lines.push(stored.line)
    const damaged = lines[14]!.replace('answer', 'ANSWER')
    expect(damaged).not.toBe(lines[14])
    backend.testHooks.corruptLine('tail-damage', 14, damaged)
    const { store, warnings } = makeStore(backend, { checkpoint: EAGER })
    const { store: plain } = makeStore(backend, { checkpoint: { enabled: false } })
    const fast = await store.openReader('tail-damage', { allowDamaged: true })
    const full = await plain.openReader('tail-damage', { allowDamaged: true })
    expect(fast.checkpoint).toMatchObject({ used: false, reason: 'tail', replayedEvents: 14 })
    expect(warnings.map((warning) => warning.details.reason)).toEqual(['tail'])
    expect(fast.error?.code).toBe('CORRUPT_LINE')
    expect([fast.error?.code, fast.error?.lastGoodSeq, fast.lastSeq]).toEqual([
      full.error?.code,
      full.error?.lastGoodSeq,
      full.lastSeq,
    ])
    expect(fast.projection.snapshot()).toEqual(full.projection.snapshot())
    await expect(store.openWriter('tail-damage')).rejects.toMatchObject({ code: 'CORRUPT_LINE' })
  })

  it('a gap after the checkpoint (a line stored at the wrong seq): SEQ_GAP from the full replay', async () => {
    const backend = createMemoryBackend()
    await session(backend, 'tail-gap')
    const lines: string[] = []
    for await (const stored of backend.read('tail-gap', { fromSeq: 0 })) lines.push(stored.line)
    backend.testHooks.corruptLine('tail-gap', 14, lines[15]!)
    const { store, warnings } = makeStore(backend, { checkpoint: EAGER })
    const fast = await store.openReader('tail-gap', { allowDamaged: true })
    expect(fast.checkpoint).toMatchObject({ used: false, reason: 'tail' })
    expect(warnings).toHaveLength(1)
    expect([fast.error?.code, fast.lastSeq]).toEqual(['SEQ_GAP', 13])
  })

  it('a checkpoint built with another event registry, or larger limits, is ignored', async () => {
    const backend = createMemoryBackend()
    await session(backend, 'foreign')
    const registry = createEventRegistry([defineEventType('acme/note', z.object({ text: z.string() }))])
    const plugin = makeStore(backend, { registry, checkpoint: EAGER })
    const read = await plugin.store.openReader('foreign')
    expect(read.checkpoint).toMatchObject({ used: false, reason: 'registry', replayedEvents: 20 })
    expect(plugin.warnings[0]).toMatchObject({ code: 'CHECKPOINT_IGNORED', sessionId: 'foreign' })
    const strict = makeStore(backend, { limits: { maxDepth: 64 }, checkpoint: EAGER })
    expect((await strict.store.openReader('foreign')).checkpoint).toMatchObject({
      used: false,
      reason: 'limits',
    })
    const same = makeStore(backend, { checkpoint: EAGER })
    expect((await same.store.openReader('foreign')).checkpoint).toEqual({
      used: true,
      seq: 11,
      replayedEvents: 8,
    })
  })

  it('a checkpoint of projection snapshot version 1 is ignored once: replayed, never misread, then replaced', async () => {
    const backend = createMemoryBackend()
    await session(backend, 'older')
    const record = (await storedRecord(backend, 'older'))!
    const payload = decodeCheckpointBody(record.body, crc32c) as CheckpointPayload
    // The layout before version 2: no annotations, no highestTurn, no isError/code on nodes.
    const { annotations: _annotations, ...rest } = payload.snapshot
    const { highestTurn: _highestTurn, ...stats } = payload.snapshot.stats
    const older = { ...rest, snapshotVersion: 1, stats } as unknown as CheckpointPayload['snapshot']
    const { lease } = await backend.acquire('older', { owner: 'tamper', leaseMs: 1000 })
    await backend.capabilities.checkpoints!.putCheckpoint(lease, {
      ...record,
      body: encodeCheckpointBody({ ...payload, snapshot: older }, crc32c),
    })
    await backend.release(lease)
    const { store: full } = makeStore(backend, { checkpoint: { enabled: false } })
    const replayed = await full.openReader('older')

    const { store, warnings } = makeStore(backend, { checkpoint: EAGER })
    const read = await store.openReader('older')
    expect(read.checkpoint).toMatchObject({ used: false, reason: 'snapshot' })
    expect(warnings.map((warning) => [warning.code, warning.details['reason']])).toEqual([
      ['CHECKPOINT_IGNORED', 'snapshot'],
    ])
    expect(read.projection.snapshot()).toEqual(replayed.projection.snapshot())
    // The next writer (its open ignores it too) stores a checkpoint of the current layout,
    // even one that appends nothing; opens after it use it, without a warning.
    await (await store.openWriter('older')).close()
    expect(warnings.map((warning) => warning.details['reason'])).toEqual(['snapshot', 'snapshot'])
    const again = await store.openReader('older')
    expect(again.checkpoint).toMatchObject({ used: true, seq: 19 })
    expect(again.projection.snapshot()).toEqual(replayed.projection.snapshot())
    expect(warnings).toHaveLength(2)
  })

  it('a throwing onWarning handler does not fail the open', async () => {
    const backend = createMemoryBackend()
    await session(backend, 'loud')
    const checkpoints = backend.capabilities.checkpoints!
    const record = (await storedRecord(backend, 'loud'))!
    const { lease } = await backend.acquire('loud', { owner: 'tamper', leaseMs: 1000 })
    await checkpoints.putCheckpoint(lease, { ...record, headerCrc: '00000000' })
    await backend.release(lease)
    const store = createSessionStore({
      backend,
      clock: clock(),
      onWarning: () => {
        throw new Error('handler broke')
      },
    })
    const read = await store.openReader('loud')
    expect(read.checkpoint).toMatchObject({ used: false, reason: 'header' })
    expect(read.lastSeq).toBe(19)
  })

  it('refuses a bad checkpoint option, naming it', () => {
    expect(() =>
      createSessionStore({ backend: createMemoryBackend(), clock: clock(), checkpoint: { everyEvents: -1 } }),
    ).toThrow(/checkpoint\.everyEvents must be a positive integer, found -1/)
    // 0 is refused (not read as 1); a growth ratio is a number, fractional or not, up to 1024.
    for (const [checkpoint, pattern] of [
      [{ everyEvents: 0 }, /checkpoint\.everyEvents must be a positive integer, found 0/],
      [
        { minGrowthRatio: 2048 },
        /checkpoint\.minGrowthRatio must be a finite number from 0 to 1024, found 2048/,
      ],
      [{ minGrowthRatio: Number.NaN }, /checkpoint\.minGrowthRatio must be a finite number from 0 to 1024/],
    ] as const) {
      expect(() =>
        createSessionStore({ backend: createMemoryBackend(), clock: clock(), checkpoint }),
      ).toThrow(pattern)
    }
    expect(() =>
      createSessionStore({
        backend: createMemoryBackend(),
        clock: clock(),
        checkpoint: { minGrowthRatio: 0.5 },
      }),
    ).not.toThrow()
  })
})

describe('core checkpoints: equality with a full replay over compactions', () => {
  it('a session compacted twice opens from a checkpoint taken between the compactions exactly as a full replay', async () => {
    const backend = createMemoryBackend()
    const { store } = makeStore(backend, { checkpoint: EAGER })
    const writer = await store.create({ id: 'compacted' })
    writer.append({ type: 'system/message', data: { message: { role: 'system', content: 'be brief' } } })
    let turn = 1
    const compact = async (): Promise<void> => {
      const surface = writer.projection.surface()
      for (const input of planCompaction(writer.projection, {
        compactionId: `c-${turn}`,
        startSeq: surface[1]!.seq,
        endSeq: surface.at(-1)!.seq,
        summary: `summary at ${turn}`,
        reason: 'context-window',
      })) {
        writer.append(input)
      }
      await writer.flush()
    }
    for (; turn <= 4; turn++) appendTurn(writer, turn)
    await compact()
    for (; turn <= 8; turn++) appendTurn(writer, turn)
    await writer.flush()
    await nextTask()
    const atSeq = (await storedRecord(backend, 'compacted'))!.seq
    await writer.close({ discardUnflushed: true })
    const { store: plain } = makeStore(backend, { checkpoint: { enabled: false } })
    const more = await plain.openWriter('compacted')
    appendTurn(more, turn++)
    const last = more.projection.surface()
    for (const input of planCompaction(more.projection, {
      compactionId: 'c-last',
      startSeq: last[1]!.seq,
      endSeq: last.at(-1)!.seq,
      summary: 'final summary',
      reason: 'context-window',
    })) {
      more.append(input)
    }
    await more.close()
    const fast = await store.openReader('compacted')
    const full = await plain.openReader('compacted')
    expect(fast.checkpoint).toMatchObject({ used: true, seq: atSeq })
    expect(fast.projection.snapshot()).toEqual(full.projection.snapshot())
    expect(fast.projection.deriveMessages()).toEqual(full.projection.deriveMessages())
    expect(fast.projection.deriveMessages()[1]).toMatchObject({ role: 'user' })
  })
})
