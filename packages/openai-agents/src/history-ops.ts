/**
 * Helpers of the session's optional history capabilities (history transactions, history
 * rewrite, compaction): the log-only operation record and the canonical digest of a
 * transaction. No I/O.
 */
import { createHash } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'

/** Type of the log-only event that records an applied history transaction's operation id. */
export const OPERATION_EVENT_TYPE = 'openai-agents/operation'

/** Data of an {@link OPERATION_EVENT_TYPE} event, appended in the same flush as the change it records. */
export interface RecordedOperation {
  readonly operationId: string
  /** `append_items` or `replace_suffix`. */
  readonly kind: string
  /** SHA-256 (hex) of the transaction's canonical JSON (keys sorted): a retry must carry the same. */
  readonly digest: string
}

/** JSON text of a value with every object's keys sorted, so equal values give equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((entry) => canonicalJson(entry ?? null)).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value)
      .filter(([, entry]) => entry !== undefined)
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${canonicalJson(entry)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/** The digest a {@link RecordedOperation} carries for `transaction`. */
export function transactionDigest(transaction: unknown): string {
  return createHash('sha256').update(canonicalJson(transaction)).digest('hex')
}

/** True when `actual` ends with `expected`, compared as plain JSON. */
export function endsWith(actual: readonly unknown[], expected: readonly unknown[]): boolean {
  if (expected.length > actual.length) return false
  const start = actual.length - expected.length
  return expected.every((item, index) => isDeepStrictEqual(item, actual[start + index]))
}
