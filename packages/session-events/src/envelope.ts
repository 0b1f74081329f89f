import { z } from 'zod'

/** Strict ISO-8601 date-time, as `Date.prototype.toISOString` and most clocks write it. */
const isoTimeSchema = z
  .string()
  .regex(/^\d{4,6}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/, 'an ISO-8601 date-time')

/** `{op: 'replace', startSeq, endSeq}`: swap current surface nodes `startSeq..endSeq` (inclusive, surface order) for this event. */
export const replaceSurfaceOpSchema = z.object({
  op: z.literal('replace'),
  startSeq: z.number().int().nonnegative(),
  endSeq: z.number().int().nonnegative(),
})
export type ReplaceSurfaceOp = z.infer<typeof replaceSurfaceOpSchema>

/** How a surface event changes the model-visible history. */
export const surfaceOpSchema = z.union([z.literal('append'), replaceSurfaceOpSchema])
export type SurfaceOp = z.infer<typeof surfaceOpSchema>

/**
 * The envelope every logged event has, before its `data` is checked against its type.
 * `seq` is a safe non-negative integer; `data` is any JSON value here.
 */
export const envelopeSchema = z.object({
  seq: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  time: isoTimeSchema,
  type: z.string().min(1).max(200),
  data: z.unknown(),
  surfaceOp: surfaceOpSchema.optional(),
  sourceEventSeqs: z.array(z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)).optional(),
  ignorable: z.boolean().optional(),
})
export type Envelope = z.infer<typeof envelopeSchema>
