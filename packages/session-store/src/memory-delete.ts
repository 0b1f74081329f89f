/**
 * The memory backend's `delete` capability: the session leaves its map in one step, so a
 * reader sees all of it or none; a live lease refuses it unless forced.
 */
import { assertSessionId } from './header.ts'
import { isoOf, utf8Length } from './memory-helpers.ts'
import type { CheckpointRecord, DeleteOptions, DeleteResult } from './port.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'

/** What a delete reads of a stored memory session. */
interface DeletableSession {
  readonly headerLine: string
  readonly lines: readonly string[]
  readonly owner: string | null
  readonly leaseUntil: number
  readonly updatedAt: number
  readonly checkpoint: CheckpointRecord | null
}

/**
 * Deletes `request.id` from `sessions` (see `DeleteCapability.delete`).
 *
 * @param sessions - The storage's sessions.
 * @param request - The id, the backend clock's now (ms), the options.
 * @param wake - Wakes the session's followers (they then find it gone).
 * @returns The outcome and the bytes of its lines, header and checkpoint.
 */
export function deleteStored(
  sessions: Map<string, DeletableSession>,
  request: { readonly id: string; readonly now: number; readonly options: DeleteOptions },
  wake: (id: string) => void,
): DeleteResult {
  const { id, now, options } = request
  assertSessionId(id)
  const session = sessions.get(id)
  if (session === undefined) return { outcome: 'missing', bytes: 0 }
  if (session.owner !== null && session.leaseUntil > now && options.force !== true) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.SESSION_LOCKED,
      sessionId: id,
      message: `Cannot delete session ${id}: ${session.owner} holds a live lease until ${isoOf(session.leaseUntil)}; expected none (close that writer, wait, or force); nothing was removed.`,
      details: { holder: session.owner, expiresAt: isoOf(session.leaseUntil) },
    })
  }
  if (options.unchangedSince !== undefined && session.updatedAt > Date.parse(options.unchangedSince)) {
    return { outcome: 'kept', bytes: 0 }
  }
  const bytes =
    utf8Length(session.headerLine) +
    1 +
    session.lines.reduce((sum, line) => sum + utf8Length(line) + 1, 0) +
    (session.checkpoint?.body.byteLength ?? 0)
  if (options.dryRun !== true) {
    sessions.delete(id)
    wake(id)
  }
  return { outcome: 'deleted', bytes }
}
