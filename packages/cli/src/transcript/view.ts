import type { LoggedEvent } from '@agent-ledger/session-events'

import { contentText, coreEvent } from '../describe-event.ts'
import { callKey, isPlaceholderCode } from './analyze.ts'
import type { Analysis, CallOutcome, ResultTarget } from './analyze.ts'
import { editDiff } from './edits.ts'
import type { DiffLine } from './edits.ts'

/** One assistant tool call as the transcript shows it. */
export interface CallView {
  readonly index: number
  readonly id: string
  readonly name: string
  readonly arguments: string
  /** Seq of the `tool/call` that started it, or null (never started). */
  readonly started: number | null
  /** Its answer, or null when it has none in the log (pending). */
  readonly outcome: CallOutcome | null
  /** The file edit it asks for as a diff (`Edit`, `MultiEdit`, `Write`, `apply_patch`), or null. */
  readonly diff: readonly DiffLine[] | null
}

/** What a `tool/result` answers and how. */
interface ResultView {
  readonly callId: string
  readonly target: ResultTarget | null
  readonly isError: boolean
  readonly code: string | null
  /** True for loop-repair's placeholders (TOOL_OUTCOME_UNKNOWN, TOOL_NOT_STARTED). */
  readonly placeholder: boolean
}

/** Fields every view has. */
interface ViewBase {
  readonly seq: number
  readonly time: string
  readonly type: string
}

/** One event, prepared for a renderer. */
export type EventView = ViewBase &
  (
    | { readonly kind: 'turn-start'; readonly turn: number }
    | { readonly kind: 'turn-end'; readonly turn: number; readonly reason: string }
    | {
        readonly kind: 'message'
        readonly role: 'system' | 'user' | 'assistant' | 'tool'
        readonly text: string
        /** False when the model no longer sees it (hidden by a replace, or never projected). */
        readonly visible: boolean
        /** Seq of the replace event that hid it, when one did. */
        readonly hiddenBy: number | null
        /** The replace this message performs (a compaction summary), or null. */
        readonly replaces: {
          readonly startSeq: number
          readonly endSeq: number
          readonly sources: readonly number[]
        } | null
        readonly calls: readonly CallView[]
        readonly reasoning: string | null
        readonly interrupted: boolean
        readonly result: ResultView | null
      }
    | { readonly kind: 'tool-started'; readonly name: string; readonly callId: string }
    | {
        readonly kind: 'compaction-start'
        readonly compactionId: string
        readonly startSeq: number
        readonly endSeq: number
        readonly reason: string | null
        /** Seq of its replacing message, or null when the compaction never finished. */
        readonly replacementSeq: number | null
      }
    | { readonly kind: 'compaction-summary'; readonly compactionId: string; readonly summary: string }
    | {
        readonly kind: 'compaction-end'
        readonly compactionId: string
        readonly replacementSeq: number
        readonly hiddenCount: number
      }
    | { readonly kind: 'seed-end'; readonly parent: string | null; readonly boundarySeq: number | null }
    | {
        readonly kind: 'salvage'
        readonly sourceSession: string
        readonly lastGoodSeq: number
        readonly droppedFromOffset: number
        readonly reason: string
      }
    | { readonly kind: 'other'; readonly json: string; readonly ignorable: boolean }
  )

/**
 * Prepares one event for rendering, with what the first pass learned (visibility,
 * pairing, compaction outcomes).
 *
 * @param event - The event.
 * @param analysis - The first pass over the same log.
 * @returns The view.
 */
export function viewEvent(logged: LoggedEvent, analysis: Analysis): EventView {
  const event = coreEvent(logged)
  const base = { seq: logged.seq, time: logged.time, type: logged.type }
  if (event === null) {
    return {
      ...base,
      kind: 'other',
      json: JSON.stringify(logged.data, null, 2) ?? 'null',
      ignorable: logged.ignorable === true,
    }
  }
  const message = (
    role: 'system' | 'user' | 'assistant' | 'tool',
    text: string,
    extra: Partial<{ calls: CallView[]; reasoning: string | null; interrupted: boolean; result: ResultView }>,
  ): EventView => {
    const op = event.surfaceOp
    return {
      ...base,
      kind: 'message',
      role,
      text,
      visible: analysis.visible.has(event.seq),
      hiddenBy: analysis.replacedBy.get(event.seq) ?? null,
      replaces:
        typeof op === 'object'
          ? { startSeq: op.startSeq, endSeq: op.endSeq, sources: event.sourceEventSeqs ?? [] }
          : null,
      calls: extra.calls ?? [],
      reasoning: extra.reasoning ?? null,
      interrupted: extra.interrupted ?? false,
      result: extra.result ?? null,
    }
  }
  switch (event.type) {
    case 'turn/start':
      return { ...base, kind: 'turn-start', turn: event.data.turn }
    case 'turn/end':
      return { ...base, kind: 'turn-end', turn: event.data.turn, reason: event.data.reason }
    case 'system/message':
    case 'user/message':
      return message(event.data.message.role, contentText(event.data.message), {})
    case 'assistant/message': {
      const wire = event.data.message
      const calls: CallView[] = (wire.role === 'assistant' ? (wire.tool_calls ?? []) : []).map(
        (call, index) => ({
          index,
          id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
          started: analysis.started.get(callKey(event.seq, index)) ?? null,
          outcome: analysis.outcomes.get(callKey(event.seq, index)) ?? null,
          diff: editDiff(call.function.name, call.function.arguments),
        }),
      )
      return message('assistant', contentText(wire), {
        calls,
        reasoning: wire.role === 'assistant' ? (wire.reasoning_content ?? null) : null,
        interrupted: event.data.interrupted === true,
      })
    }
    case 'tool/result': {
      const wire = event.data.message
      const code = event.data.code ?? null
      return message('tool', contentText(wire), {
        result: {
          callId: wire.role === 'tool' ? wire.tool_call_id : '',
          target: analysis.targets.get(event.seq) ?? null,
          isError: event.data.isError === true,
          code,
          placeholder: isPlaceholderCode(code),
        },
      })
    }
    case 'tool/call':
      return { ...base, kind: 'tool-started', name: event.data.name, callId: event.data.callId }
    case 'compaction/start':
      return {
        ...base,
        kind: 'compaction-start',
        compactionId: event.data.compactionId,
        startSeq: event.data.startSeq,
        endSeq: event.data.endSeq,
        reason: event.data.reason ?? null,
        replacementSeq: analysis.compactionReplacement.get(event.data.compactionId) ?? null,
      }
    case 'compaction/summary':
      return {
        ...base,
        kind: 'compaction-summary',
        compactionId: event.data.compactionId,
        summary: event.data.summary,
      }
    case 'compaction/end':
      return {
        ...base,
        kind: 'compaction-end',
        compactionId: event.data.compactionId,
        replacementSeq: event.data.replacementSeq,
        hiddenCount: event.data.hiddenCount,
      }
    case 'session/end-seed':
      return {
        ...base,
        kind: 'seed-end',
        parent: event.data.parentSession ?? null,
        boundarySeq: event.data.boundarySeq ?? null,
      }
    case 'session/salvage':
      return {
        ...base,
        kind: 'salvage',
        sourceSession: event.data.sourceSession,
        lastGoodSeq: event.data.lastGoodSeq,
        droppedFromOffset: event.data.droppedFromOffset,
        reason: event.data.reason,
      }
  }
}

/**
 * What a repair placeholder means, in one sentence.
 *
 * @param code - The placeholder's code.
 */
export function placeholderMeaning(code: string | null): string {
  return code === 'TOOL_NOT_STARTED'
    ? 'the session was interrupted before the tool started: it never ran, retrying is safe'
    : 'the session was interrupted after the tool started: its side effect may or may not have happened'
}
