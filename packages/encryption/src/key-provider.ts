/**
 * Key providers: who holds the keys that wrap data keys. A local key set (an environment
 * variable or a key file: `keyId:base64-of-32-bytes` entries, the first the current one) wraps
 * with AES-256-GCM here; a KMS is the caller's own `wrap`/`unwrap` (the key never leaves it).
 */
import { readFileSync } from 'node:fs'

import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'

import { KEY_BYTES, openBytes, sealBytes } from './cipher.ts'

/** What a wrap or unwrap is for: bound into a local wrap's associated data. */
export interface WrapContext {
  readonly dataKeyId: string
  readonly sessionId: string
}

/**
 * Wraps and unwraps data keys. Implement it over a KMS (AWS KMS `Encrypt`/`Decrypt`, Vault
 * transit...): `wrap` returns text the key store keeps, `unwrap` gives the 32 bytes back.
 */
export interface KeyProvider {
  /** The key new data keys are wrapped under (rotation: make another one current). */
  readonly currentKeyId: string
  /** True when the provider can unwrap under `keyId` (a KMS provider may answer true and fail later). */
  has(keyId: string): boolean
  wrap(keyId: string, dataKey: Uint8Array, context: WrapContext): Promise<string>
  /** @throws anything when it cannot (the store reports `KEY_UNAVAILABLE` naming `keyId`). */
  unwrap(keyId: string, wrapped: string, context: WrapContext): Promise<Uint8Array>
}

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/

function badKeys(where: string, expected: string, found: string): SessionStoreError {
  return new SessionStoreError({
    code: SessionStoreErrorCode.INVALID_OPTION,
    message: `Invalid key set in ${where}: expected ${expected}, found ${found}.`,
    details: { option: where, expected },
  })
}

function wrapAad(keyId: string, context: WrapContext): Buffer {
  return Buffer.from(`agent-ledger/data-key\n${keyId}\n${context.dataKeyId}\n${context.sessionId}`, 'utf8')
}

/**
 * A provider over local keys, given as text: entries `keyId:base64` (32 bytes each) separated
 * by newlines or commas, `#` comments ignored; the first entry is the current key, the others
 * stay readable (rotation).
 *
 * @param text - The key set.
 * @param where - Where it came from, for messages (`AGENT_LEDGER_KEYS`, a file name).
 * @returns The provider.
 * @throws {@link SessionStoreError} `INVALID_OPTION` naming the entry.
 */
export function localKeyProvider(text: string, where = 'key set'): KeyProvider {
  const keys = new Map<string, Buffer>()
  let current: string | undefined
  for (const raw of text.split(/[\n,]/)) {
    const entry = raw.replace(/#.*$/, '').trim()
    if (entry === '') continue
    const colon = entry.indexOf(':')
    const id = colon < 0 ? '' : entry.slice(0, colon)
    if (!KEY_ID.test(id)) {
      throw badKeys(
        where,
        'entries keyId:base64 with a key id of 1-64 letters, digits, . _ -',
        `an entry with key id ${JSON.stringify(id)}`,
      )
    }
    const key = Buffer.from(entry.slice(colon + 1), 'base64')
    if (key.length !== KEY_BYTES) {
      throw badKeys(where, `a ${KEY_BYTES}-byte key (base64) for key ${id}`, `${key.length} bytes`)
    }
    if (keys.has(id)) throw badKeys(where, 'each key id once', `key ${id} twice`)
    keys.set(id, key)
    current ??= id
  }
  if (current === undefined) throw badKeys(where, 'at least one keyId:base64 entry', 'none')
  const currentKeyId = current
  const keyOf = (keyId: string): Buffer => {
    const key = keys.get(keyId)
    if (key === undefined)
      throw new Error(`key ${keyId} is not in ${where} (it holds ${[...keys.keys()].join(', ')})`)
    return key
  }
  return {
    currentKeyId,
    has: (keyId) => keys.has(keyId),
    wrap: (keyId, dataKey, context) =>
      Promise.resolve(sealBytes(keyOf(keyId), dataKey, wrapAad(keyId, context)).toString('base64')),
    unwrap: (keyId, wrapped, context) => {
      const opened = openBytes(keyOf(keyId), Buffer.from(wrapped, 'base64'), wrapAad(keyId, context))
      if (opened === null)
        return Promise.reject(
          new Error(
            `the wrapped data key does not open under key ${keyId} (tampered, or wrapped under another key)`,
          ),
        )
      return Promise.resolve(opened)
    },
  }
}

/**
 * A local provider over an environment variable.
 *
 * @param variable - Its name. Default `AGENT_LEDGER_KEYS`.
 * @param env - The environment. Default `process.env`.
 * @returns The provider.
 * @throws {@link SessionStoreError} `INVALID_OPTION` when it is unset or malformed.
 */
export function envKeyProvider(
  variable = 'AGENT_LEDGER_KEYS',
  env: NodeJS.ProcessEnv = process.env,
): KeyProvider {
  const text = env[variable]
  if (text === undefined || text === '')
    throw badKeys(variable, 'the environment variable set to keyId:base64 entries', 'it unset')
  return localKeyProvider(text, variable)
}

/**
 * A local provider over a key file (same text as the environment key; keep it mode 0600).
 *
 * @param path - The file.
 * @returns The provider.
 * @throws {@link SessionStoreError} `INVALID_OPTION` when it cannot be read or is malformed.
 */
export function keyFileProvider(path: string): KeyProvider {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw badKeys(path, 'a readable key file', (error as NodeJS.ErrnoException).code ?? String(error))
  }
  return localKeyProvider(text, path)
}
