/**
 * Delete and retention through the port: `store.delete(id)` runs the backend's `delete`
 * capability; `store.prune(policy)` lists every session, picks the ones the policy retires
 * (older than a duration by last update, beyond the newest N), and deletes each one that
 * has no live lease and did not change since it was listed. Pure: "now" is the store's clock.
 */
import { AgentLedgerError } from '@agent-ledger/session-events'

import { invalidOption, throwIfAborted } from './checks.ts'
import { assertSessionId } from './header.ts'
import type { DeleteOptions, DeleteResult, SessionBackend } from './port.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
import type { CompressedSession, PrunePolicy, PruneReport, PrunedSession, PruneSkip } from './store-api.ts'

/** Sessions listed per page while pruning (the listing's maximum). */
const PRUNE_PAGE = 1000

function deleteCapability(
  backend: SessionBackend,
  id?: string,
): NonNullable<SessionBackend['capabilities']['delete']> {
  const capability = backend.capabilities.delete
  if (capability !== undefined) return capability
  throw new SessionStoreError({
    code: SessionStoreErrorCode.UNSUPPORTED,
    sessionId: id,
    message: `Cannot delete${id === undefined ? ' sessions' : ` session ${id}`}: the ${backend.name} backend has no delete capability; nothing was removed.`,
    details: { capability: 'delete' },
  })
}

/**
 * Deletes one session through the backend's `delete` capability (`UNSUPPORTED` without one).
 *
 * @param backend - The store's backend.
 * @param id - The session id.
 * @param options - `force`, `unchangedSince`, `dryRun`, `signal`.
 * @returns What the backend did: `deleted` with the bytes freed, or `missing` (not an error).
 */
export async function deleteOne(
  backend: SessionBackend,
  id: string,
  options: DeleteOptions = {},
): Promise<DeleteResult> {
  assertSessionId(id)
  if (typeof options !== 'object' || options === null) throw invalidOption('options', 'an object', options)
  if (options.unchangedSince !== undefined && !Number.isFinite(Date.parse(options.unchangedSince))) {
    throw invalidOption('unchangedSince', 'an ISO-8601 time', options.unchangedSince)
  }
  const capability = deleteCapability(backend, id)
  throwIfAborted(options.signal, `Deleting session ${id}`, 'nothing was removed')
  return await capability.delete(id, options)
}

interface Listed {
  readonly id: string
  readonly updatedAt: string | undefined
}

function checkPolicy(policy: PrunePolicy): void {
  if (typeof policy !== 'object' || policy === null) throw invalidOption('policy', 'an object', policy)
  const { olderThanMs, keep } = policy
  if (olderThanMs !== undefined && (!Number.isSafeInteger(olderThanMs) || olderThanMs <= 0)) {
    throw invalidOption('olderThanMs', 'a positive integer of milliseconds', olderThanMs)
  }
  if (keep !== undefined && (!Number.isSafeInteger(keep) || keep < 0)) {
    throw invalidOption('keep', 'a non-negative integer', keep)
  }
  const { compressIdleMs } = policy
  if (compressIdleMs !== undefined && (!Number.isSafeInteger(compressIdleMs) || compressIdleMs <= 0)) {
    throw invalidOption('compressIdleMs', 'a positive integer of milliseconds', compressIdleMs)
  }
  if (olderThanMs === undefined && keep === undefined && compressIdleMs === undefined) {
    throw invalidOption(
      'policy',
      'olderThanMs, keep, compressIdleMs or a mix (a policy that retires and compresses nothing)',
      policy,
    )
  }
}

/**
 * Prunes the store by `policy`. Every session the policy retires is first listed in the
 * report's order; then each is deleted (or, with `dryRun`, measured) unless a live lease
 * holds it or it changed since the listing.
 *
 * @param backend - The store's backend.
 * @param now - The store's clock's current time (ISO-8601).
 * @param policy - Age, count, dry run, progress, signal.
 * @returns The report: what was (or would be) deleted, what was skipped and why, bytes freed.
 * @throws {@link SessionStoreError} `INVALID_OPTION`, `UNSUPPORTED`, `ABORTED` (sessions deleted before it stay deleted).
 */
export async function pruneSessions(
  backend: SessionBackend,
  now: string,
  policy: PrunePolicy,
): Promise<PruneReport> {
  checkPolicy(policy)
  const capability = deleteCapability(backend)
  const compressor = policy.compressIdleMs === undefined ? undefined : compressCapability(backend)
  const nowMs = Date.parse(now)
  const cutoff = policy.olderThanMs === undefined ? null : new Date(nowMs - policy.olderThanMs).toISOString()
  const dryRun = policy.dryRun === true
  const progress = policy.onProgress
  // Deletes a crash interrupted are finished first (their sessions are gone already).
  if (!dryRun) await capability.sweep?.({ signal: policy.signal })
  const listed: Listed[] = []
  const skipped: PruneSkip[] = []
  let cursor: string | undefined
  do {
    throwIfAborted(policy.signal, 'Pruning sessions', 'nothing was removed')
    const page = await backend.list({ limit: PRUNE_PAGE, cursor, signal: policy.signal })
    for (const entry of page.entries) {
      if (entry.problem !== undefined || entry.headerLine === undefined) {
        skipped.push({
          id: entry.id,
          reason: 'unlistable',
          message: `Session ${entry.id} could not be listed (${entry.problem?.code ?? 'no header'}): its age is unknown, so it was kept.`,
        })
        continue
      }
      listed.push({ id: entry.id, updatedAt: entry.updatedAt })
    }
    cursor = page.cursor ?? undefined
    progress?.({ phase: 'list', done: listed.length })
  } while (cursor !== undefined)

  const keep = policy.keep ?? 0
  const cutoffMs = cutoff === null ? null : Date.parse(cutoff)
  const retires = policy.olderThanMs !== undefined || policy.keep !== undefined
  const candidates = retires ? listed.slice(keep).filter((session) => olderThan(session, cutoffMs)) : []
  const retired = new Set(candidates.map((session) => session.id))
  const idleMs = policy.compressIdleMs === undefined ? null : nowMs - policy.compressIdleMs
  const idle =
    idleMs === null ? [] : listed.filter((session) => !retired.has(session.id) && olderThan(session, idleMs))
  const planned = (sessions: readonly Listed[]) =>
    sessions.map((session) => ({ id: session.id, updatedAt: session.updatedAt }))
  await policy.onPlan?.(planned(candidates), { compress: planned(idle) })
  const deleted: PrunedSession[] = []
  let bytesFreed = 0
  for (const [index, session] of candidates.entries()) {
    throwIfAborted(
      policy.signal,
      'Pruning sessions',
      `${deleted.length} sessions were ${dryRun ? 'measured' : 'deleted'} before the abort, the others kept`,
    )
    try {
      const result = await capability.delete(session.id, {
        unchangedSince: session.updatedAt,
        dryRun,
        signal: policy.signal,
      })
      if (result.outcome === 'deleted') {
        deleted.push({ id: session.id, updatedAt: session.updatedAt, bytes: result.bytes })
        bytesFreed += result.bytes
      } else {
        skipped.push({
          id: session.id,
          reason: result.outcome === 'kept' ? 'changed' : 'missing',
          message:
            result.outcome === 'kept'
              ? `Session ${session.id} was written after it was listed (updated at ${session.updatedAt ?? '?'}): kept.`
              : `Session ${session.id} was already gone when its turn came.`,
        })
      }
    } catch (error) {
      if (!SessionStoreError.is(error, SessionStoreErrorCode.SESSION_LOCKED)) throw error
      skipped.push({
        id: session.id,
        reason: 'live-lease',
        holder: typeof error.details['holder'] === 'string' ? error.details['holder'] : null,
        expiresAt: typeof error.details['expiresAt'] === 'string' ? error.details['expiresAt'] : null,
        message: error.message,
      })
    }
    progress?.({ phase: dryRun ? 'measure' : 'delete', done: index + 1, total: candidates.length })
  }
  const compressed =
    compressor === undefined ? [] : await compressIdle(compressor, idle, { dryRun, policy, skipped })
  return { dryRun, now, cutoff, keep, examined: listed.length, deleted, skipped, bytesFreed, compressed }
}

/** Whether `session` was last updated before `cutoffMs` (always, with no cutoff; never, with no time). */
function olderThan(session: Listed, cutoffMs: number | null): boolean {
  if (cutoffMs === null) return true
  const updated = session.updatedAt === undefined ? Number.NaN : Date.parse(session.updatedAt)
  return Number.isFinite(updated) && updated < cutoffMs
}

function compressCapability(
  backend: SessionBackend,
): NonNullable<SessionBackend['capabilities']['compress']> {
  const capability = backend.capabilities.compress
  if (capability !== undefined) return capability
  throw new SessionStoreError({
    code: SessionStoreErrorCode.UNSUPPORTED,
    message: `Cannot compress idle sessions (compressIdleMs): the ${backend.name} backend has no compress capability; nothing was removed or compressed.`,
    details: { capability: 'compress' },
  })
}

/** Compresses each kept idle session (a live writer's is skipped as `live-lease`). */
async function compressIdle(
  compressor: NonNullable<SessionBackend['capabilities']['compress']>,
  idle: readonly Listed[],
  context: { readonly dryRun: boolean; readonly policy: PrunePolicy; readonly skipped: PruneSkip[] },
): Promise<CompressedSession[]> {
  const { dryRun, policy, skipped } = context
  const compressed: CompressedSession[] = []
  for (const [index, session] of idle.entries()) {
    throwIfAborted(
      policy.signal,
      'Pruning sessions',
      `${compressed.length} idle sessions were compressed before the abort`,
    )
    if (dryRun) compressed.push({ id: session.id, updatedAt: session.updatedAt, changed: true })
    else {
      try {
        const result = await compressor.compress(session.id, { signal: policy.signal })
        compressed.push({ id: session.id, updatedAt: session.updatedAt, changed: result.changed })
      } catch (error) {
        if (SessionStoreError.is(error, SessionStoreErrorCode.SESSION_NOT_FOUND)) continue
        if (SessionStoreError.is(error, SessionStoreErrorCode.SESSION_LOCKED)) {
          skipped.push({
            id: session.id,
            reason: 'live-lease',
            holder: typeof error.details['holder'] === 'string' ? error.details['holder'] : null,
            expiresAt: typeof error.details['expiresAt'] === 'string' ? error.details['expiresAt'] : null,
            message: `Session ${session.id} is idle but a live writer holds it: not compressed. ${error.message}`,
          })
        } else if (
          AgentLedgerError.is(error) &&
          !SessionStoreError.is(error, SessionStoreErrorCode.ABORTED)
        ) {
          // One session the backend cannot compress (older generations, damage) does not stop the prune.
          skipped.push({
            id: session.id,
            reason: 'compress-failed',
            message: `Session ${session.id} is idle but was not compressed (${error.code}): ${error.message}`,
          })
        } else throw error
      }
    }
    policy.onProgress?.({
      phase: dryRun ? 'measure-compress' : 'compress',
      done: index + 1,
      total: idle.length,
    })
  }
  return compressed
}
