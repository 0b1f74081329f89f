import type { EventInput, LoggedEvent, WireMessage } from '@agent-ledger/session-events'
import type { SurfaceNode } from '@agent-ledger/session-projection'

/**
 * A log-only event of a type readers need not know: kept verbatim, never model-visible.
 * The adapter records the SDK's exact items this way (type `openai-agents/items`).
 */
export interface IgnorableEventInput {
  readonly type: string
  readonly data: unknown
  readonly ignorable: true
}

/**
 * What the adapter needs from an open session: the subset of a session writer that every
 * agent-ledger backend provides (the JSONL store's `SessionWriter` satisfies it, and so does
 * the backend-neutral core's writer). Typed structurally, so the adapter works over any backend.
 */
export interface LedgerWriter {
  /** The session id. */
  readonly id: string
  /**
   * Validates and buffers one event; synchronous. Returns the logged event with its `seq`.
   * Durable only after {@link LedgerWriter.flush}.
   */
  append(input: EventInput | IgnorableEventInput): LoggedEvent
  /** Makes every buffered event durable; resolves with the new durable seq. */
  flush(): Promise<{ readonly durableSeq: number }>
  /** The model-visible history in the OpenAI chat wire shape, derived from the log. */
  deriveMessages(): readonly WireMessage[]
  /** The projection: its surface nodes give each visible message's event seq. */
  readonly projection: { surface(): readonly SurfaceNode[] }
  /** Flushes, then releases the session. */
  close(): Promise<void>
}

/**
 * What the adapter needs from a store: create a session, open one for writing (which
 * repairs an interrupted turn before it returns), and stream a session's events.
 */
export interface LedgerStore<TWriter extends LedgerWriter = LedgerWriter> {
  /** Creates a session and opens it for writing; fails when the id exists. */
  create(request: { readonly id: string }): Promise<TWriter>
  /** Opens an existing session for writing, after repairing what a crash left open. */
  openWriter(id: string): Promise<TWriter>
  /** Streams a session's events in seq order. */
  readEvents(id: string): AsyncIterable<LoggedEvent>
}
