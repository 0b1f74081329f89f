/**
 * Encryption at rest, the core's side (FORMAT.md section 17; ADR 2026-12-02): the interfaces
 * a store's `encryption` option implements, the encrypted line form, and the per-session key
 * state the reads and writes of one store share. The core does no cryptography itself (no
 * randomness, no `node:crypto`): the option brings it, as a backend brings its native CRC.
 */
import type { SessionHeader } from '@agent-ledger/session-events'

import type { SignalOptions } from './port.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'

/** The one scheme: AES-256-GCM, a random 96-bit nonce per line. */
export const ENCRYPTION_SCHEME = 'aes-256-gcm'

/** The header's `encryption` member: which data key seals the session's lines. */
export interface EncryptionHeader {
  /** {@link ENCRYPTION_SCHEME}. */
  readonly scheme: string
  /** The key-provider key the data key was first wrapped under (a rekey may re-wrap it under another). */
  readonly keyId: string
  /** The data key's id in the key store (where its wrapped copy lives, outside the log). */
  readonly dataKeyId: string
}

/**
 * One session's data key, opened: seals and opens the event part of its lines. Both are
 * synchronous (the append path is); the async key work happens when the session is opened.
 */
export interface SessionCipher {
  /**
   * Encrypts and authenticates `plaintext`, bound to `aad`.
   *
   * @returns The sealed text: base64 (no padding needed, no `"` or `\`) of nonce, ciphertext and tag.
   */
  seal(plaintext: string, aad: string): string
  /** The plaintext, or null when the tag does not verify (tampered text, another key, another `aad`). */
  open(sealed: string, aad: string): string | null
}

/**
 * The store's `encryption` option: makes and opens data keys. `@agent-ledger/encryption`
 * implements it over a key provider (environment key, key file, or a KMS's wrap/unwrap) and
 * a key store that holds each wrapped data key outside the log.
 */
export interface SessionEncryption {
  /**
   * A fresh data key for new session `sessionId`, stored (wrapped) before it is returned.
   *
   * @returns What the header records and the cipher to write with.
   */
  createDataKey(
    sessionId: string,
    options?: SignalOptions,
  ): Promise<{ readonly header: EncryptionHeader; readonly cipher: SessionCipher }>
  /**
   * Opens the data key a header names.
   *
   * @throws {@link SessionStoreError} `KEY_UNAVAILABLE` naming the key id (the data key was
   *   erased, or its wrapping key is not in the provider); any other error is wrapped so.
   */
  openDataKey(sessionId: string, header: EncryptionHeader, options?: SignalOptions): Promise<SessionCipher>
}

/**
 * How one session's lines are read and written: `null` for a plain session; for an encrypted
 * one its header member and its cipher (null when the key could not be had: reading an event
 * then throws `unavailable`).
 */
export type SessionKeyState = {
  readonly header: EncryptionHeader
  readonly cipher: SessionCipher | null
  readonly unavailable: SessionStoreError | null
} | null

/**
 * A store's encryption option, as the reads use it: {@link SessionKeys.load} turns a header
 * into the key state its line reads take (each read passes it along; nothing is kept).
 */
export class SessionKeys {
  readonly encryption: SessionEncryption | null

  /** @param encryption - The store's option, or null. */
  constructor(encryption: SessionEncryption | null) {
    this.encryption = encryption
  }

  /**
   * The key state of a header just read: opens its data key when it has one.
   *
   * @param id - The session.
   * @param header - Its checked header.
   * @param options - `required`: throw `KEY_UNAVAILABLE` instead of recording it (default true).
   * @returns The state.
   */
  async load(
    id: string,
    header: SessionHeader,
    options: SignalOptions & { readonly required?: boolean } = {},
  ): Promise<SessionKeyState> {
    const member = encryptionOf(header)
    if (member === null) return null
    try {
      return { header: member, cipher: await this.#open(id, member, options), unavailable: null }
    } catch (error) {
      if (!SessionStoreError.is(error, SessionStoreErrorCode.KEY_UNAVAILABLE)) throw error
      if (options.required !== false) throw error
      return { header: member, cipher: null, unavailable: error }
    }
  }

  async #open(id: string, member: EncryptionHeader, options: SignalOptions): Promise<SessionCipher> {
    if (this.encryption === null) {
      throw keyUnavailable(id, member, {
        why: 'this store has no encryption option (no key provider)',
        reason: 'no-provider',
      })
    }
    try {
      return await this.encryption.openDataKey(id, member, options)
    } catch (error) {
      if (SessionStoreError.is(error)) throw error
      throw keyUnavailable(id, member, {
        why: `the key provider failed (${error instanceof Error ? error.message : String(error)})`,
        reason: 'provider-failed',
        cause: error,
      })
    }
  }

  /**
   * A data key for a new session when the store encrypts, else null.
   *
   * @param id - The new session.
   * @param options - The abort signal.
   * @returns Its header member and its state.
   */
  async create(
    id: string,
    options: SignalOptions = {},
  ): Promise<{ readonly header: EncryptionHeader; readonly state: NonNullable<SessionKeyState> } | null> {
    if (this.encryption === null) return null
    const made = await this.encryption.createDataKey(id, options)
    return { header: made.header, state: { header: made.header, cipher: made.cipher, unavailable: null } }
  }
}

/** The header's `encryption` member, or null. */
function encryptionOf(header: SessionHeader): EncryptionHeader | null {
  const member = (header as { encryption?: EncryptionHeader }).encryption
  return member === undefined ? null : member
}

/**
 * The `KEY_UNAVAILABLE` error: names the session, the key id and the data key id.
 *
 * @param id - The session.
 * @param member - Its header's `encryption` member.
 * @param missing - What is missing, in words; `details.reason` (`no-provider`, `provider-failed`...); the cause.
 * @returns The error.
 */
function keyUnavailable(
  id: string,
  member: EncryptionHeader,
  missing: { readonly why: string; readonly reason: string; readonly cause?: unknown },
): SessionStoreError {
  const { why, reason, cause } = missing
  return new SessionStoreError({
    code: SessionStoreErrorCode.KEY_UNAVAILABLE,
    sessionId: id,
    message: `Cannot read session ${id}: it is encrypted under key ${member.keyId} (data key ${member.dataKeyId}), expected that key to be available, found ${why}; nothing was decrypted.`,
    details: { keyId: member.keyId, dataKeyId: member.dataKeyId, reason },
    cause,
  })
}

/**
 * The associated data of one line: binds the sealed text to its session, seq, time and type,
 * so a line moved to another session or position, or given another type, does not open.
 */
export function lineAad(line: {
  readonly sessionId: string
  readonly seq: number
  readonly time: string
  readonly type: string
}): string {
  return `agent-ledger/v4\n${line.sessionId}\n${line.seq}\n${line.time}\n${line.type}`
}

const DATA_MEMBER = ',"data":'

/**
 * The encrypted form of a canonical event's JSON: `seq`, `time` and `type` stay, the rest
 * (`data`, `surfaceOp`, `sourceEventSeqs`, `ignorable`) is sealed into `enc`.
 *
 * @param json - `JSON.stringify` of the canonical event (members in the FORMAT.md order).
 * @param event - Its seq, time and type.
 * @param context - The session and its cipher.
 * @returns The JSON text of the stored form (no `crc` yet).
 */
export function sealEventJson(
  json: string,
  event: { readonly seq: number; readonly time: string; readonly type: string },
  context: { readonly sessionId: string; readonly cipher: SessionCipher },
): string {
  // `,"data":` cannot occur inside a JSON string (a raw `"` is always escaped there), and the
  // members before it are seq, time and type: its first occurrence is the member's.
  const at = json.indexOf(DATA_MEMBER)
  const inner = `{${json.slice(at + 1)}`
  const sealed = context.cipher.seal(
    inner,
    lineAad({ sessionId: context.sessionId, seq: event.seq, time: event.time, type: event.type }),
  )
  return `${json.slice(0, at)},"enc":"${sealed}"}`
}

/** Why an encrypted line did not open. */
export type OpenFailure = 'not-encrypted' | 'auth-tag' | 'plaintext'

/**
 * The event of a stored encrypted line's object (its checksum already checked).
 *
 * @param value - The line's object without `crc`.
 * @param context - The session and its cipher.
 * @returns The canonical event object, or why it cannot be had.
 */
export function openEventValue(
  value: Record<string, unknown>,
  context: { readonly sessionId: string; readonly cipher: SessionCipher },
): Record<string, unknown> | OpenFailure {
  const { seq, time, type, enc } = value
  if (
    typeof enc !== 'string' ||
    typeof seq !== 'number' ||
    typeof time !== 'string' ||
    typeof type !== 'string' ||
    Object.keys(value).length !== 4
  ) {
    return 'not-encrypted'
  }
  const plaintext = context.cipher.open(enc, lineAad({ sessionId: context.sessionId, seq, time, type }))
  if (plaintext === null) return 'auth-tag'
  if (!plaintext.startsWith('{"')) return 'plaintext'
  // One parse of the whole event in canonical order (JSON.parse makes an own `__proto__`
  // member data, RELIABILITY S3): the members the line kept, then the sealed ones.
  let event: unknown
  try {
    event = JSON.parse(
      `{"seq":${seq},"time":${JSON.stringify(time)},"type":${JSON.stringify(type)},${plaintext.slice(1)}`,
    )
  } catch {
    return 'plaintext'
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return 'plaintext'
  return event as Record<string, unknown>
}
