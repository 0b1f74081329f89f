import { z } from 'zod'

/** Why a turn ended. `interrupted` is written only by repair, for a turn a crash left open. */
export const TurnEndReason = {
  COMPLETED: 'completed',
  ABORTED: 'aborted',
  ERROR: 'error',
  MAX_TOKENS: 'max-tokens',
  INTERRUPTED: 'interrupted',
} as const
export type TurnEndReason = (typeof TurnEndReason)[keyof typeof TurnEndReason]

/** Schema of {@link TurnEndReason}. */
export const turnEndReasonSchema = z.enum(['completed', 'aborted', 'error', 'max-tokens', 'interrupted'])
