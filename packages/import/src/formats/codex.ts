import type { Usage } from '@agent-ledger/session-events'

import type { ImportedToolCall, SessionBuilder } from '../builder.ts'
import { arr, count, obj, str, streamedFormat } from './types.ts'
import type { ParsedLine } from '../lines.ts'
import type { FormatFacts, FormatModule, FormatScanner } from './types.ts'

const CODEX_LINE_TYPES: ReadonlySet<string> = new Set([
  'session_meta',
  'response_item',
  'event_msg',
  'turn_context',
  'compacted',
])

/** True when a first record looks like a Codex CLI rollout line (`{timestamp, type, payload}`). */
export function looksLikeCodex(record: Record<string, unknown>): boolean {
  return (
    typeof record['type'] === 'string' &&
    CODEX_LINE_TYPES.has(record['type']) &&
    obj(record['payload']) !== undefined
  )
}

/** `event_msg` kinds that repeat a `response_item` (edge case 17): log-only. */
const DUPLICATE_EVENTS: ReadonlySet<string> = new Set(['user_message', 'agent_message', 'agent_reasoning'])

function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  const texts: string[] = []
  for (const item of arr(content)) {
    const part = obj(item)
    if (typeof part?.['text'] === 'string') texts.push(part['text'])
  }
  return texts.join('\n')
}

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

/** Maps rollout lines, in order, into a builder. */
class CodexMapper {
  readonly #b: SessionBuilder
  #group: Group | null = null
  #turnOpenBySource = false
  constructor(builder: SessionBuilder) {
    this.#b = builder
  }

  #open(): Group {
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
  }

  handle(line: number, value: Record<string, unknown>): void {
    const b = this.#b
    b.line = line
    b.beginRecord(value['timestamp'])
    const type = str(value['type'])
    const payload = obj(value['payload']) ?? {}
    if (type === 'session_meta') {
      const base = obj(payload['base_instructions'])
      const instructions = str(base?.['text']) ?? str(payload['instructions'])
      b.record(value, instructions === undefined ? 'log-only:codex.session_meta' : 'mapped')
      if (instructions !== undefined) b.system(instructions)
      return
    }
    if (type === 'response_item') return this.#responseItem(value, payload)
    if (type === 'event_msg') return this.#eventMsg(value, payload)
    if (type === 'turn_context') {
      b.record(value, 'log-only:codex.turn_context')
      return
    }
    if (type === 'compacted') {
      this.#flush()
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
      this.#flush()
      return
    }
    b.record(value, `log-only:codex.${type ?? 'unknown'}`)
  }

  #responseItem(value: Record<string, unknown> | undefined, item: Record<string, unknown>): void {
    const b = this.#b
    const itemType = str(item['type'])
    const keep = (disposition: string): void => {
      if (value !== undefined) b.record(value, disposition)
    }
    if (itemType === 'message') {
      const role = str(item['role'])
      const text = textOf(item['content'])
      if (role === 'assistant') {
        this.#open().text.push(text)
        if (item['phase'] !== undefined) b.lossy('codex.phase')
        keep('mapped')
        return
      }
      this.#flush()
      keep('mapped')
      if (role === 'user') b.user(text, { prompt: false })
      else {
        b.lossy('codex.developer-role')
        b.system(text, role === 'system' ? undefined : (role ?? 'developer'))
      }
      return
    }
    if (itemType === 'reasoning') {
      const summary = arr(item['summary'])
        .map((part) => str(obj(part)?.['text']))
        .filter((text): text is string => text !== undefined)
      const content = textOf(item['content'])
      const reasoning = content !== '' ? content : summary.join('\n')
      if (reasoning !== '') this.#open().reasoning.push(reasoning)
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
      b.toolResult(str(item['call_id']) ?? '', output.text, { isError: output.isError })
      return
    }
    b.lossy(`codex.response_item.${itemType ?? 'unknown'}`)
    keep(`log-only:codex.${itemType ?? 'unknown'}`)
  }

  #eventMsg(value: Record<string, unknown>, payload: Record<string, unknown>): void {
    const b = this.#b
    const kind = str(payload['type']) ?? 'unknown'
    if (kind === 'task_started') {
      this.#flush()
      b.record(value, 'mapped')
      b.startTurn()
      this.#turnOpenBySource = true
      return
    }
    if (kind === 'task_complete' || kind === 'turn_aborted') {
      this.#flush()
      b.record(value, 'mapped')
      b.endTurn(kind === 'task_complete' ? 'completed' : 'aborted')
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
    if (kind === 'thread_rolled_back') {
      // The guide maps a rollback to a fork before the dropped turns; not built yet: the
      // turns stay visible, which the report says.
      b.lossy('codex.thread_rolled_back-not-applied')
      b.diagnostic(
        'ROLLBACK_NOT_APPLIED',
        `thread_rolled_back (${count(payload['num_turns']) ?? '?'} turn(s)): expected the dropped turns to leave the conversation, found no mapping for it yet; they stay visible in the imported session`,
      )
    }
    b.record(value, `log-only:codex.event_msg.${kind}`)
  }

  finish(): void {
    this.#flush()
    // Turns come from the source: one still open at the end was cut short.
    this.#b.finish(this.#turnOpenBySource ? 'interrupt' : 'complete')
  }
}

class CodexScanner implements FormatScanner {
  meta: Record<string, unknown> | undefined
  model: string | undefined

  add(parsed: ParsedLine): void {
    if (!('value' in parsed)) return
    const type = parsed.value['type']
    const payload = obj(parsed.value['payload'])
    if (type === 'session_meta') this.meta ??= payload
    else if (type === 'turn_context') this.model ??= str(payload?.['model'])
  }

  facts(): FormatFacts {
    const meta = this.meta ?? {}
    const git = obj(meta['git'])
    return {
      formatVersion: str(meta['cli_version']) ?? 'unknown',
      sourceId: str(meta['id']),
      cwd: str(meta['cwd']),
      parentSourceId: str(meta['forked_from_id']),
      metadata: {
        ...(this.model === undefined ? {} : { model: this.model }),
        ...(str(meta['originator']) === undefined ? {} : { originator: meta['originator'] }),
        ...(str(meta['model_provider']) === undefined ? {} : { modelProvider: meta['model_provider'] }),
        ...(str(git?.['branch']) === undefined ? {} : { gitBranch: git!['branch'] }),
      },
    }
  }
}

/** Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): mapped as they stream. */
export const codexFormat: FormatModule = streamedFormat(
  () => new CodexScanner(),
  (builder) => new CodexMapper(builder),
)
