/**
 * Helpers of the session's optional history capabilities (history transactions, history
 * rewrite, compaction): the log-only operation record and the canonical digest of a
 * transaction. No I/O.
 */
import { createHash } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'

import { toJsonItem } from './item-mapping.ts'
import { AgentsAdapterError, AgentsAdapterErrorCode } from './openai-agents-error.ts'
import type { HistoryTransactionArgs, ItemRecord } from './session-options.ts'

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

/** The transaction's operation id and its items as plain JSON, or `INVALID_TRANSACTION`. */
export function checkTransaction(args: HistoryTransactionArgs): {
  operationId: string
  transaction: ItemRecord
} {
  const invalid = (field: string, expected: string, found: unknown): AgentsAdapterError =>
    new AgentsAdapterError({
      code: AgentsAdapterErrorCode.INVALID_TRANSACTION,
      message: `History transaction ${field}: expected ${expected}, found ${JSON.stringify(found) ?? typeof found}`,
      details: { field },
    })
  const { operationId, transaction } = (args ?? {}) as Partial<HistoryTransactionArgs>
  if (typeof operationId !== 'string' || operationId.trim() === '')
    throw invalid('operationId', 'a non-empty string', operationId)
  const type = (transaction as { type?: unknown } | undefined)?.type
  if (type !== 'append_items' && type !== 'replace_suffix')
    throw invalid('transaction.type', "'append_items' or 'replace_suffix'", type)
  const plain = toJsonItem(transaction as unknown as ItemRecord)
  for (const field of type === 'append_items' ? ['items'] : ['expectedSuffix', 'replacement']) {
    if (
      !Array.isArray(plain[field]) ||
      !(plain[field] as unknown[]).every((item) => typeof item === 'object' && item !== null)
    )
      throw invalid(`transaction.${field}`, 'an array of item objects', plain[field])
  }
  return { operationId, transaction: plain }
}
