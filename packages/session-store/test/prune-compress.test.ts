/**
 * `store.prune({ compressIdleMs })` (issue 27): the kept idle sessions go through the
 * backend's `compress` capability after the deletes; a backend without one refuses the
 * policy before anything is removed; one session that cannot be compressed is skipped with
 * its reason, never stopping the prune. The JSONL capability itself: `agent-ledger prune
 * --compress-idle` (cli prune.test.ts).
 */
import { describe, expect, it } from 'vitest'

import {
  createMemoryBackend,
  createSessionStore,
  SessionStoreError,
  SessionStoreErrorCode,
} from '../src/index.ts'
import type { SessionBackend } from '../src/index.ts'

const DAY = 86_400_000
const user = { type: 'user/message', data: { message: { role: 'user', content: 'hi' } } } as const

/** A memory store with sessions last updated `ages` days before "now" (day 400). */
async function seeded(
  ages: Record<string, number>,
  compress?: NonNullable<SessionBackend['capabilities']['compress']>,
) {
  let now = 0
  const memory = createMemoryBackend({ now: () => now })
  // The memory backend with a scripted compress capability (its methods bound to it: private fields).
  const capabilities = compress === undefined ? memory.capabilities : { ...memory.capabilities, compress }
  const backend = new Proxy(memory, {
    get(target, key) {
      if (key === 'capabilities') return capabilities
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  }) as SessionBackend
  const at = () => new Date(now).toISOString()
  const store = createSessionStore({ backend, clock: at })
  for (const [id, age] of Object.entries(ages).sort((a, b) => b[1] - a[1])) {
    now = (400 - age) * DAY
    const writer = await store.create({ id, header: {} })
    writer.append(user)
    await writer.close()
  }
  now = 400 * DAY
  return store
}

describe('prune with compressIdleMs', () => {
  it('compresses the kept sessions idle for longer than compressIdleMs, after deleting the retired ones', async () => {
    const calls: string[] = []
    const store = await seeded(
      { old: 100, idle: 40, idle2: 35, fresh: 2 },
      {
        compress: (id) => {
          calls.push(id)
          if (id === 'idle2') return Promise.resolve({ changed: false })
          return Promise.resolve({ changed: true })
        },
      },
    )
    const dry = await store.prune({ olderThanMs: 90 * DAY, compressIdleMs: 30 * DAY, dryRun: true })
    expect(calls).toEqual([])
    expect(dry.compressed.map((session) => session.id)).toEqual(['idle2', 'idle'])
    let plan: unknown
    const report = await store.prune({
      olderThanMs: 90 * DAY,
      compressIdleMs: 30 * DAY,
      onPlan: (sessions, planned) => {
        plan = { sessions: sessions.map((s) => s.id), compress: planned.compress.map((s) => s.id) }
      },
    })
    expect(plan).toEqual({ sessions: ['old'], compress: ['idle2', 'idle'] })
    expect(report.deleted.map((session) => session.id)).toEqual(['old'])
    expect(calls).toEqual(['idle2', 'idle'])
    expect(report.compressed).toEqual([
      { id: 'idle2', updatedAt: expect.any(String), changed: false },
      { id: 'idle', updatedAt: expect.any(String), changed: true },
    ])
    await store.close()
  })

  it('a session the backend cannot compress is skipped with its code (a live lease as live-lease); the others are compressed', async () => {
    const store = await seeded(
      { locked: 50, damaged: 45, fine: 40 },
      {
        compress: (id) => {
          if (id === 'locked')
            throw new SessionStoreError({
              code: SessionStoreErrorCode.SESSION_LOCKED,
              sessionId: id,
              message: 'held',
              details: { holder: 'w1', expiresAt: null },
            })
          if (id === 'damaged')
            throw new SessionStoreError({
              code: SessionStoreErrorCode.CORRUPT_LINE,
              sessionId: id,
              message: 'bad line 3',
            })
          return Promise.resolve({ changed: true })
        },
      },
    )
    const report = await store.prune({ compressIdleMs: 30 * DAY })
    expect(report.deleted).toEqual([])
    expect(report.compressed.map((session) => session.id)).toEqual(['fine'])
    expect(report.skipped.map((skip) => [skip.id, skip.reason, skip.holder])).toEqual([
      ['damaged', 'compress-failed', undefined],
      ['locked', 'live-lease', 'w1'],
    ])
    expect(report.skipped[0]!.message).toMatch(/CORRUPT_LINE/)
    await store.close()
  })

  it('a backend without compress refuses the policy (UNSUPPORTED) before deleting anything; a bad compressIdleMs is INVALID_OPTION', async () => {
    const store = await seeded({ old: 100, idle: 40 })
    await expect(store.prune({ olderThanMs: 90 * DAY, compressIdleMs: 30 * DAY })).rejects.toMatchObject({
      code: SessionStoreErrorCode.UNSUPPORTED,
      details: { capability: 'compress' },
    })
    await expect(store.prune({ compressIdleMs: 0 })).rejects.toMatchObject({
      code: SessionStoreErrorCode.INVALID_OPTION,
    })
    expect((await store.list()).sessions.map((session) => session.id).sort()).toEqual(['idle', 'old'])
    await store.close()
  })
})
