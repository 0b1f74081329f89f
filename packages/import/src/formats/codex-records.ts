import type { ContentPart } from '@agent-ledger/session-events'

import { arr, count, obj, str } from './types.ts'
import type { ParsedLine } from '../lines.ts'
import type { FormatFacts, FormatScanner } from './types.ts'

/** Envelope types of the current layout (`{timestamp, type, payload}`, `RolloutLine`). */
const ENVELOPE_TYPES: ReadonlySet<string> = new Set([
  'session_meta',
  'response_item',
  'event_msg',
  'turn_context',
  'compacted',
])

/** `ResponseItem` types a bare line of the older layouts (or an `items` element) may have. */
const RESPONSE_ITEM_TYPES: ReadonlySet<string> = new Set([
  'message',
  'reasoning',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'local_shell_call',
  'web_search_call',
])

/**
 * One rollout record, whichever layout wrote it: the current `{timestamp, type, payload}`
 * lines, the mid-2025 layout (a bare session meta first, then bare `ResponseItem`s and
 * `{"record_type": "state"}` lines) or the early `{session, items}` document (split into
 * its `session` wrapper and its items by the caller).
 */
export type CodexRecord =
  | { readonly kind: 'meta'; readonly meta: Record<string, unknown> }
  | { readonly kind: 'item'; readonly item: Record<string, unknown> }
  | { readonly kind: 'event'; readonly event: Record<string, unknown> }
  | { readonly kind: 'turn_context'; readonly context: Record<string, unknown> }
  | { readonly kind: 'compacted'; readonly compacted: Record<string, unknown> }
  | { readonly kind: 'state' }
  | { readonly kind: 'other'; readonly type: string }

function bareMeta(record: Record<string, unknown>): Record<string, unknown> | undefined {
  if (record['type'] !== undefined) return undefined
  const wrapped = obj(record['session'])
  if (wrapped !== undefined && (str(wrapped['id']) !== undefined || str(wrapped['timestamp']) !== undefined))
    return wrapped
  if (str(record['id']) === undefined || str(record['timestamp']) === undefined) return undefined
  const metaKeys = ['instructions', 'git', 'cli_version', 'originator', 'cwd']
  return metaKeys.some((key) => key in record) ? record : undefined
}

/** Classifies a rollout record of any layout. */
export function classify(record: Record<string, unknown>): CodexRecord {
  const type = str(record['type'])
  const payload = obj(record['payload'])
  if (type !== undefined && payload !== undefined && ENVELOPE_TYPES.has(type)) {
    if (type === 'session_meta') return { kind: 'meta', meta: payload }
    if (type === 'response_item') return { kind: 'item', item: payload }
    if (type === 'event_msg') return { kind: 'event', event: payload }
    if (type === 'turn_context') return { kind: 'turn_context', context: payload }
    return { kind: 'compacted', compacted: payload }
  }
  if (typeof record['record_type'] === 'string') {
    return record['record_type'] === 'state'
      ? { kind: 'state' }
      : { kind: 'other', type: `record_type.${record['record_type']}` }
  }
  const meta = bareMeta(record)
  if (meta !== undefined) return { kind: 'meta', meta }
  if (type !== undefined && payload === undefined) return { kind: 'item', item: record }
  return { kind: 'other', type: type ?? 'unknown' }
}

function looksLikeBareItem(record: Record<string, unknown>): boolean {
  const type = str(record['type'])
  if (type === undefined || record['payload'] !== undefined || !RESPONSE_ITEM_TYPES.has(type)) return false
  if (type === 'message') {
    return (
      typeof record['role'] === 'string' &&
      Array.isArray(record['content']) &&
      record['content'].some((part) => /^(input|output)_(text|image)$/.test(str(obj(part)?.['type']) ?? ''))
    )
  }
  if (type === 'reasoning') return Array.isArray(record['summary'])
  return typeof record['call_id'] === 'string' || typeof record['id'] === 'string'
}

/**
 * Why a first record is a Codex CLI rollout, or undefined when it is not one: a
 * `{timestamp, type, payload}` line, a bare session meta `{id, timestamp, instructions, git}`
 * (mid-2025), a `{session, items}` document (early 2025), a `{"record_type": "state"}` line
 * or a bare `ResponseItem` (a rollout whose meta line is missing).
 */
export function codexDetection(record: Record<string, unknown>): string | undefined {
  const type = str(record['type'])
  if (type !== undefined && ENVELOPE_TYPES.has(type) && obj(record['payload']) !== undefined)
    return `a {timestamp, type, payload} line of type "${type}"`
  if (record['record_type'] === 'state') return 'a {"record_type": "state"} line (mid-2025 rollout layout)'
  if (type === undefined && obj(record['session']) !== undefined && bareMeta(record) !== undefined)
    return 'a {session, items} rollout document (early 2025 layout)'
  if (bareMeta(record) !== undefined)
    return 'a bare session meta {id, timestamp, instructions, git} (mid-2025 rollout layout)'
  if (looksLikeBareItem(record))
    return `a bare ResponseItem of type "${type}" (a rollout without its meta line)`
  return undefined
}

/** The text of a content array (or a string). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  const texts: string[] = []
  for (const item of arr(content)) {
    const part = obj(item)
    if (typeof part?.['text'] === 'string') texts.push(part['text'])
  }
  return texts.join('\n')
}

/** A user message's content: its text, or text and image parts when it carries `input_image`s. */
export function userContent(content: unknown): string | ContentPart[] {
  if (typeof content === 'string') return content
  const parts: ContentPart[] = []
  let images = 0
  for (const item of arr(content)) {
    const part = obj(item)
    if (typeof part?.['text'] === 'string') parts.push({ type: 'text', text: part['text'] })
    else if (part?.['type'] === 'input_image') {
      const url = str(part['image_url']) ?? str(obj(part['image_url'])?.['url'])
      if (url !== undefined && url !== '') {
        parts.push({ type: 'image_url', image_url: { url } })
        images += 1
      }
    }
  }
  if (images === 0) return textOf(content)
  return parts
}

/**
 * Prefixes of the user-role messages Codex injects as context (instructions, environment,
 * skills, shell commands, abort notices...): they are not turns (`is_user_turn_boundary` in
 * codex-rs `context_manager`), so a rollback does not count them.
 */
const CONTEXTUAL_PREFIXES = [
  '<environment_context>',
  '<user_instructions>',
  '# agents.md instructions for',
  '<skill>',
  '<skills_instructions>',
  '<user_shell_command>',
  '<turn_aborted>',
  '<subagent_notification>',
  '<hook_prompt',
]

/** True for a `ResponseItem` that starts a user turn (a user message that is not injected context). */
export function isTurnBoundary(item: Record<string, unknown>): boolean {
  if (item['type'] !== 'message' || item['role'] !== 'user') return false
  const parts = typeof item['content'] === 'string' ? [{ text: item['content'] }] : arr(item['content'])
  return !parts.some((part) => {
    const text = str(obj(part)?.['text'])
    if (text === undefined) return false
    const start = text.trimStart().slice(0, 40).toLowerCase()
    return CONTEXTUAL_PREFIXES.some((prefix) => start.startsWith(prefix))
  })
}

/** One `thread_rolled_back` and where the turns it dropped begin. */
export interface Rollback {
  /** Line of the `thread_rolled_back` record. */
  readonly line: number
  readonly numTurns: number
  /** Line of the first dropped record (the user message of the first dropped turn); undefined when nothing was dropped. */
  readonly cut: number | undefined
  /** Fewer turns were visible than `num_turns` (the cut is at the first one). */
  readonly clamped: boolean
  /** Turns Codex would count lie inside a compaction, which is applied whole here: not dropped. */
  readonly intoCompaction: boolean
}

/**
 * Replays the turn boundaries of the history the way codex-rs does when it resumes a rollout
 * (`rollout/replay.rs`: a `compacted` replaces the history, `thread_rolled_back {num_turns}`
 * truncates it before the n-th user turn from the end, or before the first when fewer
 * remain), keeping where each boundary still visible starts: its turn's `task_started` when
 * only injected context lies between them (Codex trims that context with the turn), else the
 * user message itself.
 */
class RollbackPlanner {
  readonly rollbacks: Rollback[] = []
  #boundaries: number[] = []
  /** Turn boundaries inside the last compaction's history, which cannot be cut here. */
  #compacted = 0
  /** Line of the `task_started` of a turn whose prompt has not come yet (the turn's records start there). */
  #turnStart: number | undefined

  add(line: number, record: CodexRecord): void {
    if (record.kind === 'item') {
      const item = record.item
      if (isTurnBoundary(item)) this.#boundaries.push(this.#turnStart ?? line)
      // Injected context (developer notes, environment, instructions) belongs to the turn it opens.
      const context = item['type'] === 'message' && (item['role'] === 'developer' || item['role'] === 'user')
      if (!context || isTurnBoundary(item)) this.#turnStart = undefined
    } else if (record.kind === 'event') {
      const type = record.event['type']
      if (type === 'task_started' || type === 'turn_started') this.#turnStart = line
      else if (type === 'task_complete' || type === 'turn_complete' || type === 'turn_aborted')
        this.#turnStart = undefined
      else if (type === 'thread_rolled_back') this.#rollback(line, count(record.event['num_turns']) ?? 0)
    } else if (record.kind === 'compacted') {
      this.#turnStart = undefined
      const replacement = arr(record.compacted['replacement_history']).map(obj)
      this.#compacted =
        replacement.length > 0
          ? replacement.filter((item) => item !== undefined && isTurnBoundary(item)).length
          : this.#boundaries.length + this.#compacted + 1
      this.#boundaries = []
    }
  }

  #rollback(line: number, numTurns: number): void {
    const visible = this.#boundaries.length
    if (numTurns === 0) {
      this.rollbacks.push({ line, numTurns, cut: undefined, clamped: false, intoCompaction: false })
      return
    }
    const index = Math.max(0, visible - numTurns)
    this.rollbacks.push({
      line,
      numTurns,
      cut: this.#boundaries[index],
      clamped: numTurns > visible,
      intoCompaction: numTurns > visible && this.#compacted > 0,
    })
    this.#boundaries.length = index
  }
}

/** The first pass over a rollout: header facts, whether turns are marked, and the rollbacks. */
export class CodexScanner implements FormatScanner {
  meta: Record<string, unknown> | undefined
  model: string | undefined
  layout: 'envelope' | 'bare' | undefined
  /** The source marks turns (`task_started`/`turn_started`); without them, user prompts start turns. */
  turnEvents = false
  #cwd: string | undefined
  readonly #planner = new RollbackPlanner()

  add(parsed: ParsedLine): void {
    if (!('value' in parsed)) return
    const record = classify(parsed.value)
    if (this.layout === undefined && record.kind !== 'other')
      this.layout = obj(parsed.value['payload']) !== undefined ? 'envelope' : 'bare'
    if (record.kind === 'meta') this.meta ??= record.meta
    else if (record.kind === 'turn_context') this.model ??= str(record.context['model'])
    else if (record.kind === 'event') {
      const type = record.event['type']
      if (type === 'task_started' || type === 'turn_started') this.turnEvents = true
    } else if (record.kind === 'item' && this.#cwd === undefined && record.item['role'] === 'user') {
      this.#cwd = /<cwd>([^<]+)<\/cwd>/.exec(textOf(record.item['content']))?.[1]?.trim()
    }
    this.#planner.add(parsed.line, record)
  }

  /** The rollbacks of the source, in file order. */
  get rollbacks(): readonly Rollback[] {
    return this.#planner.rollbacks
  }

  facts(): FormatFacts {
    const meta = this.meta ?? {}
    const git = obj(meta['git'])
    return {
      formatVersion: str(meta['cli_version']) ?? 'unknown',
      sourceId: str(meta['id']),
      cwd: str(meta['cwd']) ?? this.#cwd,
      parentSourceId: str(meta['forked_from_id']),
      metadata: {
        ...(this.model === undefined ? {} : { model: this.model }),
        ...(str(meta['originator']) === undefined ? {} : { originator: meta['originator'] }),
        ...(str(meta['model_provider']) === undefined ? {} : { modelProvider: meta['model_provider'] }),
        ...(str(git?.['branch']) === undefined ? {} : { gitBranch: git!['branch'] }),
        ...(this.layout === 'bare' ? { layout: 'bare-items' } : {}),
      },
    }
  }
}
