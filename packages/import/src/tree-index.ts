import type { IndexedTree } from './tree.ts'

/** Two 32-bit lanes of a string's hash. */
export type Hash64 = (text: string, out: Uint32Array) => void

/**
 * A 64-bit non-cryptographic hash of a string, in `out[0]` and `out[1]`: two 32-bit
 * multiply-xorshift lanes over the UTF-16 code units, cross-mixed at the end (the
 * construction of cyrb53, kept at 64 bits). Fast, no allocation; collisions are detected
 * by the caller (see {@link TreeIndex}), never assumed away.
 */
export function hash64(text: string, out: Uint32Array): void {
  let h1 = 0xdeadbeef ^ text.length
  let h2 = 0x41c6ce57 ^ text.length
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index)
    h1 = Math.imul(h1 ^ code, 2654435761)
    h2 = Math.imul(h2 ^ code, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  out[0] = h1 >>> 0
  out[1] = h2 >>> 0
}

function grown<TArray extends Uint32Array | Int32Array | Uint8Array>(array: TArray, size: number): TArray {
  if (size <= array.length) return array
  const next = new (array.constructor as new (length: number) => TArray)(Math.max(size, array.length * 2))
  next.set(array)
  return next
}

/** Parent index of a record whose parent id was not seen yet (resolved by {@link TreeIndex.seal}). */
const PENDING = -2

/**
 * The first pass's index of a tree-shaped source, in typed arrays: per record a 64-bit hash
 * of its id, its parent's record index, its line and a byte of flags (about 25 bytes, and
 * 8 more in the open-addressing table that resolves ids), never the id strings. Records are
 * numbered in file order.
 *
 * A hash is not the id: two ids with the same 64-bit hash would merge two records. The
 * index cannot see that (it holds no strings), so whoever reads the records again checks
 * what the index claimed against the real ids ({@link TreeIndex.parentOf} with the record's
 * parent id, and the first record of a repeated id) and refuses on a mismatch.
 */
export class TreeIndex implements IndexedTree {
  #size = 0
  #hashes = new Uint32Array(2048)
  #parents = new Int32Array(1024)
  #lines = new Int32Array(1024)
  #flags = new Uint8Array(1024)
  /** Open addressing, linear probing: record index + 1 per slot, 0 for empty. */
  #table = new Int32Array(2048)
  /** Records whose parent id came later in the file: index, hash lanes (rare). */
  #pending: number[] = []
  readonly #scratch = new Uint32Array(2)
  readonly #hash: Hash64

  constructor(hash: Hash64 = hash64) {
    this.#hash = hash
  }

  get size(): number {
    return this.#size
  }

  /** Bytes held by the typed arrays (for measurement). */
  get bytes(): number {
    return (
      this.#hashes.byteLength +
      this.#parents.byteLength +
      this.#lines.byteLength +
      this.#flags.byteLength +
      this.#table.byteLength
    )
  }

  #find(hi: number, lo: number): number {
    const table = this.#table
    const mask = table.length - 1
    for (let slot = (hi ^ Math.imul(lo, 0x9e3779b1)) & mask; ; slot = (slot + 1) & mask) {
      const entry = table[slot]!
      if (entry === 0) return -1 - slot
      const index = entry - 1
      if (this.#hashes[index * 2] === hi && this.#hashes[index * 2 + 1] === lo) return index
    }
  }

  #rehash(): void {
    const old = this.#table
    this.#table = new Int32Array(old.length * 2)
    for (let index = 0; index < this.#size; index += 1) {
      const slot = this.#find(this.#hashes[index * 2]!, this.#hashes[index * 2 + 1]!)
      this.#table[-1 - slot] = index + 1
    }
  }

  /** The index of the record with this id (its first record), or -1. */
  lookup(id: string): number {
    this.#hash(id, this.#scratch)
    const found = this.#find(this.#scratch[0]!, this.#scratch[1]!)
    return found >= 0 ? found : -1
  }

  /**
   * Adds a record in file order.
   *
   * @returns Its index, or `-1 - first` when its id (by hash) is already indexed (a repeated id: the caller keeps the first).
   */
  add(record: {
    readonly id: string
    readonly parent: string | null
    readonly line: number
    readonly flags: number
  }): number {
    const scratch = this.#scratch
    this.#hash(record.id, scratch)
    const hi = scratch[0]!
    const lo = scratch[1]!
    const slot = this.#find(hi, lo)
    if (slot >= 0) return -1 - slot
    const index = this.#size
    this.#size += 1
    this.#hashes = grown(this.#hashes, this.#size * 2)
    this.#parents = grown(this.#parents, this.#size)
    this.#lines = grown(this.#lines, this.#size)
    this.#flags = grown(this.#flags, this.#size)
    this.#hashes[index * 2] = hi
    this.#hashes[index * 2 + 1] = lo
    this.#lines[index] = record.line
    this.#flags[index] = record.flags
    this.#table[-1 - slot] = index + 1
    if (this.#size * 2 > this.#table.length) this.#rehash()
    if (record.parent === null) this.#parents[index] = -1
    else {
      this.#hash(record.parent, scratch)
      const parent = this.#find(scratch[0]!, scratch[1]!)
      if (parent >= 0) this.#parents[index] = parent
      else {
        this.#parents[index] = PENDING
        this.#pending.push(index, scratch[0]!, scratch[1]!)
      }
    }
    return index
  }

  /**
   * Resolves the parents that came after their children in the file; a parent id that is
   * still unknown is a broken chain (a root). Call after the last record (again after more
   * records: a live source).
   *
   * @returns The indexes of records whose parent id is not in the file, in file order.
   */
  seal(): number[] {
    const broken: number[] = []
    const pending = this.#pending
    this.#pending = []
    for (let at = 0; at < pending.length; at += 3) {
      const parent = this.#find(pending[at + 1]!, pending[at + 2]!)
      this.#parents[pending[at]!] = parent >= 0 ? parent : -1
      if (parent < 0) broken.push(pending[at]!)
    }
    return broken
  }

  parentOf(index: number): number {
    return this.#parents[index]!
  }

  lineOf(index: number): number {
    return this.#lines[index]!
  }

  flagsOf(index: number): number {
    return this.#flags[index]!
  }

  attachable(index: number): boolean {
    return (this.#flags[index]! & TreeIndex.ATTACHABLE) !== 0
  }

  /** Flag bit: the record may ride along a path it is not on. */
  static readonly ATTACHABLE = 1
}

/** A growable list of 32-bit integers (4 bytes each, no boxing). */
export class IntList {
  #items = new Int32Array(256)
  #length = 0

  get length(): number {
    return this.#length
  }

  push(value: number): void {
    this.#items = grown(this.#items, this.#length + 1)
    this.#items[this.#length] = value
    this.#length += 1
  }

  at(index: number): number {
    return this.#items[index]!
  }

  /** A copy trimmed to the length. */
  toArray(): Int32Array {
    return this.#items.slice(0, this.#length)
  }
}

/** The hash {@link TreeIndex} uses by default; replaceable to test collision handling. */
export const indexHashing: { hash: Hash64 } = { hash: hash64 }
