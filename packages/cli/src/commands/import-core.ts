import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { ImportedSession } from '@agent-ledger/import'
import type { EventRegistry } from '@agent-ledger/session-events'
import { lineCrc } from '@agent-ledger/session-store'
import type { SessionStore as CoreStore } from '@agent-ledger/session-store'
import { createJsonlBackend, createSessionStore } from '@agent-ledger/session-store-jsonl'

/**
 * Creates an imported session in a database store with exactly the lines an import into a
 * JSONL root writes: the session is first published by the JSONL store into a private
 * temporary root (its create accepts an imported fork's own events after the
 * `session/end-seed` marker, which the core's create refuses), then its header line and
 * every line are published in the database with one atomic backend create (as `copy` does),
 * and the temporary root is removed.
 *
 * @param store - The core store over the database.
 * @param session - The imported session.
 * @param options - The import's event registry and clock (it answers each event's source time).
 * @returns Something to close, like the writer of a create (nothing stays open).
 */
export async function createThroughCore(
  store: CoreStore,
  session: ImportedSession,
  options: { readonly registry: EventRegistry; readonly clock: () => string },
): Promise<{ close(): Promise<void> }> {
  const staging = await mkdtemp(join(tmpdir(), 'agent-ledger-import-'))
  try {
    const files = createSessionStore({
      root: staging,
      registry: options.registry,
      clock: options.clock,
      logger: { warn: () => undefined },
    })
    const writer = await files.create({ id: session.id, header: session.header, seed: session.events })
    const header = writer.header
    await writer.close()
    const backend = createJsonlBackend({ root: staging, registry: options.registry })
    try {
      const headerLine = (await backend.readHeader(session.id)).line
      const lines: string[] = []
      for await (const stored of backend.read(session.id, { fromSeq: 0 })) lines.push(stored.line)
      await store.backend.create({
        id: session.id,
        headerLine,
        header,
        lines,
        lastCrc: lines.length === 0 ? null : lineCrc(lines.at(-1)!),
      })
    } finally {
      await backend.close()
    }
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
  return { close: () => Promise.resolve() }
}
