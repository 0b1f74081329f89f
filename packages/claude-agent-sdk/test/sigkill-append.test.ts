/**
 * A child process SIGKILLed while it appends (a real SIGKILL, at whatever point of its next
 * append it is): a store opened afresh loads a prefix of what the child meant to append that
 * holds every acknowledged entry, each entry whole (never a torn one), and the key goes on
 * (a new owner takes the lease over; the log verifies).
 */
import { hostname } from 'node:os'

import { describe, expect, it, onTestFinished } from 'vitest'

import { spawnTsChild } from '../../../tooling/adapters/child.ts'
import { testTime } from '../../../tooling/test-time.ts'
import { createClaudeSessionStore } from '../src/index.ts'
import { crossProcessStoreKinds } from './stores.ts'
import { BATCH_SIZE, bigEntry } from './support.ts'

describe.each(crossProcessStoreKinds)('SIGKILL mid-append over the %s store', (_name, kind) => {
  it(
    'load returns a prefix of the appended entries holding every acknowledged one, never a torn entry',
    async () => {
      const opened = await kind.open()
      onTestFinished(async () => {
        await opened.store.close()
        await opened.close()
      })
      const projectKey = opened.id('killed')
      const child = spawnTsChild(new URL('./fixtures/append-child.ts', import.meta.url), [
        opened.target!,
        projectKey,
        '10000',
      ])
      // Two batches acknowledged: the child is in (or entering) its third append.
      await child.waitFor(`ACKED ${2 * BATCH_SIZE}\n`)
      child.child.kill('SIGKILL')
      expect((await child.exited).signal).toBe('SIGKILL')
      const acked = Math.max(
        ...[...child.output().stdout.matchAll(/^ACKED (\d+)$/gm)].map((match) => Number(match[1])),
      )
      expect(child.output().stdout).not.toContain('DONE')

      const owner = `${hostname()}:${process.pid}`
      const claude = createClaudeSessionStore(opened.store, { owner, takeover: true })
      const key = { projectKey, sessionId: 'killed' }
      const loaded = (await claude.load(key))!
      expect(loaded.length).toBeGreaterThanOrEqual(acked)
      expect(loaded).toStrictEqual(Array.from({ length: loaded.length }, (_, n) => bigEntry(n)))

      // The key goes on: the next entry follows, the log verifies.
      const next = bigEntry(loaded.length)
      await claude.append(key, [next])
      expect(await claude.load(key)).toStrictEqual([...loaded, next])
      expect((await opened.store.verify(claude.sessionIdFor(key))).status).toBe('ok')
      await claude.close()
    },
    testTime(120_000),
  )
})
