// Type-checked against the published declarations only (no source condition here).
import type { SessionEvent, SessionEventType, WireMessage } from '@agent-ledger/session-events'
import { planRepair, type RepairPlan } from '@agent-ledger/loop-repair'
import { createSessionLog, type SessionLog } from '@agent-ledger/session-projection'
import type { SessionStore } from '@agent-ledger/session-store'
import { createJsonlStore, type JsonlStore } from '@agent-ledger/session-store-jsonl'
import {
  openPostgresBackend,
  type PostgresBackend,
  type PostgresBackendOptions,
} from '@agent-ledger/session-store-postgres'

declare module '@agent-ledger/session-events' {
  interface SessionEventMap {
    'consumer/note': { text: string }
  }
}

const log: SessionLog = createSessionLog({ clock: { now: () => '2026-01-01T00:00:00.000Z' } })
const note = log.append({ type: 'consumer/note', data: { text: 'hi' } })
const text: string = note.data.text
// @ts-expect-error: the payload of a merged event is typed
log.append({ type: 'consumer/note', data: { text: 1 } })

function describe(event: SessionEvent): string {
  switch (event.type) {
    case 'consumer/note':
      return event.data.text
    case 'user/message':
      return typeof event.data.message.content === 'string' ? event.data.message.content : 'parts'
    default:
      return event.type
  }
}

const plan: RepairPlan = planRepair(log.events)
const messages: readonly WireMessage[] = log.deriveMessages()
const jsonl: JsonlStore = createJsonlStore({ root: '/nonexistent' })
// The JSONL store is the core's store: it goes wherever a `SessionStore` is taken.
const store: SessionStore = jsonl
const kind: SessionEventType = 'turn/start'
const pgOptions: PostgresBackendOptions = {
  connectionString: 'postgres://ledger@localhost/ledger',
  poolSize: 4,
}
const openBackend: (options: PostgresBackendOptions) => Promise<PostgresBackend> = openPostgresBackend
export { describe, jsonl, kind, messages, openBackend, pgOptions, plan, store, text }
