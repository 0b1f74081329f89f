import { arr, obj, str } from './types.ts'
import { keyPart } from '../ids.ts'
import type { TreeNode } from '../tree.ts'
import type { ParsedLine } from '../lines.ts'
import type { FormatFacts, FormatScanner } from './types.ts'

// The first pass over a Claude Code transcript (detection, the tree index, header facts) and
// the tree fix-ups the mapping applies before planning; the mapping is in claude-code.ts.

/** The `type` values of Claude Code conversation records (for detection). */
const CLAUDE_RECORD_TYPES: ReadonlySet<string> = new Set([
  'user',
  'assistant',
  'system',
  'progress',
  'attachment',
])

/**
 * Session metadata records a 2.x transcript may start with (titles, modes, links): each
 * carries the `sessionId` and nothing else that identifies the format.
 */
const CLAUDE_SESSION_RECORD_TYPES: ReadonlySet<string> = new Set([
  'queue-operation',
  'custom-title',
  'ai-title',
  'last-prompt',
  'permission-mode',
  'agent-name',
  'mode',
  'tag',
  'worktree-state',
  'pr-link',
])

/** A message whose role is the record's type, or that has content and no role (trimmed copies). */
function roleFits(message: Record<string, unknown> | undefined, type: string): boolean {
  if (message === undefined) return false
  const role = message['role']
  return role === type || (role === undefined && 'content' in message)
}

/**
 * True when a first record looks like a Claude Code transcript line: a conversation record
 * with its tree fields (`uuid`, `parentUuid`, `sessionId`), or a `user`/`assistant` record
 * whose `message.role` is its type and which carries one of them (or `cwd`) as trimmed
 * copies do, a `summary`, a file-history snapshot, or a session metadata record.
 */
export function looksLikeClaudeCode(record: Record<string, unknown>): boolean {
  const type = str(record['type'])
  if (type === undefined) return false
  if (type === 'file-history-snapshot') return 'snapshot' in record || 'messageId' in record
  if (type === 'summary')
    return typeof record['leafUuid'] === 'string' || typeof record['summary'] === 'string'
  if (CLAUDE_SESSION_RECORD_TYPES.has(type)) return typeof record['sessionId'] === 'string'
  if (!CLAUDE_RECORD_TYPES.has(type)) return false
  if (typeof record['uuid'] === 'string' && 'parentUuid' in record && typeof record['sessionId'] === 'string')
    return true
  return (
    (type === 'user' || type === 'assistant') &&
    roleFits(obj(record['message']), type) &&
    (typeof record['uuid'] === 'string' ||
      typeof record['sessionId'] === 'string' ||
      'parentUuid' in record ||
      typeof record['cwd'] === 'string')
  )
}

/** Prefixes of the user records a slash command writes (echoes, output, caveats): log-only. */
const COMMAND_PREFIXES = [
  '<command-name>',
  '<command-message>',
  '<local-command-stdout>',
  '<local-command-caveat>',
]

/** What the first pass keeps of a record with a `uuid`: its place in the tree, never its content. */
export interface ClaudeNode {
  readonly attachable: boolean
  readonly sidechain: boolean
  readonly agentId: string | undefined
  /** `message.id` of an assistant record: the blocks of one response are one message. */
  readonly messageId: string | undefined
}

/** The first text of a user record's content (a string, or its first `text` block). */
function firstTextOf(content: unknown): string {
  if (typeof content === 'string') return content
  const first = arr(content)
    .map(obj)
    .find((block) => block?.['type'] === 'text')
  return str(first?.['text']) ?? ''
}

/** The echo of a slash command that runs a prompt (the prompt follows it as a meta record). */
export const COMMAND_ECHOES = ['<command-message>', '<command-name>']

/**
 * The prompt a slash command expands to (`/init`, a custom command): a meta record of plain
 * text right after the command's echo. The model reads it as the user's prompt, so it is one
 * (other meta records, `<system-reminder>` and caveats, are notes and stay log-only).
 */
export function commandExpansion(value: Record<string, unknown>, text: string): boolean {
  return value['isMeta'] === true && text.trim() !== '' && !text.trimStart().startsWith('<')
}

/** A user record the mapping keeps log-only: a meta note, or a slash command's echo. */
export function commandOrMeta(value: Record<string, unknown>): boolean {
  if (value['isMeta'] === true) return true
  const text = firstTextOf(obj(value['message'])?.['content'])
  return COMMAND_PREFIXES.some((prefix) => text.startsWith(prefix))
}

/**
 * Side records that may ride along a path they are not on: tool results, progress, system
 * notes, meta notes and command echoes (log-only, so a branch of only those is no fork).
 */
/**
 * The blocks of a prompt the user queued while the agent worked (2.1.x: an `attachment` of
 * type `queued_command`), which the model reads mid-turn; `undefined` for other attachments.
 */
export function queuedPrompt(value: Record<string, unknown>): readonly unknown[] | undefined {
  if (value['type'] !== 'attachment') return undefined
  const attachment = obj(value['attachment'])
  if (attachment?.['type'] !== 'queued_command' || attachment['isMeta'] === true) return undefined
  const prompt = attachment['prompt']
  if (typeof prompt === 'string') return prompt.trim() === '' ? undefined : [{ type: 'text', text: prompt }]
  const blocks = arr(prompt)
  return blocks.length === 0 ? undefined : blocks
}

function attachable(value: Record<string, unknown>): boolean {
  const type = value['type']
  if (type === 'assistant') return false
  if (type === 'system') return value['subtype'] !== 'compact_boundary'
  if (type === 'attachment') return queuedPrompt(value) === undefined
  if (type !== 'user') return true
  if (value['isCompactSummary'] === true) return false
  if (commandOrMeta(value)) return true
  const content = obj(value['message'])?.['content']
  if (typeof content === 'string') return false
  const blocks = arr(content)
  return blocks.length > 0 && blocks.every((block) => obj(block)?.['type'] === 'tool_result')
}

/**
 * The first pass: the tree index (ids, parent ids, lines and three flags per record), the
 * lines of records outside the tree, and the header facts. Memory grows with the number of
 * records, not with their content.
 */
export class ClaudeScanner implements FormatScanner {
  readonly nodes: TreeNode<ClaudeNode>[] = []
  /** Records without a uuid (snapshots, queue operations): file order only. */
  readonly loose: number[] = []
  /** Records repeating a uuid (a second /compact re-appending records). */
  readonly duplicates: { readonly line: number; readonly id: string }[] = []
  readonly malformed: { readonly line: number; readonly text: string }[] = []
  /** True once a record names a parent (`parentUuid` or `logicalParentUuid`). */
  linked = false
  /** True once a user, assistant or system record is seen (with or without a `uuid`). */
  conversation = false

  constructor(sourceName: string | undefined) {
    this.#sourceName = sourceName
  }
  /** Compaction boundaries whose logical parent is not in the file, linked to the record before them. */
  readonly relinked: { readonly line: number; readonly id: string; readonly parent: string }[] = []
  /**
   * One conversation per file: a record after the first (outside sidechains) that names no
   * parent, or a parent not read before it (Claude Code writes broken chains:
   * anthropics/claude-code#22526), continues the record before it in file order, instead of
   * starting a tree of its own whose other leaves would become forks and leave the earlier
   * conversation out of the session.
   */
  readonly continued: Continued[] = []
  /** The same for sidechain records, applied only to a sub-agent file (inline 1.0.x sub-agents keep their own roots). */
  readonly sideContinued: (Continued & { readonly index: number })[] = []
  /** The last record outside / inside sidechains. */
  readonly #previous: [string | undefined, string | undefined] = [undefined, undefined]
  /** The last user, assistant or system record outside / inside sidechains: where a boundary continues. */
  readonly #last: [string | undefined, string | undefined] = [undefined, undefined]
  /** The uuid of the last slash command echo: a meta record under it is the command's prompt. */
  #lastEcho: string | undefined
  /** Every uuid seen, to its first string: a parent id shares its node's string (memory). */
  readonly #seen = new Map<string, string>()
  /** The transcript's own session: its file name when a record carries it, else the last id outside sidechains. */
  sessionId: string | undefined
  /** Every distinct `sessionId`, in order of appearance (a resumed session's file starts with the records of the one it resumes). */
  readonly sessionIds: string[] = []
  readonly #sourceName: string | undefined
  #version: string | undefined
  #cwd: string | undefined
  #model: string | undefined
  #gitBranch: string | undefined

  add(parsed: ParsedLine): void {
    if ('malformed' in parsed) {
      this.malformed.push({ line: parsed.line, text: parsed.malformed })
      return
    }
    const value = parsed.value
    if (value['type'] === 'user' || value['type'] === 'assistant' || value['type'] === 'system')
      this.conversation = true
    const sessionId = str(value['sessionId'])
    if (sessionId !== undefined) {
      if (!this.sessionIds.includes(sessionId)) this.sessionIds.push(sessionId)
      const settled = this.sessionId !== undefined && this.sessionId === this.#sourceName
      if (!settled && (value['isSidechain'] !== true || this.sessionId === undefined))
        this.sessionId = sessionId
    }
    this.#version ??= str(value['version'])
    this.#cwd ??= str(value['cwd'])
    this.#gitBranch ??= str(value['gitBranch'])
    const model = str(obj(value['message'])?.['model'])
    if (model !== '<synthetic>') this.#model ??= model
    const id = str(value['uuid'])
    if (id === undefined) {
      this.loose.push(parsed.line)
      return
    }
    if (this.#seen.has(id)) {
      this.duplicates.push({ line: parsed.line, id })
      return
    }
    this.#seen.set(id, id)
    let rawParent = str(value['parentUuid']) ?? str(value['logicalParentUuid']) ?? null
    if (rawParent !== null) this.linked = true
    const sidechain = value['isSidechain'] === true
    const last = this.#last[sidechain ? 1 : 0]
    if (
      value['type'] === 'system' &&
      value['subtype'] === 'compact_boundary' &&
      (rawParent === null || !this.#seen.has(rawParent)) &&
      last !== undefined
    ) {
      // The summary continues the conversation before it, whose last record Claude Code did not
      // always write (a logicalParentUuid naming no record of the file): continue from the
      // record before the boundary instead of starting a second tree.
      this.relinked.push({ line: parsed.line, id, parent: last })
      rawParent = last
      this.linked = true
    }
    if (value['type'] === 'user' || value['type'] === 'assistant' || value['type'] === 'system')
      this.#last[sidechain ? 1 : 0] = id
    let riding = attachable(value)
    if (value['type'] === 'user') {
      const text = firstTextOf(obj(value['message'])?.['content'])
      if (riding && rawParent !== null && rawParent === this.#lastEcho && commandExpansion(value, text))
        riding = false
      if (value['isMeta'] !== true && COMMAND_ECHOES.some((echo) => text.startsWith(echo)))
        this.#lastEcho = id
    }
    const messageId = value['type'] === 'assistant' ? str(obj(value['message'])?.['id']) : undefined
    let parent = rawParent === null ? null : (this.#seen.get(rawParent) ?? rawParent)
    const previous = this.#previous[sidechain ? 1 : 0]
    this.#previous[sidechain ? 1 : 0] = id
    if (previous !== undefined && (parent === null || parent === id || !this.#seen.has(parent))) {
      const record = { line: parsed.line, id, named: parent, parent: previous }
      if (sidechain) this.sideContinued.push({ ...record, index: this.nodes.length })
      else {
        this.continued.push(record)
        parent = previous
      }
    }
    this.nodes.push({
      id,
      parent,
      line: parsed.line,
      item: {
        attachable: riding,
        sidechain,
        agentId: str(value['agentId']),
        messageId,
      },
    })
  }

  /** The other sessions whose records this file holds (the ones it resumes), in order. */
  get resumedFrom(): string[] {
    return this.sessionIds.filter((id) => id !== this.sessionId)
  }

  /** A sub-agent file: its records continue one another like a main session's ({@link continued}). */
  continueSidechains(): void {
    for (const record of this.sideContinued)
      this.nodes[record.index] = { ...this.nodes[record.index]!, parent: record.parent }
  }

  /** True when every record is a sidechain record (a sub-agent file imported on its own). */
  get onlySidechain(): boolean {
    return this.nodes.length > 0 && this.nodes.every((node) => node.item.sidechain)
  }

  facts(): FormatFacts {
    // Called once, after the last record: the id lookup is no longer needed.
    this.#seen.clear()
    const agentId = this.onlySidechain ? this.nodes[0]!.item.agentId : undefined
    const sourceId = this.sessionId
    return {
      formatVersion: this.#version ?? 'unknown',
      sourceId: agentId === undefined ? sourceId : `${sourceId ?? 'unknown'}-agent-${keyPart(agentId)}`,
      cwd: this.#cwd,
      ...(this.onlySidechain ? { delegationDepth: 1, parentSourceId: sourceId } : {}),
      metadata: {
        ...(this.#model === undefined ? {} : { model: this.#model }),
        ...(this.resumedFrom.length === 0 ? {} : { resumedFrom: this.resumedFrom }),
        ...(this.#gitBranch === undefined ? {} : { gitBranch: this.#gitBranch }),
        ...(agentId === undefined ? {} : { agentId }),
      },
    }
  }
}

/**
 * The sub-agents of a file (1.0.x wrote each Task's sidechain inline, one tree each): records
 * grouped by `agentId` when they carry one, else by the root of their tree, in file order.
 */
export function sidechainGroups(nodes: readonly TreeNode<ClaudeNode>[]): TreeNode<ClaudeNode>[][] {
  const rootOf = new Map<string, string>()
  const groups = new Map<string, TreeNode<ClaudeNode>[]>()
  for (const node of nodes) {
    const root = (node.parent === null ? undefined : rootOf.get(node.parent)) ?? node.id
    rootOf.set(node.id, root)
    const key = node.item.agentId === undefined ? `root:${root}` : `agent:${node.item.agentId}`
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [node])
    else group.push(node)
  }
  return [...groups.values()]
}

/**
 * A file whose records name no parent at all (hand-trimmed or very old transcripts) has no
 * tree: its records are one path in file order, not one root each.
 */
export function chainedInFileOrder(nodes: readonly TreeNode<ClaudeNode>[]): TreeNode<ClaudeNode>[] {
  return nodes.map((node, index) => (index === 0 ? node : { ...node, parent: nodes[index - 1]!.id }))
}

/** A record of the conversation that named no parent, or one not in the file, after its first record. */
export interface Continued {
  readonly line: number
  readonly id: string
  /** The parent it named (not in the file), or null. */
  readonly named: string | null
  /** The record before it, which it now continues. */
  readonly parent: string
}
