import type { SurfaceEventType, WireMessage } from '@agent-ledger/session-events'

import { ProjectionError, ProjectionErrorCode } from './projection-error.ts'

/** One model-visible node: the surface event that put `message` into the history. */
export interface SurfaceNode {
  /** Seq of the surface event. */
  readonly seq: number
  /** Its type (one of the four surface types). */
  readonly type: SurfaceEventType
  /** The event's `data.message`, shared (deep-frozen), never copied. */
  readonly message: WireMessage
  /** A `tool/result` logged with `isError: true` (absent otherwise). */
  readonly isError?: true
  /** A `tool/result`'s `code` (a repair placeholder's `TOOL_OUTCOME_UNKNOWN`...; absent when it has none). */
  readonly code?: string
}

/**
 * The ordered surface, with the messages kept beside the nodes so that materialising a
 * message list is one pointer copy. `version` changes on every mutation; caches compare it.
 */
export class SurfaceList {
  readonly nodes: SurfaceNode[]
  readonly messages: WireMessage[]
  private readonly seqs: Set<number>
  version = 0

  constructor(nodes: readonly SurfaceNode[] = []) {
    this.nodes = [...nodes]
    this.messages = this.nodes.map((node) => node.message)
    this.seqs = new Set(this.nodes.map((node) => node.seq))
  }

  get length(): number {
    return this.nodes.length
  }

  /** Position of the node with `seq` in surface order, or -1. Scans from the end (recent nodes are the usual targets). */
  indexOf(seq: number): number {
    if (!this.seqs.has(seq)) return -1
    for (let index = this.nodes.length - 1; index >= 0; index -= 1) {
      if (this.nodes[index]!.seq === seq) return index
    }
    return -1
  }

  /** Position right after the tool results that directly follow the node at `index`. */
  endOfToolGroup(index: number): number {
    let end = index + 1
    while (end < this.nodes.length && this.nodes[end]!.type === 'tool/result') end += 1
    return end
  }

  insert(index: number, node: SurfaceNode): void {
    if (index === this.nodes.length) {
      this.nodes.push(node)
      this.messages.push(node.message)
    } else {
      this.nodes.splice(index, 0, node)
      this.messages.splice(index, 0, node.message)
    }
    this.seqs.add(node.seq)
    this.version += 1
  }

  replace(start: number, end: number, node: SurfaceNode): void {
    for (let index = start; index <= end; index += 1) this.seqs.delete(this.nodes[index]!.seq)
    this.nodes.splice(start, end - start + 1, node)
    this.messages.splice(start, end - start + 1, node.message)
    this.seqs.add(node.seq)
    this.version += 1
  }
}

/** What a replacing event is, for the range rules. */
export interface Replacement {
  readonly seq: number | undefined
  readonly type: SurfaceEventType
  /** `tool_call_id` of a replacing `tool/result`. */
  readonly toolCallId: string | undefined
}

/**
 * Locates a replace range over the current surface and checks the surface rules.
 *
 * @returns Positions of the first and last hidden node, in surface order.
 * @throws {@link ProjectionError} `REPLACE_RANGE_NOT_FOUND` or `INVALID_SURFACE_OP`.
 */
export function locateReplaceRange(
  surface: SurfaceList,
  range: { readonly startSeq: number; readonly endSeq: number },
  replacement: Replacement,
): { start: number; end: number } {
  const { seq } = replacement
  const subject =
    seq === undefined ? `A ${replacement.type} replace` : `Event seq ${seq} (${replacement.type})`
  const start = surface.indexOf(range.startSeq)
  if (start === -1) {
    throw new ProjectionError({
      code: ProjectionErrorCode.REPLACE_RANGE_NOT_FOUND,
      seq,
      field: 'surfaceOp.startSeq',
      found: range.startSeq,
      message: `${subject} replaces from seq ${range.startSeq}: expected a current surface node, found none with that seq`,
    })
  }
  const end = surface.indexOf(range.endSeq)
  if (end === -1) {
    throw new ProjectionError({
      code: ProjectionErrorCode.REPLACE_RANGE_NOT_FOUND,
      seq,
      field: 'surfaceOp.endSeq',
      found: range.endSeq,
      message: `${subject} replaces up to seq ${range.endSeq}: expected a current surface node, found none with that seq`,
    })
  }
  const invalid = (message: string): ProjectionError =>
    new ProjectionError({ code: ProjectionErrorCode.INVALID_SURFACE_OP, seq, field: 'surfaceOp', message })
  if (start > end) {
    throw invalid(
      `${subject} replaces seq ${range.startSeq}..${range.endSeq}: expected the start at or before the end in surface order, found it ${start - end} node(s) after`,
    )
  }
  const first = surface.nodes[0]!
  if (start === 0 && first.type === 'system/message' && replacement.type !== 'system/message') {
    throw invalid(
      `${subject} replaces the leading system message (seq ${first.seq}): expected a system/message replacement, found ${replacement.type}`,
    )
  }
  if (replacement.type === 'tool/result') {
    for (let index = start; index <= end; index += 1) {
      const node = surface.nodes[index]!
      if (node.message.role !== 'tool' || node.message.tool_call_id !== replacement.toolCallId) {
        throw invalid(
          `${subject} replaces seq ${node.seq}: expected a tool message answering ${JSON.stringify(replacement.toolCallId)}, found a ${node.message.role} message${node.message.role === 'tool' ? ` answering ${JSON.stringify(node.message.tool_call_id)}` : ''}`,
        )
      }
    }
    return { start, end }
  }
  const firstHidden = surface.nodes[start]!
  if (firstHidden.type === 'tool/result') {
    throw invalid(
      `${subject} starts at tool result seq ${firstHidden.seq}: expected the range to keep every tool result with the assistant message that called it, found it split from its call`,
    )
  }
  const after = surface.nodes[end + 1]
  if (after?.type === 'tool/result') {
    throw invalid(
      `${subject} ends before tool result seq ${after.seq}: expected the range to keep every tool result with the assistant message that called it, found it split from its call`,
    )
  }
  return { start, end }
}
