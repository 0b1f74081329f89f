/** Opening an agent-ledger session as an OpenAI Agents SDK `Session`. */
import { openOrCreateWriter } from '@agent-ledger/session-store'
import type { OpenWriterOptions, SessionStore } from '@agent-ledger/session-store'

import { OPERATION_EVENT_TYPE } from './history-ops.ts'
import type { RecordedOperation } from './history-ops.ts'
import { AgentLedgerSession } from './ledger-session.ts'
import { ITEMS_EVENT_TYPE } from './session-options.ts'
import type { ItemRecord, OpenAgentsSessionOptions, RecordedItems } from './session-options.ts'

/**
 * Opens (or creates) an agent-ledger session as an OpenAI Agents SDK `Session`. Opening an
 * existing session goes through the store's `openWriter`, which repairs what a crash left
 * open (a placeholder result for every unanswered function call) before anything else is
 * written, so `getItems()` hands the runner those placeholders.
 *
 * Reads no events of its own: the exact items recorded beside the surface and the recorded
 * history transactions are the projection's annotations, which the store restores from the
 * session's checkpoint when it has one.
 *
 * @param store - An agent-ledger store (`createJsonlStore`, or `createSessionStore` over any backend).
 * @param id - The session id.
 * @param options - `create` when missing (default true), and the writer options.
 * @returns The session; close it when done.
 * @throws whatever the store throws (`SESSION_LOCKED`, damage codes...).
 */
export async function openAgentsSession(
  store: SessionStore,
  id: string,
  options: OpenAgentsSessionOptions = {},
): Promise<AgentLedgerSession> {
  const { writer } = await openOrCreateWriter(store, id, {
    ...writerOptions(options),
    create: options.create,
  })
  const recorded = new Map<number, readonly ItemRecord[]>()
  const operations = new Map<string, RecordedOperation>()
  // The adapter's events come from the projection's annotations (restored from the session's
  // checkpoint when it has one): no read of the log from seq 0.
  for (const event of writer.projection.annotations()) {
    if (event.type === OPERATION_EVENT_TYPE) {
      const data = event.data as Partial<RecordedOperation> | null
      if (typeof data?.operationId === 'string' && typeof data.digest === 'string')
        operations.set(data.operationId, data as RecordedOperation)
      continue
    }
    if (event.type !== ITEMS_EVENT_TYPE) continue
    const data = event.data as Partial<RecordedItems> | null
    if (typeof data?.forSeq === 'number' && Array.isArray(data.items)) recorded.set(data.forSeq, data.items)
  }
  return new AgentLedgerSession(writer, recorded, { operations, compact: options.compact })
}

/** The core's writer options out of the adapter's options (only those given). */
function writerOptions(options: OpenAgentsSessionOptions): OpenWriterOptions {
  return {
    ...(options.owner === undefined ? {} : { owner: options.owner }),
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    ...(options.takeover === undefined ? {} : { takeover: options.takeover }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  }
}
