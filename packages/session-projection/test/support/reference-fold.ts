import type { LoggedEvent, SessionEvent, WireMessage } from '@agent-ledger/session-events'

interface Node {
  readonly seq: number
  readonly message: WireMessage
}

interface Open {
  readonly callId: string
  readonly assistantSeq: number
  toolCallSeq: number | null
}

/**
 * A deliberately naive, from-scratch fold of a whole log into messages, written from the
 * rules in the README (not from the implementation): the oracle of the property tests.
 *
 * - surface events append a node, or replace the inclusive range startSeq..endSeq located
 *   in surface order;
 * - an assistant message opens one call per tool call; `tool/call` marks the most recent
 *   unstarted open call with its id as started;
 * - a `tool/result` (not a replace) closes the open call it cites (its `tool/call` or its
 *   assistant message), else the most recent open call with its id, and is placed after
 *   the last tool node that directly follows that assistant message, if that message is
 *   still visible; otherwise (no open call, or the assistant message is hidden) it is not
 *   shown;
 * - everything else is invisible.
 */
export function referenceFold(events: readonly LoggedEvent[]): WireMessage[] {
  let nodes: Node[] = []
  const open: Open[] = []
  for (const event of events) {
    switch (event.type) {
      case 'system/message':
      case 'user/message':
      case 'assistant/message':
      case 'tool/result': {
        const surface = event as SessionEvent<
          'system/message' | 'user/message' | 'assistant/message' | 'tool/result'
        >
        const node = { seq: surface.seq, message: surface.data.message }
        if (surface.type === 'assistant/message') {
          for (const call of surface.data.message.tool_calls ?? []) {
            open.push({ callId: call.id, assistantSeq: surface.seq, toolCallSeq: null })
          }
        }
        const op = surface.surfaceOp
        if (typeof op === 'object') {
          const start = nodes.findIndex((candidate) => candidate.seq === op.startSeq)
          const end = nodes.findIndex((candidate) => candidate.seq === op.endSeq)
          nodes = [...nodes.slice(0, start), node, ...nodes.slice(end + 1)]
          break
        }
        if (surface.type !== 'tool/result') {
          nodes.push(node)
          break
        }
        const callId = surface.data.message.tool_call_id
        const candidates = open.filter((call) => call.callId === callId)
        const cited = candidates.filter(
          (call) =>
            surface.sourceEventSeqs?.includes(call.assistantSeq) === true ||
            (call.toolCallSeq !== null && surface.sourceEventSeqs?.includes(call.toolCallSeq) === true),
        )
        const answered = cited.at(-1) ?? candidates.at(-1)
        if (answered === undefined) break
        open.splice(open.indexOf(answered), 1)
        const at = nodes.findIndex((candidate) => candidate.seq === answered.assistantSeq)
        if (at === -1) break
        let after = at + 1
        while (after < nodes.length && nodes[after]!.message.role === 'tool') after += 1
        nodes.splice(after, 0, node)
        break
      }
      case 'tool/call': {
        const call = event as SessionEvent<'tool/call'>
        const entry = open.findLast(
          (candidate) => candidate.callId === call.data.callId && candidate.toolCallSeq === null,
        )
        if (entry !== undefined) entry.toolCallSeq = call.seq
        break
      }
      default:
        break
    }
  }
  return nodes.map((node) => node.message)
}
