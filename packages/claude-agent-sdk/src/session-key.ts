/**
 * Where a Claude Agent SDK `SessionKey` lives in agent-ledger: one session per key, its id
 * derived from the key (a SHA-256 of the three parts), the key itself in the header metadata.
 */
import { createHash } from 'node:crypto'

import type { SessionKey } from '@anthropic-ai/claude-agent-sdk'

import { ClaudeStoreError, ClaudeStoreErrorCode } from './claude-store-error.ts'

/** Prefix of every derived session id (`claude-sdk-` and 40 hex digits: 160 bits of the key's hash). */
export const SESSION_ID_PREFIX = 'claude-sdk-'

/** The header metadata field that records the key of a mirrored session. */
export const KEY_METADATA_FIELD = 'claudeAgentSdk'

/** The key as recorded in the header metadata (`subpath` absent for the main transcript). */
export interface RecordedKey {
  readonly projectKey: string
  readonly sessionId: string
  readonly subpath?: string
}

function requireString(value: unknown, field: string, optional: boolean): void {
  if (value === undefined && optional) return
  if (typeof value !== 'string' || value.length === 0) {
    throw new ClaudeStoreError({
      code: ClaudeStoreErrorCode.INVALID_KEY,
      details: { field },
      message: `Claude session key: expected ${field} to be a non-empty string${optional ? ' or absent' : ''}, found ${value === '' ? 'an empty string' : (JSON.stringify(value) ?? typeof value)}`,
    })
  }
}

/**
 * Checks a key and returns it as recorded (no `subpath` field for the main transcript).
 *
 * @throws {@link ClaudeStoreError} `INVALID_KEY` naming the field.
 */
export function checkKey(key: SessionKey): RecordedKey {
  if (typeof key !== 'object' || key === null) {
    throw new ClaudeStoreError({
      code: ClaudeStoreErrorCode.INVALID_KEY,
      details: { field: 'key' },
      message: `Claude session key: expected an object { projectKey, sessionId, subpath? }, found ${key === null ? 'null' : typeof key}`,
    })
  }
  requireString(key.projectKey, 'projectKey', false)
  requireString(key.sessionId, 'sessionId', false)
  requireString(key.subpath, 'subpath', true)
  return key.subpath === undefined
    ? { projectKey: key.projectKey, sessionId: key.sessionId }
    : { projectKey: key.projectKey, sessionId: key.sessionId, subpath: key.subpath }
}

/**
 * The agent-ledger session id of a key: deterministic, within the session-id rule whatever the
 * key holds, and distinct for distinct keys (the parts are hashed as a JSON array, so no
 * choice of separators makes two keys meet).
 */
export function ledgerSessionId(key: RecordedKey): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([key.projectKey, key.sessionId, key.subpath ?? null]))
    .digest('hex')
  return `${SESSION_ID_PREFIX}${digest.slice(0, 40)}`
}

/** The key a header's metadata records, or undefined when the session is not a mirrored one. */
export function recordedKey(metadata: unknown): RecordedKey | undefined {
  if (typeof metadata !== 'object' || metadata === null) return undefined
  const value: unknown = (metadata as Record<string, unknown>)[KEY_METADATA_FIELD]
  if (typeof value !== 'object' || value === null) return undefined
  const { projectKey, sessionId, subpath } = value as Record<string, unknown>
  if (typeof projectKey !== 'string' || typeof sessionId !== 'string') return undefined
  if (subpath !== undefined && typeof subpath !== 'string') return undefined
  return subpath === undefined ? { projectKey, sessionId } : { projectKey, sessionId, subpath }
}

/** Whether two recorded keys are the same key. */
export function sameKey(a: RecordedKey, b: RecordedKey): boolean {
  return a.projectKey === b.projectKey && a.sessionId === b.sessionId && a.subpath === b.subpath
}
