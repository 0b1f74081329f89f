/**
 * Conformance case "v0 read": a session stored in an older format (a file backend's v0
 * `session.jsonl`) is read through the core as the migrated session, in memory: the same
 * events by every read path, nothing written by a read; a write open migrates it first (the
 * backend's `migrate` capability publishes the current format) and reads stay the same.
 * Skipped for a backend that has no older format (no `plantOlderSession` in its harness).
 */
import { deepEqual, equal, ok } from './assert.ts'
import { events } from './harness.ts'
import type { Case } from './harness.ts'

export const OLDER_CASES: readonly Case[] = [
  {
    title:
      'v0 read: an older-format session opens migrated in memory (openReader, readEvents, verify agree), its bytes untouched by reads; a write open migrates it first, the same events',
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
      const migrate = context.backend.capabilities.migrate
      ok(migrate !== undefined, 'a backend with older formats offers migrate')
      equal(await migrate!.needsMigration(id), true, 'needsMigration before the write open')
      const writer = await store.openWriter(id)
      await writer.close()
      equal(await migrate!.needsMigration(id), false, 'the write open published the current format')
      deepEqual(await events(store, id), all, 'the events after the write open')
      await store.close()
    },
  },
]
