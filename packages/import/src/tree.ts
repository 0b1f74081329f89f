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

function pathTo<T>(leaf: TreeNode<T>, byId: ReadonlyMap<string, TreeNode<T>>): TreeNode<T>[] {
  const path: TreeNode<T>[] = []
  const seen = new Set<string>()
  for (let node: TreeNode<T> | undefined = leaf; node !== undefined && !seen.has(node.id);) {
    seen.add(node.id)
    path.push(node)
    node = node.parent === null ? undefined : byId.get(node.parent)
  }
  return path.reverse()
}

/** How {@link planTree} decides which side records ride along a path. */
export interface TreeRules<T> {
  /** True for records that may ride along a path they are not on (tool results, progress). */
  readonly attachable: (node: TreeNode<T>) => boolean
  /**
   * The message a record is part of, if any: a side record of a message that also has a record
   * on the path is attached too (Claude Code writes the blocks of one response as a chain of
   * records, and the result of a parallel call hangs off its own block, off the path).
   */
  readonly messageOf?: (node: TreeNode<T>) => string | undefined
}

interface Tree<T> {
  readonly byId: ReadonlyMap<string, TreeNode<T>>
  readonly leaves: readonly TreeNode<T>[]
}

/**
 * The main path (root to `leaf`) plus the side segments that only carry records attached to
 * it (parallel tool results that are siblings in the tree, hook progress, the other blocks of
 * a message on the path...), each inserted right after its branch point. Side segments with
 * a record the rules refuse are returned as `rest` leaves.
 */
function withAttached<T>(
  path: readonly TreeNode<T>[],
  tree: Tree<T>,
  rules: TreeRules<T>,
): { sequence: TreeNode<T>[]; rest: TreeNode<T>[] } {
  const onPath = new Set(path.map((node) => node.id))
  const messageOf = rules.messageOf
  const pathMessages = new Set<string>()
  if (messageOf !== undefined)
    for (const node of path) {
      const message = messageOf(node)
      if (message !== undefined) pathMessages.add(message)
    }
  const attachable = (node: TreeNode<T>): boolean => {
    if (rules.attachable(node)) return true
    const message = messageOf?.(node)
    return message !== undefined && pathMessages.has(message)
  }
  const taken = new Set<string>()
  const after = new Map<string | null, TreeNode<T>[][]>()
  const rest: TreeNode<T>[] = []
  for (const leaf of tree.leaves) {
    if (onPath.has(leaf.id)) continue
    const segment: TreeNode<T>[] = []
    let node: TreeNode<T> | undefined = leaf
    const seen = new Set<string>()
    while (node !== undefined && !onPath.has(node.id) && !taken.has(node.id) && !seen.has(node.id)) {
      seen.add(node.id)
      segment.push(node)
      node = node.parent === null ? undefined : tree.byId.get(node.parent)
    }
    if (!segment.every(attachable)) {
      rest.push(leaf)
      continue
    }
    segment.reverse()
    for (const item of segment) taken.add(item.id)
    const anchor =
      node !== undefined && onPath.has(node.id) ? node.id : node !== undefined ? `@${node.id}` : null
    const list = after.get(anchor) ?? []
    list.push(segment)
    after.set(anchor, list)
  }
  const sequence: TreeNode<T>[] = []
  const emitted = new Set<string>()
  // A segment hanging off another attached segment follows the record it hangs off.
  const emitSegments = (anchor: string | null): void => {
    for (const segment of after.get(anchor) ?? [])
      for (const node of segment) {
        sequence.push(node)
        emitted.add(node.id)
        emitSegments(`@${node.id}`)
      }
  }
  emitSegments(null)
  for (const node of path) {
    sequence.push(node)
    emitSegments(node.id)
  }
  // Segments hanging off a record no segment emitted (cannot happen in a tree; kept safe): last.
  for (const [anchor, segments] of after) {
    if (anchor !== null && anchor.startsWith('@') && !emitted.has(anchor.slice(1)))
      for (const segment of segments) sequence.push(...segment)
  }
  return { sequence, rest }
}

/**
 * Plans the import of a tree: the main path ends at the last leaf in file order (the
 * session as its agent would resume it); every other leaf whose branch carries a record
 * the rules refuse becomes a branch (a fork); the rest is attached to the path. Branch ids
 * are distinct: of two leaves that leave the main path at the same record, the later one
 * (in file order) keeps that record as its id, the earlier one takes its first record that
 * no later branch shares.
 *
 * @param nodes - The records in file order; a repeated id keeps its first record (the caller decides what the repeat is).
 * @param rules - Which side records ride along a path: `attachable`, or a function (tool results, progress).
 */
export function planTree<T>(
  nodes: readonly TreeNode<T>[],
  rules: TreeRules<T> | ((node: TreeNode<T>) => boolean),
): TreePlan<T> {
  const treeRules: TreeRules<T> = typeof rules === 'function' ? { attachable: rules } : rules
  const byId = new Map<string, TreeNode<T>>()
  for (const node of nodes) if (!byId.has(node.id)) byId.set(node.id, node)
  const parents = new Set<string>()
  const brokenParents: string[] = []
  for (const node of byId.values()) {
    if (node.parent === null) continue
    if (byId.has(node.parent)) parents.add(node.parent)
    else brokenParents.push(node.id)
  }
  const leaves = [...byId.values()].filter((node) => !parents.has(node.id))
  const mainLeaf = leaves.at(-1)
  if (mainLeaf === undefined) return { main: [], branches: [], brokenParents }
  const tree = { byId, leaves }
  const main = withAttached(pathTo(mainLeaf, byId), tree, treeRules)
  const claimed = new Set(main.sequence.map((node) => node.id))
  const branches: TreeBranch<T>[] = []
  // Latest leaf first, so that it keeps the record where it leaves the main path as its id.
  for (const leaf of [...main.rest].reverse()) {
    const path = pathTo(leaf, byId)
    const first = path.find((node) => !claimed.has(node.id)) ?? leaf
    for (const node of path) claimed.add(node.id)
    const attached = withAttached(path, tree, treeRules)
    branches.push({ branchId: first.id, leafId: leaf.id, sequence: attached.sequence })
  }
  return { main: main.sequence, branches: branches.reverse(), brokenParents }
}
