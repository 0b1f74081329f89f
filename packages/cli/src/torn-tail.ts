import type { TornTailInfo } from '@agent-ledger/session-store'

/** A torn tail as the CLI prints it: where it starts (offset, 1-based line), how many bytes, why. */
export interface TornTailView {
  readonly offset: number | undefined
  readonly bytes: number
  readonly reason: string
  readonly line: number | undefined
}

/**
 * The core's torn tail in the CLI's flat shape (the file backend's `location` spread out).
 *
 * @param tail - What a read reported, or null.
 * @returns The flat view, or null.
 */
export function tornTailView(tail: TornTailInfo | null): TornTailView | null {
  if (tail === null) return null
  return { offset: tail.location?.offset, bytes: tail.bytes, reason: tail.reason, line: tail.location?.line }
}
