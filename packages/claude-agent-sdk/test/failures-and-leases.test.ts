/**
 * A failing store surfaces as a rejected promise (what the SDK retries, then reports as
 * `mirror_error` without failing the turn), nothing half-written stays buffered, and the
 * fleet recipe: a second owner is refused with SESSION_LOCKED, takes over with `takeover`.
 */
import { createMemoryBackend, createSessionStore, SessionStoreError } from '@agent-ledger/session-store'
import type { AppendBatch, SessionBackend, WriterLease } from '@agent-ledger/session-store'
import { expect, it } from 'vitest'

import { createClaudeSessionStore } from '../src/index.ts'
import { waitUntil } from '../../../tooling/test-time.ts'
import { titleEntry, userEntry } from './support.ts'

const clock = (): string => new Date().toISOString()

/** A memory backend whose appends fail with DISK_FULL while `failing.on` is true (a fault at the port). */
function failingBackend(): { backend: SessionBackend; failing: { on: boolean } } {
  const inner = createMemoryBackend()
  const failing = { on: false }
  const backend = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'append') {
        return (lease: WriterLease, batch: AppendBatch) => {
          if (failing.on) {
            return Promise.reject(
              new SessionStoreError({
                code: 'DISK_FULL',
                sessionId: lease.sessionId,
                message: 'injected: no space left',
              }),
            )
          }
          return target.append(lease, batch)
        }
      }
      const value: unknown = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
  return { backend, failing }
}

it('"Rejection is retried (3 attempts total) with short backoff": a failing backend rejects with its code, the attempt that succeeds stores the batch once', async () => {
  const { backend, failing } = failingBackend()
  const store = createSessionStore({ backend, clock, owner: 'w' })
  const claude = createClaudeSessionStore(store)
  const key = { projectKey: 'p', sessionId: 'fail' }
  await claude.append(key, [userEntry('fail', 1)])
  failing.on = true
  const batch = [userEntry('fail', 2), titleEntry('fail', 'no uuid'), userEntry('fail', 3)]
  // The SDK's first two attempts fail (a rejected promise, never a throw); what was acknowledged is intact.
  await expect(claude.append(key, batch)).rejects.toMatchObject({ code: 'DISK_FULL' })
  await expect(claude.append(key, batch)).rejects.toMatchObject({ code: 'DISK_FULL' })
  failing.on = false
  expect(await claude.load(key)).toStrictEqual([userEntry('fail', 1)])
  // The third lands once, the entry without a uuid too (the failed attempts left nothing buffered).
  await claude.append(key, batch)
  expect(await claude.load(key)).toStrictEqual([userEntry('fail', 1), ...batch])
  // "After the final failure the batch is dropped": a batch that never lands leaves the next one whole.
  failing.on = true
  for (let attempt = 0; attempt < 3; attempt += 1) {
    await expect(claude.append(key, [userEntry('fail', 4)])).rejects.toMatchObject({ code: 'DISK_FULL' })
  }
  failing.on = false
  await claude.append(key, [userEntry('fail', 5)])
  expect(await claude.load(key)).toStrictEqual([userEntry('fail', 1), ...batch, userEntry('fail', 5)])
  expect((await store.verify(claude.sessionIdFor(key))).status).toBe('ok')
  await claude.close()
  await store.close()
})

it('"timeouts (60s) are not retried since the in-flight call may still land": a late batch lands, before the batches called after it', async () => {
  const inner = createMemoryBackend()
  let release: (() => void) | undefined
  const held = { on: false }
  const backend = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'append') {
        return async (lease: WriterLease, batch: AppendBatch) => {
          if (held.on) await new Promise<void>((resolve) => (release = resolve))
          return target.append(lease, batch)
        }
      }
      const value: unknown = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
  const store = createSessionStore({ backend, clock, owner: 'w' })
  const claude = createClaudeSessionStore(store)
  const key = { projectKey: 'p', sessionId: 'late' }
  await claude.append(key, [userEntry('late', 1)])
  held.on = true
  // The SDK gives up waiting on this call (its timeout) and goes on with the next batch.
  const late = claude.append(key, [userEntry('late', 2)])
  const next = claude.append(key, [userEntry('late', 3)])
  await waitUntil('the late batch at the backend', () => release !== undefined)
  held.on = false
  release!()
  await Promise.all([late, next])
  expect(await claude.load(key)).toStrictEqual([1, 2, 3].map((n) => userEntry('late', n)))
  await claude.close()
  await store.close()
})

it('the fleet recipe: another owner is refused SESSION_LOCKED, takes over with takeover, the old writer is fenced', async () => {
  const backend = createMemoryBackend()
  const shared = new Proxy(backend, {
    get(target, property) {
      // Closing one store must not close the backend the other still uses.
      if (property === 'close') return () => Promise.resolve()
      const value: unknown = Reflect.get(target, property)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
  const key = { projectKey: 'p', sessionId: 'fleet' }
  const first = createClaudeSessionStore(createSessionStore({ backend: shared, clock }), {
    owner: 'host-a:1',
  })
  await first.append(key, [userEntry('fleet', 1)])
  const second = createClaudeSessionStore(createSessionStore({ backend: shared, clock }), {
    owner: 'host-b:2',
  })
  const refused = await second.append(key, [userEntry('fleet', 2)]).catch((error: unknown) => error)
  expect(refused).toMatchObject({ code: 'SESSION_LOCKED' })
  expect(String((refused as Error).message)).toContain('host-a:1')
  const taking = createClaudeSessionStore(createSessionStore({ backend: shared, clock }), {
    owner: 'host-b:2',
    takeover: true,
  })
  await taking.append(key, [userEntry('fleet', 2)])
  await expect(first.append(key, [userEntry('fleet', 3)])).rejects.toMatchObject({ code: 'FENCED' })
  expect(await taking.load(key)).toStrictEqual([userEntry('fleet', 1), userEntry('fleet', 2)])
  await taking.close()
  await second.close()
  await first.close()
})

it('a transcript another owner wrote after this store loaded it: the first append is refused TRANSCRIPT_MOVED, nothing written (chaos seed 11)', async () => {
  const backend = createMemoryBackend()
  const shared = new Proxy(backend, {
    get(target, property) {
      if (property === 'close') return () => Promise.resolve()
      const value: unknown = Reflect.get(target, property)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
  const key = { projectKey: 'p', sessionId: 'moved' }
  const open = (owner: string) =>
    createClaudeSessionStore(createSessionStore({ backend: shared, clock }), { owner })
  // A worker loads the key (none yet), then stalls before its first append; its lease was never taken.
  const stale = open('host-a:1')
  expect(await stale.load(key)).toBeNull()
  // Another worker runs the session meanwhile and releases its lease.
  const other = open('host-b:2')
  await other.append(key, [userEntry('moved', 1), userEntry('moved', 2)])
  await other.close()
  // The stalled worker's turn would land on top of the other's transcript: refused, with the counts.
  const refused = await stale.append(key, [userEntry('moved', 7)]).catch((error: unknown) => error)
  expect(refused).toMatchObject({ code: 'TRANSCRIPT_MOVED', details: { loaded: 0, found: 2 } })
  expect(String((refused as Error).message)).toContain('(0 entries)')
  // The SDK retries a rejected append: the retries are refused too, until the key is loaded again.
  for (let attempt = 0; attempt < 2; attempt += 1) {
    await expect(stale.append(key, [userEntry('moved', 7)])).rejects.toMatchObject({
      code: 'TRANSCRIPT_MOVED',
    })
  }
  const reader = open('host-c:3')
  expect(await reader.load(key)).toStrictEqual([userEntry('moved', 1), userEntry('moved', 2)])
  // The same after a load that found entries: loaded 2, another owner appends a third.
  const extender = open('host-d:4')
  await extender.append(key, [userEntry('moved', 3)])
  await extender.close()
  await expect(reader.append(key, [userEntry('moved', 4)])).rejects.toMatchObject({
    code: 'TRANSCRIPT_MOVED',
    details: { loaded: 2, found: 3 },
  })
  // Loaded again, it goes on from what is stored; a load while its own writer is open checks nothing.
  expect(await reader.load(key)).toHaveLength(3)
  await reader.append(key, [userEntry('moved', 4)])
  expect(await reader.load(key)).toHaveLength(4)
  await reader.append(key, [userEntry('moved', 5)])
  expect(await reader.load(key)).toStrictEqual([1, 2, 3, 4, 5].map((n) => userEntry('moved', n)))
  await reader.close()
  await stale.close()
})
