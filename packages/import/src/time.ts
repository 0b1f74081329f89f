const ISO = /^\d{4,6}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/
const ISO_NO_ZONE = /^\d{4,6}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?$/

/** The time of events built before any timestamp was seen, when the source has none at all. */
export const EPOCH = '1970-01-01T00:00:00.000Z'

/**
 * A source timestamp as the strict ISO-8601 string v4 envelopes need.
 *
 * @returns `{time}`; `assumedUtc` when the source wrote no zone (OpenHands) and UTC was assumed;
 *   `undefined` when the value is not a usable time.
 */
export function normalizeTime(value: unknown): { time: string; assumedUtc: boolean } | undefined {
  if (typeof value === 'string') {
    if (ISO.test(value)) return { time: value, assumedUtc: false }
    if (ISO_NO_ZONE.test(value)) return { time: `${value}Z`, assumedUtc: true }
    return undefined
  }
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) {
    // Unix milliseconds (pi-mono message timestamps). A given instant, not the clock.
    const date = new Date(value)
    return Number.isNaN(date.getTime()) ? undefined : { time: date.toISOString(), assumedUtc: false }
  }
  return undefined
}
