/**
 * The conformance suite's harness types and the helpers its cases share.
 */
import type { LoggedEvent } from '@agent-ledger/session-events'

import type { SessionEncryption } from '../encryption.ts'
import type { AbortSignalLike, SessionBackend } from '../port.ts'
import type { SessionStore } from '../store-api.ts'

/** What `makeBackend` returns for one test. */
export interface ConformanceHarness {
  /** A backend over fresh (or test-isolated) storage. */
  readonly backend: SessionBackend
  /**
   * A NEW backend instance over the same storage (a restart, or a second process). Without
   * it, the durability test is skipped and the two-writer tests share `backend`.
   */
  reopen?(): Promise<SessionBackend>
  /**
   * Lets `ms` milliseconds pass for the backend's lease clock (the memory backend:
   * advance its logical clock). Default: really wait `ms` (`setTimeout`).
   */
  advanceTime?(ms: number): Promise<void>
  /**
   * Simulates a full disk (true) and frees it (false), when the backend can: the release
   * test then checks that releasing a lease needs no space.
   */
  setFull?(full: boolean): Promise<void> | void
  /**
   * Stores a session in an older format the backend reads through its `migrate` capability
   * (a file backend: a v0 `session.jsonl`), when it has one. The "v0 read" case then checks
   * that the core reads it migrated in memory and leaves the stored bytes as they were.
   * Without it that case is skipped (a backend with no older format has nothing to read).
   *
   * @returns How many events the session holds once migrated, and a fingerprint of every
   *   byte stored for it (equal before and after a read).
   */
  plantOlderSession?(
    id: string,
  ): Promise<{ readonly events: number; readonly fingerprint: () => Promise<string> }>

  /**
   * Makes session `id` (created, holding events, no writer open) fail for real in a way this
   * backend has a typed error for, and returns that error's code and the `details` members
   * it carries: the "code preserved" case then checks that opening the session for write,
   * appending and flushing through `createSessionStore` rejects with exactly that code and
   * those details (the core must not rewrap a backend's error). Examples: a file backend
   * replaces the log by a symbolic link (`SYMLINK_REFUSED`); a database installs a trigger
   * that refuses the session's inserts (`BACKEND_FAILED`, `details.sqlstate`); the memory
   * backend fills its disk (`DISK_FULL`). Without it, that case is skipped.
   */
  injectFault?(id: string): Promise<InjectedFault>
  /** Frees the storage and closes every backend instance made. */
  cleanup(): Promise<void>
}

/** What {@link ConformanceHarness.injectFault} made happen: the code and details the caller must see. */
export interface InjectedFault {
  readonly code: string
  /** Members of the error's `details` that must reach the caller with these values. */
  readonly details?: Readonly<Record<string, unknown>> | undefined
}

/** Options of `runBackendConformance`. */
export interface ConformanceOptions {
  /** The backend's name, in the describe block's title. */
  readonly name: string
  /** Makes a harness for one test. Every test gets its own. */
  readonly makeBackend: () => Promise<ConformanceHarness>
  /** The framework's `describe`. */
  readonly describe: (name: string, body: () => void) => void
  /** The framework's `it`/`test`; `timeout` is passed as the third argument. */
  readonly it: (name: string, body: () => Promise<void>, timeout?: number) => void
  /**
   * Prefix of every session id the suite creates (default `conf`). Pass a unique one per
   * run when `makeBackend` does not give empty storage.
   */
  readonly idPrefix?: string | undefined
  /** Lease length for the expiry test, in ms (default 2,000; the test lets 1.5 x pass). */
  readonly leaseMs?: number | undefined
  /** Per-test timeout passed to `it`, in ms (default 30,000). */
  readonly timeoutMs?: number | undefined
  /**
   * Runs every case over encrypted sessions: each store the suite makes gets this
   * `encryption` option. The cases that inspect stored bytes for plain event data, or need
   * projection checkpoints (an encrypted session stores none), are skipped then.
   */
  readonly encryption?: SessionEncryption | undefined
}

export interface Case {
  readonly title: string
  readonly run: (context: CaseContext) => Promise<void>
  /** Why the case does not apply to encrypted sessions (it is skipped when `encryption` is set). */
  readonly plainOnly?: string | undefined
}

export interface CaseContext {
  readonly harness: ConformanceHarness
  readonly backend: SessionBackend
  readonly options: ConformanceOptions
  /** A session id unique to this test. */
  readonly id: (name: string) => string
  /** A store over `backend` (or another instance) writing as `owner`. */
  readonly store: (owner?: string, backend?: SessionBackend, leaseMs?: number) => SessionStore
  /** A second backend instance over the same storage, or `backend` itself. */
  readonly second: () => Promise<SessionBackend>
  readonly advance: (ms: number) => Promise<void>
}

declare const setTimeout: (run: () => void, ms: number) => unknown
declare const AbortController: new () => { readonly signal: AbortSignalLike; abort(reason?: unknown): void }

/**
 * A new `AbortController` (a global of every runtime the suite targets).
 *
 * @returns The controller.
 */
export function abortController(): { readonly signal: AbortSignalLike; abort(reason?: unknown): void } {
  return new AbortController()
}

/**
 * Really waits `ms` milliseconds (the default `advanceTime`).
 *
 * @param ms - How long.
 * @returns A promise resolved after `ms`.
 */
export function wait(ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    setTimeout(resolve, ms)
  })
}

/** The polling sleep `follow` uses when a backend cannot notify: a timer that an abort cuts short. */
export function pollSleep(ms: number, signal?: AbortSignalLike): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted === true) {
      resolve()
      return
    }
    const done = (): void => {
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
    setTimeout(done, ms)
  })
}

export function makeClock(): () => string {
  let tick = 0
  return () => {
    tick += 1
    return new Date(Date.UTC(2026, 0, 1) + tick).toISOString()
  }
}

export async function lines(backend: SessionBackend, id: string): Promise<string[]> {
  const found: string[] = []
  for await (const stored of backend.read(id, { fromSeq: 0 })) found.push(stored.line)
  return found
}

export async function events(store: SessionStore, id: string): Promise<LoggedEvent[]> {
  const found: LoggedEvent[] = []
  for await (const event of store.readEvents(id)) found.push(event)
  return found
}

export const user = (content: string) =>
  ({ type: 'user/message', data: { message: { role: 'user', content } } }) as const

/** A turn with one tool call that got its result, then a second turn left open with an unanswered call. */
export async function writeTurns(store: SessionStore, id: string): Promise<void> {
  const writer = await store.create({ id, header: { cwd: '/conformance' } })
  writer.append({ type: 'turn/start', data: { turn: 1 } })
  writer.append(user('list files'))
  writer.append({
    type: 'assistant/message',
    data: {
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
      },
    },
  })
  await writer.flush()
  writer.append({ type: 'tool/call', data: { callId: 'c1', name: 'ls', arguments: '{}' } })
  writer.append({
    type: 'tool/result',
    data: { message: { role: 'tool', tool_call_id: 'c1', content: 'a b' } },
    sourceEventSeqs: [3],
  })
  writer.append({ type: 'assistant/message', data: { message: { role: 'assistant', content: 'two files' } } })
  writer.append({ type: 'turn/end', data: { turn: 1, reason: 'completed' } })
  await writer.close()
}
