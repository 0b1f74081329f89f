import {
  placeholderText,
  planRepairFromState,
  RepairCode,
  validateProviderMessages,
} from '@agent-ledger/loop-repair'
import { parseEvent } from '@agent-ledger/session-events'
import type {
  EventRegistry,
  LoggedEvent,
  SurfaceOp,
  Usage,
  UserMessage,
  WireToolCall,
} from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'
import type { Projection, SurfaceNode } from '@agent-ledger/session-projection'

import { cyrb53 } from './ids.ts'
import { ImportError, ImportErrorCode } from './import-error.ts'
import { sourceText } from './lines.ts'
import { addDiagnostic, bump } from './report.ts'
import type { ImportReport } from './report.ts'
import { SOURCE_RECORD_EVENT_TYPE } from './source-record.ts'
import { EPOCH, normalizeTime } from './time.ts'

/** `tool/result` code of a call the user refused to run (the source says so; not a repair). */
export const USER_REJECTED = 'USER_REJECTED'

/** One assistant tool call as an importer reads it from the source. */
export interface ImportedToolCall {
  readonly id: string
  readonly name: string
  /** The raw JSON argument text. */
  readonly arguments: string
}

/** An assistant message as an importer assembled it (split records already merged). */
export interface ImportedAssistant {
  readonly text: readonly string[]
  readonly reasoning: readonly string[]
  readonly toolCalls: readonly ImportedToolCall[]
  readonly usage?: Usage | undefined
  readonly interrupted?: boolean
}

interface PendingEvent {
  readonly type: string
  readonly data: unknown
  readonly ignorable?: boolean
  readonly surfaceOp?: SurfaceOp
  readonly sourceEventSeqs?: readonly number[]
}

interface ResultInput {
  readonly content: string
  readonly isError: boolean
  readonly code: string | undefined
}

interface OpenBlock {
  readonly assistantSeq: number
  readonly calls: readonly { readonly id: string; readonly name: string; readonly toolCallSeq: number }[]
  readonly answered: Map<string, ResultInput>
}

/** What {@link SessionBuilder} needs from the import it is part of. */
export interface BuilderContext {
  readonly format: string
  readonly file: string
  readonly registry: EventRegistry
  readonly report: ImportReport
  /** `all`: every record kept verbatim; `unmapped`: only records that produced no other event. */
  readonly verbatim: 'all' | 'unmapped'
  /** False for records already counted by another session of the same import (a fork's inherited path). */
  readonly counts: (line: number) => boolean
  /**
   * Where a record number is in the source, when some line held several records (see
   * `LinePositions`); record numbers are lines otherwise.
   */
  readonly position?: (record: number) => { readonly line: number; readonly part?: number }
}

/**
 * Builds the v4 events of one imported session, in order, from normalized operations
 * (a user prompt, an assistant message, a tool result...). Shared by every format module.
 *
 * Every event is validated (`parseEvent`) and folded into a projection as it is built, so an
 * importer bug surfaces as `INVALID_IMPORT` at the event that breaks a rule, never as a
 * session the store or a provider would refuse. Tool results are placed in call order
 * directly after their assistant message; a result answering no open call is dropped with a
 * diagnostic; a call the source never answered gets loop-repair's placeholder.
 */
export class SessionBuilder {
  /** The events built and not yet taken by {@link SessionBuilder.drain}. */
  events: LoggedEvent[] = []
  readonly projection: Projection
  /** Repair events built, by code (`TOOL_OUTCOME_UNKNOWN`, `TOOL_NOT_STARTED`, `CLOSE_TURN`). */
  readonly repairs: Record<string, number> = {}
  readonly #context: BuilderContext
  #time: string | undefined
  #untimed: PendingEvent[] = []
  #turn = 0
  #turnOpen = false
  #block: OpenBlock | null = null
  readonly #requested = new Set<string>()
  #line = 0
  /** The time before the current record began (a turn ended by the next prompt ends then). */
  #beforeRecord: string | undefined
  /** Events already drained (the seq of `events[0]`). */
  #base = 0
  /** Digests of every event built, when tracked (a tree's path that forks branch from). */
  readonly #digests: number[] | null

  constructor(context: BuilderContext, options: { readonly trackDigests?: boolean } = {}) {
    this.#digests = options.trackDigests === true ? [] : null
    this.#context = context
    this.projection = createProjection({ registry: context.registry })
  }

  /** Seq of the next event built (events drained included). */
  get nextSeq(): number {
    return this.#base + this.events.length
  }

  /** Digests of the events built so far, or null when not tracked (see {@link eventDigest}). */
  get digests(): readonly number[] | null {
    return this.#digests
  }

  /** Takes the events built so far (the builder forgets them; seqs go on). */
  drain(): LoggedEvent[] {
    const taken = this.events
    this.events = []
    this.#base += taken.length
    return taken
  }

  /** The line of the record being mapped (for diagnostics). */
  set line(line: number) {
    this.#line = line
  }

  /** The time the next events get (undefined before the first timestamp). */
  get time(): string | undefined {
    return this.#time
  }

  /** True while a turn is open. */
  get turnOpen(): boolean {
    return this.#turnOpen
  }

  /** A new source record starts: its timestamp becomes the time (see {@link SessionBuilder.setTime}). */
  beginRecord(raw: unknown): void {
    this.#beforeRecord = this.#time
    this.setTime(raw)
  }

  /** Time of the next events: the record's timestamp when it has a usable one, else the previous time. */
  setTime(raw: unknown): void {
    const normalized = normalizeTime(raw)
    if (normalized === undefined) return
    if (normalized.assumedUtc) this.lossy('time.no-zone-assumed-utc')
    this.#time = normalized.time
    if (this.#untimed.length > 0) {
      const queued = this.#untimed
      this.#untimed = []
      for (const pending of queued) this.#push(pending)
    }
  }

  /** Counts one lossy mapping of the current record (once per record over forks). */
  lossy(key: string, by = 1): void {
    if (this.#context.counts(this.#line)) bump(this.#context.report.lossy, key, by)
  }

  /** Reports a finding about the current record (once per record over forks). */
  diagnostic(code: string, message: string): void {
    if (this.#context.counts(this.#line)) {
      addDiagnostic(this.#context.report, { code, line: this.#at().line, message })
    }
  }

  /**
   * Keeps one source record verbatim as an ignorable `import/source-record` event: its
   * `record`, or its source `text` when the record would not serialize back to the line
   * (see `keepSourceText`), so the stored copy is the source's bytes either way.
   *
   * @param disposition - `mapped` when the record also produced events; otherwise why it is only kept.
   */
  record(record: unknown, disposition: string): void {
    if (disposition !== 'mapped' && this.#context.counts(this.#line)) {
      bump(this.#context.report.logOnly, disposition)
    }
    if (this.#context.verbatim === 'unmapped' && disposition === 'mapped') return
    const at = this.#at()
    const data: Record<string, unknown> = { format: this.#context.format, line: at.line, disposition }
    if (at.part !== undefined) data['part'] = at.part
    // The source's bytes: the record, or its line when serializing it would change them.
    const text = typeof record === 'object' && record !== null ? sourceText(record) : undefined
    if (text === undefined) data['record'] = record
    else data['text'] = text
    this.#push({ type: SOURCE_RECORD_EVENT_TYPE, data, ignorable: true })
  }

  /** The source line (and place on it) of the record being mapped. */
  #at(): { readonly line: number; readonly part?: number } {
    const position = this.#context.position
    return position === undefined ? { line: this.#line } : position(this.#line)
  }

  /** Keeps a line that was not JSON (lenient mode) verbatim. */
  malformed(text: string): void {
    this.#push({
      type: SOURCE_RECORD_EVENT_TYPE,
      data: { format: this.#context.format, line: this.#at().line, text, disposition: 'malformed' },
      ignorable: true,
    })
  }

  /** A system message (`name` e.g. `developer` for Codex developer messages). */
  system(content: string, name?: string): void {
    this.#closeBlock()
    const message: Record<string, unknown> = { role: 'system', content }
    if (name !== undefined) message['name'] = name
    this.#push({ type: 'system/message', data: { message } })
  }

  /**
   * A user message. A `prompt` starts a turn (closing an open one as completed); injected
   * context, summaries and interrupt notices do not.
   */
  user(content: UserMessage['content'], options: { readonly prompt: boolean }): number {
    this.#closeBlock()
    if (options.prompt) {
      if (this.#turnOpen) this.endTurn('completed')
      this.startTurn()
    }
    return this.#push({ type: 'user/message', data: { message: { role: 'user', content } } })
  }

  /**
   * A prompt follows: ends the open turn as completed before the prompt's record is kept, so
   * the turn ends where an import of the source cut just before the prompt ends it (a grown
   * source then extends the earlier import instead of diverging from it).
   */
  beforePrompt(): void {
    const now = this.#time
    if (this.#beforeRecord !== undefined) this.#time = this.#beforeRecord
    this.#closeBlock()
    if (this.#turnOpen) this.endTurn('completed')
    this.#time = now
  }

  /** An assistant message, then one `tool/call` per tool call (the source ran them, or may have). */
  assistant(input: ImportedAssistant): void {
    this.#closeBlock()
    const text = input.text.join('\n')
    const reasoning = input.reasoning.join('\n')
    if (text === '' && reasoning === '' && input.toolCalls.length === 0) {
      this.lossy('empty-assistant-message')
      return
    }
    if (!this.#turnOpen) this.startTurn()
    const toolCalls: WireToolCall[] = input.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }))
    const message: Record<string, unknown> = { role: 'assistant', content: text === '' ? null : text }
    if (toolCalls.length > 0) message['tool_calls'] = toolCalls
    if (reasoning !== '') message['reasoning_content'] = reasoning
    const data: Record<string, unknown> = { message }
    if (input.usage !== undefined) data['usage'] = input.usage
    if (input.interrupted === true) data['interrupted'] = true
    const assistantSeq = this.#push({ type: 'assistant/message', data })
    if (toolCalls.length === 0) return
    const calls = input.toolCalls.map((call) => {
      this.#requested.add(call.id)
      const toolCallSeq = this.#push({
        type: 'tool/call',
        data: { callId: call.id, name: call.name, arguments: call.arguments },
      })
      return { id: call.id, name: call.name, toolCallSeq }
    })
    this.#block = { assistantSeq, calls, answered: new Map() }
  }

  /**
   * A tool result. Kept until every call of its assistant message is answered, then placed in
   * call order. A result for no open call is dropped with a diagnostic (`ORPHAN_TOOL_RESULT`,
   * or `DUPLICATE_TOOL_RESULT` when the call was answered already).
   */
  toolResult(callId: string, content: string, options: { isError?: boolean; code?: string } = {}): void {
    const block = this.#block
    const open = block?.calls.some((call) => call.id === callId) === true
    if (block === null || !open) {
      const duplicate = this.#requested.has(callId)
      this.diagnostic(
        duplicate ? 'DUPLICATE_TOOL_RESULT' : 'ORPHAN_TOOL_RESULT',
        duplicate
          ? `tool result for ${JSON.stringify(callId)}: expected the call to be open, found it answered already (or closed by a later message); dropped`
          : `tool result for ${JSON.stringify(callId)}: expected an assistant tool call with that id, found none; dropped`,
      )
      this.lossy(duplicate ? 'duplicate-tool-result' : 'orphan-tool-result')
      return
    }
    if (block.answered.has(callId)) {
      this.diagnostic(
        'DUPLICATE_TOOL_RESULT',
        `tool result for ${JSON.stringify(callId)}: expected one result per call, found a second one; dropped`,
      )
      this.lossy('duplicate-tool-result')
      return
    }
    block.answered.set(callId, { content, isError: options.isError === true, code: options.code })
    if (block.answered.size === block.calls.length) this.#closeBlock()
  }

  /** Opens turn n+1 (an open turn is first ended as `interrupted`: it never finished). */
  startTurn(): void {
    if (this.#turnOpen) this.endTurn('interrupted')
    this.#turn += 1
    this.#turnOpen = true
    this.#push({ type: 'turn/start', data: { turn: this.#turn } })
  }

  /** Ends the open turn, if any, for `reason`. */
  endTurn(reason: 'completed' | 'aborted' | 'error' | 'max-tokens' | 'interrupted'): void {
    this.#closeBlock()
    if (!this.#turnOpen) return
    this.#turnOpen = false
    this.#push({ type: 'turn/end', data: { turn: this.#turn, reason } })
  }

  /**
   * A compaction: the four events of the event model, hiding the surface nodes after the
   * leading system messages and before `keepFromSeq` (all of them without it), replaced by a
   * user message with `content`.
   */
  compact(request: {
    readonly summary: string
    readonly content: string
    readonly keepFromSeq?: number | undefined
    readonly reason: string
  }): void {
    this.#closeBlock()
    const nodes = this.projection.surface()
    let start = 0
    while (start < nodes.length && nodes[start]!.type === 'system/message') start += 1
    let end = nodes.length - 1
    if (request.keepFromSeq !== undefined) {
      const keep = request.keepFromSeq
      while (end >= start && nodes[end]!.seq >= keep) end -= 1
    }
    if (end < start) {
      this.lossy('compaction-with-nothing-to-hide')
      this.user(request.content, { prompt: false })
      return
    }
    const hidden = nodes.slice(start, end + 1).map((node) => node.seq)
    this.#pushCompaction({ ...request, hidden })
  }

  /**
   * A compaction of the surface nodes `select` picks (a source that names what it forgot,
   * like an OpenHands condensation): applied only when they are one contiguous run of the
   * current surface after the leading system messages, and the replace is one the event
   * model accepts (it does not split results from their call). Returns what happened.
   */
  compactSelected(request: {
    readonly select: (node: SurfaceNode) => boolean
    readonly summary: string
    readonly content: string
    readonly reason: string
  }): 'applied' | 'nothing-selected' | 'not-contiguous' | 'refused' {
    // Results still gathering for their call: a replace now would strand them.
    if (this.#block !== null) return 'refused'
    const nodes = this.projection.surface()
    let start = 0
    while (start < nodes.length && nodes[start]!.type === 'system/message') start += 1
    const picked: number[] = []
    for (let index = start; index < nodes.length; index += 1)
      if (request.select(nodes[index]!)) picked.push(index)
    if (picked.length === 0) return 'nothing-selected'
    if (picked.at(-1)! - picked[0]! + 1 !== picked.length) return 'not-contiguous'
    const hidden = picked.map((index) => nodes[index]!.seq)
    const time = this.#time
    if (time === undefined) return 'refused'
    const candidate = {
      seq: this.nextSeq,
      time,
      type: 'user/message',
      data: { message: { role: 'user', content: request.content } },
      surfaceOp: { op: 'replace', startSeq: hidden[0]!, endSeq: hidden.at(-1)! },
      sourceEventSeqs: hidden,
    } as unknown as LoggedEvent
    try {
      this.projection.check(candidate)
    } catch {
      return 'refused'
    }
    this.#pushCompaction({ ...request, hidden })
    return 'applied'
  }

  #pushCompaction(request: {
    readonly hidden: readonly number[]
    readonly summary: string
    readonly content: string
    readonly reason: string
  }): void {
    const { hidden } = request
    const startSeq = hidden[0]!
    const endSeq = hidden.at(-1)!
    const compactionId = `import-${this.nextSeq + this.#untimed.length}`
    this.#push({
      type: 'compaction/start',
      data: { compactionId, startSeq, endSeq, reason: request.reason },
    })
    this.#push({ type: 'compaction/summary', data: { compactionId, summary: request.summary } })
    const replacementSeq = this.#push({
      type: 'user/message',
      data: { message: { role: 'user', content: request.content } },
      surfaceOp: { op: 'replace', startSeq, endSeq },
      sourceEventSeqs: hidden,
    })
    this.#push({
      type: 'compaction/end',
      data: { compactionId, replacementSeq, hiddenCount: hidden.length },
    })
  }

  /**
   * Ends the session: places the answered results of the last block, then plans loop-repair's
   * closers for what the source left open (a placeholder per unanswered call, `turn/end
   * interrupted`). With `openTurn: 'complete'`, a turn left open with nothing pending is ended
   * `completed` (formats without turn markers); with `'interrupt'` it is ended `interrupted`.
   * Then checks the projection against `validateProviderMessages`.
   */
  finish(openTurn: 'complete' | 'interrupt'): void {
    if (this.#time === undefined) this.setTime(EPOCH)
    const block = this.#block
    this.#block = null
    if (block !== null) {
      for (const call of block.calls) {
        const result = block.answered.get(call.id)
        if (result !== undefined) this.#pushResult(call, result)
      }
    }
    const state = this.projection.repairState
    if (state.pendingCalls.length === 0 && this.#turnOpen && openTurn === 'complete') {
      this.endTurn('completed')
    }
    const plan = planRepairFromState(this.projection.repairState, {
      nextSeq: this.nextSeq,
      time: this.#time!,
    })
    for (const action of plan.actions) bump(this.repairs, action.code)
    for (const event of plan.events) this.#push(event)
    if (plan.events.some((event) => event.type === 'turn/end')) this.#turnOpen = false
    const issues = validateProviderMessages(this.projection.deriveMessages())
    if (issues.length > 0) {
      throw new ImportError({
        code: ImportErrorCode.INVALID_IMPORT,
        file: this.#context.file,
        message: `Import of ${this.#context.file} (${this.#context.format}) built messages a provider would refuse: ${issues[0]!.message} (${issues.length} issue(s)); this is an importer bug, please report it with the source`,
      })
    }
  }

  #closeBlock(): void {
    const block = this.#block
    if (block === null) return
    this.#block = null
    for (const call of block.calls) {
      const result = block.answered.get(call.id)
      if (result !== undefined) {
        this.#pushResult(call, result)
        continue
      }
      // The conversation went on without this result (a crash scar mid-file): the same
      // placeholder a resume gives, since the tool/call was logged.
      bump(this.repairs, RepairCode.TOOL_OUTCOME_UNKNOWN)
      this.diagnostic(
        'UNANSWERED_TOOL_CALL',
        `tool call ${JSON.stringify(call.id)} (${JSON.stringify(call.name)}) got no result before the conversation went on; answered with a ${RepairCode.TOOL_OUTCOME_UNKNOWN} placeholder`,
      )
      this.#push({
        type: 'tool/result',
        data: {
          message: {
            role: 'tool',
            tool_call_id: call.id,
            content: placeholderText(RepairCode.TOOL_OUTCOME_UNKNOWN, { callId: call.id, name: call.name }),
          },
          isError: true,
          code: RepairCode.TOOL_OUTCOME_UNKNOWN,
        },
        sourceEventSeqs: [call.toolCallSeq],
      })
    }
  }

  #pushResult(call: { readonly id: string; readonly toolCallSeq: number }, result: ResultInput): void {
    const data: Record<string, unknown> = {
      message: { role: 'tool', tool_call_id: call.id, content: result.content },
    }
    if (result.isError) data['isError'] = true
    if (result.code !== undefined) data['code'] = result.code
    this.#push({ type: 'tool/result', data, sourceEventSeqs: [call.toolCallSeq] })
  }

  #push(pending: PendingEvent): number {
    const time = this.#time
    if (time === undefined) {
      this.#untimed.push(pending)
      return this.nextSeq + this.#untimed.length - 1
    }
    const event: Record<string, unknown> = { seq: this.nextSeq, time, type: pending.type }
    event['data'] = pending.data
    if (pending.surfaceOp !== undefined) event['surfaceOp'] = pending.surfaceOp
    if (pending.sourceEventSeqs !== undefined) event['sourceEventSeqs'] = pending.sourceEventSeqs
    if (pending.ignorable === true) event['ignorable'] = true
    try {
      // Verbatim records have one fixed shape built above (the store checks them again on
      // create); the schema check is kept for every mapped event, where mapping bugs live.
      // The projection of a log-only plugin event depends on its envelope only (seq, time,
      // type, ignorable: no surface, no repair state), so a verbatim record is folded as its
      // envelope: the record itself is neither walked nor frozen here (the store copies,
      // checks and freezes what it writes).
      let parsed: LoggedEvent
      if (pending.type === SOURCE_RECORD_EVENT_TYPE) {
        parsed = event as unknown as LoggedEvent
        this.projection.apply({
          seq: parsed.seq,
          time,
          type: pending.type,
          data: null,
          ignorable: true,
        })
      } else {
        parsed = parseEvent(event, this.#context.registry)
        this.projection.apply(parsed)
      }
      this.events.push(parsed)
      this.#digests?.push(eventDigest(parsed))
    } catch (error) {
      throw new ImportError({
        code: ImportErrorCode.INVALID_IMPORT,
        file: this.#context.file,
        line: this.#line,
        message: `Import of ${this.#context.file} line ${this.#line} (${this.#context.format}) built an invalid ${pending.type} event: ${error instanceof Error ? error.message : String(error)}; this is an importer bug, please report it with the source`,
        cause: error,
      })
    }
    return this.nextSeq - 1
  }
}

/**
 * A 53-bit digest of an event's canonical text (cyrb53), for finding the prefix a fork
 * shares with a parent whose events were already handed to the store.
 */
export function eventDigest(event: LoggedEvent): number {
  const text = JSON.stringify(event)
  return cyrb53(text, text.length)
}
