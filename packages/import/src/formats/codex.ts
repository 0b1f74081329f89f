import type { ContentPart, Usage } from '@agent-ledger/session-events'

import type { ImportedToolCall, SessionBuilder } from '../builder.ts'
import {
  classify,
  codexDetection,
  CodexScanner,
  isTurnBoundary,
  textOf,
  userContent,
} from './codex-records.ts'
import type { Rollback } from './codex-records.ts'
import { arr, count, obj, str } from './types.ts'
import type { FormatInput, FormatModule, FormatSession, ForkPass, LiveContinuation } from './types.ts'

export { codexDetection }

/** `event_msg` kinds that repeat a `response_item` (edge case 17): log-only. */
const DUPLICATE_EVENTS: ReadonlySet<string> = new Set(['user_message', 'agent_message', 'agent_reasoning'])

function outputOf(raw: unknown): { text: string; isError: boolean } {
  if (typeof raw === 'string') return { text: raw, isError: false }
  const output = obj(raw)
  if (output !== undefined) {
    return { text: textOf(output['content']), isError: output['success'] === false }
  }
  return { text: textOf(raw), isError: false }
}

function usageOf(raw: unknown): Usage | undefined {
  const usage = obj(raw)
  if (usage === undefined) return undefined
  const input = count(usage['input_tokens'])
  const output = count(usage['output_tokens'])
  if (input === undefined && output === undefined) return undefined
  const result: Usage = {
    prompt_tokens: input ?? 0,
    completion_tokens: output ?? 0,
    total_tokens: count(usage['total_tokens']) ?? (input ?? 0) + (output ?? 0),
  }
  const cached = count(usage['cached_input_tokens'])
  return cached === undefined ? result : { ...result, cached_tokens: cached }
}

interface Group {
  readonly text: string[]
  readonly reasoning: string[]
  readonly toolCalls: ImportedToolCall[]
  usage: Usage | undefined
  /** Time of its last item: the message gets it, not the time of the line that ends the group. */
  time: string | undefined
}

/** A user or developer message that arrived while calls were waiting for their outputs. */
interface Deferred {
  readonly role: string
  readonly content: string | ContentPart[]
  /** A user prompt that starts a turn (sources without turn markers). */
  readonly prompt: boolean
}

/** How one session reads the rollout: which lines are dropped by a rollback, whether prompts start turns. */
interface MapperOptions {
  /** Lines a rollback dropped from this session (kept verbatim only). */
  readonly dropped: (line: number) => boolean
  /** The source has no turn markers (`task_started`): user prompts start turns. */
  readonly promptsStartTurns: boolean
}

/** Maps rollout records, in order, into a builder. */
class CodexMapper {
  readonly #b: SessionBuilder
  readonly #options: MapperOptions
  #group: Group | null = null
  #turnOpenBySource = false
  /** Call ids of the last assistant message still waiting for their outputs. */
  readonly #awaiting = new Set<string>()
  #deferred: Deferred[] = []
  #dropping = false

  constructor(builder: SessionBuilder, options: MapperOptions) {
    this.#b = builder
    this.#options = options
  }

  #open(): Group {
    this.#release()
    this.#group ??= { text: [], reasoning: [], toolCalls: [], usage: undefined, time: undefined }
    this.#group.time = this.#b.time
    return this.#group
  }

  #flush(): void {
    const group = this.#group
    this.#group = null
    if (group === null) return
    const now = this.#b.time
    this.#b.setTime(group.time)
    this.#b.assistant(group)
    this.#b.setTime(now)
    this.#awaiting.clear()
    for (const call of group.toolCalls) this.#awaiting.add(call.id)
  }

  /** Places the messages held back for open calls (before anything that is not an output). */
  #release(): void {
    const deferred = this.#deferred
    this.#deferred = []
    this.#awaiting.clear()
    for (const message of deferred) this.#message(message)
  }

  /** Ends the assistant message being gathered and places held messages: something else follows. */
  #settle(): void {
    this.#flush()
    this.#release()
  }

  #message({ role, content, prompt }: Deferred): void {
    const b = this.#b
    if (role === 'user') b.user(content, { prompt })
    else {
      b.lossy('codex.developer-role')
      b.system(typeof content === 'string' ? content : textOf(content), role === 'system' ? undefined : role)
    }
  }

  handle(line: number, value: Record<string, unknown>): void {
    const b = this.#b
    b.line = line
    const record = classify(value)
    // A `{session, items}` document's wrapper has its time in the session object.
    b.beginRecord(value['timestamp'] ?? (record.kind === 'meta' ? record.meta['timestamp'] : undefined))
    if (this.#options.dropped(line)) {
      // Rolled back: the turns Codex dropped are not in this session's history (a fork has them).
      if (!this.#dropping) this.#settle()
      this.#dropping = true
      b.record(value, 'log-only:codex.rolled-back')
      return
    }
    this.#dropping = false
    if (record.kind === 'meta') {
      const base = obj(record.meta['base_instructions'])
      const instructions = str(base?.['text']) ?? str(record.meta['instructions'])
      const mapped = instructions !== undefined && instructions !== ''
      b.record(value, mapped ? 'mapped' : 'log-only:codex.session_meta')
      if (mapped) b.system(instructions)
      return
    }
    if (record.kind === 'item') return this.#responseItem(value, record.item)
    if (record.kind === 'event') return this.#eventMsg(value, record.event)
    if (record.kind === 'turn_context') {
      b.record(value, 'log-only:codex.turn_context')
      return
    }
    if (record.kind === 'compacted') return this.#compacted(value, record.compacted)
    if (record.kind === 'state') {
      b.record(value, 'log-only:codex.state')
      return
    }
    b.lossy(`codex.${record.type}`)
    b.record(value, `log-only:codex.${record.type}`)
  }

  #compacted(value: Record<string, unknown>, payload: Record<string, unknown>): void {
    const b = this.#b
    this.#settle()
    b.record(value, 'mapped')
    const summary = str(payload['message']) ?? ''
    const items = arr(payload['replacement_history']).map(obj)
    const firstUser = items.findIndex((item) => item?.['type'] === 'message' && item['role'] === 'user')
    const replacing = firstUser === -1 ? summary : textOf(items[firstUser]!['content'])
    b.compact({ summary, content: replacing, reason: 'codex compacted' })
    items.forEach((item, index) => {
      if (index === firstUser || item === undefined) return
      this.#responseItem(undefined, item)
    })
    this.#settle()
  }

  #responseItem(value: Record<string, unknown> | undefined, item: Record<string, unknown>): void {
    const b = this.#b
    const itemType = str(item['type'])
    const keep = (disposition: string): void => {
      if (value !== undefined) b.record(value, disposition)
    }
    if (itemType === 'message') {
      const role = str(item['role']) ?? 'developer'
      if (role === 'assistant') {
        this.#open().text.push(textOf(item['content']))
        if (item['phase'] !== undefined) b.lossy('codex.phase')
        keep('mapped')
        return
      }
      const content = userContent(item['content'])
      const prompt = role === 'user' && this.#options.promptsStartTurns && isTurnBoundary(item)
      if (this.#group !== null && this.#group.toolCalls.length > 0) this.#flush()
      if (this.#awaiting.size > 0 && value !== undefined) {
        // A developer notice (an approval, a steer) written between a call and its output: a
        // provider wants the outputs right after the call, so the message follows them.
        b.lossy('codex.message-after-open-call')
        keep('mapped')
        this.#deferred.push({ role, content, prompt })
        return
      }
      this.#settle()
      if (prompt) b.beforePrompt()
      keep('mapped')
      this.#message({ role, content, prompt })
      return
    }
    if (itemType === 'reasoning') {
      const summary = arr(item['summary'])
        .map((part) => str(obj(part)?.['text']))
        .filter((text): text is string => text !== undefined)
      const content = textOf(item['content'])
      const reasoning = content !== '' ? content : summary.join('\n')
      const group = this.#open()
      if (reasoning !== '') group.reasoning.push(reasoning)
      if (item['encrypted_content'] !== undefined && item['encrypted_content'] !== null) {
        b.lossy('codex.encrypted_content')
      }
      keep('mapped')
      return
    }
    if (itemType === 'function_call' || itemType === 'custom_tool_call' || itemType === 'local_shell_call') {
      const callId = str(item['call_id']) ?? str(item['id'])
      const name = itemType === 'local_shell_call' ? 'local_shell' : str(item['name'])
      if (callId === undefined || callId === '' || name === undefined || name === '') {
        b.lossy('codex.call-without-id')
        keep('log-only:codex.call-without-id')
        return
      }
      const args =
        itemType === 'function_call'
          ? (str(item['arguments']) ?? JSON.stringify(item['arguments'] ?? {}))
          : itemType === 'custom_tool_call'
            ? (str(item['input']) ?? '')
            : JSON.stringify(item['action'] ?? {})
      if (itemType !== 'function_call') b.lossy(`codex.${itemType}`)
      this.#open().toolCalls.push({ id: callId, name, arguments: args })
      keep('mapped')
      return
    }
    if (itemType === 'function_call_output' || itemType === 'custom_tool_call_output') {
      this.#flush()
      keep('mapped')
      const output = outputOf(item['output'])
      if (typeof item['output'] === 'object' && item['output'] !== null) b.lossy('codex.structured-output')
      const callId = str(item['call_id']) ?? ''
      b.toolResult(callId, output.text, { isError: output.isError })
      this.#awaiting.delete(callId)
      if (this.#awaiting.size === 0) this.#release()
      return
    }
    b.lossy(`codex.response_item.${itemType ?? 'unknown'}`)
    keep(`log-only:codex.${itemType ?? 'unknown'}`)
  }

  #eventMsg(value: Record<string, unknown>, payload: Record<string, unknown>): void {
    const b = this.#b
    const kind = str(payload['type']) ?? 'unknown'
    if (kind === 'task_started' || kind === 'turn_started') {
      this.#settle()
      b.record(value, 'mapped')
      b.startTurn()
      this.#turnOpenBySource = true
      return
    }
    if (kind === 'task_complete' || kind === 'turn_complete' || kind === 'turn_aborted') {
      this.#settle()
      b.record(value, 'mapped')
      b.endTurn(kind === 'turn_aborted' ? 'aborted' : 'completed')
      this.#turnOpenBySource = false
      return
    }
    if (kind === 'token_count') {
      const usage = usageOf(obj(payload['info'])?.['last_token_usage'])
      if (usage !== undefined) {
        // Totals repeat on every token_count: the last usage of the response is taken, never summed.
        if (this.#group === null) b.lossy('codex.token_count-without-message')
        else this.#group.usage = usage
      }
      if (payload['rate_limits'] !== undefined) b.lossy('codex.rate_limits')
      b.record(value, usage === undefined ? 'log-only:codex.token_count' : 'mapped')
      return
    }
    if (DUPLICATE_EVENTS.has(kind)) {
      b.record(value, `log-only:codex.event_msg-duplicate`)
      return
    }
    b.record(value, `log-only:codex.event_msg.${kind}`)
  }

  /** A rollback this session applies (the dropped turns went to a fork). */
  rolledBack(rollback: Rollback): void {
    const b = this.#b
    if (rollback.intoCompaction) {
      b.lossy('codex.rollback-into-compaction')
      b.diagnostic(
        'ROLLBACK_INTO_COMPACTION',
        `thread_rolled_back (${rollback.numTurns} turn(s)): expected that many turns after the last compaction, found ${rollback.cut === undefined ? 'none' : 'fewer'}; the compaction is kept whole, so ${rollback.cut === undefined ? 'nothing was dropped' : 'the turns after it were dropped'}`,
      )
    }
  }

  finish(): void {
    this.#settle()
    // Turns come from the source: one still open at the end was cut short.
    this.#b.finish(this.#turnOpenBySource ? 'interrupt' : 'complete')
  }
}

/** Whether a line lies in one of the `[cut, rollback line)` ranges. */
function inRanges(ranges: readonly (readonly [number, number])[], line: number): boolean {
  return ranges.some(([start, end]) => line >= start && line < end)
}

async function build(
  input: FormatInput,
  scanner: CodexScanner,
  plan: {
    readonly session?: Omit<FormatSession, 'builder'>
    readonly dropped: readonly (readonly [number, number])[]
    /** Lines this session counts into the report (others are counted by another session). */
    readonly counts: (line: number) => boolean
    readonly trackDigests: boolean
    /** Stop before this line (a fork ends where its rollback is). */
    readonly until?: number
    /** A fork's pass (see {@link FormatInput.fork}): its builder, and when to stop. */
    readonly pass?: ForkPass
    /** A live import: how the main session goes on with appended records. */
    readonly continueLive?: (continuation: LiveContinuation) => void
  },
): Promise<SessionBuilder> {
  const { pass } = plan
  const builder =
    pass === undefined
      ? input.newBuilder(plan.counts, { trackDigests: plan.trackDigests })
      : pass.newBuilder(plan.counts)
  const mapper = new CodexMapper(builder, {
    dropped: (line) => inRanges(plan.dropped, line),
    promptsStartTurns: !scanner.turnEvents,
  })
  const rollbacks = new Map(scanner.rollbacks.map((rollback) => [rollback.line, rollback]))
  const session = plan.session === undefined ? undefined : { ...plan.session, builder }
  for await (const parsed of input.replay()) {
    if (plan.until !== undefined && parsed.line >= plan.until) break
    if ('malformed' in parsed) {
      builder.line = parsed.line
      builder.malformed(parsed.malformed)
    } else {
      mapper.handle(parsed.line, parsed.value)
      const rollback = rollbacks.get(parsed.line)
      if (rollback !== undefined) mapper.rolledBack(rollback)
    }
    if (session !== undefined) await input.pump(session)
    if (pass !== undefined && !(await pass.step(builder))) return builder
  }
  if (plan.continueLive !== undefined) {
    const rollbacks = scanner.rollbacks.length
    const turnEvents = scanner.turnEvents
    // Appended records follow the history as it is; a rollback (it drops turns already
    // imported) or the first turn marker (prompts no longer start turns) asks for a re-import.
    plan.continueLive({
      add: ({ line, value }) => {
        if (scanner.rollbacks.length !== rollbacks) return 'a thread_rolled_back drops turns already imported'
        if (scanner.turnEvents !== turnEvents)
          return 'the first turn marker: user prompts no longer start turns'
        mapper.handle(line, value)
        return undefined
      },
    })
  }
  if (!input.live) mapper.finish()
  return builder
}

/**
 * The main session is the history Codex resumes: every `thread_rolled_back` drops the turns it
 * names (kept verbatim only). Each rollback that dropped something is a fork holding the
 * dropped turns, seeded with what it shares with the main session up to the first of them.
 */
async function mapCodex(input: FormatInput, scanner: CodexScanner): Promise<readonly FormatSession[]> {
  const applied = scanner.rollbacks.filter(
    (rollback): rollback is Rollback & { cut: number } => rollback.cut !== undefined,
  )
  const ranges = applied.map((rollback) => [rollback.cut, rollback.line] as const)
  let live: LiveContinuation | undefined
  const main = await build(input, scanner, {
    session: { key: '', role: 'main' },
    dropped: ranges,
    counts: (line) => !inRanges(ranges, line),
    trackDigests: ranges.length > 0 && !input.live,
    ...(input.live ? { continueLive: (continuation) => (live = continuation) } : {}),
  })
  const mainSession: FormatSession = { key: '', role: 'main', builder: main }
  const sessions: FormatSession[] = [mainSession]
  if (live !== undefined) input.continueLive(mainSession, live)
  if (input.live) return sessions
  await input.close(mainSession)
  for (const [index, rollback] of applied.entries()) {
    // The fork replays the history as it was just before its rollback: earlier rollbacks applied.
    const earlier = ranges.slice(0, index)
    const own = ranges[index]!
    const session = {
      key: `rollback-${index + 1}`,
      role: 'fork' as const,
      forkOf: '',
      metadata: { rollbackLine: rollback.line, numTurns: rollback.numTurns, branchLine: rollback.cut },
    }
    // Handed over in batches as it is built (seeded on the way), never held whole.
    sessions.push(
      await input.fork(session, (pass) =>
        build(input, scanner, {
          dropped: earlier,
          counts: (line) => inRanges([own], line) && !inRanges(earlier, line),
          trackDigests: false,
          until: rollback.line,
          pass,
        }),
      ),
    )
  }
  return sessions
}

/**
 * Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, and the older
 * layouts): mapped as they stream; each rollback adds a fork.
 */
export const codexFormat: FormatModule = {
  scanner: () => new CodexScanner(),
  map: (input, scanner) => mapCodex(input, scanner as CodexScanner),
}
