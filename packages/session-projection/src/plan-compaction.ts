import { deepFreeze } from '@agent-ledger/session-events'
import type { EventInput } from '@agent-ledger/session-events'

import { ProjectionError, ProjectionErrorCode } from './projection-error.ts'
import type { Projection } from './projection.ts'
import { locateReplaceRange, SurfaceList } from './surface.ts'

/** What {@link planCompaction} needs: which surface nodes to fold into a summary, and the summary. */
export interface CompactionRequest {
  /** Id tying the four compaction events together; chosen by the caller (the pure core makes no ids). */
  readonly compactionId: string
  /** Seq of the first surface node to hide (surface order). */
  readonly startSeq: number
  /** Seq of the last surface node to hide (surface order), inclusive. */
  readonly endSeq: number
  /** The summary text the model will see instead of the hidden nodes. */
  readonly summary: string
  /** Why the compaction ran (e.g. `context-window`), recorded on `compaction/start`. */
  readonly reason?: string
}

/** Text put before the summary in the replacing user message, so the model knows what it reads. */
export const COMPACTION_SUMMARY_PREFIX = '[Summary of the earlier conversation, which was compacted]\n\n'

/**
 * Plans a compaction: the four events that fold surface nodes `startSeq..endSeq` into one
 * summary message, to append in order.
 *
 * **Details**: returns `compaction/start {compactionId, startSeq, endSeq, reason?}`,
 * `compaction/summary {compactionId, summary}`, a `user/message` whose content is
 * {@link COMPACTION_SUMMARY_PREFIX} + `summary`, with `surfaceOp: {op: 'replace', startSeq,
 * endSeq}` and `sourceEventSeqs` = every hidden node's seq in surface order (full
 * provenance), then `compaction/end {compactionId, replacementSeq, hiddenCount}`.
 * `replacementSeq` is predicted as `projection.nextSeq + 2`.
 *
 * After the four are appended the surface is [nodes before the range] + summary + [nodes
 * after it], and the log still holds every original event. If the process dies after
 * `compaction/start`, the projection reports it as `openCompaction`; the surface is
 * unchanged until the replacing message lands.
 *
 * **Gotchas**: the plan is valid for the projection as it is now; append the four events
 * before any other surface event.
 *
 * @param projection - The projection of the log to compact.
 * @param request - The range, in surface order, and the summary.
 * @returns The four event inputs, deep-frozen.
 * @throws {@link ProjectionError} `BAD_COMPACTION_RANGE` (with `field`, `found` and the surface-rule error as
 *   `cause`) when the range is not a valid replace range by a user message: a seq that is not a current surface
 *   node, a start after the end, a leading system message, or a range that splits tool results from their call.
 */
export function planCompaction(projection: Projection, request: CompactionRequest): EventInput[] {
  const { compactionId, startSeq, endSeq, summary, reason } = request
  const surface = new SurfaceList(projection.surface())
  let range: { start: number; end: number }
  try {
    range = locateReplaceRange(
      surface,
      { startSeq, endSeq },
      {
        seq: undefined,
        type: 'user/message',
        toolCallId: undefined,
      },
    )
  } catch (error) {
    if (!ProjectionError.is(error)) throw error
    throw new ProjectionError({
      code: ProjectionErrorCode.BAD_COMPACTION_RANGE,
      field: error.field === 'surfaceOp.endSeq' ? 'endSeq' : 'startSeq',
      found: error.field === 'surfaceOp.endSeq' ? endSeq : startSeq,
      message: `Compaction ${JSON.stringify(compactionId)} cannot hide seq ${startSeq}..${endSeq}: expected a valid replace range over the current surface, found one the surface rules refuse (${error.code}, see cause)`,
      cause: error,
    })
  }
  const hidden = surface.nodes.slice(range.start, range.end + 1).map((node) => node.seq)
  const replacementSeq = projection.nextSeq + 2
  const inputs: EventInput[] = [
    {
      type: 'compaction/start',
      data:
        reason === undefined
          ? { compactionId, startSeq, endSeq }
          : { compactionId, startSeq, endSeq, reason },
    },
    { type: 'compaction/summary', data: { compactionId, summary } },
    {
      type: 'user/message',
      data: { message: { role: 'user', content: `${COMPACTION_SUMMARY_PREFIX}${summary}` } },
      surfaceOp: { op: 'replace', startSeq, endSeq },
      sourceEventSeqs: hidden,
    },
    { type: 'compaction/end', data: { compactionId, replacementSeq, hiddenCount: hidden.length } },
  ]
  return deepFreeze(inputs)
}
