/**
 * The core's writer options reach `store.create` and `store.openWriter` through
 * `openAgentsSession` (the shared cases of tooling/adapters/writer-options.ts).
 */
import { createMemoryBackend, createSessionStore } from '@agent-ledger/session-store'

import { describeWriterOptions } from '../../../tooling/adapters/writer-options.ts'
import { openAgentsSession } from '../src/index.ts'

describeWriterOptions({
  name: 'openAgentsSession',
  newStore: () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: () => new Date().toISOString(), owner: 'store-owner' })
    return { backend, store }
  },
  open: openAgentsSession,
  writeLate: (session) => session.addItems([{ type: 'message', role: 'user', content: 'late' }]),
})
