/**
 * `verify` of an encrypted session whose key is not available: integrity without keys. The
 * checksum covers the stored (sealed) text, so every line's checksum, its encrypted form and
 * the dense seqs are checked; event data and the history rules need the key and are not.
 */
import { locationText } from './event-codec.ts'
import { decodeLine } from './line-codec.ts'
import type { SignalOptions, StoredLine, TornTailInfo } from './port.ts'
import { isLineDamage, readHeader } from './scan.ts'
import type { CoreContext } from './scan.ts'
import { SessionStoreError, SessionStoreErrorCode } from './session-store-error.ts'
import type { VerifyReport } from './store-api.ts'

/** The members of a sealed line, exactly. */
const SEALED_MEMBERS = ['seq', 'time', 'type', 'enc'] as const

/**
 * Verifies an encrypted session without its key.
 *
 * @param context - Backend and checks.
 * @param id - The session.
 * @param options - The abort signal.
 * @returns The report, `sealed` naming the key that would open the content.
 */
export async function verifySealed(
  context: CoreContext,
  id: string,
  options: SignalOptions = {},
): Promise<VerifyReport> {
  const { header, keys } = await readHeader(context, id, { ...options, keyRequired: false })
  if (keys === null || keys.cipher !== null) {
    throw new SessionStoreError({
      code: SessionStoreErrorCode.INVALID_OPTION,
      sessionId: id,
      message: `Cannot verify session ${id} without its key: expected an encrypted session whose key is unavailable, found ${keys === null ? 'a plain session' : 'its key available'}.`,
    })
  }
  let lastSeq = -1
  let tornTail: TornTailInfo | null = null
  let damage: SessionStoreError | null = null
  try {
    for await (const stored of context.backend.read(id, {
      fromSeq: 0,
      signal: options.signal,
      onTornTail: (tail) => {
        tornTail = tail
      },
    })) {
      checkSealedLine(context, { id, stored, expectedSeq: lastSeq + 1 })
      lastSeq += 1
    }
  } catch (error) {
    if (!isLineDamage(error, context.backend)) throw error
    damage = error
  }
  return {
    id,
    status: damage !== null ? 'damaged' : tornTail !== null ? 'torn-tail' : 'ok',
    header,
    events: lastSeq + 1,
    lastSeq,
    tornTail,
    damage,
    sealed: { keyId: keys.header.keyId, dataKeyId: keys.header.dataKeyId },
  }
}

function checkSealedLine(
  context: CoreContext,
  at: { readonly id: string; readonly stored: StoredLine; readonly expectedSeq: number },
): void {
  const { id, stored, expectedSeq } = at
  const where = locationText(stored)
  const fail = (code: SessionStoreErrorCode, found: string, reason: string): SessionStoreError =>
    new SessionStoreError({
      code,
      sessionId: id,
      seq: expectedSeq,
      lastGoodSeq: expectedSeq - 1,
      location: stored.location,
      message: `Session ${id} is damaged at ${where}: expected a checksummed encrypted line for seq ${expectedSeq}, found ${found}.`,
      details: { reason },
    })
  const decoded =
    stored.checked === undefined
      ? decodeLine(stored.line, {
          maxLineLength: context.limits.maxLineLength,
          maxDepth: context.limits.maxDepth,
          crc32c: context.crc32c,
        })
      : ({ ok: true, value: stored.checked.value } as const)
  if (!decoded.ok) {
    throw fail(
      decoded.reason === 'too-large'
        ? SessionStoreErrorCode.LINE_TOO_LARGE
        : SessionStoreErrorCode.CORRUPT_LINE,
      `one that fails the ${decoded.reason} check`,
      decoded.reason,
    )
  }
  const value = decoded.value
  const keys = Object.keys(value)
  if (
    keys.length !== SEALED_MEMBERS.length ||
    SEALED_MEMBERS.some((member, index) => keys[index] !== member) ||
    typeof value['enc'] !== 'string' ||
    typeof value['time'] !== 'string' ||
    typeof value['type'] !== 'string'
  ) {
    throw fail(SessionStoreErrorCode.CORRUPT_LINE, `members ${keys.join(', ')}`, 'not-encrypted')
  }
  const seq = value['seq']
  if (seq !== expectedSeq || stored.seq !== expectedSeq) {
    const found = typeof seq === 'number' ? seq : stored.seq
    throw fail(
      typeof found === 'number' && found > expectedSeq
        ? SessionStoreErrorCode.SEQ_GAP
        : SessionStoreErrorCode.SEQ_DUPLICATE,
      `seq ${String(seq)} at position ${stored.seq}`,
      'seq',
    )
  }
}
