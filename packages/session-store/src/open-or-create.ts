/**
 * Open-or-create, the way the framework adapters open a session: `openWriter` (which repairs
 * what a crash left open), and on `SESSION_NOT_FOUND` `create`. Pure: it only calls the store.
 */
import type { SessionHeaderInput } from '@agent-ledger/session-events'

import type { OpenWriterOptions, SessionStore } from './store-api.ts'
import type { SessionWriter } from './writer.ts'

/** Options of {@link openOrCreateWriter}: the writer options, and what to do when the session is missing. */
export interface OpenOrCreateOptions extends OpenWriterOptions {
  /** Create the session when it does not exist (default true); false rethrows `SESSION_NOT_FOUND`. */
  readonly create?: boolean | undefined
  /** Header fields of a session this call creates (ignored when it exists). */
  readonly header?: Partial<SessionHeaderInput> | undefined
}

/** The writer {@link openOrCreateWriter} opened, and whether it created the session. */
export interface OpenedWriter {
  readonly writer: SessionWriter
  /** True when this call created the session (it has no events yet). */
  readonly created: boolean
}

/** The error's stable code, read by shape so that errors of another copy of the package count too. */
function codeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
}

/**
 * Opens the session's writer, creating the session when it does not exist. `openWriter` gets
 * the writer options (`owner`, `leaseMs`, `takeover`, `signal`); a create gets them but
 * `takeover`, plus `header`. When another process creates the same session between the two
 * calls (`SESSION_EXISTS`), it opens that session instead, so the caller sees the winner's
 * lease (`SESSION_LOCKED` while it is live) rather than a lost race.
 *
 * @param store - The store (only its `openWriter` and `create` are called).
 * @param id - The session id.
 * @param options - The writer options, `create` (default true) and the `header` of a new session.
 * @returns The writer and whether this call created the session.
 * @throws whatever the store throws (`SESSION_NOT_FOUND` with `create: false`, `SESSION_LOCKED`,
 *   damage codes...), unchanged.
 */
export async function openOrCreateWriter(
  store: Pick<SessionStore, 'create' | 'openWriter'>,
  id: string,
  options: OpenOrCreateOptions = {},
): Promise<OpenedWriter> {
  const { create, header, ...writerOptions } = options
  try {
    return { writer: await store.openWriter(id, writerOptions), created: false }
  } catch (error) {
    if (codeOf(error) !== 'SESSION_NOT_FOUND' || create === false) throw error
  }
  const { takeover: _takeover, ...lease } = writerOptions
  try {
    return {
      writer: await store.create({ id, ...(header === undefined ? {} : { header }), ...lease }),
      created: true,
    }
  } catch (error) {
    if (codeOf(error) !== 'SESSION_EXISTS') throw error
  }
  return { writer: await store.openWriter(id, writerOptions), created: false }
}
