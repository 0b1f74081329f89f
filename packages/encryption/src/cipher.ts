/**
 * AES-256-GCM over `node:crypto`: the data-key cipher the core seals lines with, and the
 * local wrapping of data keys under a key-provider key. A random 96-bit nonce per message.
 */
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes } from 'node:crypto'
import type { KeyObject } from 'node:crypto'

import type { SessionCipher } from '@agent-ledger/session-store'

const NONCE_BYTES = 12
const TAG_BYTES = 16
/** AES-256: 32-byte keys. */
export const KEY_BYTES = 32

/** Random bytes drawn in blocks (one `randomBytes` call per 341 nonces: a call costs microseconds). */
const POOL_BYTES = 4092
let pool = randomBytes(POOL_BYTES)
let poolAt = 0

/** A fresh random 96-bit nonce (each pool byte is used once). */
function nonce(): Buffer {
  if (poolAt + NONCE_BYTES > POOL_BYTES) {
    pool = randomBytes(POOL_BYTES)
    poolAt = 0
  }
  const taken = pool.subarray(poolAt, poolAt + NONCE_BYTES)
  poolAt += NONCE_BYTES
  return taken
}

/**
 * Seals bytes: nonce, ciphertext and tag, concatenated.
 *
 * @param key - 32 bytes, or their key object.
 * @param plaintext - What to seal.
 * @param aad - Associated data the tag covers.
 * @returns The sealed bytes.
 */
export function sealBytes(key: Uint8Array | KeyObject, plaintext: Uint8Array, aad: Uint8Array): Buffer {
  const iv = nonce()
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(aad)
  const body = cipher.update(plaintext)
  const last = cipher.final()
  return Buffer.concat([iv, body, last, cipher.getAuthTag()])
}

/**
 * Opens sealed bytes.
 *
 * @param key - 32 bytes, or their key object.
 * @param sealed - Nonce, ciphertext and tag.
 * @param aad - The associated data they were sealed with.
 * @returns The plaintext, or null when the tag does not verify.
 */
export function openBytes(key: Uint8Array | KeyObject, sealed: Uint8Array, aad: Uint8Array): Buffer | null {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) return null
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES))
  decipher.setAAD(aad)
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES))
  try {
    return Buffer.concat([
      decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)),
      decipher.final(),
    ])
  } catch {
    return null
  }
}

/**
 * The cipher of one session's data key (base64 text in the line's `enc` member).
 *
 * @param dataKey - The 32-byte data key (copied).
 * @returns The cipher.
 */
export function dataKeyCipher(dataKey: Uint8Array): SessionCipher {
  // A key object: the cipher setup per line is about half of a raw key's.
  const key = createSecretKey(Buffer.from(dataKey))
  return {
    seal: (plaintext, aad) =>
      sealBytes(key, Buffer.from(plaintext, 'utf8'), Buffer.from(aad, 'utf8')).toString('base64'),
    // Buffer's decoder skips characters that are not base64: such text cannot open to anything
    // but what was sealed (the tag covers the decoded bytes), and the line checksum covers the text.
    open: (sealed, aad) =>
      openBytes(key, Buffer.from(sealed, 'base64'), Buffer.from(aad, 'utf8'))?.toString('utf8') ?? null,
  }
}

/** A new random data key. */
export function newDataKey(): Buffer {
  return randomBytes(KEY_BYTES)
}

/** A new random data key id (`dk-` and 32 hex digits). */
export function newDataKeyId(): string {
  return `dk-${randomBytes(16).toString('hex')}`
}
