/** A record of a tree-shaped source (Claude Code `uuid`/`parentUuid`, pi `id`/`parentId`). */
export interface TreeNode<T> {
  readonly id: string
  /** The parent's id; `null` for a root. A parent id not in the file is treated as a root (a broken chain). */
  readonly parent: string | null
  /** 1-based source line, for order and for messages. */
  readonly line: number
  readonly item: T
}

/** One branch other than the main path: its records in the order to import them. */
interface TreeBranch<T> {
  /** Id of the first record of the branch that is not on the main path (stable as the branch grows). */
  readonly branchId: string
  readonly leafId: string
  readonly sequence: readonly TreeNode<T>[]
}

/** How a tree is imported: the main path (with attached side records) and one branch per other leaf. */
export interface TreePlan<T> {
  readonly main: readonly TreeNode<T>[]
  readonly branches: readonly TreeBranch<T>[]
  /** Ids whose parent is not in the file (broken chains), in file order. */
  readonly brokenParents: readonly string[]
}

/** A tree by record index (file order): each record's parent index, `-1` for a root or a broken chain. */
export interface IndexedTree {
  readonly size: number
  parentOf(index: number): number
  /** True for records that may ride along a path they are not on (tool results, progress). */
  attachable(index: number): boolean
}

/** One branch of an {@link IndexedTree}: its sequence is computed when asked (it may be long). */
interface IndexedBranch {
  /** The first record of the branch that is not on the main path. */
  readonly branch: number
  readonly leaf: number
  sequence(): Int32Array
}

/** {@link TreePlan} by record index. */
export interface IndexedPlan {
  readonly main: Int32Array
  /** The main path's leaf (the last leaf in file order), or -1 for an empty tree. */
  readonly leaf: number
  readonly branches: readonly IndexedBranch[]
}

/** Per-record marks (one byte each), cleared by the caller for what it set. */
class Marks {
  readonly bytes: Uint8Array
  constructor(size: number) {
    this.bytes = new Uint8Array(size)
  }
}

function pathTo(tree: IndexedTree, leaf: number, seen: Marks): Int32Array {
  const path: number[] = []
  for (let node = leaf; node >= 0 && seen.bytes[node] === 0; node = tree.parentOf(node)) {
    seen.bytes[node] = 1
    path.push(node)
  }
  for (const node of path) seen.bytes[node] = 0
  return Int32Array.from(path.reverse())
}

/**
 * The main path (root to its leaf) plus the side segments that only carry records attached
 * to it (parallel tool results that are siblings in the tree, hook progress...), each
 * inserted right after its branch point. Side segments with a record `attachable` refuses
 * are returned as `rest` leaves.
 */
function withAttached(
  tree: IndexedTree,
  path: Int32Array,
  context: { readonly leaves: Int32Array; readonly marks: Marks },
): { sequence: Int32Array; rest: number[] } {
  const ON_PATH = 1
  const TAKEN = 2
  const SEEN = 4
  const marks = context.marks.bytes
  for (const node of path) marks[node]! |= ON_PATH
  const after = new Map<number, number[][]>()
  /** Anchors on another segment (not on the path): `-2 - index`. */
  const rest: number[] = []
  const taken: number[] = []
  let attached = 0
  for (const leaf of context.leaves) {
    if ((marks[leaf]! & ON_PATH) !== 0) continue
    const segment: number[] = []
    let node = leaf
    while (node >= 0 && (marks[node]! & (ON_PATH | TAKEN | SEEN)) === 0) {
      marks[node]! |= SEEN
      segment.push(node)
      node = tree.parentOf(node)
    }
    for (const item of segment) marks[item]! &= ~SEEN
    if (!segment.every((item) => tree.attachable(item))) {
      rest.push(leaf)
      continue
    }
    segment.reverse()
    for (const item of segment) {
      marks[item]! |= TAKEN
      taken.push(item)
    }
    attached += segment.length
    const anchor = node < 0 ? -1 : (marks[node]! & ON_PATH) !== 0 ? node : -2 - node
    const list = after.get(anchor) ?? []
    list.push(segment)
    after.set(anchor, list)
  }
  const sequence = new Int32Array(path.length + attached)
  let at = 0
  const emit = (anchor: number): void => {
    for (const segment of after.get(anchor) ?? []) for (const item of segment) sequence[at++] = item
  }
  emit(-1)
  for (const node of path) {
    sequence[at++] = node
    emit(node)
  }
  // Segments hanging off another attached segment: after everything, in file order.
  for (const [anchor, segments] of after) {
    if (anchor <= -2) for (const segment of segments) for (const item of segment) sequence[at++] = item
  }
  for (const node of path) marks[node]! &= ~ON_PATH
  for (const node of taken) marks[node]! &= ~TAKEN
  return { sequence, rest }
}

/**
 * Plans the import of a tree given by record index: the main path ends at the last leaf in
 * file order (the session as its agent would resume it); every other leaf whose branch
 * carries a record `attachable` refuses becomes a branch (a fork); the rest is attached to
 * the path. Memory: a few bytes per record, no strings.
 */
export function planIndexedTree(tree: IndexedTree): IndexedPlan {
  const size = tree.size
  const hasChild = new Uint8Array(size)
  for (let index = 0; index < size; index += 1) {
    const parent = tree.parentOf(index)
    if (parent >= 0) hasChild[parent] = 1
  }
  let leafCount = 0
  for (let index = 0; index < size; index += 1) if (hasChild[index] === 0) leafCount += 1
  const leaves = new Int32Array(leafCount)
  for (let index = 0, at = 0; index < size; index += 1) if (hasChild[index] === 0) leaves[at++] = index
  const mainLeaf = leaves.at(-1)
  if (mainLeaf === undefined) return { main: new Int32Array(0), leaf: -1, branches: [] }
  const marks = new Marks(size)
  const context = { leaves, marks }
  const main = withAttached(tree, pathTo(tree, mainLeaf, marks), context)
  const inMain = hasChild
  inMain.fill(0)
  for (const node of main.sequence) inMain[node] = 1
  const branches = main.rest.map((leaf): IndexedBranch => {
    const path = pathTo(tree, leaf, marks)
    const first = path.find((node) => inMain[node] === 0) ?? leaf
    return { branch: first, leaf, sequence: () => withAttached(tree, path, context).sequence }
  })
  return { main: main.sequence, leaf: mainLeaf, branches }
}

/**
 * Plans the import of a tree of records with string ids (held in memory: pi sessions).
 *
 * @param nodes - The records in file order; a repeated id keeps its first record (the caller decides what the repeat is).
 * @param attachable - True for records that may ride along a path they are not on (tool results, progress).
 */
export function planTree<T>(
  nodes: readonly TreeNode<T>[],
  attachable: (node: TreeNode<T>) => boolean,
): TreePlan<T> {
  const byId = new Map<string, number>()
  const unique: TreeNode<T>[] = []
  for (const node of nodes) {
    if (byId.has(node.id)) continue
    byId.set(node.id, unique.length)
    unique.push(node)
  }
  const parents = unique.map((node) => (node.parent === null ? -1 : (byId.get(node.parent) ?? -1)))
  const brokenParents = unique
    .filter((node) => node.parent !== null && !byId.has(node.parent))
    .map((node) => node.id)
  const plan = planIndexedTree({
    size: unique.length,
    parentOf: (index) => parents[index]!,
    attachable: (index) => attachable(unique[index]!),
  })
  const toNodes = (sequence: Int32Array): TreeNode<T>[] => Array.from(sequence, (index) => unique[index]!)
  return {
    main: toNodes(plan.main),
    branches: plan.branches.map((branch) => ({
      branchId: unique[branch.branch]!.id,
      leafId: unique[branch.leaf]!.id,
      sequence: toNodes(branch.sequence()),
    })),
    brokenParents,
  }
}
