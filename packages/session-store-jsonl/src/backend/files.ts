/**
 * The JSONL backend's file views: what a session directory holds, which log is read, its
 * header line. For tools that show files (the CLI's `inspect`, `verify`, `list`); the core
 * never calls them. Read-only.
 */
import { join } from 'node:path'

import { SESSION_FORMAT_VERSION } from '@agent-ledger/session-events'
import type { SignalOptions } from '@agent-ledger/session-store'

import { assertSessionId } from '../session-id.ts'
import { listSessionFiles } from '../session-files.ts'
import type { SessionFiles, SessionHeaderRead } from '../session-files.ts'
import { migrated } from './older-read.ts'
import { openLog } from './open-log.ts'
import { checkedSessionId, throwIfAborted, toPortError } from './port-errors.ts'
import { olderGeneration, peekHeader } from './session-access.ts'
import type { AccessContext } from './session-access.ts'

/** The `files` capability of a {@link JsonlBackend}: read-only views of session directories. */
export interface JsonlFilesCapability {
  /**
   * The absolute directory of a session.
   *
   * @throws {@link SessionStoreError} `INVALID_OPTION` (an id that is not a valid session id).
   */
  sessionDirectory(id: string): string
  /**
   * Lists a session's directory, each entry classified (log generations and encodings,
   * quarantined torn tails, the writer lock, temp files, the core's `core.checkpoint`, the
   * search index `search.index`), the log a read opens marked `current`, with its size.
   *
   * @throws {@link SessionStoreError} `SESSION_NOT_FOUND`, read errors (`details.jsonlCode`:
   *   `UNSAFE_ROOT`, `VERSION_TOO_NEW`, `MIXED_ENCODINGS`...).
   */
  sessionFiles(id: string, options?: SignalOptions): Promise<SessionFiles>
  /**
   * Reads the header line only of the log a read opens; an older generation is migrated in
   * memory, as a read of it is, for the v4 header its migration would write.
   *
   * @throws {@link SessionStoreError} as {@link JsonlFilesCapability.sessionFiles}.
   */
  readHeader(id: string, options?: SignalOptions): Promise<SessionHeaderRead>
}

/**
 * The `files` capability over the backend's root.
 *
 * @param ctx - File system, root, limits, registry, logger.
 * @param assertOpen - Throws `BACKEND_CLOSED` after the backend's close.
 * @returns The capability.
 */
export function filesCapability(ctx: AccessContext, assertOpen: () => void): JsonlFilesCapability {
  const guarded = async <T>(
    request: { readonly id: string; readonly what: string; readonly signal: SignalOptions['signal'] },
    run: (id: string) => Promise<T>,
  ): Promise<T> => {
    const { id, what, signal } = request
    assertOpen()
    throwIfAborted(signal, `${what} of session ${id}`, id)
    try {
      return await run(assertSessionId(id))
    } catch (error) {
      throw toPortError(error, { sessionId: id, action: `${what.toLowerCase()} of session ${id}` })
    }
  }
  return {
    sessionDirectory(id) {
      return join(ctx.root, checkedSessionId(id))
    },
    sessionFiles: (id, options) =>
      guarded({ id, what: 'List the files', signal: options?.signal }, (checked) =>
        sessionFiles(ctx, checked),
      ),
    readHeader: (id, options) =>
      guarded({ id, what: 'Read the header', signal: options?.signal }, (checked) =>
        readHeader(ctx, checked),
      ),
  }
}

/** The session directory classified, the log a read opens now (an older generation, or the v4 log) marked. */
async function sessionFiles(ctx: AccessContext, id: string): Promise<SessionFiles> {
  const older = await olderGeneration(ctx, id)
  if (older !== null) {
    const { file, version, encoding } = older.source
    return listSessionFiles(ctx.fs, { directory: older.directory, id, currentName: file, version, encoding })
  }
  const { directory, log, handle } = await openLog({ ...ctx, forkCheck: 'none' }, id)
  await handle.close().catch(() => undefined)
  return listSessionFiles(ctx.fs, {
    directory,
    id,
    currentName: log.name,
    version: SESSION_FORMAT_VERSION,
    encoding: log.encoding,
  })
}

async function readHeader(ctx: AccessContext, id: string): Promise<SessionHeaderRead> {
  const older = await olderGeneration(ctx, id)
  if (older !== null) {
    // The header its migration would write, as the port's reads see it (migrated in memory).
    const { header, source } = await migrated(ctx, id)
    return { id, header, file: source.file, version: older.source.version, encoding: older.source.encoding }
  }
  const { header, log } = await peekHeader(ctx, id)
  return { id, header, file: log.file, version: SESSION_FORMAT_VERSION, encoding: log.encoding }
}
