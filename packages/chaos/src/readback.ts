/**
 * A round's sessions read back for the checker: a baseline's saved array as events and wire
 * messages, an agent-ledger session's events and the next request its adapter derives on open.
 */
import { readFileSync } from 'node:fs'

import { fromModelMessages, openAiSdkSession } from '@agent-ledger/ai-sdk'
import { itemToWire, openAgentsSession } from '@agent-ledger/openai-agents'
import { createSessionStore } from '@agent-ledger/session-store'
import type { SessionStore } from '@agent-ledger/session-store'
import { createJsonlStore } from '@agent-ledger/session-store-jsonl'
import { openPostgresBackend } from '@agent-ledger/session-store-postgres'
import type { WireMessage } from '@agent-ledger/session-events'
import type { ModelMessage } from 'ai'

import type { CheckedSession, LoggedEvent } from './checker.ts'
import type { Subject } from './plan.ts'

/** The wire history of a baseline's saved array, and its entries as events (seq = array index). */
export function baselineSession(
  subject: Subject,
  file: string,
  saved: { id: string; acked: number },
): CheckedSession {
  const { id, acked } = saved
  let entries: unknown[]
  try {
    entries = JSON.parse(readFileSync(file, 'utf8')) as unknown[]
  } catch {
    entries = [] // never saved (or an unreadable save): the history is empty
  }
  const events: LoggedEvent[] = []
  const wire: WireMessage[] = []
  entries.forEach((entry, seq) => {
    const messages =
      subject.kind === 'baseline' && subject.baseline === 'ai-sdk-recipe'
        ? fromModelMessages([entry as ModelMessage], { unsupported: 'placeholder' }).map((e) => e.message)
        : [itemToWire(entry as Parameters<typeof itemToWire>[0])]
    for (const message of messages) {
      const previous = wire.at(-1)
      // Parallel function_call items are one assistant message on the wire.
      if (
        message.role === 'assistant' &&
        message.tool_calls !== undefined &&
        previous?.role === 'assistant' &&
        previous.tool_calls !== undefined &&
        (message.content ?? '') === ''
      )
        wire[wire.length - 1] = { ...previous, tool_calls: [...previous.tool_calls, ...message.tool_calls] }
      else wire.push(message)
      events.push({ seq, type: message.role === 'tool' ? 'tool/result' : 'message', data: { message } })
    }
  })
  return { id, events, ackedSeq: acked, nextRequest: wire }
}

export async function openLedgerStore(
  subject: Subject & { kind: 'ledger' },
  target: string,
): Promise<SessionStore & { close(): Promise<void> }> {
  const owner = `chaos-checker:${globalThis.process.pid}`
  if (subject.store === 'postgres')
    return createSessionStore({
      backend: await openPostgresBackend({ connectionString: target }),
      clock: () => new Date().toISOString(),
      owner,
    })
  return createJsonlStore({ root: target, owner })
}

/**
 * Reads a ledger session back: its events, then the next request as the adapter derives it on
 * open (the Claude store: the core writer's projection of the mapped transcript, under the
 * session id of the SDK key, `stored`).
 */
export async function ledgerSession(
  store: SessionStore,
  subject: Subject & { kind: 'ledger' },
  saved: { id: string; stored: string; acked: number },
): Promise<CheckedSession> {
  const { id, stored, acked } = saved
  // The good prefix even of a damaged log: a damaged session still counts what it holds.
  const read = await store.openReader(stored, { allowDamaged: true }).catch((error: unknown) => error)
  const lastSeq = read instanceof Error ? -1 : (read as { lastSeq: number }).lastSeq
  const events: LoggedEvent[] = []
  if (lastSeq >= 0) for await (const event of store.readEvents(stored, { toSeq: lastSeq })) events.push(event)
  try {
    const session =
      subject.adapter === 'ai-sdk'
        ? await openAiSdkSession(store, id, { create: false, takeover: true })
        : subject.adapter === 'openai-agents'
          ? await openAgentsSession(store, id, { takeover: true, create: false })
          : { writer: await store.openWriter(stored, { takeover: true }) }
    const nextRequest = session.writer.deriveMessages()
    await ('close' in session ? session.close() : session.writer.close())
    return { id, events, ackedSeq: acked, nextRequest }
  } catch (error) {
    return { id, events, ackedSeq: acked, nextRequest: [], openError: String(error) }
  }
}
