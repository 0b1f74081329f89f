import type { ContentPart, Usage } from '@agent-ledger/session-events'

import { USER_REJECTED } from '../builder.ts'
import { keyPart } from '../ids.ts'
import type { ImportedToolCall, SessionBuilder } from '../builder.ts'
import { sortedHas } from '../lines.ts'
import { planTree } from '../tree.ts'
import type { TreeNode, TreePlan } from '../tree.ts'
import { arr, count, obj, str } from './types.ts'
import type { FormatInput, FormatModule, FormatSession, ForkPass, LiveContinuation } from './types.ts'
import {
  ClaudeScanner,
  COMMAND_ECHOES,
  chainedInFileOrder,
  commandExpansion,
  commandOrMeta,
  queuedPrompt,
  sidechainGroups,
} from './claude-code-scan.ts'
import type { ClaudeNode } from './claude-code-scan.ts'

export { looksLikeClaudeCode } from './claude-code-scan.ts'

interface ClaudeRecord {
  readonly line: number
  readonly value: Record<string, unknown>
}

const INTERRUPT_PREFIX = '[Request interrupted by user'
const REJECTED_PREFIX = "The user doesn't want to proceed with this tool use"

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
class ClaudeMapper {
  readonly #builder: SessionBuilder
  #assistant: PendingAssistant | null = null
  #results: PendingResult[] = []
  #compactPending = false
  #line = 0
  /** The last user or assistant record was a slash command's echo (`<command-message>`...). */
  #afterCommand = false

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
    const afterCommand = this.#afterCommand
    if (type === 'user' || type === 'assistant') this.#afterCommand = false
    if (type === 'assistant') return this.#assistantRecord(value)
    if (type === 'user') return this.#userRecord(record, afterCommand)
    const queued = queuedPrompt(value)
    if (queued !== undefined) return this.#queuedPrompt(value, queued)
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
    const messageId = str(message?.['id']) ?? `line-${this.#line}`
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

  #userRecord(record: ClaudeRecord, afterCommand: boolean): void {
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
    if (commandOrMeta(value) && !(afterCommand && commandExpansion(value, firstText))) {
      this.#afterCommand =
        value['isMeta'] !== true && COMMAND_ECHOES.some((echo) => firstText.startsWith(echo))
      b.record(value, 'log-only:claude.local-command')
      return
    }
    this.#flush()
    const userContent = this.#userContent(blocks)
    if (value['todos'] !== undefined) b.lossy('claude.todos')
    if (userContent === undefined) {
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

  /** Text and image blocks as a user message's content (one text as a string); `undefined` when none. */
  #userContent(blocks: readonly unknown[]): string | ContentPart[] | undefined {
    const b = this.#builder
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
    if (parts.length === 0) return undefined
    const single = parts.length === 1 ? parts[0] : undefined
    return single?.type === 'text' ? single.text : parts
  }

  /** A prompt the user queued while the agent worked: a user message mid-turn (it starts no turn). */
  #queuedPrompt(value: Record<string, unknown>, blocks: readonly unknown[]): void {
    const b = this.#builder
    this.#flush()
    const content = this.#userContent(blocks)
    if (content === undefined) {
      b.record(value, 'log-only:claude.attachment')
      return
    }
    b.record(value, 'mapped')
    b.user(content, { prompt: false })
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

/** One step of a session's build: a tree record (its index node), or a record riding along in file order. */
type Step =
  | TreeNode<ClaudeNode>
  | {
      readonly line: number
      readonly kind: 'loose' | 'duplicate' | 'malformed'
      readonly text?: string
      readonly id?: string
    }

/**
 * Runs `steps` in order with their records, read again from the source: records met before
 * their step are held until it comes (a side segment placed after its branch point), so
 * memory holds only records read ahead, never the whole source.
 */
function kindOf(step: Step): 'node' | 'loose' | 'duplicate' | 'malformed' {
  return 'kind' in step ? step.kind : 'node'
}

async function walk(
  input: FormatInput,
  steps: readonly Step[],
  run: (step: Step, record: Record<string, unknown> | undefined) => Promise<boolean>,
): Promise<boolean> {
  // The lines to read, sorted (4 bytes each): a record read ahead is held only if a step wants it.
  const wanted = Int32Array.from(
    steps.filter((step) => kindOf(step) !== 'malformed').map((step) => step.line),
  ).sort()
  const isWanted = (line: number): boolean => sortedHas(wanted, line)
  const held = new Map<number, Record<string, unknown>>()
  const records = input.replay()[Symbol.asyncIterator]()
  try {
    for (const step of steps) {
      if (kindOf(step) === 'malformed') {
        if (!(await run(step, undefined))) return false
        continue
      }
      while (!held.has(step.line)) {
        const next = await records.next()
        if (next.done === true) throw new Error(`line ${step.line} was not read again`)
        if ('value' in next.value && isWanted(next.value.line)) held.set(next.value.line, next.value.value)
      }
      const record = held.get(step.line)!
      held.delete(step.line)
      if (!(await run(step, record))) return false
    }
    return true
  } finally {
    await records.return?.()
  }
}

async function mapClaudeCode(input: FormatInput, scanner: ClaudeScanner): Promise<FormatSession[]> {
  const flat = !scanner.linked && scanner.nodes.length > 1
  if (scanner.onlySidechain && !flat) scanner.continueSidechains()
  const nodes = flat ? chainedInFileOrder(scanner.nodes) : scanner.nodes
  const onlySidechain = scanner.onlySidechain
  const split = (sidechain: boolean): TreeNode<ClaudeNode>[] => {
    const picked = nodes.filter((node) => node.item.sidechain === sidechain)
    return flat ? chainedInFileOrder(picked) : picked
  }
  const mainNodes = onlySidechain ? nodes : split(false)
  const continued = flat ? [] : onlySidechain ? scanner.sideContinued : scanner.continued
  const sideNodes = onlySidechain ? [] : split(true)
  const rules = {
    attachable: (node: TreeNode<ClaudeNode>): boolean => node.item.attachable,
    messageOf: (node: TreeNode<ClaudeNode>): string | undefined => node.item.messageId,
  }
  const mainPlan = planTree(mainNodes, rules)
  const sidePlans = sidechainGroups(sideNodes).map((group) => planTree(group, rules))
  // Records without a uuid, repeated uuids and lines that were not JSON ride in file order
  // along every path (so a fork still shares its prefix with the main session); they are
  // counted once.
  const extras: Step[] = [
    ...scanner.loose.map((line): Step => ({ line, kind: 'loose' })),
    ...scanner.duplicates.map((duplicate): Step => ({
      line: duplicate.line,
      kind: 'duplicate',
      id: duplicate.id,
    })),
    ...scanner.malformed.map((bad): Step => ({ line: bad.line, kind: 'malformed', text: bad.text })),
  ].sort((left, right) => left.line - right.line)
  const more = mainPlan.branches.length > 0 || sidePlans.length > 0
  const counted = new Set<number>()
  let mainMapper: ClaudeMapper | undefined
  const build = async (
    sequence: readonly TreeNode<ClaudeNode>[],
    options: {
      readonly withExtras: boolean
      readonly session?: Omit<FormatSession, 'builder'>
      readonly trackDigests: boolean
      /** A fork's pass (see {@link FormatInput.fork}): its builder, and when to stop. */
      readonly pass?: ForkPass
    },
  ): Promise<SessionBuilder> => {
    const { pass } = options
    const counts = (line: number): boolean => !counted.has(line)
    const builder =
      pass === undefined
        ? input.newBuilder(counts, { trackDigests: options.trackDigests })
        : pass.newBuilder(counts)
    const pumped = options.session === undefined ? undefined : { ...options.session, builder }
    const mapper = new ClaudeMapper(builder)
    if (options.session?.role === 'main') mainMapper = mapper
    const steps: Step[] = []
    let next = 0
    for (const node of sequence) {
      while (options.withExtras && next < extras.length && extras[next]!.line < node.line)
        steps.push(extras[next++]!)
      steps.push(node)
    }
    while (options.withExtras && next < extras.length) steps.push(extras[next++]!)
    const complete = await walk(input, steps, async (step, record) => {
      if (!('kind' in step)) mapper.handle({ line: step.line, value: record! })
      else if (step.kind === 'malformed') {
        builder.line = step.line
        builder.malformed(step.text ?? '')
      } else if (step.kind === 'duplicate') {
        builder.line = step.line
        builder.beginRecord(record!['timestamp'])
        builder.diagnostic(
          'DUPLICATE_UUID',
          `record uuid ${String(step.id)} appears again; kept verbatim only`,
        )
        builder.record(record, 'log-only:claude.duplicate-uuid')
      } else mapper.handle({ line: step.line, value: record! })
      if (pumped !== undefined) await input.pump(pumped)
      return pass === undefined || (await pass.step(builder))
    })
    if (input.live || !complete) return builder
    mapper.finish()
    if (more && pass?.probe !== true) for (const step of steps) counted.add(step.line)
    return builder
  }
  const sessions: FormatSession[] = []
  const mainBuilder = await build(mainPlan.main, {
    withExtras: true,
    session: { key: '', role: 'main' },
    trackDigests: mainPlan.branches.length > 0,
  })
  const mainSession: FormatSession = { key: '', role: 'main', builder: mainBuilder }
  sessions.push(mainSession)
  if (input.live) {
    if (!flat && !onlySidechain && mainMapper !== undefined)
      input.continueLive(mainSession, liveContinuation(mainNodes, mainPlan.main, mainMapper))
    return sessions
  }
  if (!scanner.conversation) {
    mainBuilder.line = 0
    mainBuilder.diagnostic(
      'NO_CONVERSATION',
      `no user, assistant or system record: the file holds only ${scanner.loose.length} summary, snapshot or metadata record(s), kept verbatim in an empty session`,
    )
  }
  if (flat) {
    mainBuilder.line = 0
    mainBuilder.diagnostic(
      'NO_PARENT_LINKS',
      'no record names a parentUuid; the records are read as one path in file order',
    )
  }
  if (scanner.resumedFrom.length > 0) {
    mainBuilder.line = 0
    mainBuilder.diagnostic(
      'RESUMED_SESSION',
      `the file holds records of session ${scanner.resumedFrom.join(', ')} before its own (${scanner.sessionId ?? 'unknown'}): a resumed session; imported as ${scanner.sessionId ?? 'unknown'}`,
    )
  }
  for (const relinked of scanner.relinked) {
    mainBuilder.line = relinked.line
    mainBuilder.diagnostic(
      'COMPACT_PARENT_MISSING',
      `compact_boundary ${relinked.id}: its logicalParentUuid is not in the file; continues from ${relinked.parent}, the record before it`,
    )
  }
  for (const record of continued) {
    mainBuilder.line = record.line
    if (record.named === null)
      mainBuilder.diagnostic(
        'SECOND_ROOT',
        `record ${record.id} names no parentUuid after the first record; continues from ${record.parent}, the record before it`,
      )
    else
      mainBuilder.diagnostic(
        'BROKEN_PARENT',
        `record ${record.id}: its parentUuid ${record.named} is not in the file; continues from ${record.parent}, the record before it`,
      )
  }
  const addBranches = async (
    plan: TreePlan<ClaudeNode>,
    forkOf: string,
    withExtras: boolean,
  ): Promise<void> => {
    for (const branch of plan.branches) {
      const session = {
        key: `${forkOf === '' ? '' : `${forkOf}-`}fork-${keyPart(branch.branchId)}`,
        role: 'fork' as const,
        forkOf,
        metadata: { branchUuid: branch.branchId, leafUuid: branch.leafId },
      }
      // Handed over in batches as it is built (seeded on the way), never held whole.
      sessions.push(
        await input.fork(session, (pass) =>
          build(branch.sequence, { withExtras, trackDigests: false, pass }),
        ),
      )
    }
  }
  await input.close(mainSession)
  await addBranches(mainPlan, '', true)
  const keys = new Set<string>()
  for (const sidePlan of sidePlans) {
    const first = sidePlan.main[0]
    const agentId = first?.item.agentId ?? keyPart(first?.id ?? 'sidechain')
    let key = `agent-${keyPart(agentId)}`
    for (let n = 2; keys.has(key); n += 1) key = `agent-${keyPart(agentId)}-${n}`
    keys.add(key)
    const session = { key, role: 'sidechain' as const, metadata: { agentId } }
    const builder = await build(sidePlan.main, {
      withExtras: false,
      session,
      trackDigests: sidePlan.branches.length > 0,
    })
    const sidechain = { ...session, builder }
    sessions.push(sidechain)
    await input.close(sidechain)
    await addBranches(sidePlan, key, false)
  }
  return sessions
}

/**
 * How a live import's main session goes on with appended records (`import --follow`): a record
 * is mapped only where a live import of the grown source would put it, at the end of the main
 * path: a record without a uuid (file order), a sidechain record (not in the main session),
 * or a new record whose parent is the main path's leaf and whose message has no record off
 * the path (that record would then ride along). Anything else (a branch switch, a repeated
 * uuid, a compaction boundary whose parent is elsewhere) asks for a re-import.
 */
function liveContinuation(
  nodes: readonly TreeNode<ClaudeNode>[],
  mainSequence: readonly TreeNode<ClaudeNode>[],
  mapper: ClaudeMapper,
): LiveContinuation {
  const ids = new Set(nodes.map((node) => node.id))
  const parents = new Set(nodes.map((node) => node.parent))
  let leaf = nodes.findLast((node) => !parents.has(node.id))?.id ?? null
  parents.clear()
  const onMain = new Set(mainSequence.map((node) => node.id))
  const offPathMessages = new Set<string>()
  for (const node of nodes)
    if (!onMain.has(node.id) && node.item.messageId !== undefined) offPathMessages.add(node.item.messageId)
  onMain.clear()
  return {
    add: ({ line, value }) => {
      const id = str(value['uuid'])
      if (id === undefined) {
        mapper.handle({ line, value })
        return undefined
      }
      if (ids.has(id)) return `uuid ${id} appears again`
      ids.add(id)
      if (value['isSidechain'] === true) return undefined
      const parent = str(value['parentUuid']) ?? str(value['logicalParentUuid']) ?? null
      if (parent === null || parent !== leaf)
        return `record ${id} hangs under ${parent ?? 'no parent'}, not under the main path's leaf ${leaf ?? '(none)'} (a branch switch)`
      const message = value['type'] === 'assistant' ? str(obj(value['message'])?.['id']) : undefined
      if (message !== undefined && offPathMessages.has(message))
        return `record ${id} is part of message ${message}, which has records off the main path`
      mapper.handle({ line, value })
      leaf = id
      return undefined
    },
  }
}

/**
 * Claude Code transcripts (`~/.claude/projects/<cwd>/<session>.jsonl`, or a sub-agent file
 * `<session>/subagents/agent-*.jsonl`). The first pass indexes the `parentUuid` tree (the main
 * path is known only at the last leaf); the second reads the records again in path order.
 */
export const claudeCodeFormat: FormatModule = {
  scanner: (context) => new ClaudeScanner(context.sourceName),
  map: (input, scanner) => mapClaudeCode(input, scanner as ClaudeScanner),
}
