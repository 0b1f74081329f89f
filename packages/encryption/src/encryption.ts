/**
 * The store's `encryption` option over a key provider and a key store: a new session gets a
 * random data key, wrapped under the provider's current key and kept in the key store; an
 * open unwraps it (under whichever key its record names). Rekey re-wraps records; erase
 * deletes one.
 */
import type { EncryptionHeader, SessionCipher, SessionEncryption } from '@agent-ledger/session-store'
import { ENCRYPTION_SCHEME, SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'

import { dataKeyCipher, KEY_BYTES, newDataKey, newDataKeyId } from './cipher.ts'
import type { KeyProvider } from './key-provider.ts'
import type { KeyStore } from './key-store.ts'

/** Options of {@link createEncryption}. */
export interface EncryptionOptions {
  readonly keys: KeyProvider
  readonly keyStore: KeyStore
  /** The time records are stamped with. Default `new Date().toISOString()`. */
  readonly clock?: (() => string) | undefined
}

/** What {@link StoreEncryption.rekey} did. */
export interface RekeyReport {
  /** Records re-wrapped under the current key. */
  readonly rewrapped: number
  /** Records already under it. */
  readonly current: number
  /** Records that could not be unwrapped (their key is not in the provider): data key ids and key ids. */
  readonly unavailable: readonly { readonly dataKeyId: string; readonly keyId: string }[]
}

/** The `encryption` option, plus key maintenance. */
export interface StoreEncryption extends SessionEncryption {
  /**
   * Re-wraps every data key that is not under the provider's current key (rotation): the logs
   * are not touched. Afterwards the old key can be retired.
   */
  rekey(): Promise<RekeyReport>
  /**
   * Erases a session's data key (crypto-shredding): every copy of its log, anywhere, becomes
   * unreadable (`KEY_UNAVAILABLE`, reason `erased`).
   *
   * @returns False when there was no such key.
   */
  erase(dataKeyId: string): Promise<boolean>
}

/** What is missing: the key id it needs, in words, and `details.reason`. */
interface Missing {
  readonly keyId: string
  readonly why: string
  readonly reason: string
  readonly cause?: unknown
}

function unavailable(id: string, header: EncryptionHeader, missing: Missing): SessionStoreError {
  const { keyId, why, reason, cause } = missing
  return new SessionStoreError({
    code: SessionStoreErrorCode.KEY_UNAVAILABLE,
    sessionId: id,
    message: `Cannot read session ${id}: it is encrypted with data key ${header.dataKeyId} under key ${keyId}, expected that key to be available, found ${why}; nothing was decrypted.`,
    details: { keyId, dataKeyId: header.dataKeyId, reason },
    cause,
  })
}

/**
 * Encryption at rest for `createSessionStore({ backend, encryption })`.
 *
 * @param options - The key provider and the key store.
 * @returns The option.
 */
export function createEncryption(options: EncryptionOptions): StoreEncryption {
  const { keys, keyStore } = options
  const clock = options.clock ?? (() => new Date().toISOString())
  return {
    async createDataKey(sessionId) {
      const dataKey = newDataKey()
      const dataKeyId = newDataKeyId()
      const keyId = keys.currentKeyId
      const wrapped = await keys.wrap(keyId, dataKey, { dataKeyId, sessionId })
      await keyStore.put({ dataKeyId, sessionId, keyId, wrapped, createdAt: clock() })
      const cipher = dataKeyCipher(dataKey)
      dataKey.fill(0)
      return { header: { scheme: ENCRYPTION_SCHEME, keyId, dataKeyId }, cipher }
    },
    async openDataKey(sessionId, header): Promise<SessionCipher> {
      if (header.scheme !== ENCRYPTION_SCHEME) {
        throw unavailable(sessionId, header, {
          keyId: header.keyId,
          why: `scheme ${JSON.stringify(header.scheme)} (this library knows ${ENCRYPTION_SCHEME})`,
          reason: 'unknown-scheme',
        })
      }
      const record = await keyStore.get(header.dataKeyId)
      if (record === null) {
        throw unavailable(sessionId, header, {
          keyId: header.keyId,
          why: 'no such data key in the key store (erased, or another key store)',
          reason: 'erased',
        })
      }
      if (!keys.has(record.keyId)) {
        throw unavailable(sessionId, header, {
          keyId: record.keyId,
          why: `key ${record.keyId} not in the key provider (current key ${keys.currentKeyId})`,
          reason: 'no-wrapping-key',
        })
      }
      let dataKey: Uint8Array
      try {
        dataKey = await keys.unwrap(record.keyId, record.wrapped, {
          dataKeyId: record.dataKeyId,
          sessionId: record.sessionId,
        })
      } catch (error) {
        throw unavailable(sessionId, header, {
          keyId: record.keyId,
          why: `an unwrap that failed (${error instanceof Error ? error.message : String(error)})`,
          reason: 'unwrap-failed',
          cause: error,
        })
      }
      if (dataKey.length !== KEY_BYTES) {
        throw unavailable(sessionId, header, {
          keyId: record.keyId,
          why: `an unwrapped key of ${dataKey.length} bytes (expected ${KEY_BYTES})`,
          reason: 'unwrap-failed',
        })
      }
      return dataKeyCipher(dataKey)
    },
    async rekey() {
      let rewrapped = 0
      let current = 0
      const missing: { dataKeyId: string; keyId: string }[] = []
      const target = keys.currentKeyId
      for await (const record of keyStore.list()) {
        if (record.keyId === target) {
          current += 1
          continue
        }
        const context = { dataKeyId: record.dataKeyId, sessionId: record.sessionId }
        let dataKey: Uint8Array
        try {
          if (!keys.has(record.keyId)) throw new Error('not in the provider')
          dataKey = await keys.unwrap(record.keyId, record.wrapped, context)
        } catch {
          missing.push({ dataKeyId: record.dataKeyId, keyId: record.keyId })
          continue
        }
        const wrapped = await keys.wrap(target, dataKey, context)
        await keyStore.put({ ...record, keyId: target, wrapped })
        rewrapped += 1
      }
      return { rewrapped, current, unavailable: missing }
    },
    erase: (dataKeyId) => keyStore.delete(dataKeyId),
  }
}
