import { join } from 'node:path'

import type { LoggedEvent, SessionHeaderInput } from '@agent-ledger/session-events'

import type { CompressOptions, CompressResult } from './compress-session.ts'
import type { FollowOptions } from './follow-session.ts'
import type { MigrationProgress } from './migration/migrate-session.ts'
import { assertSessionId } from './session-id.ts'
import type { SessionFiles, SessionHeaderRead } from './session-files.ts'
import type { SessionWriter } from './session-writer.ts'
import type { MigrationReport } from './store-generations.ts'
import type { LogEncoding } from './zstd-log-writer.ts'
import type {
  SalvageReport,
  SessionReadResult,
  SessionStore,
  SessionStoreOptions,
  SessionSummary,
  VerifyReport,
} from './store/api.ts'
import { compress, migrate } from './store/compress-migrate.ts'
import { createStoreContext } from './store/context.ts'
import type { StoreContext } from './store/context.ts'
import { create } from './store/create.ts'
import { openWriter } from './store/open-writer.ts'
import { list, openReader, readEvents, verify } from './store/read.ts'
import { fork, salvage } from './store/salvage-fork.ts'
import { follow, readHeader, sessionFiles } from './store/views.ts'
import type { JsonlStoreError } from './jsonl-store-error.ts'

/**
 * The store: a thin shell over the operations in `src/store/` (one module per concern:
 * create and publish, open for write and repair, read/verify/list, fork and salvage,
 * generations and migration, compress, the encoding-blind views), all over one
 * {@link StoreContext} of resolved options.
 */
class SessionStoreImpl implements SessionStore {
  readonly root: string
  readonly #ctx: StoreContext

  constructor(options: SessionStoreOptions) {
    this.root = options.root
    this.#ctx = createStoreContext(options)
  }

  sessionDirectory(id: string): string {
    return join(this.root, assertSessionId(id))
  }

  create(request: {
    readonly id: string
    readonly header?: Partial<SessionHeaderInput>
    readonly seed?: readonly LoggedEvent[] | AsyncIterable<readonly LoggedEvent[]>
    readonly encoding?: LogEncoding
    readonly signal?: { readonly aborted: boolean; readonly reason?: unknown } | undefined
  }): Promise<SessionWriter> {
    return create(this.#ctx, request)
  }

  openWriter(id: string): Promise<SessionWriter> {
    return openWriter(this.#ctx, id)
  }

  openReader(id: string, options: { readonly allowDamaged?: boolean } = {}): Promise<SessionReadResult> {
    return openReader(this.#ctx, id, options)
  }

  readEvents(
    id: string,
    options: { readonly fromSeq?: number; readonly toSeq?: number } = {},
  ): AsyncIterable<LoggedEvent> {
    return readEvents(this.#ctx, id, options)
  }

  verify(id: string): Promise<VerifyReport> {
    return verify(this.#ctx, id)
  }

  list(): Promise<{ sessions: SessionSummary[]; problems: { id: string; error: JsonlStoreError }[] }> {
    return list(this.#ctx)
  }

  salvage(id: string, request: { readonly to: string }): Promise<SalvageReport> {
    return salvage(this.#ctx, id, request)
  }

  fork(
    id: string,
    request: { readonly to: string; readonly atSeq: number; readonly openTurn?: 'close' | 'refuse' },
  ): Promise<SessionWriter> {
    return fork(this.#ctx, id, request)
  }

  compress(id: string, options: CompressOptions = {}): Promise<CompressResult> {
    return compress(this.#ctx, id, options)
  }

  migrate(
    id: string,
    options: {
      readonly dryRun?: boolean
      readonly onProgress?: (progress: MigrationProgress) => void
    } = {},
  ): Promise<MigrationReport> {
    return migrate(this.#ctx, id, options)
  }

  readHeader(id: string): Promise<SessionHeaderRead> {
    return readHeader(this.#ctx, id)
  }

  sessionFiles(id: string): Promise<SessionFiles> {
    return sessionFiles(this.#ctx, id)
  }

  follow(id: string, options: FollowOptions = {}): AsyncIterable<LoggedEvent> {
    return follow(this.#ctx, id, options)
  }
}

/**
 * Creates a session store over a root directory. Nothing touches the disk until a method
 * is called.
 *
 * @param options - The root and optional seams (fs, clock), registry, limits, flush policy, lock settings, logger.
 * @returns The store.
 * @throws {@link JsonlStoreError} `INVALID_OPTION` when a limit or flush option is out of range.
 */
export function createSessionStore(options: SessionStoreOptions): SessionStore {
  return new SessionStoreImpl(options)
}
