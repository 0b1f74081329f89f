import type {
  EventInput,
  LoggedEvent,
  SessionEvent,
  SessionEventType,
  TurnEndReason,
  WireMessage,
  WireToolCall,
} from '@agent-ledger/session-events'

import type { Provider } from './providers/provider.ts'
import type { WorkspaceTools } from './tools.ts'

/**
 * The part of a session writer the agent loop uses. The store's writer satisfies it; so does
 * an in-memory `SessionLog` with a no-op flush.
 */
export interface AgentLog {
  /** Appends one event synchronously and returns it with its seq. */
  append<TType extends SessionEventType>(input: EventInput<TType>): SessionEvent<TType>
  /** Resolves when everything appended so far is durable. */
  flush(): Promise<unknown>
  /** The model-visible history projected from the log, exactly what the next request sends. */
  deriveMessages(): readonly WireMessage[]
}

/** Named points where the test-only `--crash-at` option kills the process. */
export const CrashPoint = {
  /** The assistant message with tool calls is durable; no `tool/call` yet (repair: `TOOL_NOT_STARTED`). */
  AFTER_ASSISTANT: 'after-assistant',
  /** The `tool/call` is durable; the tool has not run (repair: `TOOL_OUTCOME_UNKNOWN`). */
  AFTER_TOOL_CALL: 'after-tool-call',
  /** The tool ran (its side effect happened); its result was never logged (repair: `TOOL_OUTCOME_UNKNOWN`). */
  AFTER_TOOL_RUN: 'after-tool-run',
} as const
export type CrashPoint = (typeof CrashPoint)[keyof typeof CrashPoint]

/** True when `value` names a {@link CrashPoint}. */
export function isCrashPoint(value: string): value is CrashPoint {
  return (Object.values(CrashPoint) as string[]).includes(value)
}

/** Where and how to die (test-only): at `point`, for the first tool call named `tool` (any tool when absent). */
export interface CrashPlan {
  readonly point: CrashPoint
  readonly tool?: string
  /** Kills the process (SIGKILL), after the log is flushed. If it returns, `runTurn` throws at once, appending nothing more. */
  readonly kill: () => void
}

/** Options of {@link runTurn}. */
export interface RunTurnOptions {
  readonly log: AgentLog
  readonly provider: Provider
  readonly tools: WorkspaceTools
  readonly prompt: string
  /** The turn number to log (`turn/start {turn}`); one more than the turns already in the log. */
  readonly turn: number
  /** Ctrl+C: aborts the model request or the running tool, and ends the turn as `aborted`. */
  readonly signal?: AbortSignal
  /** Model requests allowed in this turn before it ends as `max-tokens` (default 12). */
  readonly maxSteps?: number
  readonly crash?: CrashPlan
  /** Called with every event right after it is appended (for printing). */
  readonly onEvent?: (event: LoggedEvent) => void
}

/** How a turn ended. */
export interface TurnResult {
  readonly reason: TurnEndReason
  /** The model's final text, when it gave one. */
  readonly answer: string | null
  /** Model requests made. */
  readonly steps: number
  /** The provider error that ended the turn as `error`. */
  readonly error?: unknown
}

/** The text logged as the tool result of a call stopped by Ctrl+C. */
const ABORTED_RESULT_TEXT = 'Error: aborted by the user'

/** A function, not an inline check, so TypeScript does not narrow `aborted` across awaits. */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true
}

function isAbortError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError'
}

/**
 * Runs one user turn of the agent loop against a session log.
 *
 * **Contract**
 * 1. Logs `turn/start`, then the prompt as `user/message`, and flushes.
 * 2. Before every model request the messages are `log.deriveMessages()`: nothing reaches the
 *    model that is not in the log (model-visible ⟺ logged), and nothing is kept aside.
 * 3. Each answer is logged as `assistant/message` (with usage). For each tool call:
 *    `tool/call` is appended and **flushed before the tool runs** (a crash after it means
 *    "may have run"), then the tool runs, then `tool/result` with `sourceEventSeqs: [toolCallSeq]`.
 * 4. The turn ends with `turn/end` — `completed` (an answer without tool calls), `max-tokens`
 *    (the reply was cut by the token limit, or `maxSteps` requests were made), `error` (the
 *    provider failed) or `aborted` (the signal fired) — and is flushed.
 * 5. Every tool call of a logged assistant message gets a result before `turn/end`: calls not
 *    started because of an abort or a cut reply get an `isError` result saying so, so the
 *    projection stays acceptable to the provider.
 *
 * @param options - The log, provider, tools, prompt, turn number and optional signal, limits, crash plan and observer.
 * @returns How the turn ended. Store errors (append or flush) are not caught: the next resume repairs the log.
 */
export async function runTurn(options: RunTurnOptions): Promise<TurnResult> {
  const { log, provider, tools, turn, signal } = options
  const maxSteps = options.maxSteps ?? 12
  const append = <TType extends SessionEventType>(input: EventInput<TType>): SessionEvent<TType> => {
    const event = log.append(input)
    options.onEvent?.(event as SessionEvent)
    return event
  }
  const crashIfPlanned = async (point: CrashPoint, toolName: string): Promise<void> => {
    const plan = options.crash
    if (plan === undefined || plan.point !== point || (plan.tool !== undefined && plan.tool !== toolName))
      return
    await log.flush()
    plan.kill()
    // SIGKILL never returns; a test double that does ends the turn here, appending nothing more
    throw new Error(`Crash point ${point} reached, but the process is still alive.`)
  }
  const end = async (
    reason: TurnEndReason,
    details: { answer?: string | null; steps: number; error?: unknown },
  ): Promise<TurnResult> => {
    append({ type: 'turn/end', data: { turn, reason } })
    await log.flush()
    const result: TurnResult = { reason, answer: details.answer ?? null, steps: details.steps }
    return details.error === undefined ? result : { ...result, error: details.error }
  }
  const answerNotStarted = (calls: readonly WireToolCall[], assistantSeq: number, why: string): void => {
    for (const call of calls) {
      append({
        type: 'tool/result',
        data: {
          message: {
            role: 'tool',
            tool_call_id: call.id,
            content: `Error: ${call.function.name} was not started: ${why}.`,
          },
          isError: true,
        },
        sourceEventSeqs: [assistantSeq],
      })
    }
  }

  append({ type: 'turn/start', data: { turn } })
  append({ type: 'user/message', data: { message: { role: 'user', content: options.prompt } } })
  await log.flush()

  let steps = 0
  for (;;) {
    if (isAborted(signal)) return end('aborted', { steps })
    if (steps >= maxSteps) return end('max-tokens', { steps })
    steps += 1
    const messages = log.deriveMessages()
    let response
    try {
      response = await provider.complete(
        signal === undefined
          ? { messages, tools: tools.definitions }
          : { messages, tools: tools.definitions, signal },
      )
    } catch (error) {
      if (isAbortError(error) || isAborted(signal)) return end('aborted', { steps })
      return end('error', { steps, error })
    }
    const assistant = append({
      type: 'assistant/message',
      data:
        response.usage === undefined
          ? { message: response.message }
          : { message: response.message, usage: response.usage },
    })
    const calls = response.message.tool_calls ?? []
    if (calls.length === 0) {
      return end(response.finishReason === 'length' ? 'max-tokens' : 'completed', {
        steps,
        answer: response.message.content,
      })
    }
    if (response.finishReason === 'length') {
      answerNotStarted(calls, assistant.seq, 'the reply was cut off by the token limit')
      return end('max-tokens', { steps })
    }
    await crashIfPlanned(CrashPoint.AFTER_ASSISTANT, calls[0]!.function.name)
    for (const [index, call] of calls.entries()) {
      if (isAborted(signal)) {
        answerNotStarted(calls.slice(index), assistant.seq, 'the turn was aborted by the user')
        return end('aborted', { steps })
      }
      const name = call.function.name
      const callEvent = append({
        type: 'tool/call',
        data: { callId: call.id, name, arguments: call.function.arguments },
      })
      await log.flush() // durable before the side effect: a crash from here on means "may have run"
      await crashIfPlanned(CrashPoint.AFTER_TOOL_CALL, name)
      const outcome = await tools.run(name, call.function.arguments, signal)
      await crashIfPlanned(CrashPoint.AFTER_TOOL_RUN, name)
      const content =
        outcome.aborted === true
          ? `${ABORTED_RESULT_TEXT} (Ctrl+C) while ${name} was running; it was stopped, and any effect it had before that remains.`
          : outcome.content
      append({
        type: 'tool/result',
        data: {
          message: { role: 'tool', tool_call_id: call.id, content },
          ...(outcome.isError ? { isError: true } : {}),
        },
        sourceEventSeqs: [callEvent.seq],
      })
      if (outcome.aborted === true) {
        answerNotStarted(calls.slice(index + 1), assistant.seq, 'the turn was aborted by the user')
        return end('aborted', { steps })
      }
    }
  }
}
