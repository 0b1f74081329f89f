import type { ContentPart, Usage } from '@agent-ledger/session-events'

import type { ImportedToolCall, SessionBuilder } from '../builder.ts'
import { keyPart } from '../ids.ts'
import { planTree } from '../tree.ts'
import type { TreeNode } from '../tree.ts'
import { arr, count, obj, str } from './types.ts'
import { LineFetcher } from '../lines.ts'
import type { ParsedLine } from '../lines.ts'
import type {
  FormatFacts,
  FormatInput,
  FormatModule,
  FormatScanner,
  FormatSession,
  ForkPass,
} from './types.ts'

/** True when a first record is a pi-mono session header (`{type: "session", id, timestamp, cwd}`). */
export function looksLikePi(record: Record<string, unknown>): boolean {
  return record['type'] === 'session' && typeof record['id'] === 'string' && typeof record['cwd'] === 'string'
}

/** Entries that never reach the model: they may ride along a path they are not on. */
const CONTEXT_FREE: ReadonlySet<string> = new Set([
  'label',
  'session_info',
  'custom',
  'model_change',
  'thinking_level_change',
])

function partsOf(content: unknown, onImage: () => void): { text: string; parts: ContentPart[] } {
  if (typeof content === 'string') return { text: content, parts: [{ type: 'text', text: content }] }
  const parts: ContentPart[] = []
  const texts: string[] = []
  for (const raw of arr(content)) {
    const block = obj(raw) ?? {}
    if (block['type'] === 'text' && typeof block['text'] === 'string') {
      parts.push({ type: 'text', text: block['text'] })
      texts.push(block['text'])
    } else if (block['type'] === 'image' && typeof block['data'] === 'string') {
      const mime = str(block['mimeType']) ?? 'image/png'
      parts.push({ type: 'image_url', image_url: { url: `data:${mime};base64,${block['data']}` } })
      onImage()
    }
  }
  return { text: texts.join('\n'), parts }
}

function usageOf(raw: unknown): Usage | undefined {
  const usage = obj(raw)
  if (usage === undefined) return undefined
  const input = count(usage['input'])
  const output = count(usage['output'])
  if (input === undefined && output === undefined) return undefined
  const cacheRead = count(usage['cacheRead']) ?? 0
  const prompt = (input ?? 0) + cacheRead + (count(usage['cacheWrite']) ?? 0)
  return {
    prompt_tokens: prompt,
    completion_tokens: output ?? 0,
    total_tokens: count(usage['totalTokens']) ?? prompt + (output ?? 0),
    cached_tokens: cacheRead,
  }
}

/**
 * The text pi gives the model for a `bashExecution` message (`bashExecutionToText` in
 * `packages/coding-agent/src/core/messages.ts`): the command, its output in a fence (or that
 * there was none), then whether it was cancelled or failed, and where a truncated output is.
 */
function bashExecutionText(message: Record<string, unknown>): string {
  const output = str(message['output']) ?? ''
  const lines = [`Ran \`${str(message['command']) ?? ''}\``]
  lines.push(output === '' ? '(no output)' : `\`\`\`\n${output}\n\`\`\``)
  const exitCode = message['exitCode']
  if (message['cancelled'] === true) lines.push('\n\n(command cancelled)')
  else if (typeof exitCode === 'number' && exitCode !== 0)
    lines.push(`\n\nCommand exited with code ${exitCode}`)
  const fullOutputPath = str(message['fullOutputPath'])
  if (message['truncated'] === true && fullOutputPath !== undefined)
    lines.push(`\n\n[Output truncated. Full output: ${fullOutputPath}]`)
  return `${lines[0]!}\n${lines.slice(1).join('')}`
}

class PiMapper {
  readonly #b: SessionBuilder
  /** Seq of the first event each entry produced, for `firstKeptEntryId`. */
  readonly #firstSeq = new Map<string, number>()

  /** The entry as the file holds it (kept verbatim); `handle` maps its migrated copy. */
  #source: Record<string, unknown> = {}

  constructor(builder: SessionBuilder) {
    this.#b = builder
  }

  /**
   * Maps one entry: `value` is the entry after pi's migrations (what is derived from it),
   * `source` the entry as read, the one kept verbatim.
   */
  handle(
    node: { readonly id: string; readonly line: number },
    value: Record<string, unknown>,
    source: Record<string, unknown> = value,
  ): void {
    this.#source = source
    const b = this.#b
    b.line = node.line
    b.beginRecord(value['timestamp'])
    this.#firstSeq.set(node.id, b.nextSeq)
    const type = str(value['type']) ?? 'unknown'
    if (type === 'message') return this.#message(value)
    if (type === 'custom_message') {
      const { parts, text } = partsOf(value['content'], () => b.lossy('pi.image'))
      b.record(this.#source, 'mapped')
      if (value['details'] !== undefined) b.lossy('pi.details')
      b.lossy('pi.display')
      b.user(parts.length === 1 ? text : parts, { prompt: false })
      return
    }
    if (type === 'branch_summary') {
      b.record(this.#source, 'mapped')
      const summary = str(value['summary']) ?? ''
      if (summary !== '') b.user(summary, { prompt: false })
      return
    }
    if (type === 'compaction') {
      b.record(this.#source, 'mapped')
      const summary = str(value['summary']) ?? ''
      const kept = str(value['firstKeptEntryId'])
      if (value['tokensBefore'] !== undefined) b.lossy('pi.compaction.tokensBefore')
      b.compact({
        summary,
        content: summary,
        keepFromSeq: kept === undefined ? undefined : this.#firstSeq.get(kept),
        reason: 'pi compaction',
      })
      return
    }
    b.record(this.#source, `log-only:pi.${type}`)
  }

  #message(value: Record<string, unknown>): void {
    const b = this.#b
    const message = obj(value['message']) ?? {}
    const role = str(message['role'])
    if (role === 'user') {
      const { parts, text } = partsOf(message['content'], () => undefined)
      b.beforePrompt()
      b.record(this.#source, 'mapped')
      b.user(parts.length === 1 && parts[0]!.type === 'text' ? text : parts, { prompt: true })
      return
    }
    if (role === 'assistant') {
      const stop = message['stopReason']
      if (stop === 'error' || stop === 'aborted') {
        // pi's agent loop stops at such a message (its tool calls never run) and pi leaves it
        // out of every request it replays (`transformMessages` in packages/ai): log-only, and
        // the turn ends so.
        b.record(this.#source, `log-only:pi.assistant-${stop}`)
        b.endTurn(stop)
        return
      }
      const text: string[] = []
      const reasoning: string[] = []
      const toolCalls: ImportedToolCall[] = []
      for (const raw of arr(message['content'])) {
        const block = obj(raw) ?? {}
        if (block['type'] === 'text') {
          text.push(str(block['text']) ?? '')
          if (block['textSignature'] !== undefined) b.lossy('pi.signature')
        } else if (block['type'] === 'thinking') {
          reasoning.push(str(block['thinking']) ?? '')
          if (block['thinkingSignature'] !== undefined) b.lossy('pi.signature')
        } else if (block['type'] === 'toolCall') {
          const id = str(block['id'])
          const name = str(block['name'])
          if (id === undefined || id === '' || name === undefined || name === '')
            b.lossy('pi.toolCall-without-id')
          else toolCalls.push({ id, name, arguments: JSON.stringify(block['arguments'] ?? {}) })
        } else b.lossy(`pi.block.${str(block['type']) ?? 'unknown'}`)
      }
      if (message['provider'] !== undefined) b.lossy('pi.provider')
      if (typeof message['errorMessage'] === 'string') b.lossy('pi.errorMessage')
      if (obj(message['usage'])?.['cost'] !== undefined) b.lossy('pi.cost')
      b.record(this.#source, 'mapped')
      b.assistant({ text, reasoning, toolCalls, usage: usageOf(message['usage']) })
      if (stop === 'length') b.endTurn('max-tokens')
      return
    }
    if (role === 'toolResult') {
      const { text } = partsOf(message['content'], () => b.lossy('pi.tool-result-image'))
      if (message['details'] !== undefined) b.lossy('pi.details')
      b.record(this.#source, 'mapped')
      b.toolResult(str(message['toolCallId']) ?? '', text, { isError: message['isError'] === true })
      return
    }
    if (role === 'custom' || role === 'hookMessage') {
      const { parts, text } = partsOf(message['content'], () => b.lossy('pi.image'))
      b.record(this.#source, 'mapped')
      b.user(parts.length === 1 ? text : parts, { prompt: false })
      return
    }
    if (role === 'bashExecution') {
      // A command the user ran (`!cmd`): pi shows the model its text as a user message,
      // unless it was run with `!!` (excluded from the context).
      if (message['excludeFromContext'] === true) {
        b.record(this.#source, 'log-only:pi.bashExecution-excluded')
        return
      }
      b.record(this.#source, 'mapped')
      b.user(bashExecutionText(message), { prompt: false })
      return
    }
    b.lossy(`pi.role.${role ?? 'unknown'}`)
    b.record(this.#source, `log-only:pi.role.${role ?? 'unknown'}`)
  }

  finish(): void {
    this.#b.finish('complete')
  }
}

/** What the first pass keeps of an entry: the tree index, never the content. */
interface PiNode {
  /** May ride along a path it is not on (labels, model changes...). */
  readonly attachable: boolean
}

/**
 * The first pass: the header, the tree index (raw id, parent id, line and a flag per entry),
 * the lines that were not JSON, and the model. Memory grows with the number of entries, not
 * with their content.
 */
class PiScanner implements FormatScanner {
  header: Record<string, unknown> | undefined
  headerLine = 1
  readonly entries: {
    readonly line: number
    readonly id: string | undefined
    readonly parent: string | null
    readonly item: PiNode
  }[] = []
  readonly malformed: { readonly line: number; readonly text: string }[] = []
  #model: string | undefined

  add(parsed: ParsedLine): void {
    if ('malformed' in parsed) {
      this.malformed.push({ line: parsed.line, text: parsed.malformed })
      return
    }
    const value = parsed.value
    if (this.header === undefined && value['type'] === 'session') {
      this.header = value
      this.headerLine = parsed.line
      return
    }
    const message = obj(value['message'])
    if (message?.['role'] === 'assistant') this.#model ??= str(message['model'])
    this.entries.push({
      line: parsed.line,
      id: str(value['id']),
      parent: value['parentId'] === null ? null : (str(value['parentId']) ?? null),
      item: { attachable: CONTEXT_FREE.has(str(value['type']) ?? '') },
    })
  }

  facts(): FormatFacts {
    const header = this.header
    const model = this.#model
    const parentFile = str(header?.['parentSession']) ?? str(header?.['branchedFrom'])
    return {
      formatVersion: String(count(header?.['version']) ?? 1),
      sourceId: str(header?.['id']),
      cwd: str(header?.['cwd']),
      metadata: {
        ...(model === undefined ? {} : { model }),
        // pi records the parent's file path, not an id (v1: `branchedFrom`): kept as data.
        ...(parentFile === undefined ? {} : { parentSessionFile: parentFile }),
      },
    }
  }
}

/** One step of a session's build: an entry (its index node), or a line that was not JSON. */
type PiStep = TreeNode<PiNode> | { readonly line: number; readonly malformed: string }

async function mapPi(input: FormatInput, scanner: PiScanner): Promise<FormatSession[]> {
  const { header, entries, malformed } = scanner
  const version = count(header?.['version']) ?? 1
  const nodes: TreeNode<PiNode>[] = []
  let previous: string | null = null
  for (const entry of entries) {
    let id = entry.id
    let parent = entry.parent
    if (version < 2 || id === undefined) {
      id = `v1-${entry.line}`
      parent = previous
    }
    previous = id
    nodes.push({ id, parent, line: entry.line, item: entry.item })
  }
  /** v1: the compaction's kept entry, by its index among the entries (the header counts as 0). */
  const migrate = (value: Record<string, unknown>): Record<string, unknown> => {
    if (version >= 2 || value['type'] !== 'compaction' || typeof value['firstKeptEntryIndex'] !== 'number')
      return value
    const target = entries[value['firstKeptEntryIndex'] - 1]
    const migrated: Record<string, unknown> = { ...value }
    if (target !== undefined) migrated['firstKeptEntryId'] = `v1-${target.line}`
    return migrated
  }
  const plan = planTree(nodes, (node) => node.item.attachable)
  const build = async (
    builder: SessionBuilder,
    steps: readonly PiStep[],
    /** `session`: pumped as it is built; `pass`: a fork's pass (see {@link FormatInput.fork}). */
    options: { readonly session?: FormatSession; readonly pass?: ForkPass } = {},
  ): Promise<boolean> => {
    const { session, pass } = options
    const mapper = new PiMapper(builder)
    if (header !== undefined) {
      builder.line = scanner.headerLine
      builder.setTime(header['timestamp'])
      builder.record(header, 'log-only:pi.session-header')
    }
    const fetcher = new LineFetcher(
      input.replay(),
      steps.filter((step) => !('malformed' in step)).map((step) => step.line),
    )
    try {
      for (const step of steps) {
        if ('malformed' in step) {
          builder.line = step.line
          builder.malformed(step.malformed)
        } else {
          const entry = await fetcher.get(step.line)
          mapper.handle(step, migrate(entry), entry)
        }
        if (session !== undefined) await input.pump(session)
        if (pass !== undefined && !(await pass.step(builder))) return false
      }
    } finally {
      await fetcher.close()
    }
    if (!input.live) mapper.finish()
    return true
  }
  const steps: PiStep[] = []
  let next = 0
  for (const node of plan.main) {
    while (next < malformed.length && malformed[next]!.line < node.line) {
      const bad = malformed[next++]!
      steps.push({ line: bad.line, malformed: bad.text })
    }
    steps.push(node)
  }
  for (; next < malformed.length; next += 1)
    steps.push({ line: malformed[next]!.line, malformed: malformed[next]!.text })
  const builder = input.newBuilder(undefined, { trackDigests: plan.branches.length > 0 })
  const main: FormatSession = { key: '', role: 'main', builder }
  await build(builder, steps, { session: main })
  if (input.live) return [main]
  const sessions: FormatSession[] = [main]
  const counted = new Set(plan.branches.length > 0 ? plan.main.map((node) => node.line) : [])
  await input.close(main)
  for (const branch of plan.branches) {
    const session = {
      key: `fork-${keyPart(branch.branchId)}`,
      role: 'fork' as const,
      forkOf: '',
      metadata: { branchEntryId: branch.branchId, leafEntryId: branch.leafId },
    }
    // Handed over in batches as it is built (seeded on the way), never held whole.
    sessions.push(
      await input.fork(session, async (pass) => {
        const forkBuilder = pass.newBuilder((line) => !counted.has(line))
        const complete = await build(forkBuilder, branch.sequence, { pass })
        if (complete && !pass.probe) for (const node of branch.sequence) counted.add(node.line)
        return forkBuilder
      }),
    )
  }
  return sessions
}

/**
 * pi-mono sessions (`~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl`), versions 1 to 3.
 * pi's own migrations are applied on the fly: v1 entries (no ids) get ids in file order and
 * chain to the previous entry, `firstKeptEntryIndex` becomes the entry at that index; v2's
 * `hookMessage` role is read as v3's `custom`. The first pass keeps the tree index; the second
 * reads the entries again in path order (each fork reads the source once more).
 */
export const piFormat: FormatModule = {
  scanner: () => new PiScanner(),
  map: (input, scanner) => mapPi(input, scanner as PiScanner),
}
