import type { LoggedEvent, TurnEndReason, WireMessage } from '@agent-ledger/session-events'

/** A tool call as the test scenarios write it. */
export interface CallSpec {
  readonly id: string
  readonly name: string
  readonly arguments?: string
}

/** Deterministic ISO time for a seq: one second per event from 2025-01-01. */
export function timeAt(seq: number): string {
  return new Date(Date.UTC(2025, 0, 1) + seq * 1000).toISOString()
}

/**
 * Builds a log in seq order, the way a harness would write it. Every method appends one
 * event and returns its seq.
 */
export class LogBuilder {
  readonly events: LoggedEvent[] = []

  get nextSeq(): number {
    return this.events.length
  }

  push(event: Omit<LoggedEvent, 'seq' | 'time'> & Record<string, unknown>): number {
    const seq = this.events.length
    this.events.push({ seq, time: timeAt(seq), ...event } as LoggedEvent)
    return seq
  }

  appendAll(events: readonly LoggedEvent[]): void {
    for (const event of events) {
      if (event.seq !== this.events.length)
        throw new Error(`expected seq ${this.events.length}, got ${event.seq}`)
      this.events.push(event)
    }
  }

  turnStart(turn: number): number {
    return this.push({ type: 'turn/start', data: { turn } })
  }

  turnEnd(turn: number, reason: TurnEndReason = 'completed'): number {
    return this.push({ type: 'turn/end', data: { turn, reason } })
  }

  system(content: string): number {
    return this.push({ type: 'system/message', data: { message: { role: 'system', content } } })
  }

  user(content: string): number {
    return this.push({ type: 'user/message', data: { message: { role: 'user', content } } })
  }

  assistant(calls: readonly CallSpec[] = [], content: string | null = null): number {
    const message: WireMessage =
      calls.length === 0
        ? { role: 'assistant', content: content ?? 'done' }
        : {
            role: 'assistant',
            content,
            tool_calls: calls.map((call) => ({
              id: call.id,
              type: 'function' as const,
              function: { name: call.name, arguments: call.arguments ?? '{}' },
            })),
          }
    return this.push({ type: 'assistant/message', data: { message } })
  }

  toolCall(call: CallSpec): number {
    return this.push({
      type: 'tool/call',
      data: { callId: call.id, name: call.name, arguments: call.arguments ?? '{}' },
    })
  }

  toolResult(
    callId: string,
    content = 'ok',
    options: { sourceEventSeqs?: number[]; isError?: boolean } = {},
  ): number {
    return this.push({
      type: 'tool/result',
      data: {
        message: { role: 'tool', tool_call_id: callId, content },
        ...(options.isError === undefined ? {} : { isError: options.isError }),
      },
      ...(options.sourceEventSeqs === undefined ? {} : { sourceEventSeqs: options.sourceEventSeqs }),
    })
  }

  /** A registered plugin event (log-only). */
  plugin(steps: string[]): number {
    return this.push({ type: 'plan/update', data: { steps } })
  }

  /** An event of a type this build does not know, kept because it is ignorable. */
  ignorable(note: string): number {
    return this.push({ type: 'vendor/note', data: { note }, ignorable: true })
  }
}

/** A deep copy through JSON (the pure packages compile without DOM or Node globals such as `structuredClone`). */
export function jsonClone<TValue>(value: TValue): TValue {
  return JSON.parse(JSON.stringify(value)) as TValue
}
