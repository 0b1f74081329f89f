/**
 * Conformance case "v0 read": a session stored in an older format (a file backend's v0
 * `session.jsonl`) is read through the core as the migrated session, in memory: the same
 * events by every read path, nothing written by a read, a write open refused until it is migrated.
 * Skipped for a backend that has no older format (no `plantOlderSession` in its harness).
 */
import { SessionStoreErrorCode } from '../session-store-error.ts'
import { deepEqual, equal, ok, rejects } from './assert.ts'
import { events } from './harness.ts'
import type { Case } from './harness.ts'

export const OLDER_CASES: readonly Case[] = [
  {
    title:
      'v0 read: an older-format session opens migrated in memory (openReader, readEvents, verify agree), its bytes untouched by reads; a write open is UNSUPPORTED (migrate first)',
    run: async (context) => {
      const id = context.id('v0')
      const planted = await context.harness.plantOlderSession?.(id)
      if (planted === undefined) return
      const before = await planted.fingerprint()
      const store = context.store('v0-reader')
      const read = await store.openReader(id)
      equal(read.header.id, id, 'header id')
      equal(read.header.version, 4, 'migrated header version')
      ok(read.header.migratedFrom !== undefined, 'the header names the generation it was migrated from')
      equal(read.lastSeq, planted.events - 1, 'lastSeq of the migrated session')
      equal(read.error, null, 'no damage')
      const all = await events(store, id)
      deepEqual(
        all.map((event) => event.seq),
        Array.from({ length: planted.events }, (_, seq) => seq),
        'readEvents seqs',
      )
      deepEqual(read.projection.lastEvent, all.at(-1), 'the projection ends with the last event read')
      const report = await store.verify(id)
      equal(report.status, 'ok', 'verify status')
      equal(report.events, planted.events, 'verify events')
      const again = await store.openReader(id)
      deepEqual(again.projection.snapshot(), read.projection.snapshot(), 'a second read, the same projection')
      equal(await planted.fingerprint(), before, 'stored bytes after the reads')
      const refused = await rejects(
        () => store.openWriter(id),
        SessionStoreErrorCode.UNSUPPORTED,
        'write open',
      )
      equal(refused.details['capability'], 'migrate', 'the capability the write open needs')
      deepEqual(await events(store, id), all, 'the events after the refused write open')
      ok(context.backend.capabilities.migrate !== undefined, 'a backend with older formats offers migrate')
      await store.close()
    },
  },
]
