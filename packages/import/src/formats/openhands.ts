import type { ContentPart, Usage } from '@agent-ledger/session-events'

import { USER_REJECTED } from '../builder.ts'
import type { ImportedToolCall, SessionBuilder } from '../builder.ts'
import { arr, count, obj, str, streamedFormat } from './types.ts'
import type { ParsedLine } from '../lines.ts'
import type { FormatFacts, FormatModule, FormatScanner } from './types.ts'

/** True when a record is an OpenHands V0 event (`action` or `observation`, `source`). */
export function looksLikeOpenHandsV0(record: Record<string, unknown>): boolean {
  return (
    ('action' in record || 'observation' in record) && typeof record['source'] === 'string' && 'id' in record
  )
}

/** True when a record is an OpenHands V1 SDK event (`kind` naming an event class, string `id`). */
export function looksLikeOpenHandsV1(record: Record<string, unknown>): boolean {
  const kind = str(record['kind'])
  return (
    kind !== undefined &&
    /^[A-Z][A-Za-z]*(Event|Observation|Condensation|Request)$/.test(kind) &&
    typeof record['id'] === 'string'
  )
}

/**
 * When a record that matches no format is a line of an OpenHands evaluation output
 * (`output.jsonl` of SWE-bench or the resolver: one run per line, its events in `history`
 * beside the task and its result), what to say about it; otherwise undefined.
 */
export function openHandsEvaluationLine(record: Record<string, unknown>): string | undefined {
  const history = record['history']
  if (!Array.isArray(history)) return undefined
  // Events as the evaluation serialised them (full V0 or V1 events, or older flattened ones).
  const first = obj(history[0])
  if (first === undefined || !('action' in first || 'observation' in first || 'kind' in first))
    return undefined
  const instance = str(record['instance_id']) ?? str(obj(record['issue'])?.['title'])
  const full = looksLikeOpenHandsV0(first) || looksLikeOpenHandsV1(first)
  return (
    `an OpenHands evaluation output line${instance === undefined ? '' : ` (${JSON.stringify(instance)})`} holding ` +
    `a run of ${history.length} events in "history" beside its task and result: one line per run is not a ` +
    'session log; ' +
    (full
      ? 'to import a run, write its "history" array to a file of its own (a trajectory) and import that'
      : 'its events are in an older flattened form without ids, sources or times, which cannot be imported')
  )
}

function usageOf(raw: unknown): Usage | undefined {
  const usage = obj(raw)
  if (usage === undefined) return undefined
  const prompt = count(usage['prompt_tokens'])
  const completion = count(usage['completion_tokens'])
  if (prompt === undefined && completion === undefined) return undefined
  const result: Usage = {
    prompt_tokens: prompt ?? 0,
    completion_tokens: completion ?? 0,
    total_tokens: count(usage['total_tokens']) ?? (prompt ?? 0) + (completion ?? 0),
  }
  const cached = count(obj(usage['prompt_tokens_details'])?.['cached_tokens'])
  return cached === undefined ? result : { ...result, cached_tokens: cached }
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  return arr(content)
    .map((item) => str(obj(item)?.['text']))
    .filter((text): text is string => text !== undefined)
    .join('\n')
}

type UserContent = Parameters<SessionBuilder['user']>[0]

/** V1 `ImageContent {type: "image", image_urls}` items as `image_url` parts. */
function imagePartsOf(content: unknown): ContentPart[] {
  const parts: ContentPart[] = []
  for (const item of arr(content)) {
    const block = obj(item)
    if (block?.['type'] !== 'image') continue
    for (const url of arr(block['image_urls']))
      if (typeof url === 'string') parts.push({ type: 'image_url', image_url: { url } })
  }
  return parts
}

function toolCallsOf(raw: unknown): ImportedToolCall[] {
  const calls: ImportedToolCall[] = []
  for (const item of arr(raw)) {
    const call = obj(item) ?? {}
    const fn = obj(call['function'])
    const id = str(call['id'])
    const name = str(fn?.['name']) ?? str(call['name'])
    const args = fn?.['arguments'] ?? call['arguments']
    if (id === undefined || id === '' || name === undefined || name === '') continue
    calls.push({ id, name, arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}) })
  }
  return calls
}

const THINK = /<think>[\s\S]*?<\/think>\s*/g

class OpenHandsMapper {
  readonly #b: SessionBuilder
  /** V0: `model_response.id`s already turned into an assistant message. V1: the open `llm_response_id` group. */
  readonly #responses = new Set<string>()
  #group: { id: string; text: string[]; reasoning: string[]; toolCalls: ImportedToolCall[] } | null = null
  /** Source event id → what it put on the surface, so a condensation can find what it forgets. */
  readonly #seqByEvent = new Map<string, number>()
  readonly #callByAction = new Map<string, string>()
  readonly #callByObservation = new Map<string, string>()
  /** Source event ids in order (a V0 condensation may name a range of ids). */
  readonly #eventIds: string[] = []
  #appliedSummary: string | undefined
  /** The id of the event being mapped. */
  #eventId = ''

  constructor(builder: SessionBuilder) {
    this.#b = builder
  }

  #flush(): void {
    const group = this.#group
    this.#group = null
    if (group !== null) this.#b.assistant(group)
  }

  handle(line: number, value: Record<string, unknown>): void {
    const b = this.#b
    b.line = line
    b.beginRecord(value['timestamp'])
    const rawId = value['id']
    const eventId = typeof rawId === 'string' || typeof rawId === 'number' ? String(rawId) : undefined
    if (eventId !== undefined) this.#eventIds.push(eventId)
    this.#eventId = eventId ?? `line-${line}`
    if (typeof value['kind'] === 'string') {
      return this.#v1(value)
    }
    this.#v0(value)
  }

  #v0(value: Record<string, unknown>): void {
    const b = this.#b
    const action = str(value['action'])
    const observation = str(value['observation'])
    const args = obj(value['args']) ?? {}
    const metadata = obj(value['tool_call_metadata'])
    if (typeof value['id'] === 'number' && value['id'] !== 0) b.lossy('openhands.event-id')
    if (action === 'message' && metadata === undefined) {
      const content = str(args['content']) ?? str(value['message']) ?? ''
      if (value['source'] === 'user') b.beforePrompt()
      b.record(value, 'mapped')
      if (value['source'] === 'user') {
        const images = arr(args['image_urls']).filter((url): url is string => typeof url === 'string')
        const parts: ContentPart[] = [
          { type: 'text', text: content },
          ...images.map((url): ContentPart => ({ type: 'image_url', image_url: { url } })),
        ]
        b.user(images.length === 0 ? content : parts, { prompt: true })
      } else b.assistant({ text: [content], reasoning: [], toolCalls: [] })
      this.#seqByEvent.set(this.#eventId, b.nextSeq - 1)
      return
    }
    if (action === 'condensation') {
      const start = count(args['forgotten_events_start_id'])
      const end = count(args['forgotten_events_end_id'])
      const listed = arr(args['forgotten_event_ids']).map((id) => String(id))
      const forgotten =
        listed.length > 0 || start === undefined || end === undefined
          ? listed
          : this.#eventIds.filter((id) => Number(id) >= start && Number(id) <= end)
      this.#condense(value, { forgotten, summary: str(args['summary']), offset: args['summary_offset'] })
      return
    }
    if (action === 'system') {
      b.record(value, 'mapped')
      b.system(str(args['content']) ?? '')
      if (args['tools'] !== undefined) b.lossy('openhands.tool-specs')
      return
    }
    if (action === 'finish') {
      this.#finish(value, args, metadata)
      return
    }
    if (action !== undefined && metadata !== undefined) {
      const callId = str(metadata['tool_call_id'])
      if (callId !== undefined) this.#callByAction.set(this.#eventId, callId)
      const response = obj(metadata['model_response'])
      const responseId = str(response?.['id']) ?? `call-${String(metadata['tool_call_id'])}`
      if (this.#responses.has(responseId)) {
        b.record(value, 'mapped')
        return
      }
      this.#responses.add(responseId)
      const choice = obj(arr(response?.['choices'])[0])
      const message = obj(choice?.['message'])
      b.record(value, 'mapped')
      if (message !== undefined) {
        const content = str(message['content'])
        b.lossy('openhands.model_response')
        b.assistant({
          text: content === undefined ? [] : [content],
          reasoning:
            str(message['reasoning_content']) === undefined ? [] : [str(message['reasoning_content'])!],
          // A `finish` call answered by no observation: OpenHands drops it from the replay.
          toolCalls: toolCallsOf(message['tool_calls']).filter((call) => call.name !== 'finish'),
          usage: usageOf(response?.['usage']),
        })
      } else {
        // A trajectory without model_response: the call is rebuilt from the metadata and args.
        b.lossy('openhands.call-rebuilt-from-args')
        const { thought, ...rest } = args
        b.assistant({
          text: typeof thought === 'string' && thought !== '' ? [thought] : [],
          reasoning: [],
          toolCalls: [
            {
              id: str(metadata['tool_call_id']) ?? `call-${String(value['id'])}`,
              name: str(metadata['function_name']) ?? action,
              arguments: JSON.stringify(rest),
            },
          ],
        })
      }
      return
    }
    if (observation !== undefined && metadata !== undefined) {
      this.#callByObservation.set(this.#eventId, str(metadata['tool_call_id']) ?? '')
      b.record(value, 'mapped')
      if (value['extras'] !== undefined) b.lossy('openhands.extras')
      b.toolResult(str(metadata['tool_call_id']) ?? '', str(value['content']) ?? '', {
        isError: observation === 'error',
        ...(observation === 'user_rejected' ? { code: USER_REJECTED } : {}),
      })
      return
    }
    b.record(value, `log-only:openhands.${action ?? observation ?? 'unknown'}`)
  }

  /**
   * V0 `finish` (`AgentFinishAction`): OpenHands never answers it and replays it as assistant
   * text (`ConversationMemory`: the action's `thought`, the model response's content appended
   * when it differs, the tool-call metadata removed), and the agent's run ends there.
   */
  #finish(
    value: Record<string, unknown>,
    args: Record<string, unknown>,
    metadata: Record<string, unknown> | undefined,
  ): void {
    const b = this.#b
    if (value['source'] === 'user') {
      // The user ended the conversation (`/exit`): no message the model saw.
      b.record(value, 'log-only:openhands.finish-by-user')
      b.endTurn('completed')
      return
    }
    const response = obj(metadata?.['model_response'])
    const responseId = str(response?.['id'])
    b.record(value, 'mapped')
    if (responseId !== undefined && this.#responses.has(responseId)) {
      b.endTurn('completed')
      return
    }
    if (responseId !== undefined) this.#responses.add(responseId)
    const message = obj(obj(arr(response?.['choices'])[0])?.['message'])
    const content = str(message?.['content']) ?? ''
    const thought = str(args['thought']) ?? str(args['final_thought']) ?? ''
    const text =
      thought === '' ? content : content === '' || content === thought ? thought : `${thought}\n${content}`
    if (metadata !== undefined) b.lossy('openhands.finish-call')
    b.assistant({
      text: text === '' ? [] : [text],
      reasoning: [],
      toolCalls: [],
      usage: usageOf(response?.['usage']),
    })
    this.#seqByEvent.set(this.#eventId, b.nextSeq - 1)
    b.endTurn('completed')
  }

  #v1(value: Record<string, unknown>): void {
    const b = this.#b
    const kind = str(value['kind'])!
    if (kind === 'ActionEvent') {
      const responseId = str(value['llm_response_id']) ?? str(value['id'])!
      if (this.#group !== null && this.#group.id !== responseId) this.#flush()
      const fresh = this.#group === null
      this.#group ??= { id: responseId, text: [], reasoning: [], toolCalls: [] }
      const reasoning = str(value['reasoning_content'])
      if (fresh) {
        let thought = textOf(value['thought'])
        if (reasoning !== undefined && reasoning !== '') {
          const stripped = thought.replace(THINK, '')
          if (stripped !== thought) b.lossy('openhands.think-tags-stripped')
          thought = stripped
          this.#group.reasoning.push(reasoning)
        }
        if (thought !== '') this.#group.text.push(thought)
      }
      const calls = toolCallsOf([value['tool_call']])
      this.#group.toolCalls.push(...calls)
      if (calls[0] !== undefined) this.#callByAction.set(this.#eventId, calls[0].id)
      if (arr(value['thinking_blocks']).length > 0) b.lossy('openhands.thinking_blocks')
      if (value['security_risk'] !== undefined) b.lossy('openhands.security_risk')
      b.record(value, 'mapped')
      return
    }
    this.#flush()
    if (kind === 'SystemPromptEvent') {
      b.record(value, 'mapped')
      b.system(textOf([value['system_prompt']]))
      if (value['tools'] !== undefined) b.lossy('openhands.tool-specs')
      return
    }
    if (kind === 'MessageEvent') {
      const message = obj(value['llm_message']) ?? {}
      const text = textOf(message['content'])
      if (message['role'] !== 'assistant' && value['source'] === 'user') b.beforePrompt()
      b.record(value, 'mapped')
      if (arr(value['extended_content']).length > 0) b.lossy('openhands.extended_content')
      if (message['role'] === 'assistant') {
        if (imagePartsOf(message['content']).length > 0) b.lossy('openhands.assistant-image')
        const reasoning = str(message['reasoning_content'])
        b.assistant({ text: [text], reasoning: reasoning === undefined ? [] : [reasoning], toolCalls: [] })
      } else {
        const images = imagePartsOf(message['content'])
        const content: UserContent =
          images.length === 0 ? text : [...(text === '' ? [] : [{ type: 'text' as const, text }]), ...images]
        b.user(content, { prompt: value['source'] === 'user' })
      }
      this.#seqByEvent.set(this.#eventId, b.nextSeq - 1)
      return
    }
    if (kind === 'PauseEvent' || kind === 'InterruptEvent' || kind === 'ConversationErrorEvent') {
      // The user paused or interrupted the run, or the run loop failed: the open turn ends so
      // (a call still waiting for its result keeps the turn open: the result may come).
      if (b.turnOpen && b.projection.repairState.pendingCalls.length === 0) {
        b.record(value, 'mapped')
        b.endTurn(kind === 'ConversationErrorEvent' ? 'error' : 'interrupted')
      } else b.record(value, `log-only:openhands.${kind}`)
      return
    }
    if (kind === 'SystemPromptUpdateEvent') {
      // A new system prompt (and tools) on restore: the model sees it from here on.
      b.record(value, 'mapped')
      b.system(textOf([value['system_prompt']]))
      if (value['tools'] !== undefined) b.lossy('openhands.tool-specs')
      return
    }
    if (kind === 'ObservationEvent' || kind === 'UserRejectObservation' || kind === 'AgentErrorEvent') {
      const observation = obj(value['observation'])
      const content =
        kind === 'UserRejectObservation'
          ? (str(value['rejection_reason']) ?? 'rejected by the user')
          : kind === 'AgentErrorEvent'
            ? (str(value['error']) ?? '')
            : textOf(observation?.['content'])
      const isError = kind !== 'ObservationEvent' || observation?.['is_error'] === true
      this.#callByObservation.set(this.#eventId, str(value['tool_call_id']) ?? '')
      b.record(value, 'mapped')
      b.toolResult(str(value['tool_call_id']) ?? '', content, {
        isError,
        ...(kind === 'UserRejectObservation' ? { code: USER_REJECTED } : {}),
      })
      return
    }
    if (kind === 'CondensationSummaryEvent') {
      const summary = str(value['summary']) ?? ''
      if (summary === this.#appliedSummary) {
        // The summary a condensation already put in place (as its compaction's message).
        b.record(value, 'log-only:openhands.CondensationSummaryEvent-applied')
        return
      }
      b.record(value, 'mapped')
      b.user(summary, { prompt: false })
      this.#seqByEvent.set(this.#eventId, b.nextSeq - 1)
      return
    }
    if (kind === 'Condensation') {
      const forgotten = arr(value['forgotten_event_ids']).map((id) => String(id))
      this.#condense(value, { forgotten, summary: str(value['summary']), offset: value['summary_offset'] })
      return
    }
    b.record(value, `log-only:openhands.${kind}`)
  }

  /**
   * A condensation (V1 `Condensation`, V0 `condensation` action): the forgotten events are
   * replaced by the summary as one v4 compaction when they are one contiguous run of what the
   * model sees; otherwise (forgotten events spread out, no summary to replace them with) the
   * record is kept verbatim only and counted.
   */
  #condense(
    value: Record<string, unknown>,
    request: {
      readonly forgotten: readonly string[]
      readonly summary: string | undefined
      readonly offset: unknown
    },
  ): void {
    const b = this.#b
    const forgotten = new Set(request.forgotten)
    if (request.summary === undefined || request.summary === '') {
      b.lossy('openhands.condensation-without-summary')
      b.record(value, 'log-only:openhands.condensation-without-summary')
      return
    }
    const seqs = new Set<number>()
    const calls = new Set<string>()
    for (const id of forgotten) {
      const seq = this.#seqByEvent.get(id)
      if (seq !== undefined) seqs.add(seq)
      const call = this.#callByAction.get(id) ?? this.#callByObservation.get(id)
      if (call !== undefined) calls.add(call)
    }
    const summary = request.summary
    const outcome = b.compactSelected({
      select: (node) => {
        if (seqs.has(node.seq)) return true
        const message = node.message
        if (message.role === 'tool') return calls.has(message.tool_call_id)
        if (message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0)
          return message.tool_calls!.every((call) => calls.has(call.id))
        return false
      },
      summary,
      content: summary,
      reason: 'openhands condensation',
    })
    if (outcome !== 'applied') {
      b.lossy(`openhands.condensation-${outcome}`)
      b.record(value, `log-only:openhands.condensation-${outcome}`)
      return
    }
    this.#appliedSummary = summary
    if (request.offset !== undefined && request.offset !== null)
      b.lossy('openhands.condensation.summary_offset')
    b.record(value, 'mapped')
  }

  finish(): void {
    this.#flush()
    this.#b.finish('complete')
  }
}

class OpenHandsScanner implements FormatScanner {
  #version: string | undefined

  add(parsed: ParsedLine): void {
    if (this.#version === undefined && 'value' in parsed)
      this.#version = typeof parsed.value['kind'] === 'string' ? 'v1' : 'v0'
  }

  facts(): FormatFacts {
    return { formatVersion: this.#version ?? 'unknown', sourceId: undefined, cwd: undefined, metadata: {} }
  }
}

/**
 * OpenHands events: a V0 trajectory (a JSON array of events, or one event per line, e.g. the
 * files of `sessions/<sid>/events/` in id order) or V1 SDK events (one per line, e.g.
 * `events/event-*.json` in index order). Mapped as they stream.
 */
export const openHandsFormat: FormatModule = streamedFormat(
  () => new OpenHandsScanner(),
  (builder) => new OpenHandsMapper(builder),
)
