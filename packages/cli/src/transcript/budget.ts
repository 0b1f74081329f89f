/**
 * The page budget of a transcript, planned on the first pass: how long one text may be on
 * the page, and, only when even short texts do not fit, which events in the middle are left
 * out. The end of a conversation is never dropped: texts are shortened first, then the first
 * turn(s) and the last turns are kept and the middle goes.
 */
import { SOURCE_RECORD_EVENT_TYPE } from '@agent-ledger/import'
import type { LoggedEvent } from '@agent-ledger/session-events'

import { contentText, coreEvent } from '../describe-event.ts'

/** The text caps tried in turn, largest first; the last one is the floor. */
const ITEM_CAPS: readonly number[] = [16_000, 4_000, 1_600, 600, 240]
const FLOOR_CAP = 240

/**
 * Bytes of markup per event (header, badges, notes; a `tool/call` row is not shown, a turn
 * start or end is one line), and per text cut short (its notice).
 */
const EVENT_OVERHEAD = 450
const LINE_OVERHEAD = 200
const CUT_OVERHEAD = 350
/** Escaping and Markdown make a text's HTML a little longer than the text. */
const TEXT_FACTOR = 1.1
/** Share of the event budget the first turn(s) may take when the middle is left out. */
const HEAD_SHARE = 0.2

/** A plan for one page. */
export interface PagePlan {
  /** Most characters of one text on the page. */
  readonly itemCap: number
  /** Events left out (seqs, inclusive), or null: every event is on the page. */
  readonly gap: { readonly from: number; readonly to: number } | null
}

/** The lengths of the texts a page shows for one event. */
function textLengths(event: LoggedEvent): number[] {
  const known = coreEvent(event)
  switch (known?.type) {
    case 'system/message':
    case 'user/message':
    case 'tool/result':
      return [contentText(known.data.message).length]
    case 'assistant/message': {
      const message = known.data.message
      const lengths = [contentText(message).length]
      if (message.role === 'assistant') {
        if (message.reasoning_content) lengths.push(message.reasoning_content.length)
        for (const call of message.tool_calls ?? []) lengths.push(call.function.arguments.length)
      }
      return lengths
    }
    case 'compaction/summary':
      return [known.data.summary.length]
    case undefined:
      return [JSON.stringify(event.data)?.length ?? 4]
    default:
      return []
  }
}

/**
 * Fed every event of the first pass; plans the page at the end. Keeps one small record per
 * event (its seq, whether it starts a turn, its text lengths), like the pairing tables.
 */
export class PageSizer {
  readonly #seqs: number[] = []
  readonly #turnStarts: boolean[] = []
  readonly #overheads: number[] = []
  readonly #texts: number[][] = []
  readonly #showSourceRecords: boolean

  constructor(options: { readonly showSourceRecords: boolean }) {
    this.#showSourceRecords = options.showSourceRecords
  }

  add(event: LoggedEvent): void {
    // Hidden source records take no room on the page.
    if (event.type === SOURCE_RECORD_EVENT_TYPE && !this.#showSourceRecords) return
    this.#seqs.push(event.seq)
    this.#turnStarts.push(event.type === 'turn/start')
    this.#overheads.push(
      event.type === 'tool/call'
        ? 0
        : event.type === 'turn/start' || event.type === 'turn/end'
          ? LINE_OVERHEAD
          : EVENT_OVERHEAD,
    )
    this.#texts.push(textLengths(event))
  }

  #size(index: number, cap: number): number {
    let bytes = this.#overheads[index]!
    for (const length of this.#texts[index]!) {
      bytes += Math.min(length, cap) * TEXT_FACTOR + (length > cap ? CUT_OVERHEAD : 0)
    }
    return bytes
  }

  /**
   * The largest cap at which every event fits in `eventBytes`; else the smallest cap, the
   * first events up to a fifth of the room, the last events in the rest (from a turn start
   * when one is there), and the middle left out.
   *
   * @param eventBytes - The bytes the events may take.
   */
  plan(eventBytes: number): PagePlan {
    const count = this.#seqs.length
    for (const cap of ITEM_CAPS) {
      let total = 0
      for (let index = 0; index < count && total <= eventBytes; index += 1) total += this.#size(index, cap)
      if (total <= eventBytes) return { itemCap: cap, gap: null }
    }
    const cap = FLOOR_CAP
    let head = 0
    let used = 0
    while (head < count && used + this.#size(head, cap) <= eventBytes * HEAD_SHARE) {
      used += this.#size(head, cap)
      head += 1
    }
    let tail = count
    while (tail > head && used + this.#size(tail - 1, cap) <= eventBytes) {
      used += this.#size(tail - 1, cap)
      tail -= 1
    }
    // The last event is kept whatever its size; the kept end starts at a turn boundary when it holds one.
    if (tail === count) tail = count - 1
    let start = tail
    while (start < count && !this.#turnStarts[start]) start += 1
    if (start < count) tail = start
    if (tail <= head) return { itemCap: cap, gap: null }
    return { itemCap: cap, gap: { from: this.#seqs[head]!, to: this.#seqs[tail - 1]! } }
  }
}
