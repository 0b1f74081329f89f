import type { SessionBuilder } from '../builder.ts'
import { ImportError, ImportErrorCode } from '../import-error.ts'
import type { ParsedLine } from '../lines.ts'
import { planIndexedTree } from '../tree.ts'
import type { IndexedPlan, IndexedTree } from '../tree.ts'
import { indexHashing, IntList, TreeIndex } from '../tree-index.ts'
import { attachable, ClaudeMapper } from './claude-code-mapper.ts'
import { obj, str } from './types.ts'
import type {
  FormatFacts,
  FormatInput,
  FormatModule,
  FormatScanner,
  FormatSession,
  LiveContinuation,
} from './types.ts'

/** The `type` values a Claude Code transcript line may have (for detection). */
const CLAUDE_RECORD_TYPES: ReadonlySet<string> = new Set([
  'user',
  'assistant',
  'system',
  'progress',
  'file-history-snapshot',
  'queue-operation',
  'summary',
  'attachment',
  'custom-title',
])

/** True when a first record looks like a Claude Code transcript line. */
export function looksLikeClaudeCode(record: Record<string, unknown>): boolean {
  const type = str(record['type'])
  if (type === undefined || !CLAUDE_RECORD_TYPES.has(type)) return false
  if (type === 'file-history-snapshot') return 'snapshot' in record || 'messageId' in record
  if (type === 'summary') return typeof record['leafUuid'] === 'string'
  if (type === 'queue-operation') return typeof record['sessionId'] === 'string'
  return (
    typeof record['uuid'] === 'string' && 'parentUuid' in record && typeof record['sessionId'] === 'string'
  )
}

function shortId(id: string): string {
  return id.replace(/[^A-Za-z0-9]/g, '').slice(0, 12)
}

/** Flag bits of a record in the tree index. */
const ATTACHABLE = TreeIndex.ATTACHABLE
const SIDECHAIN = 2

/** The id a record's parent link names (`logicalParentUuid` across a compaction), or null for a root. */
function parentIdOf(value: Record<string, unknown>): string | null {
  return str(value['parentUuid']) ?? str(value['logicalParentUuid']) ?? null
}

/**
 * The first pass: the tree index (a hash of each uuid, the parent's record index, the line
 * and two flags per record, in typed arrays: see {@link TreeIndex}), the lines of records
 * outside the tree, and the header facts. Memory grows with the number of records (about
 * 33 bytes each), not with their content; no uuid string is kept, except for the rare record
 * whose parent is not (yet) in the index.
 */
class ClaudeScanner implements FormatScanner {
  readonly index = new TreeIndex(indexHashing.hash)
  /** Lines of records without a uuid (snapshots, queue operations): file order only. */
  readonly loose = new IntList()
  /** Records repeating a uuid (a second /compact re-appending records): line and the first record's index. */
  readonly duplicates: { readonly line: number; readonly first: number }[] = []
  readonly malformed: { readonly line: number; readonly text: string }[] = []
  /** Records whose parent was not indexed before them or is on the other side (main/sidechain): their uuid. */
  readonly #maybeBroken = new Map<number, string>()
  /** `agentId` by runs of record indexes (it changes rarely in file order). */
  readonly #agentStarts = new IntList()
  readonly #agentIds: (string | undefined)[] = []
  sidechains = 0
  lastLine = 0
  /** Records whose parent is not in the file (or on the other side), with their uuid; set by {@link ClaudeScanner.facts}. */
  broken = new Map<number, string>()
  sessionId: string | undefined
  #version: string | undefined
  #cwd: string | undefined
  #model: string | undefined
  #gitBranch: string | undefined

  add(parsed: ParsedLine): void {
    this.lastLine = Math.max(this.lastLine, parsed.line)
    if ('malformed' in parsed) {
      this.malformed.push({ line: parsed.line, text: parsed.malformed })
      return
    }
    const value = parsed.value
    this.sessionId ??= str(value['sessionId'])
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
    const sidechain = value['isSidechain'] === true
    const flags = (attachable(value) ? ATTACHABLE : 0) | (sidechain ? SIDECHAIN : 0)
    const parentId = parentIdOf(value)
    const index = this.index.add({ id, parent: parentId, line: parsed.line, flags })
    if (index < 0) {
      this.duplicates.push({ line: parsed.line, first: -1 - index })
      return
    }
    if (sidechain) this.sidechains += 1
    const agentId = str(value['agentId'])
    const runs = this.#agentIds.length
    if (runs === 0 || this.#agentIds[runs - 1] !== agentId) {
      this.#agentStarts.push(index)
      this.#agentIds.push(agentId)
    }
    const parent = this.index.parentOf(index)
    if (parentId !== null && (parent < 0 || (this.index.flagsOf(parent) & SIDECHAIN) !== (flags & SIDECHAIN)))
      this.#maybeBroken.set(index, id)
  }

  /** The `agentId` of a record. */
  agentOf(index: number): string | undefined {
    let low = 0
    let high = this.#agentStarts.length - 1
    while (low < high) {
      const middle = (low + high + 1) >>> 1
      if (this.#agentStarts.at(middle) <= index) low = middle
      else high = middle - 1
    }
    return this.#agentIds[low]
  }

  /** True when every record is a sidechain record (a sub-agent file imported on its own). */
  get onlySidechain(): boolean {
    return this.index.size > 0 && this.sidechains === this.index.size
  }

  facts(): FormatFacts {
    // Called once, after the last record.
    this.index.seal()
    for (const [index, id] of this.#maybeBroken) {
      const parent = this.index.parentOf(index)
      if (parent < 0 || (this.index.flagsOf(parent) & SIDECHAIN) !== (this.index.flagsOf(index) & SIDECHAIN))
        this.broken.set(index, id)
    }
    this.#maybeBroken.clear()
    const agentId = this.onlySidechain ? this.agentOf(0) : undefined
    const sourceId = this.sessionId
    return {
      formatVersion: this.#version ?? 'unknown',
      sourceId: agentId === undefined ? sourceId : `${sourceId ?? 'unknown'}-agent-${shortId(agentId)}`,
      cwd: this.#cwd,
      ...(this.onlySidechain ? { delegationDepth: 1, parentSourceId: sourceId } : {}),
      metadata: {
        ...(this.#model === undefined ? {} : { model: this.#model }),
        ...(this.#gitBranch === undefined ? {} : { gitBranch: this.#gitBranch }),
        ...(agentId === undefined ? {} : { agentId }),
      },
    }
  }
}

/** The main-session records or the sidechain records of the index, as a tree of their own (local indexes). */
interface SubTree extends IndexedTree {
  /** The record index of a local index. */
  global(local: number): number
}

function subTree(index: TreeIndex, side: boolean | undefined): SubTree {
  if (side === undefined) {
    return {
      size: index.size,
      parentOf: (at) => index.parentOf(at),
      attachable: (at) => index.attachable(at),
      global: (at) => at,
    }
  }
  const want = side ? SIDECHAIN : 0
  const members = new IntList()
  const local = new Int32Array(index.size).fill(-1)
  for (let at = 0; at < index.size; at += 1) {
    if ((index.flagsOf(at) & SIDECHAIN) !== want) continue
    local[at] = members.length
    members.push(at)
  }
  const globals = members.toArray()
  return {
    size: globals.length,
    parentOf: (at) => {
      const parent = index.parentOf(globals[at]!)
      return parent < 0 ? -1 : local[parent]!
    },
    attachable: (at) => index.attachable(globals[at]!),
    global: (at) => globals[at]!,
  }
}

/** Extras: records that ride in file order along every path (records without a uuid, repeated uuids, lines that were not JSON). */
const LOOSE = 0
const DUPLICATE = 1
const MALFORMED = 2

interface Extras {
  readonly lines: Int32Array
  readonly kinds: Uint8Array
  /** A duplicate's first record index, a malformed line's index in `scanner.malformed`. */
  readonly refs: Int32Array
}

function extrasOf(scanner: ClaudeScanner): Extras {
  const total = scanner.loose.length + scanner.duplicates.length + scanner.malformed.length
  const extras = { lines: new Int32Array(total), kinds: new Uint8Array(total), refs: new Int32Array(total) }
  let loose = 0
  let duplicate = 0
  let malformed = 0
  const INFINITE = Number.MAX_SAFE_INTEGER
  for (let at = 0; at < total; at += 1) {
    const looseLine = loose < scanner.loose.length ? scanner.loose.at(loose) : INFINITE
    const duplicateLine = scanner.duplicates[duplicate]?.line ?? INFINITE
    const malformedLine = scanner.malformed[malformed]?.line ?? INFINITE
    if (looseLine <= duplicateLine && looseLine <= malformedLine) {
      extras.lines[at] = looseLine
      extras.kinds[at] = LOOSE
      loose += 1
    } else if (duplicateLine <= malformedLine) {
      extras.lines[at] = duplicateLine
      extras.kinds[at] = DUPLICATE
      extras.refs[at] = scanner.duplicates[duplicate]!.first
      duplicate += 1
    } else {
      extras.lines[at] = malformedLine
      extras.kinds[at] = MALFORMED
      extras.refs[at] = malformed
      malformed += 1
    }
  }
  return extras
}

/**
 * Runs `steps` (a record index, or `-1 - extra`) in order with their records, read again
 * from the source: records met before their step are held until it comes (a side segment
 * placed after its branch point), so memory holds only records read ahead, never the whole
 * source. `onRead` sees every record read. Stops when `run` returns false.
 *
 * @returns False when `run` stopped it.
 */
async function walk(
  input: FormatInput,
  plan: {
    readonly steps: Int32Array
    readonly lineOf: (step: number) => number
    readonly malformed: (step: number) => boolean
    readonly onRead: ((line: number, value: Record<string, unknown>) => void) | undefined
  },
  run: (step: number, record: Record<string, unknown> | undefined) => Promise<boolean>,
): Promise<boolean> {
  const { steps, lineOf, malformed, onRead } = plan
  // The lines to read, sorted (4 bytes each): a record read ahead is held only if a step wants it.
  let count = 0
  for (const step of steps) if (!malformed(step)) count += 1
  const wanted = new Int32Array(count)
  count = 0
  for (const step of steps) if (!malformed(step)) wanted[count++] = lineOf(step)
  wanted.sort()
  const isWanted = (line: number): boolean => {
    let low = 0
    let high = wanted.length - 1
    while (low <= high) {
      const middle = (low + high) >>> 1
      const value = wanted[middle]!
      if (value === line) return true
      if (value < line) low = middle + 1
      else high = middle - 1
    }
    return false
  }
  const held = new Map<number, Record<string, unknown>>()
  const records = input.replay()[Symbol.asyncIterator]()
  try {
    for (const step of steps) {
      if (malformed(step)) {
        if (!(await run(step, undefined))) return false
        continue
      }
      const line = lineOf(step)
      while (!held.has(line)) {
        const next = await records.next()
        if (next.done === true) throw new Error(`line ${line} was not read again`)
        if (!('value' in next.value)) continue
        onRead?.(next.value.line, next.value.value)
        if (isWanted(next.value.line)) held.set(next.value.line, next.value.value)
      }
      const record = held.get(line)!
      held.delete(line)
      if (!(await run(step, record))) return false
    }
    return true
  } finally {
    await records.return?.()
  }
}

/**
 * Checks, while the records are read again, what the index claimed from hashes: a record's
 * parent is the record whose uuid its `parentUuid` names, a repeated uuid repeats the first
 * record's. Keeps the last record's uuid and those of records with several children.
 */
class IndexCheck {
  readonly #index: TreeIndex
  readonly #file: string
  readonly #several: Uint8Array
  readonly #uuids = new Map<number, string>()
  #last = -1
  #lastUuid: string | undefined

  constructor(index: TreeIndex, file: string) {
    this.#index = index
    this.#file = file
    const children = new Uint8Array(index.size)
    for (let at = 0; at < index.size; at += 1) {
      const parent = index.parentOf(at)
      if (parent >= 0 && children[parent]! < 2) children[parent]! += 1
    }
    this.#several = children
  }

  /** A new walk starts (a path of its own). */
  reset(): void {
    this.#uuids.clear()
    this.#last = -1
    this.#lastUuid = undefined
  }

  #collision(line: number, found: string | null, expected: string): ImportError {
    return new ImportError({
      code: ImportErrorCode.INDEX_COLLISION,
      file: this.#file,
      line,
      message: `${this.#file} line ${line}: expected uuid ${JSON.stringify(expected)} as the index's hash said, found ${JSON.stringify(found)}: two uuids share one 64-bit hash, so the tree cannot be built from the index; nothing more imported (please report this source)`,
    })
  }

  node(index: number, value: Record<string, unknown>): void {
    const parent = this.#index.parentOf(index)
    if (parent >= 0) {
      const expected = parent === this.#last ? this.#lastUuid : this.#uuids.get(parent)
      const found = parentIdOf(value)
      if (expected !== undefined && expected !== found)
        throw this.#collision(this.#index.lineOf(index), found, expected)
    }
    const uuid = str(value['uuid'])
    this.#last = index
    this.#lastUuid = uuid
    if (this.#several[index] === 2 && uuid !== undefined) this.#uuids.set(index, uuid)
  }

  duplicate(line: number, value: Record<string, unknown>, first: string | undefined): void {
    const found = str(value['uuid']) ?? null
    if (first !== undefined && first !== found) throw this.#collision(line, found, first)
  }
}

/** Uuid strings of a few records (branch points, leaves, first records of repeated uuids), caught as the records go by. */
class WantedIds {
  readonly #ids = new Map<number, string | undefined>()

  want(line: number): void {
    if (!this.#ids.has(line)) this.#ids.set(line, undefined)
  }

  get(line: number): string | undefined {
    return this.#ids.get(line)
  }

  readonly onRead = (line: number, value: Record<string, unknown>): void => {
    if (this.#ids.has(line) && this.#ids.get(line) === undefined) this.#ids.set(line, str(value['uuid']))
  }

  /** Reads the source again for ids not caught yet (a branch written after the main leaf: rare). */
  async complete(input: FormatInput): Promise<void> {
    if (![...this.#ids.values()].includes(undefined)) return
    for await (const parsed of input.replay()) if ('value' in parsed) this.onRead(parsed.line, parsed.value)
  }
}

async function mapClaudeCode(input: FormatInput, scanner: ClaudeScanner): Promise<FormatSession[]> {
  const { index } = scanner
  const onlySidechain = scanner.onlySidechain
  const split = !onlySidechain && scanner.sidechains > 0
  const mainTree = subTree(index, split ? false : undefined)
  const sideTree = split ? subTree(index, true) : undefined
  const mainPlan = planIndexedTree(mainTree)
  const sidePlan = sideTree === undefined ? undefined : planIndexedTree(sideTree)
  const extras = extrasOf(scanner)
  const check = new IndexCheck(index, input.file)
  const ids = new WantedIds()
  for (const duplicate of scanner.duplicates) ids.want(index.lineOf(duplicate.first))
  const wantBranches = (tree: SubTree, plan: IndexedPlan): void => {
    for (const branch of plan.branches) {
      ids.want(index.lineOf(tree.global(branch.branch)))
      ids.want(index.lineOf(tree.global(branch.leaf)))
    }
  }
  wantBranches(mainTree, mainPlan)
  if (sideTree !== undefined && sidePlan !== undefined) {
    wantBranches(sideTree, sidePlan)
    const first = sidePlan.main[0]
    if (first !== undefined) ids.want(index.lineOf(sideTree.global(first)))
  }
  const none = new Int32Array(0)
  const lineOf = (step: number): number => (step >= 0 ? index.lineOf(step) : extras.lines[-1 - step]!)
  const malformed = (step: number): boolean => step < 0 && extras.kinds[-1 - step] === MALFORMED
  /** A sequence (local indexes of `tree`) merged with the extras in file order: record indexes, `-1 - extra`. */
  const stepsOf = (tree: SubTree, sequence: Int32Array, withExtras: boolean): Int32Array => {
    const extraLines = withExtras ? extras.lines : none
    const steps = new Int32Array(sequence.length + extraLines.length)
    let at = 0
    let next = 0
    for (const local of sequence) {
      const node = tree.global(local)
      const line = index.lineOf(node)
      while (next < extraLines.length && extraLines[next]! < line) steps[at++] = -1 - next++
      steps[at++] = node
    }
    while (next < extraLines.length) steps[at++] = -1 - next++
    return steps
  }
  const more = mainPlan.branches.length > 0 || sidePlan !== undefined
  const counted = more ? new Uint8Array(scanner.lastLine + 1) : undefined
  const counts = (line: number): boolean => counted?.[line] !== 1
  /** Maps `steps` into `builder`; false when `step` stopped it (a fork's probe). */
  const run = async (
    steps: Int32Array,
    target: { readonly builder: SessionBuilder; readonly mapper?: ClaudeMapper },
    step: () => Promise<boolean>,
  ): Promise<boolean> => {
    const { builder } = target
    const mapper = target.mapper ?? new ClaudeMapper(builder)
    check.reset()
    const complete = await walk(
      input,
      { steps, lineOf, malformed, onRead: ids.onRead },
      async (at, record) => {
        if (at >= 0) {
          check.node(at, record!)
          mapper.handle({ line: index.lineOf(at), value: record! })
          return step()
        }
        const extra = -1 - at
        const line = extras.lines[extra]!
        const kind = extras.kinds[extra]
        if (kind === MALFORMED) {
          builder.line = line
          builder.malformed(scanner.malformed[extras.refs[extra]!]!.text)
        } else if (kind === DUPLICATE) {
          const first = ids.get(index.lineOf(extras.refs[extra]!))
          check.duplicate(line, record!, first)
          builder.line = line
          builder.beginRecord(record!['timestamp'])
          builder.diagnostic(
            'DUPLICATE_UUID',
            `record uuid ${String(record!['uuid'])} appears again; kept verbatim only`,
          )
          builder.record(record, 'log-only:claude.duplicate-uuid')
        } else mapper.handle({ line, value: record! })
        return step()
      },
    )
    if (!complete || input.live) return complete
    mapper.finish()
    return true
  }
  const markCounted = (steps: Int32Array): void => {
    if (counted !== undefined) for (const step of steps) counted[lineOf(step)] = 1
  }
  const sessions: FormatSession[] = []
  const mainBuilder = input.newBuilder(counts, { trackDigests: mainPlan.branches.length > 0 })
  const mainSession: FormatSession = { key: '', role: 'main', builder: mainBuilder }
  const mainSteps = stepsOf(mainTree, mainPlan.main, true)
  const mainLeaf = mainPlan.leaf < 0 ? -1 : mainTree.global(mainPlan.leaf)
  if (mainLeaf >= 0) ids.want(index.lineOf(mainLeaf))
  const mainMapper = new ClaudeMapper(mainBuilder)
  await run(mainSteps, { builder: mainBuilder, mapper: mainMapper }, async () => {
    await input.pump(mainSession)
    return true
  })
  sessions.push(mainSession)
  if (input.live) {
    // Records appended later go on the main path only while they extend its leaf.
    if (mainPlan.main.length === 0 || mainTree.global(mainPlan.main.at(-1)!) === mainLeaf) {
      const leaf = { uuid: mainLeaf < 0 ? null : (ids.get(index.lineOf(mainLeaf)) ?? null) }
      input.continueLive(mainSession, liveContinuation(scanner, mainMapper, leaf))
    }
    return sessions
  }
  for (const [broken, id] of scanner.broken) {
    if ((index.flagsOf(broken) & SIDECHAIN) !== 0 && !onlySidechain) continue
    mainBuilder.line = index.lineOf(broken)
    mainBuilder.diagnostic(
      'BROKEN_PARENT',
      `record ${id}: its parentUuid is not in the file; treated as a root`,
    )
  }
  markCounted(mainSteps)
  await input.close(mainSession)
  await ids.complete(input)
  const uuidOf = (tree: SubTree, local: number): string => ids.get(index.lineOf(tree.global(local))) ?? ''
  const addBranches = async (
    tree: SubTree,
    plan: IndexedPlan,
    parent: { readonly forkOf: string; readonly withExtras: boolean },
  ): Promise<void> => {
    for (const branch of plan.branches) {
      const branchUuid = uuidOf(tree, branch.branch)
      const { forkOf } = parent
      const session = {
        key: `${forkOf === '' ? '' : `${forkOf}-`}fork-${shortId(branchUuid)}`,
        role: 'fork' as const,
        forkOf,
        metadata: { branchUuid, leafUuid: uuidOf(tree, branch.leaf) },
      }
      const steps = stepsOf(tree, branch.sequence(), parent.withExtras)
      sessions.push(
        await input.fork(session, async (pass) => {
          const builder = pass.newBuilder(counts)
          const complete = await run(steps, { builder }, () => pass.step(builder))
          if (complete && !pass.probe) markCounted(steps)
          return builder
        }),
      )
    }
  }
  await addBranches(mainTree, mainPlan, { forkOf: '', withExtras: true })
  if (sideTree !== undefined && sidePlan !== undefined) {
    const first = sidePlan.main[0]
    const agentId =
      (first === undefined ? undefined : scanner.agentOf(sideTree.global(first))) ??
      shortId(first === undefined ? 'sidechain' : uuidOf(sideTree, first))
    const key = `agent-${shortId(agentId)}`
    const builder = input.newBuilder(counts, { trackDigests: sidePlan.branches.length > 0 })
    const session: FormatSession = { key, role: 'sidechain', builder, metadata: { agentId } }
    const steps = stepsOf(sideTree, sidePlan.main, false)
    await run(steps, { builder }, async () => {
      await input.pump(session)
      return true
    })
    markCounted(steps)
    await input.close(session)
    sessions.push(session)
    await addBranches(sideTree, sidePlan, { forkOf: key, withExtras: false })
  }
  return sessions
}

/**
 * How a live import goes on with appended records: a record without a uuid rides along in file
 * order, a sidechain record (beside a main session) is not on the main path, and a record
 * whose parent is the main path's leaf extends it. Anything else (a repeated uuid, a parent
 * elsewhere in the tree: a branch switch, a new root) moves the main path: the source is
 * imported again whole.
 */
function liveContinuation(
  scanner: ClaudeScanner,
  mapper: ClaudeMapper,
  leaf: { uuid: string | null },
): LiveContinuation {
  let duplicates = scanner.duplicates.length
  const onlySidechain = scanner.onlySidechain
  return {
    add: ({ line, value }) => {
      const id = str(value['uuid'])
      if (id === undefined) {
        mapper.handle({ line, value })
        return undefined
      }
      if (scanner.duplicates.length !== duplicates) {
        duplicates = scanner.duplicates.length
        return `uuid ${id} appears again`
      }
      if (scanner.onlySidechain !== onlySidechain) return 'the transcript is no longer only sidechain records'
      if (!onlySidechain && value['isSidechain'] === true) return undefined
      const parent = parentIdOf(value)
      if (parent !== leaf.uuid) {
        return `record ${id} hangs under ${parent === null ? 'no parent' : parent}, not under the main path's leaf ${leaf.uuid ?? '(none)'} (a branch switch)`
      }
      mapper.handle({ line, value })
      leaf.uuid = id
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
  scanner: () => new ClaudeScanner(),
  map: (input, scanner) => mapClaudeCode(input, scanner as ClaudeScanner),
}
