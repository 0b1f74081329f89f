/**
 * What the session writes to its log: surface events for SDK items (recorded exactly beside
 * them when the wire shape cannot hold them), `tool/call`s, the `replace`s that hide or rewrite
 * items, the core's compaction, and a run's model input and output as the wrappers see them.
 * Internal to the package: each `AgentLedgerSession` holds one.
 */
import type { EventInput, Usage as LedgerUsage, WireMessage } from '@agent-ledger/session-events'
import { planCompaction } from '@agent-ledger/session-projection'
import type { SessionWriter } from '@agent-ledger/session-store'
import type { AgentInputItem, ModelRequest, Usage } from '@openai/agents-core'

import { itemKey, itemToWire, surfaceTypeOf, toJsonItem, wireHoldsItem, wireToItems } from './item-mapping.ts'
import { ITEMS_EVENT_TYPE } from './session-options.ts'
import type { ItemRecord, NodeItems, RecordedItems, ReplaceRange } from './session-options.ts'

function toLedgerUsage(usage: Usage | undefined): LedgerUsage | undefined {
  if (usage === undefined) return undefined
  const cached = usage.inputTokensDetails.reduce((sum, details) => sum + (details['cached_tokens'] ?? 0), 0)
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.totalTokens,
    ...(cached > 0 ? { cached_tokens: cached } : {}),
  }
}

function countKeys(items: readonly ItemRecord[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const item of items) {
    const key = itemKey(item)
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return counts
}

export function take(counts: Map<string, number>, key: string): boolean {
  const count = counts.get(key) ?? 0
  if (count === 0) return false
  counts.set(key, count - 1)
  return true
}

/** Summary text of the user message that stands for a Responses compaction item. */
const COMPACTION_SUMMARY =
  'An OpenAI Responses compaction item (opaque to agent-ledger; the item is kept verbatim in the log, event openai-agents/items).'

/** One assistant wire message standing for several assistant-side items (reasoning, text, calls). */
function mergeAssistantItems(items: readonly ItemRecord[]): WireMessage {
  let content: string | null = null
  let reasoning: string | undefined
  const calls: NonNullable<Extract<WireMessage, { role: 'assistant' }>['tool_calls']> = []
  for (const item of items) {
    const message = itemToWire(item)
    if (message.role !== 'assistant') continue
    if (message.content !== null) content = (content ?? '') + message.content
    if (message.reasoning_content !== undefined) reasoning = (reasoning ?? '') + message.reasoning_content
    calls.push(...(message.tool_calls ?? []))
  }
  return {
    role: 'assistant',
    content,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...(reasoning === undefined ? {} : { reasoning_content: reasoning }),
  }
}

/** The session's log writing, over its writer and the exact items recorded so far. */
export class SessionLog {
  readonly writer: SessionWriter
  /** Exact items by the seq of the surface event they stand for. */
  readonly recorded: Map<number, readonly ItemRecord[]>
  /** Keys of items logged during a run (by the wrappers) that the runner has not persisted yet. */
  readonly runLogged = new Map<string, number>()

  constructor(writer: SessionWriter, recorded: Map<number, readonly ItemRecord[]>) {
    this.writer = writer
    this.recorded = recorded
  }

  /** The core's compaction events standing for `compaction`, then `retained` appended (no flush). */
  compact(compaction: ItemRecord, retained: readonly ItemRecord[], usage?: LedgerUsage): void {
    const surface = this.writer.projection.surface()
    const start = surface[0]?.type === 'system/message' ? 1 : 0
    if (surface.length > start) {
      const plan = planCompaction(this.writer.projection, {
        compactionId: `openai-agents-${this.writer.projection.nextSeq}`,
        startSeq: surface[start]!.seq,
        endSeq: surface.at(-1)!.seq,
        summary: COMPACTION_SUMMARY,
        reason: 'openai-responses-compaction',
      })
      for (const input of plan) {
        const seq = this.writer.append(input).seq
        if (input.type === 'user/message') this.record(seq, [compaction])
      }
    } else {
      const message: WireMessage = { role: 'user', content: COMPACTION_SUMMARY }
      this.record(this.appendSurface(message), [compaction])
    }
    retained.forEach((item, index) => this.appendItem(item, index === retained.length - 1 ? { usage } : {}))
    this.runLogged.clear()
  }

  /** The surface nodes and the items each stands for (recorded exactly, or derived from the wire message). */
  nodeItems(): NodeItems[] {
    const names = new Map<string, string>()
    return this.writer.projection.surface().map((node) => {
      if (node.message.role === 'assistant') {
        for (const call of node.message.tool_calls ?? []) names.set(call.id, call.function.name)
      }
      return { node, items: this.recorded.get(node.seq) ?? wireToItems(node.message, names) }
    })
  }

  /** Function names by call id, from the surface's assistant messages. */
  callNames(): Map<string, string> {
    const names = new Map<string, string>()
    for (const node of this.writer.projection.surface()) {
      if (node.message.role !== 'assistant') continue
      for (const call of node.message.tool_calls ?? []) names.set(call.id, call.function.name)
    }
    return names
  }

  /** Records `items` exactly for surface event `forSeq` (a log-only event). */
  record(forSeq: number, items: readonly ItemRecord[]): void {
    const data: RecordedItems = { forSeq, items }
    // A log-only event of a type readers need not know (kept verbatim, never model-visible):
    // outside the typed event map, so the input is cast; the writer accepts it as ignorable.
    this.writer.append({ type: ITEMS_EVENT_TYPE, data, ignorable: true } as unknown as EventInput)
    this.recorded.set(forSeq, items)
  }

  /** Appends one surface event for `message` (optionally a `replace`); its seq. */
  appendSurface(
    message: WireMessage,
    extra: { usage?: LedgerUsage | undefined } = {},
    replace?: ReplaceRange,
  ): number {
    const type = surfaceTypeOf(message)
    const data =
      type === 'assistant/message' && extra.usage !== undefined
        ? { message, usage: extra.usage }
        : { message }
    const op =
      replace === undefined
        ? {}
        : {
            surfaceOp: { op: 'replace', startSeq: replace.startSeq, endSeq: replace.endSeq },
            sourceEventSeqs: replace.hidden,
          }
    return this.writer.append({ type, data, ...op } as EventInput).seq
  }

  /** Appends one item as a surface event, recorded exactly when the wire message does not hold it; its seq. */
  appendItem(
    item: ItemRecord,
    extra: { usage?: LedgerUsage | undefined } = {},
    replace?: ReplaceRange,
  ): number {
    const names = this.callNames()
    if (item['type'] === 'function_call') names.set(String(item['callId']), String(item['name']))
    const message = itemToWire(item)
    const seq = this.appendSurface(message, extra, replace)
    if (!wireHoldsItem(item, message, names)) this.record(seq, [item])
    return seq
  }

  /** Appends the `tool/call` of a function call item. */
  appendToolCall(item: ItemRecord): void {
    this.writer.append({
      type: 'tool/call',
      data: {
        callId: String(item['callId']),
        name: String(item['name']),
        arguments: typeof item['arguments'] === 'string' ? item['arguments'] : '',
      },
    })
  }

  /** Replaces `entries` (consecutive surface nodes) with one event standing for `keep`. */
  replace(
    entries: readonly NodeItems[],
    options: { keep: readonly ItemRecord[]; by: 'popItem' | 'clearSession' },
  ): void {
    const first = entries[0]!.node
    const last = entries.at(-1)!.node
    const hidden = entries.map((entry) => entry.node.seq)
    let message: WireMessage
    if (options.keep.length > 0) {
      message = mergeAssistantItems(options.keep)
    } else if (first.type === 'tool/result' && first.message.role === 'tool') {
      message = {
        role: 'tool',
        tool_call_id: first.message.tool_call_id,
        content: `[result removed by the session's popItem; the original stays in the log at seq ${first.seq}]`,
      }
    } else {
      message = {
        role: 'system',
        content: `[removed from the session by ${options.by}; the originals stay in the log at seq ${hidden.join(', ')}]`,
      }
    }
    const seq = this.writer.append({
      type: surfaceTypeOf(message),
      data: { message },
      surfaceOp: { op: 'replace', startSeq: first.seq, endSeq: last.seq },
      sourceEventSeqs: hidden,
    } as EventInput).seq
    this.record(seq, options.keep)
  }

  /** Replaces the last `count` items of `entries` with `replacement` (a `replace` over their nodes). */
  replaceSuffix(entries: readonly NodeItems[], count: number, replacement: readonly ItemRecord[]): void {
    if (count === 0) {
      for (const item of replacement) this.appendItem(item)
      return
    }
    let index = entries.length - 1
    let remaining = count
    while (entries[index]!.items.length < remaining) {
      remaining -= entries[index]!.items.length
      index -= 1
    }
    let before = entries[index]!.items.slice(0, entries[index]!.items.length - remaining)
    // A replace may not start on a tool result: it takes the call (and what is between) along.
    while (index > 0 && entries[index]!.node.type === 'tool/result') {
      index -= 1
      before = [...entries[index]!.items, ...before]
    }
    this.replaceRange(entries.slice(index), [...before, ...replacement], 'a history transaction')
  }

  /**
   * Replaces `range` (consecutive surface nodes) with `items`: the first item's event carries the
   * `replace` (a note when there is none or it is a function output), the rest are appended.
   */
  replaceRange(range: readonly NodeItems[], items: readonly ItemRecord[], by: string): void {
    const first = range[0]!.node
    const hidden = range.map((entry) => entry.node.seq)
    const head = items[0]
    const headCarries = head !== undefined && head['type'] !== 'function_call_result'
    const replace = { startSeq: first.seq, endSeq: range.at(-1)!.node.seq, hidden }
    if (headCarries) {
      this.appendItem(head, {}, replace)
    } else {
      const message: WireMessage = {
        role: 'system',
        content: `[replaced by ${by}; the originals stay in the log at seq ${hidden.join(', ')}]`,
      }
      const seq = this.writer.append({
        type: 'system/message',
        data: { message },
        surfaceOp: { op: 'replace', startSeq: replace.startSeq, endSeq: replace.endSeq },
        sourceEventSeqs: hidden,
      }).seq
      this.record(seq, [])
    }
    for (const item of headCarries ? items.slice(1) : items) this.appendItem(item)
  }

  /** Logs a model request's new input items (and the instructions), flushed. */
  async logInput(request: ModelRequest): Promise<void> {
    const input: ItemRecord[] =
      typeof request.input === 'string'
        ? [{ type: 'message', role: 'user', content: request.input }]
        : request.input.map((item) => toJsonItem(item))
    this.logInstructions(request.systemInstructions)
    const known = countKeys(this.nodeItems().flatMap((entry) => entry.items))
    for (const item of input) {
      const key = itemKey(item)
      if (take(known, key)) continue
      this.appendItem(item)
      if (item['type'] === 'function_call') this.appendToolCall(item)
      this.runLogged.set(key, (this.runLogged.get(key) ?? 0) + 1)
    }
    await this.writer.flush()
  }

  /** Logs the agent's instructions as the leading system message (hidden from `getItems`). */
  logInstructions(instructions: string | undefined): void {
    if (instructions === undefined || instructions === '') return
    const first = this.writer.projection.surface()[0]
    const ours =
      first !== undefined && first.type === 'system/message' && this.recorded.get(first.seq)?.length === 0
    if (ours && first.message.content === instructions) return
    if (first !== undefined && !ours) return // the history already starts otherwise: leave it as it is
    const message: WireMessage = { role: 'system', content: instructions }
    const seq = this.writer.append(
      first === undefined
        ? { type: 'system/message', data: { message } }
        : {
            type: 'system/message',
            data: { message },
            surfaceOp: { op: 'replace', startSeq: first.seq, endSeq: first.seq },
            sourceEventSeqs: [first.seq],
          },
    ).seq
    this.record(seq, [])
  }

  /** Logs a response's output items (the usage on the last), flushed; a leading compaction item compacts. */
  async logOutput(output: readonly AgentInputItem[], usage: Usage | undefined): Promise<void> {
    const items = output.map((item) => toJsonItem(item))
    const ledgerUsage = toLedgerUsage(usage)
    if (items[0]?.['type'] === 'compaction') {
      // A response that starts with a compaction item replaces the history (as the runner does
      // after the turn, which then finds it done).
      this.compact(items[0], items.slice(1), ledgerUsage)
      for (const item of items.slice(1)) {
        const key = itemKey(item)
        this.runLogged.set(key, (this.runLogged.get(key) ?? 0) + 1)
      }
      await this.writer.flush()
      return
    }
    items.forEach((item, index) => {
      // The response's usage goes on its last item's event.
      this.appendItem(item, index === items.length - 1 ? { usage: ledgerUsage } : {})
      const key = itemKey(item)
      this.runLogged.set(key, (this.runLogged.get(key) ?? 0) + 1)
    })
    await this.writer.flush()
  }

  /** Logs a function call (`tool/call`, and its item when not logged yet), flushed, before the tool runs. */
  async beforeTool(call: ItemRecord): Promise<void> {
    const known = countKeys(this.nodeItems().flatMap((entry) => entry.items))
    const key = itemKey(call)
    if (!take(known, key)) {
      this.appendItem(call)
      this.runLogged.set(key, (this.runLogged.get(key) ?? 0) + 1)
    }
    this.appendToolCall(call)
    await this.writer.flush()
  }
}
