/**
 * The OpenAI Agents SDK `Session` over an agent-ledger session: the Session methods, the
 * optional history capabilities the runner probes for, and the model and tool wrappers. What
 * they write goes through a `SessionLog` (session-log.ts); opening is open-session.ts.
 */
import type { EventInput } from '@agent-ledger/session-events'
import type { SessionWriter } from '@agent-ledger/session-store'
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

import { checkTransaction, endsWith, OPERATION_EVENT_TYPE, transactionDigest } from './history-ops.ts'
import type { RecordedOperation } from './history-ops.ts'
import { itemKey, toJsonItem } from './item-mapping.ts'
import { AgentsAdapterError, AgentsAdapterErrorCode } from './openai-agents-error.ts'
import { SessionLog, take } from './session-log.ts'
import type { Compactor, HistoryRewriteArgs, HistoryTransactionArgs, ItemRecord } from './session-options.ts'

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
  /** What the session writes to the log (over the same writer). */
  readonly #log: SessionLog
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
    this.#log = new SessionLog(writer, recorded)
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
    const items = this.#log.nodeItems().flatMap((entry) => entry.items)
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
      if (take(this.#log.runLogged, itemKey(item))) continue
      if (item['type'] === 'function_call_result' && callsNotFlushed) {
        await this.writer.flush()
        callsNotFlushed = false
      }
      this.#log.appendItem(item)
      if (item['type'] === 'function_call') {
        this.#log.appendToolCall(item)
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
    const entries = this.#log.nodeItems()
    let index = entries.length - 1
    while (index >= 0 && entries[index]!.items.length === 0) index -= 1
    if (index < 0) return undefined
    const { node, items } = entries[index]!
    const popped = items.at(-1)!
    if (node.type === 'tool/result') {
      this.#log.replace(entries.slice(index, index + 1), { keep: [], by: 'popItem' })
    } else {
      // The range takes the (already hidden) results after the node along, so no result is split
      // from its call. One event may stand for several items (an assistant message written by
      // another adapter): the replacement then keeps the others.
      let end = index
      while (entries[end + 1]?.node.type === 'tool/result') end += 1
      this.#log.replace(entries.slice(index, end + 1), { keep: items.slice(0, -1), by: 'popItem' })
    }
    await this.writer.flush()
    return structuredClone(popped) as AgentInputItem
  }

  /** Hides every item with one `replace` citing them all; the log keeps every byte. */
  async clearSession(): Promise<void> {
    this.#assertOpen()
    this.#changes += 1
    const entries = this.#log.nodeItems()
    if (entries.every((entry) => entry.items.length === 0)) return
    this.#log.replace(entries, { keep: [], by: 'clearSession' })
    this.#log.runLogged.clear()
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
        if (take(this.#log.runLogged, itemKey(item))) continue
        this.#log.appendItem(item)
        if (item['type'] === 'function_call') this.#log.appendToolCall(item)
      }
    } else {
      const expected = transaction['expectedSuffix'] as ItemRecord[]
      const entries = this.#log.nodeItems()
      const items = entries.flatMap((entry) => entry.items)
      if (!endsWith(items, expected)) {
        throw new AgentsAdapterError({
          code: AgentsAdapterErrorCode.SUFFIX_MISMATCH,
          message: `History operation ${JSON.stringify(operationId)}: expected the last ${expected.length} item(s) of session ${JSON.stringify(this.writer.id)} to be the transaction's expectedSuffix, found a history of ${items.length} item(s) that does not end with it`,
          details: { operationId, expected: expected.length, found: items.length },
        })
      }
      this.#log.replaceSuffix(entries, expected.length, transaction['replacement'] as ItemRecord[])
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
      const entries = this.#log.nodeItems()
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
      this.#log.replaceRange(entries.slice(index, end + 1), list, 'a history rewrite')
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
    this.#log.compact(compaction, retained)
    await this.writer.flush()
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
        await this.#log.logInput(request)
        const response = await model.getResponse(request)
        await this.#log.logOutput(response.output, response.usage)
        return response
      },
      getStreamedResponse: (request: ModelRequest) => this.#stream(model, request),
    }
    if (model.getRetryAdvice !== undefined) wrapped.getRetryAdvice = model.getRetryAdvice.bind(model)
    return wrapped
  }

  async *#stream(model: Model, request: ModelRequest): AsyncIterable<StreamEvent> {
    await this.#log.logInput(request)
    for await (const event of model.getStreamedResponse(request)) {
      if (event.type === 'response_done') {
        const { usage } = event.response
        await this.#log.logOutput(
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
          if (call !== undefined) await this.#log.beforeTool(toJsonItem(call))
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
}
