import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import { planIndexedTree, planTree } from '../src/tree.ts'
import type { TreeNode } from '../src/tree.ts'
import { hash64, indexHashing, TreeIndex } from '../src/tree-index.ts'
import { importText, SYNTHETIC } from './support/import.ts'

const record = (id: string, parent: string | null, line: number, flags = 0) => ({ id, parent, line, flags })

describe('TreeIndex (the first pass keeps hashes, indexes and lines in typed arrays)', () => {
  it('resolves parents by id, later parents at seal, and reports repeats and broken chains', () => {
    const index = new TreeIndex()
    expect(index.add(record('a', null, 1))).toBe(0)
    expect(index.add(record('b', 'a', 2, TreeIndex.ATTACHABLE))).toBe(0 + 1)
    // Its parent comes later in the file.
    expect(index.add(record('c', 'd', 3))).toBe(2)
    expect(index.add(record('d', 'b', 4))).toBe(3)
    expect(index.add(record('e', 'nowhere', 5))).toBe(4)
    // A repeated id: -1 - the first record's index.
    expect(index.add(record('b', 'a', 6))).toBe(-2)
    expect(index.seal()).toEqual([4])
    expect([0, 1, 2, 3, 4].map((at) => index.parentOf(at))).toEqual([-1, 0, 3, 1, -1])
    expect([0, 1, 2, 3, 4].map((at) => index.lineOf(at))).toEqual([1, 2, 3, 4, 5])
    expect(index.attachable(1)).toBe(true)
    expect(index.attachable(0)).toBe(false)
    expect(index.lookup('d')).toBe(3)
    expect(index.lookup('zz')).toBe(-1)
  })

  it('holds under 40 bytes a record for 200,000 uuid records (the string index held about 350)', () => {
    const index = new TreeIndex()
    const uuid = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
    for (let n = 0; n < 200_000; n += 1) index.add(record(uuid(n), n === 0 ? null : uuid(n - 1), n + 1))
    index.seal()
    expect(index.parentOf(199_999)).toBe(199_998)
    expect(index.bytes / index.size).toBeLessThan(40)
  })

  it('hash64 spreads similar ids over both lanes', () => {
    const out = new Uint32Array(2)
    const seen = new Set<string>()
    for (let n = 0; n < 10_000; n += 1) {
      hash64(`uuid-${n}`, out)
      seen.add(`${out[0]}:${out[1]}`)
      seen.add(`lo:${out[1]}`)
    }
    expect(seen.size).toBe(20_000)
  })
})

describe('planIndexedTree', () => {
  it('plans the same tree as planTree over strings (main path, attached segments, branches)', () => {
    const ids = ['r', 'x', 'a', 'b', 'c', 'side', 'd', 'e', 'f']
    const parents = [null, 'missing', 'r', 'a', 'a', 'b', 'b', 'c', 'd']
    const nodes: TreeNode<{ attach: boolean }>[] = ids.map((id, at) => ({
      id,
      parent: parents[at]!,
      line: at + 1,
      item: { attach: id === 'side' },
    }))
    const plan = planTree(nodes, (node) => node.item.attach)
    // The last leaf is f; the attachable sibling `side` rides after its branch point b.
    expect(plan.main.map((node) => node.id)).toEqual(['r', 'a', 'b', 'side', 'd', 'f'])
    expect(plan.brokenParents).toEqual(['x'])
    const byIndex = planIndexedTree({
      size: ids.length,
      parentOf: (at) => (parents[at] === null ? -1 : ids.indexOf(parents[at]!)),
      attachable: (at) => ids[at] === 'side',
    })
    expect(Array.from(byIndex.main, (at) => ids[at])).toEqual(plan.main.map((node) => node.id))
    expect(byIndex.branches.map((branch) => Array.from(branch.sequence(), (at) => ids[at]))).toEqual(
      plan.branches.map((branch) => branch.sequence.map((node) => node.id)),
    )
    expect(plan.branches.map((branch) => branch.sequence.map((node) => node.id))).toEqual([
      ['x'],
      ['r', 'a', 'c', 'e'],
    ])
  })
})

describe('a hash collision in the tree index is refused, never a silently wrong tree', () => {
  const original = indexHashing.hash
  afterEach(() => {
    indexHashing.hash = original
  })
  /** The default hash, except that `alias` hashes as `target` does. */
  const colliding =
    (alias: string, target: string) =>
    (text: string, out: Uint32Array): void =>
      original(text === alias ? target : text, out)
  const branches = readFileSync(join(SYNTHETIC, 'claude-code', 'branches.jsonl'), 'utf8')

  it('two uuids of the file with one hash: the second is not taken for a repeat of the first', async () => {
    indexHashing.hash = colliding('b9', 'b5')
    await expect(importText(branches)).rejects.toMatchObject({ code: 'INDEX_COLLISION', line: 10 })
  })

  it('a parentUuid not in the file whose hash is a record uuid: the record is not hung under it', async () => {
    indexHashing.hash = colliding('ghost', 'b8')
    const text = branches.replace('"parentUuid":"b8"', '"parentUuid":"ghost"')
    expect(text).not.toBe(branches)
    // Without the collision, b9 is a root (a broken chain).
    indexHashing.hash = original
    const honest = await importText(text)
    expect(honest.report.diagnostics.map((found) => found.code)).toContain('BROKEN_PARENT')
    indexHashing.hash = colliding('ghost', 'b8')
    await expect(importText(text)).rejects.toMatchObject({ code: 'INDEX_COLLISION', line: 10 })
  })

  it('the default hash imports the file', async () => {
    const result = await importText(branches)
    expect(result.report.forks).toBe(1)
  })
})
