import { isRepairCode } from '@agent-ledger/loop-repair'
import type { PendingToolCall } from '@agent-ledger/loop-repair'
import { coreEventRegistry } from '@agent-ledger/session-events'
import type { LoggedEvent, SessionHeader } from '@agent-ledger/session-events'
import { createProjection } from '@agent-ledger/session-projection'

import { contentText, coreEvent } from '../describe-event.ts'

/** Where an assistant tool call got its answer. */
export interface CallOutcome {
  /** Seq of the `tool/result` answering the call. */
  readonly resultSeq: number
  readonly isError: boolean
  /** The result's `data.code` (a repair code on placeholders). */
  readonly code: string | null
  /** The start of the result's text (at most {@link RESULT_PREVIEW_CHARS} characters), shown with the call. */
  readonly preview: string
  /** Characters of the whole result text. */
  readonly chars: number
}

/** Characters of a result kept for the line under its call (bounded like the other tables). */
const RESULT_PREVIEW_CHARS = 160

/** Which call a `tool/result` answers. */
export interface ResultTarget {
  readonly assistantSeq: number
  readonly index: number
  readonly callId: string
  readonly name: string
}

/** What the first pass over a log learns, so the second pass can render it in one stream. */
export interface Analysis {
  readonly header: SessionHeader | null
  /** Events read (the good prefix when the log is damaged). */
  readonly events: number
  /** Seqs of the surface events the model sees at the end (the final projection). */
  readonly visible: ReadonlySet<number>
  /** Hidden seq → the seq of the replace event that hid it (last one wins). */
  readonly replacedBy: ReadonlyMap<number, number>
  /** `${assistantSeq}:${index}` → its answer. */
  readonly outcomes: ReadonlyMap<string, CallOutcome>
  /** `${assistantSeq}:${index}` → seq of the `tool/call` that started it. */
  readonly started: ReadonlyMap<string, number>
  /** Result seq → the call it answers (for results that answer one). */
  readonly targets: ReadonlyMap<number, ResultTarget>
  /** Calls with no result at the end: the next write open answers them. */
  readonly pending: readonly PendingToolCall[]
  /** Compaction id → the seq of its replacing message, when it finished. */
  readonly compactionReplacement: ReadonlyMap<string, number>
  /** Damage that stopped the read after the good prefix, or null. */
  readonly damage: unknown
}

/** Key of one assistant tool call. */
export function callKey(assistantSeq: number, index: number): string {
  return `${assistantSeq}:${index}`
}

interface OpenCall {
  readonly assistantSeq: number
  readonly index: number
  readonly callId: string
  readonly name: string
  toolCallSeq: number | null
}

/**
 * Pairs calls and results the way loop-repair does (RELIABILITY R3: matched per assistant
 * message): a `tool/call` starts the most recent unstarted call with its id; a `tool/result`
 * answers the call whose `tool/call` or assistant seq it cites, else the most recent
 * unanswered call with its id.
 */
class Pairing {
  readonly #open: OpenCall[] = []
  readonly outcomes = new Map<string, CallOutcome>()
  readonly started = new Map<string, number>()
  readonly targets = new Map<number, ResultTarget>()

  apply(logged: LoggedEvent): void {
    const event = coreEvent(logged)
    if (event === null) return
    if (event.type === 'assistant/message' && event.data.message.role === 'assistant') {
      const calls = event.data.message.tool_calls ?? []
      calls.forEach((call, index) => {
        this.#open.push({
          assistantSeq: event.seq,
          index,
          callId: call.id,
          name: call.function.name,
          toolCallSeq: null,
        })
      })
      return
    }
    if (event.type === 'tool/call') {
      for (let position = this.#open.length - 1; position >= 0; position -= 1) {
        const call = this.#open[position]!
        if (call.callId === event.data.callId && call.toolCallSeq === null) {
          call.toolCallSeq = event.seq
          this.started.set(callKey(call.assistantSeq, call.index), event.seq)
          return
        }
      }
      return
    }
    if (event.type === 'tool/result' && event.data.message.role === 'tool') {
      const id = event.data.message.tool_call_id
      const cited = new Set(event.sourceEventSeqs ?? [])
      let found = this.#open.findIndex(
        (call) =>
          call.callId === id &&
          (cited.has(call.assistantSeq) || (call.toolCallSeq !== null && cited.has(call.toolCallSeq))),
      )
      if (found === -1) {
        for (let position = this.#open.length - 1; position >= 0; position -= 1) {
          if (this.#open[position]!.callId === id) {
            found = position
            break
          }
        }
      }
      if (found === -1) return
      const call = this.#open[found]!
      this.#open.splice(found, 1)
      const key = callKey(call.assistantSeq, call.index)
      const text = contentText(event.data.message)
      this.outcomes.set(key, {
        resultSeq: event.seq,
        isError: event.data.isError === true,
        code: event.data.code ?? null,
        preview: text.slice(0, RESULT_PREVIEW_CHARS),
        chars: text.length,
      })
      this.targets.set(event.seq, {
        assistantSeq: call.assistantSeq,
        index: call.index,
        callId: call.callId,
        name: call.name,
      })
    }
  }
}

/**
 * The first pass of an export: folds every event into a projection and pairs calls with results.
 *
 * @param source - The events in seq order (a damaged log's stream throws after its good prefix).
 * @param header - The header, read beforehand.
 * @param onEvent - Called after each event (progress).
 * @returns What the renderer needs to know before it starts.
 */
export async function analyze(
  source: AsyncIterable<LoggedEvent>,
  header: SessionHeader | null,
  onEvent: (count: number) => void,
): Promise<Analysis> {
  const projection = createProjection({ registry: coreEventRegistry })
  const pairing = new Pairing()
  const replacedBy = new Map<number, number>()
  const compactionReplacement = new Map<string, number>()
  let events = 0
  let damage: unknown = null
  try {
    for await (const event of source) {
      projection.apply(event)
      pairing.apply(event)
      if (typeof event.surfaceOp === 'object') {
        for (const seq of event.sourceEventSeqs ?? []) replacedBy.set(seq, event.seq)
      }
      const known = coreEvent(event)
      if (known?.type === 'compaction/end') {
        compactionReplacement.set(known.data.compactionId, known.data.replacementSeq)
      }
      events += 1
      onEvent(events)
    }
  } catch (error) {
    damage = error
  }
  return {
    header,
    events,
    visible: new Set(projection.surface().map((node) => node.seq)),
    replacedBy,
    outcomes: pairing.outcomes,
    started: pairing.started,
    targets: pairing.targets,
    pending: projection.repairState.pendingCalls,
    compactionReplacement,
    damage,
  }
}

/**
 * True when a `tool/result`'s code marks a repair placeholder.
 *
 * @param code - The result's `data.code`.
 */
export function isPlaceholderCode(code: unknown): boolean {
  return isRepairCode(code)
}
