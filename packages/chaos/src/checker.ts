/**
 * The chaos checker: compares what the tools journaled (their real side effects) with what
 * the sessions hold after a run, and counts the defects exactly-once promises rule out. Pure:
 * journals, events and acknowledgements come in as data.
 */
import {
  RepairCode,
  toAnthropic,
  validateAnthropicRequest,
  validateProviderMessages,
} from '@agent-ledger/loop-repair'
import type { WireMessage } from '@agent-ledger/session-events'

/** One line of a tool's journal: the tool began (`started`) or completed (`finished`) its side effect. */
export interface JournalEntry {
  readonly callId: string
  readonly phase: 'started' | 'finished'
  readonly worker: string
}

/** The fields of a logged event the checker reads. */
export interface LoggedEvent {
  readonly seq: number
  readonly type: string
  readonly data: unknown
}

/** One session after the run: its events and the highest seq a worker reported acknowledged. */
export interface CheckedSession {
  readonly id: string
  readonly events: readonly LoggedEvent[]
  /** The highest seq covered by a resolved flush, as the workers reported it before any kill. */
  readonly ackedSeq: number
  /** The next request's history (the log's wire messages), as the adapter derives it. */
  readonly nextRequest: readonly WireMessage[]
  /** Why the session could not be opened to build its next request (a bricked session), if so. */
  readonly openError?: string | undefined
}

/** The counts of one run; every one of the first five is 0 for an exactly-once store. */
export interface ChaosCounts {
  /** Call ids whose tool journaled `started` more than once. */
  readonly duplicatedExecutions: number
  /** Calls journaled `finished` that the history neither answers with a real result nor marks `TOOL_OUTCOME_UNKNOWN`. */
  readonly forgottenActions: number
  /** Calls answered `TOOL_NOT_STARTED` that the journal shows started. */
  readonly dishonestRepairs: number
  /** Acknowledged events missing from a session (acked seq beyond its last event). */
  readonly ackedEventsLost: number
  /** Sessions whose next request breaks the OpenAI or the Anthropic pairing rule, or cannot be built (the open fails). */
  readonly providerInvalidRequests: number
  /** Calls journaled started in all. */
  readonly toolCallsStarted: number
}

interface ToolResultData {
  readonly message?: { readonly tool_call_id?: string }
  readonly code?: string
}

/**
 * Counts the defects of one run.
 *
 * @param journal - Every journal line of every worker.
 * @param sessions - Every session the run made, read back after the last worker stopped.
 * @returns The counts.
 */
export function checkRun(journal: readonly JournalEntry[], sessions: readonly CheckedSession[]): ChaosCounts {
  const starts = new Map<string, number>()
  const finished = new Set<string>()
  for (const entry of journal) {
    if (entry.phase === 'started') starts.set(entry.callId, (starts.get(entry.callId) ?? 0) + 1)
    else finished.add(entry.callId)
  }
  // Per call id: the codes of its results in the history ('' for a real result).
  const answers = new Map<string, string[]>()
  let ackedEventsLost = 0
  let providerInvalidRequests = 0
  for (const session of sessions) {
    for (const event of session.events) {
      if (event.type !== 'tool/result') continue
      const data = event.data as ToolResultData
      const callId = data.message?.tool_call_id
      if (callId === undefined) continue
      answers.set(callId, [...(answers.get(callId) ?? []), data.code ?? ''])
    }
    const lastSeq = session.events.reduce((max, event) => Math.max(max, event.seq), -1)
    ackedEventsLost += Math.max(0, session.ackedSeq - lastSeq)
    if (providerProblems(session).length > 0) providerInvalidRequests += 1
  }
  let duplicatedExecutions = 0
  for (const count of starts.values()) if (count > 1) duplicatedExecutions += 1
  let forgottenActions = 0
  for (const callId of finished) {
    const codes = answers.get(callId) ?? []
    if (!codes.some((code) => code === '' || code === RepairCode.TOOL_OUTCOME_UNKNOWN)) forgottenActions += 1
  }
  let dishonestRepairs = 0
  for (const [callId, codes] of answers)
    if (codes.includes(RepairCode.TOOL_NOT_STARTED) && starts.has(callId)) dishonestRepairs += 1
  return {
    duplicatedExecutions,
    forgottenActions,
    dishonestRepairs,
    ackedEventsLost,
    providerInvalidRequests,
    toolCallsStarted: starts.size,
  }
}

/**
 * Why a session's next request is provider-invalid: it cannot be opened, or it breaks the OpenAI
 * chat rule or the Anthropic Messages rule. Empty when it is valid.
 *
 * @param session - The session as read back.
 * @returns The problems, in words.
 */
export function providerProblems(session: CheckedSession): string[] {
  if (session.openError !== undefined) return [`cannot be opened: ${session.openError}`]
  return [
    ...validateProviderMessages(session.nextRequest).map((problem) => `openai: ${JSON.stringify(problem)}`),
    ...validateAnthropicRequest(toAnthropic(session.nextRequest).request).map(
      (problem) => `anthropic: ${JSON.stringify(problem)}`,
    ),
  ]
}

/**
 * The nearest-rank percentile of samples.
 *
 * @param samples - Measurements (any order).
 * @param p - The percentile, 0 to 100.
 * @returns The value, or NaN with no samples.
 */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}
