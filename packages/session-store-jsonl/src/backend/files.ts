/**
 * The JSONL backend's file views: what a session directory holds, which log is read, its
 * header line. For tools that show files (the CLI's `inspect`, `verify`, `list`); the core
 * never calls them. Read-only, wrapping the store's own views (`src/store/views.ts`).
 */
import type { SignalOptions } from '@agent-ledger/session-store'

import type { SessionFiles, SessionHeaderRead } from '../session-files.ts'
import type { SessionStore as FileViews } from '../store/api.ts'
import { throwIfAborted, toPortError } from './port-errors.ts'

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
   * quarantined torn tails, the writer lock, temp files, the projection checkpoint), the log
   * a read opens marked `current`, with its size.
   *
   * @throws {@link SessionStoreError} `SESSION_NOT_FOUND`, read errors (`details.jsonlCode`:
   *   `UNSAFE_ROOT`, `VERSION_TOO_NEW`, `MIXED_ENCODINGS`...).
   */
  sessionFiles(id: string, options?: SignalOptions): Promise<SessionFiles>
  /**
   * Reads the header line only of the log a read opens (an older generation: the v4 header
   * its migration would write); the log is not scanned.
   *
   * @throws {@link SessionStoreError} as {@link JsonlFilesCapability.sessionFiles}.
   */
  readHeader(id: string, options?: SignalOptions): Promise<SessionHeaderRead>
}

/**
 * The `files` capability over the store's views of the same root.
 *
 * @param views - A store of the backend's root (never used to write).
 * @param assertOpen - Throws `BACKEND_CLOSED` after the backend's close.
 * @returns The capability.
 */
export function filesCapability(
  views: Pick<FileViews, 'sessionDirectory' | 'sessionFiles' | 'readHeader'>,
  assertOpen: () => void,
): JsonlFilesCapability {
  const guarded = async <T>(
    request: { readonly id: string; readonly what: string; readonly signal: SignalOptions['signal'] },
    run: () => Promise<T>,
  ): Promise<T> => {
    const { id, what, signal } = request
    assertOpen()
    throwIfAborted(signal, `${what} of session ${id}`, id)
    try {
      return await run()
    } catch (error) {
      throw toPortError(error, { sessionId: id, action: `${what.toLowerCase()} of session ${id}` })
    }
  }
  return {
    sessionDirectory(id) {
      try {
        return views.sessionDirectory(id)
      } catch (error) {
        throw toPortError(error, {
          sessionId: id,
          action: `find the directory of session ${JSON.stringify(id)}`,
        })
      }
    },
    sessionFiles: (id, options) =>
      guarded({ id, what: 'List the files', signal: options?.signal }, () => views.sessionFiles(id)),
    readHeader: (id, options) =>
      guarded({ id, what: 'Read the header', signal: options?.signal }, () => views.readHeader(id)),
  }
}
