import type { ContentPart, Usage } from '@agent-ledger/session-events'

import { USER_REJECTED } from '../builder.ts'
import type { ImportedToolCall, SessionBuilder } from '../builder.ts'
import { arr, count, obj, str } from './types.ts'

export interface ClaudeRecord {
  readonly line: number
  readonly value: Record<string, unknown>
}

const INTERRUPT_PREFIX = '[Request interrupted by user'
const REJECTED_PREFIX = "The user doesn't want to proceed with this tool use"
const COMMAND_PREFIXES = [
  '<command-name>',
  '<command-message>',
  '<local-command-stdout>',
  '<local-command-caveat>',
]

function usageOf(raw: unknown): Usage | undefined {
  const usage = obj(raw)
  if (usage === undefined) return undefined
  const input = count(usage['input_tokens'])
  const output = count(usage['output_tokens'])
  const cacheRead = count(usage['cache_read_input_tokens'])
  const cacheWrite = count(usage['cache_creation_input_tokens'])
  if (input === undefined && output === undefined) return undefined
  const prompt = (input ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0)
  const result: Usage = {
    prompt_tokens: prompt,
    completion_tokens: output ?? 0,
    total_tokens: prompt + (output ?? 0),
  }
  return cacheRead === undefined ? result : { ...result, cached_tokens: cacheRead }
}

function textOfBlocks(blocks: readonly unknown[]): { text: string; images: number } {
  const texts: string[] = []
  let images = 0
  for (const block of blocks) {
    const part = obj(block)
    if (part?.['type'] === 'text' && typeof part['text'] === 'string') texts.push(part['text'])
    else if (part?.['type'] === 'image') images += 1
  }
  return { text: texts.join('\n'), images }
}

function imagePart(block: Record<string, unknown>): ContentPart | undefined {
  const source = obj(block['source'])
  if (source === undefined) return undefined
  if (source['type'] === 'base64' && typeof source['data'] === 'string') {
    const mediaType = str(source['media_type']) ?? 'image/png'
    return { type: 'image_url', image_url: { url: `data:${mediaType};base64,${source['data']}` } }
  }
  if (source['type'] === 'url' && typeof source['url'] === 'string') {
    return { type: 'image_url', image_url: { url: source['url'] } }
  }
  return undefined
}

interface PendingAssistant {
  readonly messageId: string
  readonly text: string[]
  readonly reasoning: string[]
  readonly toolCalls: ImportedToolCall[]
  usage: Usage | undefined
  /** Time of its last record: the message gets it, not the time of the record that ends it. */
  time: unknown
}

interface PendingResult {
  readonly line: number
  readonly callId: string
  readonly content: string
  readonly isError: boolean
  readonly rejected: boolean
  readonly time: unknown
  /** The record, on its first result: kept verbatim when the result is placed, so a source read mid-call stays a prefix. */
  readonly record: Record<string, unknown> | undefined
}

/** Maps the records of one path, in order, into a builder. */
export class ClaudeMapper {
  readonly #builder: SessionBuilder
  #assistant: PendingAssistant | null = null
  #results: PendingResult[] = []
  #compactPending = false
  #line = 0

  constructor(builder: SessionBuilder) {
    this.#builder = builder
  }

  handle(record: ClaudeRecord): void {
    const b = this.#builder
    const value = record.value
    b.line = record.line
    this.#line = record.line
    b.beginRecord(value['timestamp'])
    const type = str(value['type'])
    if (type === 'assistant') return this.#assistantRecord(value)
    if (type === 'user') return this.#userRecord(record)
    if (type === 'system' && value['subtype'] === 'compact_boundary') {
      this.#flush()
      this.#compactPending = true
      const metadata = obj(value['compactMetadata'])
      if (metadata?.['preTokens'] !== undefined) b.lossy('claude.compact.preTokens')
      if (metadata?.['preservedSegment'] !== undefined) b.lossy('claude.compact.preservedSegment')
      b.record(value, 'log-only:claude.compact_boundary')
      return
    }
    const kind = type === 'system' ? `system.${str(value['subtype']) ?? 'unknown'}` : (type ?? 'unknown')
    b.record(value, `log-only:claude.${kind}`)
  }

  #assistantRecord(value: Record<string, unknown>): void {
    const b = this.#builder
    const message = obj(value['message'])
    const messageId = str(message?.['id']) ?? `line-${String(value['uuid'])}`
    if (message === undefined || message['model'] === '<synthetic>' || value['isApiErrorMessage'] === true) {
      b.record(value, 'log-only:claude.synthetic-assistant')
      return
    }
    if (this.#assistant !== null && this.#assistant.messageId !== messageId) this.#flush()
    if (this.#assistant === null) {
      this.#assistant = {
        messageId,
        text: [],
        reasoning: [],
        toolCalls: [],
        usage: undefined,
        time: undefined,
      }
    }
    const pending = this.#assistant
    pending.time = value['timestamp']
    const content = message['content']
    const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : arr(content)
    for (const raw of blocks) {
      const block = obj(raw) ?? {}
      const blockType = str(block['type'])
      if (blockType === 'text') {
        const text = str(block['text']) ?? ''
        if (text.trim() === '') b.lossy('claude.whitespace-text')
        else pending.text.push(text)
      } else if (blockType === 'thinking') {
        pending.reasoning.push(str(block['thinking']) ?? '')
        if (block['signature'] !== undefined) b.lossy('claude.signature')
      } else if (blockType === 'redacted_thinking') {
        b.lossy('claude.redacted_thinking')
      } else if (blockType === 'tool_use') {
        const id = str(block['id'])
        const name = str(block['name'])
        if (id === undefined || id === '' || name === undefined || name === '') {
          b.lossy('claude.tool_use-without-id')
          continue
        }
        pending.toolCalls.push({ id, name, arguments: JSON.stringify(block['input'] ?? {}) })
        if (block['caller'] !== undefined) b.lossy('claude.caller')
      } else {
        b.lossy(`claude.block.${blockType ?? 'unknown'}`)
      }
    }
    // Every split record repeats the usage of the whole response: take the last, never sum.
    const usage = usageOf(message['usage'])
    if (usage !== undefined) pending.usage = usage
    b.record(value, 'mapped')
  }

  #userRecord(record: ClaudeRecord): void {
    const b = this.#builder
    const value = record.value
    const message = obj(value['message'])
    const content = message?.['content']
    if (value['isCompactSummary'] === true) {
      this.#flush()
      const text = typeof content === 'string' ? content : textOfBlocks(arr(content)).text
      b.compact({ summary: text, content: text, reason: 'claude-code compact' })
      this.#compactPending = false
      b.record(value, 'mapped')
      return
    }
    const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : arr(content)
    const results = blocks.map(obj).filter((block) => block?.['type'] === 'tool_result')
    if (results.length > 0) {
      let first = true
      for (const block of results) {
        const raw = block!['content']
        const { text, images } = typeof raw === 'string' ? { text: raw, images: 0 } : textOfBlocks(arr(raw))
        if (images > 0) b.lossy('claude.tool_result-image', images)
        const rejected =
          value['toolUseResult'] === 'User rejected tool use' ||
          (block!['is_error'] === true && text.startsWith(REJECTED_PREFIX))
        this.#results.push({
          line: record.line,
          callId: str(block!['tool_use_id']) ?? '',
          content: text,
          isError: block!['is_error'] === true,
          rejected,
          time: value['timestamp'],
          record: first ? value : undefined,
        })
        first = false
      }
      if (value['toolUseResult'] !== undefined) b.lossy('claude.toolUseResult')
      const others = blocks.length - results.length
      if (others > 0) b.lossy('claude.user-blocks-beside-tool_result', others)
      return
    }
    const texts = blocks.map(obj).filter((block) => block?.['type'] === 'text')
    const firstText = str(texts[0]?.['text']) ?? ''
    if (value['isMeta'] === true || COMMAND_PREFIXES.some((prefix) => firstText.startsWith(prefix))) {
      b.record(value, 'log-only:claude.local-command')
      return
    }
    this.#flush()
    const parts: ContentPart[] = []
    let images = 0
    for (const raw of blocks) {
      const block = obj(raw) ?? {}
      if (block['type'] === 'text') parts.push({ type: 'text', text: str(block['text']) ?? '' })
      else if (block['type'] === 'image') {
        const part = imagePart(block)
        if (part === undefined) images += 1
        else parts.push(part)
      } else b.lossy(`claude.user-block.${str(block['type']) ?? 'unknown'}`)
    }
    if (images > 0) b.lossy('claude.image-unreadable', images)
    if (value['todos'] !== undefined) b.lossy('claude.todos')
    const single = parts.length === 1 ? parts[0] : undefined
    const userContent = single?.type === 'text' ? single.text : parts
    if (parts.length === 0) {
      b.record(value, 'log-only:claude.empty-user')
      return
    }
    const interrupt = firstText.startsWith(INTERRUPT_PREFIX)
    if (!interrupt) b.beforePrompt()
    b.record(value, 'mapped')
    if (interrupt) {
      b.user(userContent, { prompt: false })
      b.endTurn('interrupted')
      return
    }
    b.user(userContent, { prompt: true })
  }

  /** Emits the merged assistant message, then the results gathered for it. */
  #flush(): void {
    const b = this.#builder
    const pending = this.#assistant
    if (pending === null && this.#results.length === 0) return
    const now = b.time
    const line = this.#line
    this.#assistant = null
    if (pending !== null) {
      b.setTime(pending.time)
      b.assistant(pending)
    }
    const results = this.#results
    this.#results = []
    for (const result of results) {
      b.line = result.line
      b.setTime(result.time)
      if (result.record !== undefined) b.record(result.record, 'mapped')
      b.toolResult(result.callId, result.content, {
        isError: result.isError,
        ...(result.rejected ? { code: USER_REJECTED } : {}),
      })
    }
    b.setTime(now)
    b.line = line
  }

  finish(): void {
    this.#flush()
    if (this.#compactPending) this.#builder.lossy('claude.compact_boundary-without-summary')
    this.#builder.finish('complete')
  }
}

/** Side records that may ride along a path they are not on: tool results, progress, system notes. */
export function attachable(value: Record<string, unknown>): boolean {
  const type = value['type']
  if (type === 'assistant') return false
  if (type === 'system') return value['subtype'] !== 'compact_boundary'
  if (type !== 'user') return true
  const content = obj(value['message'])?.['content']
  if (typeof content === 'string') return false
  const blocks = arr(content)
  return blocks.length > 0 && blocks.every((block) => obj(block)?.['type'] === 'tool_result')
}
