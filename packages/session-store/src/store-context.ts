/**
 * What a session store is made of, checked once when it is created: the guarded backend
 * (its untyped failures become `BACKEND_FAILED`), the CRC it offers, the limits, redaction
 * and checkpoint options, and the lease defaults every writer's options are checked against.
 */
import { coreEventRegistry } from '@agent-ledger/session-events'

import { guardBackend } from './backend-guard.ts'
import { registryDigest } from './checkpoint-body.ts'
import type { CheckpointContext } from './checkpoint-open.ts'
import { resolveCheckpointOptions } from './checkpoint-options.ts'
import { invalidOption, resolveLimits } from './checks.ts'
import { SessionKeys } from './encryption.ts'
import { crc32c as defaultCrc32c } from './crc32c.ts'
import { DEFAULT_REDACTION_POLICY } from './redaction.ts'
import type { SessionStoreOptions, WriterLeaseOptions } from './store-api.ts'

/**
 * A lease owner and length checked like the store options, defaults filled in.
 *
 * @param given - The caller's `owner` and `leaseMs` (either may be undefined).
 * @param defaults - What an undefined one is.
 * @returns Both.
 * @throws {@link SessionStoreError} `INVALID_OPTION` naming the option.
 */
export function checkedLease(
  given: WriterLeaseOptions,
  defaults: { readonly owner: string; readonly leaseMs: number },
): { readonly owner: string; readonly leaseMs: number } {
  const owner = given.owner ?? defaults.owner
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > 200) {
    throw invalidOption('owner', 'a string of 1-200 characters', owner)
  }
  const leaseMs = given.leaseMs ?? defaults.leaseMs
  if (!Number.isSafeInteger(leaseMs) || leaseMs <= 0)
    throw invalidOption('leaseMs', 'a positive integer', leaseMs)
  return { owner, leaseMs }
}

/** A store's checked options (internal). */
export interface StoreContext {
  /** The context every read, write and checkpoint runs with (its backend is the guarded one). */
  readonly context: CheckpointContext
  readonly clock: () => string
  readonly owner: string
  readonly leaseMs: number
  readonly sleep: SessionStoreOptions['sleep']
}

/**
 * Checks a store's options and builds what it runs with.
 *
 * @param options - The options of `createSessionStore`.
 * @returns The context, the clock and the lease defaults.
 * @throws {@link SessionStoreError} `INVALID_OPTION` naming the option.
 */
export function resolveStoreContext(options: SessionStoreOptions): StoreContext {
  if (typeof options.clock !== 'function')
    throw invalidOption('clock', 'a function returning an ISO-8601 time', options.clock)
  const { owner, leaseMs } = checkedLease(options, { owner: 'agent-ledger', leaseMs: 30_000 })
  const registry = options.registry ?? coreEventRegistry
  const offered = options.backend.crc32c
  if (offered !== undefined && typeof offered !== 'function')
    throw invalidOption('backend.crc32c', 'a CRC-32C function or undefined', offered)
  // The backend's CRC (a native one) when it offers one: the pure core loads no native code.
  const crc32c = offered ?? defaultCrc32c
  const onWarning = options.onWarning
  if (onWarning !== undefined && typeof onWarning !== 'function')
    throw invalidOption('onWarning', 'a function', onWarning)
  const redaction = options.redaction === undefined ? DEFAULT_REDACTION_POLICY : options.redaction
  const encryption = options.encryption ?? null
  if (
    encryption !== null &&
    (typeof encryption !== 'object' ||
      typeof encryption.createDataKey !== 'function' ||
      typeof encryption.openDataKey !== 'function')
  ) {
    throw invalidOption('encryption', 'an object with createDataKey and openDataKey functions', encryption)
  }
  return {
    context: {
      // The caller's backend, whose untyped failures become BACKEND_FAILED (typed ones pass as they are).
      backend: guardBackend(options.backend),
      registry,
      limits: resolveLimits(options.limits),
      crc32c,
      redaction,
      keys: new SessionKeys(encryption),
      checkpoint: resolveCheckpointOptions(options.checkpoint),
      registryDigest: registryDigest(registry, crc32c),
      warn: onWarning ?? (() => undefined),
    },
    clock: options.clock,
    owner,
    leaseMs,
    sleep: options.sleep,
  }
}
