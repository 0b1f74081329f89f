/**
 * The core's writer options reach `store.create` and `store.openWriter` through
 * `openAiSdkSession` (the shared cases of tooling/adapters/writer-options.ts).
 */
import { createMemoryBackend, createSessionStore } from '@agent-ledger/session-store'

import { describeWriterOptions } from '../../../tooling/adapters/writer-options.ts'
import { openAiSdkSession } from '../src/index.ts'

describeWriterOptions({
  name: 'openAiSdkSession',
  newStore: () => {
    const backend = createMemoryBackend()
    const store = createSessionStore({ backend, clock: () => new Date().toISOString(), owner: 'store-owner' })
    return { backend, store }
  },
  open: openAiSdkSession,
  writeLate: async (session) => {
    session.writer.append({ type: 'user/message', data: { message: { role: 'user', content: 'late' } } })
    await session.writer.flush()
  },
})
