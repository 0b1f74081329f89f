import type { EventInput, Usage as LedgerUsage, WireMessage } from '@agent-ledger/session-events'
import type { SurfaceNode } from '@agent-ledger/session-projection'
import type { OpenWriterOptions, SessionStore, SessionWriter } from '@agent-ledger/session-store'
import { planCompaction } from '@agent-ledger/session-projection'
import { Usage } from '@openai/agents-core'
import type {
  AgentInputItem,
  Model,
  OpenAIResponsesCompactionArgs,
  OpenAIResponsesCompactionResult,
  ModelRequest,
  ModelResponse,
  Session,
  StreamEvent,
  Tool,
} from '@openai/agents-core'

import { endsWith, OPERATION_EVENT_TYPE, transactionDigest } from './history-ops.ts'
import type { RecordedOperation } from './history-ops.ts'
import { itemKey, itemToWire, surfaceTypeOf, toJsonItem, wireHoldsItem, wireToItems } from './item-mapping.ts'
import { AgentsAdapterError, AgentsAdapterErrorCode } from './openai-agents-error.ts'

/** Type of the log-only events that record the SDK's exact items beside a surface event. */
export const ITEMS_EVENT_TYPE = 'openai-agents/items'

type ItemRecord = Record<string, unknown>

/** Data of an {@link ITEMS_EVENT_TYPE} event: the items surface event `forSeq` stands for (none for a tombstone). */
export interface RecordedItems {
  readonly forSeq: number
  readonly items: readonly ItemRecord[]
}

/**
 * Options of {@link openAgentsSession}. The writer options of the core (`owner`, `leaseMs`,
 * `takeover`, `signal`) go to `store.openWriter(id, options)`; `owner`, `leaseMs` and
 * `signal` also to `store.create` when the session is created.
 */
export interface OpenAgentsSessionOptions extends OpenWriterOptions {
  /** Create the session when it does not exist (default true). */
  readonly create?: boolean
  /**
   * What `runCompaction` calls (the runner calls it after each persisted turn): given the
   * history and the runner's arguments, the replacement (a `compaction` item first, e.g. from
   * the OpenAI `responses.compact` endpoint, then the retained items) and its usage, or null to
   * skip. Without it `runCompaction` compacts nothing.
   */
  readonly compact?: Compactor
}

/** The compaction call of {@link OpenAgentsSessionOptions.compact}. */
export type Compactor = (
  request: OpenAIResponsesCompactionArgs & { readonly items: AgentInputItem[] },
) => Promise<{ items: AgentInputItem[]; usage: OpenAIResponsesCompactionResult['usage'] } | null>

/** A history transaction (`SessionHistoryTransactionArgs` of `@openai/agents-core` 0.14 and later). */
export interface HistoryTransactionArgs {
  readonly operationId: string
  readonly transaction:
    | { readonly type: 'append_items'; readonly items: readonly AgentInputItem[] }
    | {
        readonly type: 'replace_suffix'
        readonly expectedSuffix: readonly AgentInputItem[]
        readonly replacement: readonly AgentInputItem[]
      }
}

/** A history rewrite (`SessionHistoryRewriteArgs`): replace a function call's item (e.g. its approved arguments). */
export interface HistoryRewriteArgs {
  readonly mutations: readonly {
    readonly type: 'replace_function_call'
    readonly callId: string
    readonly replacement: AgentInputItem
  }[]
}

interface NodeItems {
  readonly node: SurfaceNode
  readonly items: readonly ItemRecord[]
}

function isNotFound(error: unknown): boolean {
  return (
    typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'SESSION_NOT_FOUND'
  )
}

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

function take(counts: Map<string, number>, key: string): boolean {
  const count = counts.get(key) ?? 0
  if (count === 0) return false
  counts.set(key, count - 1)
  return true
}

/**
 * An OpenAI Agents SDK `Session` over an agent-ledger session: append-only, durable, and
 * derived from the log's projection. Create it with {@link openAgentsSession}.
 *
 * - `getItems` maps the projection's surface to SDK items (the exact items where the wire
 *   shape cannot hold them, see the README's mapping table);
 * - `addItems` appends one surface event per item, logs `tool/call` for every function call,
 *   and flushes the calls before appending any output;
 * - `popItem` and `clearSession` append a `replace` that hides the item(s), citing them in
 *   `sourceEventSeqs`: nothing is deleted from the log;
 * - `wrapModel` and `wrapTools` log a run as it happens (input and model output before each
 *   tool runs, `tool/call` flushed before the tool), so a crash mid-tool resumes with a
 *   `TOOL_OUTCOME_UNKNOWN` result in the next model request.
 */
export class AgentLedgerSession implements Session {
  /** The open writer (the session's single writer until {@link AgentLedgerSession.close}). */
  readonly writer: SessionWriter
  readonly #recorded: Map<number, readonly ItemRecord[]>
  /** Keys of items logged during a run (by the wrappers) that the runner has not persisted yet. */
  readonly #runLogged = new Map<string, number>()
  /** Applied history transactions by operation id (loaded from the log at open). */
  readonly #operations: Map<string, RecordedOperation>
  readonly #compactor: Compactor | undefined
  /** Compaction ownership receipts (never serialised): {@link AgentLedgerSession.#changes} when each was granted or renewed. */
  readonly #receipts = new WeakMap<object, number>()
  /** Count of history changes through the Session methods (the wrappers' logging of a run is not one). */
  #changes = 0
  #closed = false
  /**
   * The runner passes its `RunContext` to every history call (`@openai/agents-core` 0.20). The
   * session accepts it and logs nothing of it: the context is the application's (often not JSON).
   */
  readonly acceptsRunContext = true as const

  /** Built by {@link openAgentsSession}; not meant to be called directly. */
  constructor(
    writer: SessionWriter,
    recorded: Map<number, readonly ItemRecord[]>,
    loaded: { operations?: Map<string, RecordedOperation>; compact?: Compactor | undefined } = {},
  ) {
    this.writer = writer
    this.#recorded = recorded
    this.#operations = loaded.operations ?? new Map<string, RecordedOperation>()
    this.#compactor = loaded.compact
  }

  /** The session id. */
  getSessionId(): Promise<string> {
    return Promise.resolve(this.writer.id)
  }

  /**
   * The session's items, derived from the projection.
   *
   * @param limit - When given, only the last `limit` items (chronological order).
   */
  getItems(limit?: number): Promise<AgentInputItem[]> {
    const items = this.#nodeItems().flatMap((entry) => entry.items)
    const tail = limit === undefined ? items : limit <= 0 ? [] : items.slice(-limit)
    return Promise.resolve(structuredClone(tail) as AgentInputItem[])
  }

  /**
   * Appends items, one surface event each. Items a wrapper already logged during this run are
   * recognised (function calls and results by call id, messages by content) and not logged twice.
   *
   * Every function call also gets a `tool/call` (the session cannot see whether the tool
   * started, so a crash leaves the cautious `TOOL_OUTCOME_UNKNOWN`), and the calls are flushed
   * before the first output is appended. Resolves when everything is durable.
   */
  async addItems(items: AgentInputItem[]): Promise<void> {
    this.#assertOpen()
    this.#changes += 1
    const records = items.map((item, index) => {
      if (typeof item !== 'object' || item === null) {
        throw new AgentsAdapterError({
          code: AgentsAdapterErrorCode.INVALID_ITEM,
          message: `Item ${index} of addItems is ${item === null ? 'null' : typeof item}: expected an SDK item object`,
          details: { index },
        })
      }
      return toJsonItem(item)
    })
    let callsNotFlushed = false
    for (const item of records) {
      if (take(this.#runLogged, itemKey(item))) continue
      if (item['type'] === 'function_call_result' && callsNotFlushed) {
        await this.writer.flush()
        callsNotFlushed = false
      }
      this.#appendItem(item)
      if (item['type'] === 'function_call') {
        this.#appendToolCall(item)
        callsNotFlushed = true
      }
    }
    await this.writer.flush()
  }

  /**
   * Hides the most recent item with a `replace` (the original stays in the log) and returns it.
   *
   * @returns The item, or `undefined` when the session shows none.
   */
  async popItem(): Promise<AgentInputItem | undefined> {
    this.#assertOpen()
    this.#changes += 1
    const entries = this.#nodeItems()
    let index = entries.length - 1
    while (index >= 0 && entries[index]!.items.length === 0) index -= 1
    if (index < 0) return undefined
    const { node, items } = entries[index]!
    const popped = items.at(-1)!
    if (node.type === 'tool/result') {
      this.#replace(entries.slice(index, index + 1), { keep: [], by: 'popItem' })
    } else {
      // The range takes the (already hidden) results after the node along, so no result is split
      // from its call. One event may stand for several items (an assistant message written by
      // another adapter): the replacement then keeps the others.
      let end = index
      while (entries[end + 1]?.node.type === 'tool/result') end += 1
      this.#replace(entries.slice(index, end + 1), { keep: items.slice(0, -1), by: 'popItem' })
    }
    await this.writer.flush()
    return structuredClone(popped) as AgentInputItem
  }

  /** Hides every item with one `replace` citing them all; the log keeps every byte. */
  async clearSession(): Promise<void> {
    this.#assertOpen()
    this.#changes += 1
    const entries = this.#nodeItems()
    if (entries.every((entry) => entry.items.length === 0)) return
    this.#replace(entries, { keep: [], by: 'clearSession' })
    this.#runLogged.clear()
    await this.writer.flush()
  }

  /**
   * Applies a history transaction atomically and idempotently: the change and an
   * `openai-agents/operation` record of its operation id go to the log in one flush. A retry
   * with the same operation id and transaction writes nothing; the same id with another
   * transaction rejects `OPERATION_CONFLICT`, a `replace_suffix` whose expected suffix is not
   * the history's rejects `SUFFIX_MISMATCH`, both before anything is written.
   *
   * `append_items` appends like {@link AgentLedgerSession.addItems} (items a wrapper already
   * logged this run are not logged twice); `replace_suffix` appends a `replace` over the
   * suffix's nodes (the originals stay in the log, cited in `sourceEventSeqs`).
   */
  async applyHistoryTransaction(args: HistoryTransactionArgs): Promise<void> {
    this.#assertOpen()
    const { operationId, transaction } = checkTransaction(args)
    const digest = transactionDigest(transaction)
    const known = this.#operations.get(operationId)
    if (known !== undefined) {
      if (known.digest === digest) return
      throw new AgentsAdapterError({
        code: AgentsAdapterErrorCode.OPERATION_CONFLICT,
        message: `History operation ${JSON.stringify(operationId)} of session ${JSON.stringify(this.writer.id)} was applied with another transaction (${known.kind}): expected the same transaction on a retry, found a different ${String(transaction['type'])}`,
        details: { operationId },
      })
    }
    this.#changes += 1
    if (transaction['type'] === 'append_items') {
      for (const item of transaction['items'] as ItemRecord[]) {
        if (take(this.#runLogged, itemKey(item))) continue
        this.#appendItem(item)
        if (item['type'] === 'function_call') this.#appendToolCall(item)
      }
    } else {
      const expected = transaction['expectedSuffix'] as ItemRecord[]
      const entries = this.#nodeItems()
      const items = entries.flatMap((entry) => entry.items)
      if (!endsWith(items, expected)) {
        throw new AgentsAdapterError({
          code: AgentsAdapterErrorCode.SUFFIX_MISMATCH,
          message: `History operation ${JSON.stringify(operationId)}: expected the last ${expected.length} item(s) of session ${JSON.stringify(this.writer.id)} to be the transaction's expectedSuffix, found a history of ${items.length} item(s) that does not end with it`,
          details: { operationId, expected: expected.length, found: items.length },
        })
      }
      this.#replaceSuffix(entries, expected.length, transaction['replacement'] as ItemRecord[])
    }
    const record: RecordedOperation = { operationId, kind: String(transaction['type']), digest }
    this.writer.append({ type: OPERATION_EVENT_TYPE, data: record, ignorable: true } as unknown as EventInput)
    this.#operations.set(operationId, record)
    await this.writer.flush()
  }

  /**
   * Rewrites history items: `replace_function_call` replaces the function call with that call id
   * (e.g. with its approved arguments) by a `replace` over the call and its results, which stay
   * visible; the original call stays in the log. A call id the history does not show changes nothing.
   */
  async applyHistoryMutations(args: HistoryRewriteArgs): Promise<void> {
    this.#assertOpen()
    this.#changes += 1
    for (const mutation of args.mutations) {
      if (mutation.type !== 'replace_function_call') continue
      const entries = this.#nodeItems()
      const index = entries.findIndex((entry) =>
        entry.items.some((item) => item['type'] === 'function_call' && item['callId'] === mutation.callId),
      )
      if (index < 0) continue
      const replacement = toJsonItem(mutation.replacement)
      let end = index
      while (entries[end + 1]?.node.type === 'tool/result') end += 1
      const list = [
        ...entries[index]!.items.map((item) =>
          item['type'] === 'function_call' && item['callId'] === mutation.callId ? replacement : item,
        ),
        ...entries.slice(index + 1, end + 1).flatMap((entry) => entry.items),
      ]
      this.#replaceRange(entries.slice(index, end + 1), list, 'a history rewrite')
    }
    await this.writer.flush()
  }

  /**
   * Replaces the logical history with a Responses compaction item and its retained suffix
   * (`items[0]` must be the `compaction` item). The core's compaction: `compaction/start`,
   * `compaction/summary`, a `user/message` that replaces every node (but a leading system
   * message) and stands for the compaction item (recorded exactly), `compaction/end`; then the
   * retained items are appended. The originals stay in the log.
   */
  async replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void> {
    this.#assertOpen()
    this.#changes += 1
    const plain = items.map((item) => toJsonItem(item))
    const [compaction, ...retained] = plain
    if (compaction?.['type'] !== 'compaction') {
      throw new AgentsAdapterError({
        code: AgentsAdapterErrorCode.INVALID_COMPACTION,
        message: `replaceHistoryWithCompaction of session ${JSON.stringify(this.writer.id)}: expected the items to start with a compaction item, found ${compaction === undefined ? 'no items' : JSON.stringify(compaction['type'])}`,
        details: { found: compaction?.['type'] ?? null },
      })
    }
    this.#compact(compaction, retained)
    await this.writer.flush()
  }

  /** The core's compaction events standing for `compaction`, then `retained` appended (no flush). */
  #compact(compaction: ItemRecord, retained: readonly ItemRecord[], usage?: LedgerUsage): void {
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
        if (input.type === 'user/message') this.#record(seq, [compaction])
      }
    } else {
      const message: WireMessage = { role: 'user', content: COMPACTION_SUMMARY }
      this.#record(this.#appendSurface(message), [compaction])
    }
    retained.forEach((item, index) => this.#appendItem(item, index === retained.length - 1 ? { usage } : {}))
    this.#runLogged.clear()
  }

  /**
   * Runs a compaction after a turn (the runner calls it): with the `compact` option, hands it the
   * history and replaces the history with what it returns ({@link AgentLedgerSession.replaceHistoryWithCompaction}).
   * Returns null, compacting nothing, without `compact`, when it returns null, or for an
   * automatic compaction (`ownership` given) whose receipt is null or stale: something else
   * wrote to the session since the runner's read. `ownership` undefined is a manual compaction.
   */
  async runCompaction(
    args?: OpenAIResponsesCompactionArgs,
    _runContext?: unknown,
    ownership?: object | null,
  ): Promise<OpenAIResponsesCompactionResult | null> {
    this.#assertOpen()
    if (this.#compactor === undefined) return null
    if (ownership === null) return null
    if (ownership !== undefined && !this.#owns(ownership)) return null
    const replacement = await this.#compactor({ ...args, items: await this.getItems() })
    if (replacement === null) return null
    await this.replaceHistoryWithCompaction(replacement.items)
    return { usage: replacement.usage }
  }

  /**
   * The history and a compaction ownership receipt bound to this read: it stays current through
   * the wrappers' logging and its own appends ({@link AgentLedgerSession.addItemsWithCompactionOwnership}),
   * and goes stale at any other change (`addItems`, `popItem`, `clearSession`, a transaction, a rewrite, a compaction).
   */
  async getItemsWithCompactionOwnership(): Promise<{ items: AgentInputItem[]; ownership: object }> {
    const ownership = {}
    this.#receipts.set(ownership, this.#changes)
    return { items: await this.getItems(), ownership }
  }

  /**
   * Appends like {@link AgentLedgerSession.addItems}; a receipt that was current before the
   * append stays current after it, a stale one stays stale (the items are appended either way).
   */
  async addItemsWithCompactionOwnership(items: AgentInputItem[], ownership: object | null): Promise<void> {
    const owned = ownership !== null && this.#owns(ownership)
    await this.addItems(items)
    if (owned) this.#receipts.set(ownership, this.#changes)
  }

  #owns(ownership: object): boolean {
    return this.#receipts.get(ownership) === this.#changes
  }

  /**
   * The runner's hook before persistence reconciliation compares its items with the session's:
   * both sides as the log holds them (plain JSON: no `undefined` members, no class instances).
   */
  prepareHistoryItemsForPersistenceComparison(items: AgentInputItem[]): AgentInputItem[] {
    return items.map((item) => toJsonItem(item) as AgentInputItem)
  }

  /**
   * The runner's hook before a stored item goes back to the model: the item as the log holds it.
   * Nothing is backend-assigned, so nothing is stripped; the runner's reasoning-id policy applies after.
   */
  prepareHistoryItemForModelInput(item: AgentInputItem): AgentInputItem {
    return toJsonItem(item) as AgentInputItem
  }

  /** The log keeps every item verbatim, reasoning item ids included: the runner must not strip them before persisting. */
  preserveReasoningItemIdsForPersistence(): boolean {
    return true
  }

  /**
   * Wraps a model so that each request's new input items are logged before the call and the
   * response's output items (with usage) right after it, flushed, before the runner acts on them.
   */
  wrapModel(model: Model): Model {
    const wrapped: Model = {
      getResponse: async (request: ModelRequest): Promise<ModelResponse> => {
        await this.#logInput(request)
        const response = await model.getResponse(request)
        await this.#logOutput(response.output, response.usage)
        return response
      },
      getStreamedResponse: (request: ModelRequest) => this.#stream(model, request),
    }
    if (model.getRetryAdvice !== undefined) wrapped.getRetryAdvice = model.getRetryAdvice.bind(model)
    return wrapped
  }

  async *#stream(model: Model, request: ModelRequest): AsyncIterable<StreamEvent> {
    await this.#logInput(request)
    for await (const event of model.getStreamedResponse(request)) {
      if (event.type === 'response_done') {
        const { usage } = event.response
        await this.#logOutput(
          event.response.output,
          new Usage({
            inputTokens: usage.inputTokens,
            outputTokens: usage.outputTokens,
            totalTokens: usage.totalTokens,
          }),
        )
      }
      yield event
    }
  }

  /**
   * Wraps function tools so each call is logged (`tool/call`) and flushed before the tool runs.
   * Other tools (hosted, computer, shell...) are returned unchanged.
   */
  wrapTools<TTool extends Tool>(tools: readonly TTool[]): TTool[] {
    return tools.map((tool) => {
      if (tool.type !== 'function') return tool
      const invoke = tool.invoke.bind(tool)
      const wrapped: typeof tool = {
        ...tool,
        invoke: async (runContext, input, details) => {
          const call = details?.toolCall
          if (call !== undefined) await this.#beforeTool(toJsonItem(call))
          return invoke(runContext, input, details) as Promise<unknown>
        },
      }
      return wrapped
    })
  }

  /** Flushes and releases the session. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true
    await this.writer.close()
  }

  #assertOpen(): void {
    if (this.#closed) {
      throw new AgentsAdapterError({
        code: AgentsAdapterErrorCode.SESSION_CLOSED,
        message: `Session ${JSON.stringify(this.writer.id)} is closed: expected an open session`,
      })
    }
  }

  #nodeItems(): NodeItems[] {
    const names = new Map<string, string>()
    return this.writer.projection.surface().map((node) => {
      if (node.message.role === 'assistant') {
        for (const call of node.message.tool_calls ?? []) names.set(call.id, call.function.name)
      }
      return { node, items: this.#recorded.get(node.seq) ?? wireToItems(node.message, names) }
    })
  }

  #callNames(): Map<string, string> {
    const names = new Map<string, string>()
    for (const node of this.writer.projection.surface()) {
      if (node.message.role !== 'assistant') continue
      for (const call of node.message.tool_calls ?? []) names.set(call.id, call.function.name)
    }
    return names
  }

  #record(forSeq: number, items: readonly ItemRecord[]): void {
    const data: RecordedItems = { forSeq, items }
    // A log-only event of a type readers need not know (kept verbatim, never model-visible):
    // outside the typed event map, so the input is cast; the writer accepts it as ignorable.
    this.writer.append({ type: ITEMS_EVENT_TYPE, data, ignorable: true } as unknown as EventInput)
    this.#recorded.set(forSeq, items)
  }

  #appendSurface(
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

  #appendItem(
    item: ItemRecord,
    extra: { usage?: LedgerUsage | undefined } = {},
    replace?: ReplaceRange,
  ): number {
    const names = this.#callNames()
    if (item['type'] === 'function_call') names.set(String(item['callId']), String(item['name']))
    const message = itemToWire(item)
    const seq = this.#appendSurface(message, extra, replace)
    if (!wireHoldsItem(item, message, names)) this.#record(seq, [item])
    return seq
  }

  #appendToolCall(item: ItemRecord): void {
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
  #replace(
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
    this.#record(seq, options.keep)
  }

  /** Replaces the last `count` items of `entries` with `replacement` (a `replace` over their nodes). */
  #replaceSuffix(entries: readonly NodeItems[], count: number, replacement: readonly ItemRecord[]): void {
    if (count === 0) {
      for (const item of replacement) this.#appendItem(item)
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
    this.#replaceRange(entries.slice(index), [...before, ...replacement], 'a history transaction')
  }

  /**
   * Replaces `range` (consecutive surface nodes) with `items`: the first item's event carries the
   * `replace` (a note when there is none or it is a function output), the rest are appended.
   */
  #replaceRange(range: readonly NodeItems[], items: readonly ItemRecord[], by: string): void {
    const first = range[0]!.node
    const hidden = range.map((entry) => entry.node.seq)
    const head = items[0]
    const headCarries = head !== undefined && head['type'] !== 'function_call_result'
    const replace = { startSeq: first.seq, endSeq: range.at(-1)!.node.seq, hidden }
    if (headCarries) {
      this.#appendItem(head, {}, replace)
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
      this.#record(seq, [])
    }
    for (const item of headCarries ? items.slice(1) : items) this.#appendItem(item)
  }

  async #logInput(request: ModelRequest): Promise<void> {
    const input: ItemRecord[] =
      typeof request.input === 'string'
        ? [{ type: 'message', role: 'user', content: request.input }]
        : request.input.map((item) => toJsonItem(item))
    this.#logInstructions(request.systemInstructions)
    const known = countKeys(this.#nodeItems().flatMap((entry) => entry.items))
    for (const item of input) {
      const key = itemKey(item)
      if (take(known, key)) continue
      this.#appendItem(item)
      if (item['type'] === 'function_call') this.#appendToolCall(item)
      this.#runLogged.set(key, (this.#runLogged.get(key) ?? 0) + 1)
    }
    await this.writer.flush()
  }

  /** Logs the agent's instructions as the leading system message (hidden from `getItems`). */
  #logInstructions(instructions: string | undefined): void {
    if (instructions === undefined || instructions === '') return
    const first = this.writer.projection.surface()[0]
    const ours =
      first !== undefined && first.type === 'system/message' && this.#recorded.get(first.seq)?.length === 0
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
    this.#record(seq, [])
  }

  async #logOutput(output: readonly AgentInputItem[], usage: Usage | undefined): Promise<void> {
    const items = output.map((item) => toJsonItem(item))
    const ledgerUsage = toLedgerUsage(usage)
    if (items[0]?.['type'] === 'compaction') {
      // A response that starts with a compaction item replaces the history (as the runner does
      // after the turn, which then finds it done).
      this.#compact(items[0], items.slice(1), ledgerUsage)
      for (const item of items.slice(1)) {
        const key = itemKey(item)
        this.#runLogged.set(key, (this.#runLogged.get(key) ?? 0) + 1)
      }
      await this.writer.flush()
      return
    }
    items.forEach((item, index) => {
      // The response's usage goes on its last item's event.
      this.#appendItem(item, index === items.length - 1 ? { usage: ledgerUsage } : {})
      const key = itemKey(item)
      this.#runLogged.set(key, (this.#runLogged.get(key) ?? 0) + 1)
    })
    await this.writer.flush()
  }

  async #beforeTool(call: ItemRecord): Promise<void> {
    const known = countKeys(this.#nodeItems().flatMap((entry) => entry.items))
    const key = itemKey(call)
    if (!take(known, key)) {
      this.#appendItem(call)
      this.#runLogged.set(key, (this.#runLogged.get(key) ?? 0) + 1)
    }
    this.#appendToolCall(call)
    await this.writer.flush()
  }
}

/** Summary text of the user message that stands for a Responses compaction item. */
const COMPACTION_SUMMARY =
  'An OpenAI Responses compaction item (opaque to agent-ledger; the item is kept verbatim in the log, event openai-agents/items).'

/** A `replace` over surface nodes `startSeq..endSeq`, citing `hidden`. */
interface ReplaceRange {
  readonly startSeq: number
  readonly endSeq: number
  readonly hidden: readonly number[]
}

/** The transaction's operation id and its items as plain JSON, or `INVALID_TRANSACTION`. */
function checkTransaction(args: HistoryTransactionArgs): { operationId: string; transaction: ItemRecord } {
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

/**
 * Opens (or creates) an agent-ledger session as an OpenAI Agents SDK `Session`. Opening an
 * existing session goes through the store's `openWriter`, which repairs what a crash left
 * open (a placeholder result for every unanswered function call) before anything else is
 * written, so `getItems()` hands the runner those placeholders.
 *
 * Reads the session's events once, to load the exact items recorded beside the surface.
 *
 * @param store - An agent-ledger store (`createJsonlStore`, or `createSessionStore` over any backend).
 * @param id - The session id.
 * @param options - `create` when missing (default true), and the writer options.
 * @returns The session; close it when done.
 * @throws whatever the store throws (`SESSION_LOCKED`, damage codes...).
 */
export async function openAgentsSession(
  store: SessionStore,
  id: string,
  options: OpenAgentsSessionOptions = {},
): Promise<AgentLedgerSession> {
  let writer: SessionWriter
  let created = false
  try {
    writer = await store.openWriter(id, writerOptions(options))
  } catch (error) {
    if (!isNotFound(error) || options.create === false) throw error
    const { takeover: _takeover, ...lease } = writerOptions(options)
    writer = await store.create({ id, ...lease })
    created = true
  }
  const recorded = new Map<number, readonly ItemRecord[]>()
  const operations = new Map<string, RecordedOperation>()
  if (!created) {
    try {
      for await (const event of store.readEvents(id)) {
        if (event.type === OPERATION_EVENT_TYPE) {
          const data = event.data as Partial<RecordedOperation> | null
          if (typeof data?.operationId === 'string' && typeof data.digest === 'string')
            operations.set(data.operationId, data as RecordedOperation)
          continue
        }
        if (event.type !== ITEMS_EVENT_TYPE) continue
        const data = event.data as Partial<RecordedItems> | null
        if (typeof data?.forSeq === 'number' && Array.isArray(data.items))
          recorded.set(data.forSeq, data.items)
      }
    } catch (error) {
      await writer.close().catch(() => undefined)
      throw error
    }
  }
  return new AgentLedgerSession(writer, recorded, { operations, compact: options.compact })
}

/** The core's writer options out of the adapter's options (only those given). */
function writerOptions(options: OpenAgentsSessionOptions): OpenWriterOptions {
  return {
    ...(options.owner === undefined ? {} : { owner: options.owner }),
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    ...(options.takeover === undefined ? {} : { takeover: options.takeover }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  }
}
