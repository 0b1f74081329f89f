import type { LoggedEvent, SessionEvent, WireMessage } from '@agent-ledger/session-events'

interface OpenCall {
  readonly callId: string
  readonly block: number
  readonly assistantSeq: number
  toolCallSeq: number | null
}

/**
 * A deliberately small stand-in for the real projection (which lives in
 * session-projection): surface events in log order, except that each tool result is
 * placed right after the assistant message whose call it answers. A result is matched per
 * assistant message: the open call it cites in `sourceEventSeqs` (its `tool/call` or its
 * assistant message), else the most recent open call with that id. Results that match no
 * open call (orphans, duplicates) are dropped, as RELIABILITY R4 asks of a projection.
 */
export function projectMessages(events: Iterable<LoggedEvent>): WireMessage[] {
  const blocks: { message: WireMessage; results: WireMessage[] }[] = []
  const open: OpenCall[] = []
  for (const event of events) {
    switch (event.type) {
      case 'system/message':
      case 'user/message': {
        const known = event as SessionEvent<'system/message' | 'user/message'>
        blocks.push({ message: known.data.message, results: [] })
        break
      }
      case 'assistant/message': {
        const known = event as SessionEvent<'assistant/message'>
        const block = blocks.push({ message: known.data.message, results: [] }) - 1
        for (const call of known.data.message.tool_calls ?? []) {
          open.push({ callId: call.id, block, assistantSeq: known.seq, toolCallSeq: null })
        }
        break
      }
      case 'tool/call': {
        const known = event as SessionEvent<'tool/call'>
        const entry = open.findLast((call) => call.callId === known.data.callId && call.toolCallSeq === null)
        if (entry !== undefined) entry.toolCallSeq = known.seq
        break
      }
      case 'tool/result': {
        const known = event as SessionEvent<'tool/result'>
        const candidates = open.filter((call) => call.callId === known.data.message.tool_call_id)
        const cited = candidates.findLast(
          (call) =>
            known.sourceEventSeqs?.includes(call.assistantSeq) === true ||
            (call.toolCallSeq !== null && known.sourceEventSeqs?.includes(call.toolCallSeq) === true),
        )
        const entry = cited ?? candidates.at(-1)
        if (entry === undefined) break
        open.splice(open.indexOf(entry), 1)
        blocks[entry.block]!.results.push(known.data.message)
        break
      }
      default:
        break
    }
  }
  return blocks.flatMap((block) => [block.message, ...block.results])
}
