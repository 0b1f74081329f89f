/**
 * The counts of `agent-ledger stats`, folded one event at a time: one implementation for the
 * `stats` command and the summary panel of the HTML export.
 */
import { isRepairCode } from '@agent-ledger/loop-repair'
import type { LoggedEvent, SessionEvent } from '@agent-ledger/session-events'

/** What `stats` counts for one session. */
export interface SessionStats {
  id: string
  events: number
  turns: number
  turnEnds: Record<string, number>
  messages: { system: number; user: number; assistant: number; tool: number }
  toolCalls: number
  toolErrors: number
  tools: Record<string, { calls: number; errors: number; errorRate: number }>
  repairs: Record<string, number>
  compactions: number
  inputTokens: number
  outputTokens: number
  cachedTokens: number
  /** Per turn: its number, duration (null when it never ended) and output tokens. */
  perTurn: { turn: number; durationMs: number | null; inputTokens: number; outputTokens: number }[]
  durationMs: number
}

/** Counts of nothing yet. */
export function emptyStats(id: string): SessionStats {
  return {
    id,
    events: 0,
    turns: 0,
    turnEnds: {},
    messages: { system: 0, user: 0, assistant: 0, tool: 0 },
    toolCalls: 0,
    toolErrors: 0,
    tools: {},
    repairs: {},
    compactions: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedTokens: 0,
    perTurn: [],
    durationMs: 0,
  }
}

/** Folds events into {@link SessionStats}, one at a time (memory: the open calls' names). */
export class StatsCounter {
  readonly stats: SessionStats
  readonly #callNames = new Map<string, string>()
  readonly #turnStarts = new Map<number, number>()
  #first: number | null = null
  #last: number | null = null
  #currentTurn: SessionStats['perTurn'][number] | null = null

  constructor(id: string) {
    this.stats = emptyStats(id)
  }

  add(event: LoggedEvent): void {
    const stats = this.stats
    stats.events += 1
    const time = Date.parse(event.time)
    if (!Number.isNaN(time)) {
      this.#first ??= time
      this.#last = time
    }
    switch (event.type) {
      case 'turn/start': {
        const { turn } = (event as SessionEvent<'turn/start'>).data
        stats.turns += 1
        this.#turnStarts.set(turn, time)
        this.#currentTurn = { turn, durationMs: null, inputTokens: 0, outputTokens: 0 }
        stats.perTurn.push(this.#currentTurn)
        break
      }
      case 'turn/end': {
        const { turn, reason } = (event as SessionEvent<'turn/end'>).data
        stats.turnEnds[reason] = (stats.turnEnds[reason] ?? 0) + 1
        if (reason === 'interrupted') stats.repairs['CLOSE_TURN'] = (stats.repairs['CLOSE_TURN'] ?? 0) + 1
        const started = this.#turnStarts.get(turn)
        const entry = stats.perTurn.findLast((item) => item.turn === turn)
        if (started !== undefined && entry !== undefined && entry.durationMs === null) {
          entry.durationMs = Math.max(0, time - started)
        }
        break
      }
      case 'system/message':
        stats.messages.system += 1
        break
      case 'user/message':
        stats.messages.user += 1
        break
      case 'assistant/message': {
        const data = (event as SessionEvent<'assistant/message'>).data
        stats.messages.assistant += 1
        for (const call of data.message.tool_calls ?? []) {
          stats.toolCalls += 1
          this.#callNames.set(call.id, call.function.name)
          const tool = (stats.tools[call.function.name] ??= { calls: 0, errors: 0, errorRate: 0 })
          tool.calls += 1
        }
        const usage = data.usage
        if (usage !== undefined) {
          stats.inputTokens += usage.prompt_tokens ?? 0
          stats.outputTokens += usage.completion_tokens ?? 0
          stats.cachedTokens += usage.cached_tokens ?? 0
          if (this.#currentTurn !== null) {
            this.#currentTurn.inputTokens += usage.prompt_tokens ?? 0
            this.#currentTurn.outputTokens += usage.completion_tokens ?? 0
          }
        }
        break
      }
      case 'tool/result': {
        const data = (event as SessionEvent<'tool/result'>).data
        stats.messages.tool += 1
        if (isRepairCode(data.code)) stats.repairs[data.code] = (stats.repairs[data.code] ?? 0) + 1
        if (data.isError === true) {
          stats.toolErrors += 1
          const name = this.#callNames.get(data.message.tool_call_id)
          const tool = name === undefined ? undefined : stats.tools[name]
          if (tool !== undefined) tool.errors += 1
        }
        break
      }
      case 'compaction/end':
        stats.compactions += 1
        break
      default:
        break
    }
  }

  finish(): SessionStats {
    for (const tool of Object.values(this.stats.tools))
      tool.errorRate = tool.calls === 0 ? 0 : tool.errors / tool.calls
    this.stats.durationMs =
      this.#first === null || this.#last === null ? 0 : Math.max(0, this.#last - this.#first)
    return this.stats
  }
}

/** A duration for people: `850 ms`, `12.5 s`, `3.2 min`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  return `${(ms / 60_000).toFixed(1)} min`
}
