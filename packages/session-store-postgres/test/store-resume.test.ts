/**
 * The session core over PostgreSQL, across processes: a mini agent (a worker process)
 * writes a turn and is SIGKILLed in the middle of a tool call; another process resumes the
 * session once the dead worker's lease expires, and gets the honest repair codes.
 */
import { createSessionStore } from '@agent-ledger/session-store'
import type { SessionWriter } from '@agent-ledger/session-store'
import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import { expect, it } from 'vitest'

import type { PostgresBackend } from '../src/index.ts'
import { startWorker } from './support/children.ts'
import { describeOnServer, sessionId, useDatabase } from './support/pg.ts'

describeOnServer('session core on PostgreSQL', () => {
  let url: string
  let backend: PostgresBackend

  useDatabase((database) => ({ url, backend } = database))

  it('a worker SIGKILLed mid-tool-call; a second process resumes after its lease expires with TOOL_OUTCOME_UNKNOWN and TOOL_NOT_STARTED', async () => {
    const id = sessionId('agent')
    const worker = startWorker([url, id, 'worker-1', 'agent', '1500'])
    await worker.waitForLine((line) => line === 'mid-tool-call')
    process.kill(worker.pid, 'SIGKILL')
    expect((await worker.exited).code).toBeNull()

    const store = createSessionStore({
      backend,
      clock: () => new Date().toISOString(),
      owner: 'worker-2',
      leaseMs: 30_000,
    })
    let writer: SessionWriter | undefined
    let refusals = 0
    while (writer === undefined) {
      try {
        writer = await store.openWriter(id)
      } catch (error) {
        // The dead worker's lease is still live: no takeover, wait for it to expire.
        if (!SessionStoreError.is(error, SessionStoreErrorCode.SESSION_LOCKED)) throw error
        refusals++
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
    }
    expect(refusals).toBeGreaterThan(0)
    expect(writer.recovery.repairs.map((action) => action.code)).toEqual([
      'TOOL_OUTCOME_UNKNOWN',
      'TOOL_NOT_STARTED',
      'CLOSE_TURN',
    ])
    expect(
      writer.recovery.repairs.slice(0, 2).map((action) => ('callId' in action ? action.callId : null)),
    ).toEqual(['c2', 'c3'])
    const toolMessages = writer.deriveMessages().filter((message) => message.role === 'tool')
    expect(toolMessages.map((message) => (message as { tool_call_id: string }).tool_call_id)).toEqual([
      'c1',
      'c2',
      'c3',
    ])
    writer.append({
      type: 'assistant/message',
      data: { message: { role: 'assistant', content: 'resumed' } },
    })
    await writer.flush()
    await writer.close()
    const report = await store.verify(id)
    expect(report).toMatchObject({ status: 'ok', damage: null })
    expect((await backend.head(id)).owner).toBeNull()
  })
})
