/**
 * Test-only file-system layers over the store's `FsOps` seam.
 *
 * - {@link createFaultFs}: injects errno failures into the Nth call of an operation (once or
 *   from then on), short writes followed by an error, and write delays (W6, W7, W8, W10, M6).
 * - {@link createPowerLossRecorder}: passes every call through to the real file system while
 *   keeping a model of what is durable (file data as of its last fsync/fdatasync, directory
 *   entries as of their directory's last fsync), and materialises the image a power loss
 *   after op index k would leave, with unsynced bytes dropped, cut or garbled (W2, M*).
 */
import { constants, promises as fsp } from 'node:fs'
import type { Stats } from 'node:fs'
import { constants as osConstants } from 'node:os'
import { dirname, join, relative, resolve, sep } from 'node:path'

import { nodeFsOps } from '../../src/fs-ops.ts'
import type { FileHandleOps, FsOps } from '../../src/fs-ops.ts'

/** Every operation a fault can target: the `FsOps` methods and the handle methods (`fstat` = handle.stat, `fchmod` = handle.chmod). */
type FsOpName =
  | 'open'
  | 'lstat'
  | 'stat'
  | 'readdir'
  | 'mkdir'
  | 'rmdir'
  | 'link'
  | 'unlink'
  | 'rename'
  | 'chmod'
  | 'realpath'
  | 'fsyncDirectory'
  | 'read'
  | 'write'
  | 'datasync'
  | 'sync'
  | 'truncate'
  | 'fstat'
  | 'fchmod'
  | 'close'

/** An error shaped like the ones node:fs throws (`code`, `errno`, `syscall`, `path`). */
class InjectedFsError extends Error {
  readonly code: string
  readonly errno: number
  readonly syscall: string
  readonly path: string
  readonly injected = true

  constructor(options: { code: string; syscall: string; path: string }) {
    super(`${options.code}: injected fault, ${options.syscall} '${options.path}'`)
    this.code = options.code
    this.errno = -((osConstants.errno as Record<string, number>)[options.code] ?? 5)
    this.syscall = options.syscall
    this.path = options.path
  }
}

/** One fault to inject. */
interface FaultSpec {
  readonly op: FsOpName
  /** errno code to fail with, e.g. 'EIO', 'ENOSPC', 'EDQUOT', 'EXDEV', 'EROFS'. */
  readonly errno: string
  /** Which matching call fails first, 1-based, counted from when the fault is added. Default 1. */
  readonly nth?: number
  /** 'once' (default): only that call; 'forever': that call and every later matching one. */
  readonly mode?: 'once' | 'forever'
  /** Only calls whose path satisfies this count. */
  readonly path?: (path: string) => boolean
  /** For `open`: only opens that could modify the file count (O_WRONLY, O_RDWR, O_CREAT or O_TRUNC), as with EROFS. */
  readonly writeOpensOnly?: boolean
  /** For `write`: really write this many bytes of the buffer first, then fail (a short write, then the error). */
  readonly shortWriteBytes?: number
}

/** A fault once added: how many calls it has failed so far. */
interface ActiveFault {
  readonly spec: FaultSpec
  readonly fired: number
  /** Stops the fault (a "forever" fault after space was freed, say). */
  remove(): void
}

/** An `FsOps` that can fail on demand, and logs every call. */
export interface FaultFs extends FsOps {
  addFault(spec: FaultSpec): ActiveFault
  clearFaults(): void
  /** Milliseconds every handle `write` waits before writing (W10). */
  writeDelayMs: number
  /** Every call so far, in order. */
  readonly calls: readonly { readonly op: FsOpName; readonly path: string }[]
  /** How many calls of `op` were made so far. */
  count(op: FsOpName): number
}

const WRITE_OPEN_FLAGS = constants.O_WRONLY | constants.O_RDWR | constants.O_CREAT | constants.O_TRUNC

interface FaultState {
  readonly spec: FaultSpec
  seen: number
  fired: number
  removed: boolean
}

/**
 * Wraps `inner` (default: the real file system) with fault injection.
 *
 * @param inner - The layer that performs the calls that do not fail.
 * @returns The fault-injecting `FsOps`.
 */
export function createFaultFs(inner: FsOps = nodeFsOps): FaultFs {
  const faults: FaultState[] = []
  const calls: { op: FsOpName; path: string }[] = []

  /** Counts the call against every matching fault; returns the fault that fires, if any. */
  const check = (op: FsOpName, path: string, flags?: number): FaultState | undefined => {
    calls.push({ op, path })
    let firing: FaultState | undefined
    for (const fault of faults) {
      if (fault.removed || fault.spec.op !== op) continue
      if (fault.spec.path !== undefined && !fault.spec.path(path)) continue
      if (fault.spec.writeOpensOnly === true && ((flags ?? 0) & WRITE_OPEN_FLAGS) === 0) continue
      fault.seen += 1
      const nth = fault.spec.nth ?? 1
      const hit = fault.spec.mode === 'forever' ? fault.seen >= nth : fault.seen === nth
      if (hit && firing === undefined) {
        fault.fired += 1
        firing = fault
      }
    }
    return firing
  }
  const fail = (fault: FaultState, syscall: string, path: string): InjectedFsError =>
    new InjectedFsError({ code: fault.spec.errno, syscall, path })

  const guard = async <TResult>(
    op: FsOpName,
    path: string,
    run: () => Promise<TResult>,
    flags?: number,
  ): Promise<TResult> => {
    const fault = check(op, path, flags)
    if (fault !== undefined) throw fail(fault, op, path)
    return run()
  }

  const wrapHandle = (handle: FileHandleOps): FileHandleOps => ({
    path: handle.path,
    read: (buffer, offset, length, position) =>
      guard('read', handle.path, () => handle.read(buffer, offset, length, position)),
    async write(buffer, position) {
      if (api.writeDelayMs > 0)
        await new Promise((resolveDelay) => setTimeout(resolveDelay, api.writeDelayMs))
      const fault = check('write', handle.path)
      if (fault !== undefined) {
        const partial = Math.min(fault.spec.shortWriteBytes ?? 0, buffer.byteLength)
        if (partial > 0) await handle.write(buffer.subarray(0, partial), position)
        throw fail(fault, 'write', handle.path)
      }
      return handle.write(buffer, position)
    },
    datasync: () => guard('datasync', handle.path, () => handle.datasync()),
    sync: () => guard('sync', handle.path, () => handle.sync()),
    truncate: (length) => guard('truncate', handle.path, () => handle.truncate(length)),
    stat: () => guard('fstat', handle.path, () => handle.stat()),
    chmod: (mode) => guard('fchmod', handle.path, () => handle.chmod(mode)),
    close: () => guard('close', handle.path, () => handle.close()),
  })

  const api: FaultFs = {
    writeDelayMs: 0,
    calls,
    count: (op) => calls.filter((call) => call.op === op).length,
    addFault(spec) {
      const state: FaultState = { spec, seen: 0, fired: 0, removed: false }
      faults.push(state)
      return {
        spec,
        get fired() {
          return state.fired
        },
        remove() {
          state.removed = true
        },
      }
    },
    clearFaults() {
      for (const fault of faults) fault.removed = true
      faults.length = 0
    },
    open: (path, flags, mode) =>
      guard('open', path, async () => wrapHandle(await inner.open(path, flags, mode)), flags),
    lstat: (path) => guard('lstat', path, () => inner.lstat(path)),
    stat: (path) => guard('stat', path, () => inner.stat(path)),
    readdir: (path) => guard('readdir', path, () => inner.readdir(path)),
    mkdir: (path, mode) => guard('mkdir', path, () => inner.mkdir(path, mode)),
    rmdir: (path) => guard('rmdir', path, () => inner.rmdir(path)),
    link: (existingPath, newPath) => guard('link', newPath, () => inner.link(existingPath, newPath)),
    unlink: (path) => guard('unlink', path, () => inner.unlink(path)),
    rename: (oldPath, newPath) => guard('rename', newPath, () => inner.rename(oldPath, newPath)),
    chmod: (path, mode) => guard('chmod', path, () => inner.chmod(path, mode)),
    realpath: (path) => guard('realpath', path, () => inner.realpath(path)),
    fsyncDirectory: (path) => guard('fsyncDirectory', path, () => inner.fsyncDirectory(path)),
  }
  return api
}

// ---------------------------------------------------------------------------------------
// Power-loss recorder
// ---------------------------------------------------------------------------------------

/** What a power loss does to bytes that were written but not yet fsynced. */
export type Damage =
  /** Unsynced changes are lost: every file is as of its last fsync. */
  | 'drop'
  /** The unsynced tail survives up to a random point (a partial flush of the page cache). */
  | 'cut'
  /**
   * The unsynced tail survives to a random length, and from a random point on it is zeros or
   * garbage (the file size reached the disk before the data: Kafka's "nonsense", etcd's zeroed sectors).
   */
  | 'garble'
  /** The unsynced tail survives to a random length with random 512-byte blocks zeroed or garbage, intact data after them (pages written out of order). */
  | 'holes'
  /** Everything written survives (a process crash, not a power loss); with `names: 'current'`, the live disk. */
  | 'as-written'

/** How {@link PowerLossRecorder.materialise} builds the image. */
interface MaterialiseOptions {
  readonly damage: Damage
  /** Seed of the damage's random choices. */
  readonly seed: number
  /** 'durable' (default): directory entries as of each directory's last fsync; 'current': as now. */
  readonly names?: 'durable' | 'current'
}

/** A recorded mutating operation (for debugging failing op indexes). */
type RecordedOp =
  | { readonly type: 'create'; readonly path: string; readonly inode: number }
  | {
      readonly type: 'write'
      readonly inode: number
      readonly position: number
      readonly bytes: Buffer
      readonly append: boolean
    }
  | { readonly type: 'truncate'; readonly inode: number; readonly length: number }
  | { readonly type: 'sync'; readonly inode: number }
  | { readonly type: 'mkdir'; readonly path: string; readonly inode: number }
  | { readonly type: 'link'; readonly from: string; readonly to: string }
  | { readonly type: 'unlink'; readonly path: string }
  | { readonly type: 'rename'; readonly from: string; readonly to: string }
  | { readonly type: 'fsyncDirectory'; readonly path: string }

/** An `FsOps` that records durability, and can replay a power loss at any op index. */
export interface PowerLossRecorder extends FsOps {
  /** Number of mutating or syncing operations recorded so far (the op indexes are 0..opCount). */
  readonly opCount: number
  /** The recorded operations, paths relative to the root. */
  readonly ops: readonly RecordedOp[]
  /**
   * Writes into `target` (an empty directory) the tree under the root as a power loss right
   * after the first `opIndex` recorded operations would leave it.
   */
  materialise(opIndex: number, options: MaterialiseOptions, target: string): Promise<void>
}

interface FileNode {
  readonly kind: 'file'
  current: Buffer
  durable: Buffer
}
interface DirectoryNode {
  readonly kind: 'dir'
  current: Map<string, number>
  durable: Map<string, number>
}
type ModelNode = FileNode | DirectoryNode

interface Model {
  nodes: Map<number, ModelNode>
  nextInode: number
}

const ROOT_INODE = 1

function cloneModel(model: Model): Model {
  const nodes = new Map<number, ModelNode>()
  for (const [id, node] of model.nodes) {
    nodes.set(
      id,
      node.kind === 'file'
        ? { kind: 'file', current: Buffer.from(node.current), durable: Buffer.from(node.durable) }
        : { kind: 'dir', current: new Map(node.current), durable: new Map(node.durable) },
    )
  }
  return { nodes, nextInode: model.nextInode }
}

function splitPath(path: string): string[] {
  return path === '' ? [] : path.split(sep)
}

function directoryNode(model: Model, inode: number): DirectoryNode {
  const node = model.nodes.get(inode)
  if (node?.kind !== 'dir') throw new Error(`power-loss model: inode ${inode} is not a directory`)
  return node
}

function fileNode(model: Model, inode: number): FileNode {
  const node = model.nodes.get(inode)
  if (node?.kind !== 'file') throw new Error(`power-loss model: inode ${inode} is not a file`)
  return node
}

/** Inode of the parent directory of `path` (relative to the root) and the last name. */
function parentOf(model: Model, path: string): { parent: DirectoryNode; name: string } {
  const parts = splitPath(path)
  const name = parts.pop()
  if (name === undefined) throw new Error('power-loss model: the root has no parent')
  let inode = ROOT_INODE
  for (const part of parts) {
    const next = directoryNode(model, inode).current.get(part)
    if (next === undefined) throw new Error(`power-loss model: no directory ${part} in ${path}`)
    inode = next
  }
  return { parent: directoryNode(model, inode), name }
}

function lookup(model: Model, path: string): number | undefined {
  if (path === '') return ROOT_INODE
  try {
    const { parent, name } = parentOf(model, path)
    return parent.current.get(name)
  } catch {
    return undefined
  }
}

function grow(buffer: Buffer, length: number): Buffer {
  if (buffer.length >= length) return buffer
  const grown = Buffer.alloc(length)
  buffer.copy(grown)
  return grown
}

function applyOp(model: Model, op: RecordedOp): void {
  switch (op.type) {
    case 'create': {
      const { parent, name } = parentOf(model, op.path)
      model.nodes.set(op.inode, { kind: 'file', current: Buffer.alloc(0), durable: Buffer.alloc(0) })
      model.nextInode = Math.max(model.nextInode, op.inode + 1)
      parent.current.set(name, op.inode)
      return
    }
    case 'mkdir': {
      const { parent, name } = parentOf(model, op.path)
      model.nodes.set(op.inode, { kind: 'dir', current: new Map(), durable: new Map() })
      model.nextInode = Math.max(model.nextInode, op.inode + 1)
      parent.current.set(name, op.inode)
      return
    }
    case 'write': {
      const file = fileNode(model, op.inode)
      const position = op.append ? file.current.length : op.position
      file.current = grow(Buffer.from(file.current), position + op.bytes.length)
      op.bytes.copy(file.current, position)
      return
    }
    case 'truncate': {
      const file = fileNode(model, op.inode)
      file.current =
        op.length <= file.current.length
          ? Buffer.from(file.current.subarray(0, op.length))
          : grow(file.current, op.length)
      return
    }
    case 'sync': {
      const file = fileNode(model, op.inode)
      file.durable = Buffer.from(file.current)
      return
    }
    case 'link': {
      const inode = lookup(model, op.from)
      if (inode === undefined) throw new Error(`power-loss model: link from missing ${op.from}`)
      const { parent, name } = parentOf(model, op.to)
      parent.current.set(name, inode)
      return
    }
    case 'unlink': {
      const { parent, name } = parentOf(model, op.path)
      parent.current.delete(name)
      return
    }
    case 'rename': {
      const inode = lookup(model, op.from)
      if (inode === undefined) throw new Error(`power-loss model: rename of missing ${op.from}`)
      const from = parentOf(model, op.from)
      const to = parentOf(model, op.to)
      from.parent.current.delete(from.name)
      to.parent.current.set(to.name, inode)
      return
    }
    case 'fsyncDirectory': {
      const inode = lookup(model, op.path)
      if (inode === undefined) return
      const directory = directoryNode(model, inode)
      directory.durable = new Map(directory.current)
      return
    }
  }
}

/** mulberry32: a small seeded PRNG, so every damaged image can be rebuilt from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let value = state
    value = Math.imul(value ^ (value >>> 15), value | 1)
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61)
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296
  }
}

function commonPrefix(left: Buffer, right: Buffer): number {
  const limit = Math.min(left.length, right.length)
  let index = 0
  while (index < limit && left[index] === right[index]) index += 1
  return index
}

/** The bytes a file holds after the power loss, given its durable and its written content. */
export function damagedContent(
  file: { durable: Buffer; current: Buffer },
  damage: Damage,
  random: () => number,
): Buffer {
  const { durable, current } = file
  if (damage === 'as-written') return Buffer.from(current)
  if (durable.equals(current) || damage === 'drop') return Buffer.from(durable)
  const prefix = commonPrefix(durable, current)
  if (current.length <= prefix) {
    // An unsynced truncate: either it reached the disk or it did not.
    return Buffer.from(random() < 0.5 ? current : durable)
  }
  const unsynced = current.length - prefix
  const kept = Math.floor(random() * (unsynced + 1))
  const result = Buffer.from(current.subarray(0, prefix + kept))
  const garbage = (start: number, end: number): void => {
    if (random() < 0.5) result.fill(0, start, end)
    else for (let index = start; index < end; index += 1) result[index] = Math.floor(random() * 256)
  }
  if (damage === 'garble') {
    garbage(prefix + Math.floor(random() * (result.length - prefix + 1)), result.length)
  } else if (damage === 'holes') {
    for (let block = prefix; block < result.length; block += 512) {
      if (random() < 0.5) garbage(block, Math.min(result.length, block + 512))
    }
  }
  return result
}

async function snapshot(root: string): Promise<Model> {
  const model: Model = { nodes: new Map(), nextInode: ROOT_INODE + 1 }
  const byRealInode = new Map<string, number>()
  const visit = async (path: string): Promise<DirectoryNode> => {
    const directory: DirectoryNode = { kind: 'dir', current: new Map(), durable: new Map() }
    for (const name of await fsp.readdir(path)) {
      const child = join(path, name)
      const stats = await fsp.lstat(child)
      if (stats.isDirectory()) {
        const id = model.nextInode++
        model.nodes.set(id, await visit(child))
        directory.current.set(name, id)
      } else if (stats.isFile()) {
        const key = `${stats.dev}:${stats.ino}`
        let id = byRealInode.get(key)
        if (id === undefined) {
          id = model.nextInode++
          byRealInode.set(key, id)
          const content = await fsp.readFile(child)
          model.nodes.set(id, { kind: 'file', current: content, durable: Buffer.from(content) })
        }
        directory.current.set(name, id)
      }
      // Symlinks and other kinds are not modelled: the store never creates them.
    }
    directory.durable = new Map(directory.current)
    return directory
  }
  model.nodes.set(ROOT_INODE, await visit(root))
  return model
}

/**
 * Wraps `inner` so every call under `root` is also applied to a durability model.
 *
 * The tree already under `root` counts as durable. Every call must go through the
 * recorder (a file changed behind its back is not modelled). Paths outside `root` pass
 * through unrecorded.
 *
 * @param root - The directory whose subtree is modelled (the store root).
 * @param inner - The layer performing the real calls; default the real file system.
 * @returns The recording `FsOps`.
 */
export async function createPowerLossRecorder(
  root: string,
  inner: FsOps = nodeFsOps,
): Promise<PowerLossRecorder> {
  const absoluteRoot = resolve(root)
  const initial = await snapshot(absoluteRoot)
  const live = cloneModel(initial)
  const ops: RecordedOp[] = []

  const inside = (path: string): string | undefined => {
    const rel = relative(absoluteRoot, resolve(path))
    if (rel.startsWith('..') || rel.startsWith(sep)) return undefined
    return rel
  }
  const record = (op: RecordedOp): void => {
    applyOp(live, op)
    ops.push(op)
  }

  const wrapHandle = (handle: FileHandleOps, inode: number | undefined, append: boolean): FileHandleOps => {
    if (inode === undefined) return handle
    return {
      path: handle.path,
      read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
      async write(buffer, position) {
        await handle.write(buffer, position)
        record({ type: 'write', inode, position, bytes: Buffer.from(buffer), append })
      },
      async datasync() {
        await handle.datasync()
        record({ type: 'sync', inode })
      },
      async sync() {
        await handle.sync()
        record({ type: 'sync', inode })
      },
      async truncate(length) {
        await handle.truncate(length)
        record({ type: 'truncate', inode, length })
      },
      stat: () => handle.stat(),
      chmod: (mode) => handle.chmod(mode),
      close: () => handle.close(),
    }
  }

  const recorder: PowerLossRecorder = {
    get opCount() {
      return ops.length
    },
    ops,
    async open(path, flags, mode) {
      const rel = inside(path)
      const existed = rel === undefined ? undefined : lookup(live, rel)
      const handle = await inner.open(path, flags, mode)
      if (rel === undefined) return handle
      let inode = existed
      if (inode === undefined) {
        if ((flags & constants.O_CREAT) === 0) {
          // Opened a file the model does not know (created behind the recorder): adopt it as durable.
          const content = await fsp.readFile(path).catch(() => undefined)
          if (content === undefined) return handle
          inode = live.nextInode
          record({ type: 'create', path: rel, inode })
          record({ type: 'write', inode, position: 0, bytes: content, append: false })
          record({ type: 'sync', inode })
        } else {
          inode = live.nextInode
          record({ type: 'create', path: rel, inode })
        }
      } else if ((flags & constants.O_TRUNC) !== 0 && live.nodes.get(inode)?.kind === 'file') {
        record({ type: 'truncate', inode, length: 0 })
      }
      if (live.nodes.get(inode)?.kind !== 'file') return handle
      return wrapHandle(handle, inode, (flags & constants.O_APPEND) !== 0)
    },
    lstat: (path) => inner.lstat(path),
    stat: (path) => inner.stat(path),
    readdir: (path) => inner.readdir(path),
    async mkdir(path, mode) {
      await inner.mkdir(path, mode)
      const rel = inside(path)
      if (rel !== undefined) record({ type: 'mkdir', path: rel, inode: live.nextInode })
    },
    async link(existingPath, newPath) {
      await inner.link(existingPath, newPath)
      const from = inside(existingPath)
      const to = inside(newPath)
      if (from !== undefined && to !== undefined) record({ type: 'link', from, to })
    },
    async unlink(path) {
      await inner.unlink(path)
      const rel = inside(path)
      if (rel !== undefined) record({ type: 'unlink', path: rel })
    },
    // Not modelled: only an empty directory a failed create made, or a deleted session's
    // folder (a session delete is SIGKILL-tested), is removed; no power-loss case covers either.
    rmdir: (path) => inner.rmdir(path),
    async rename(oldPath, newPath) {
      await inner.rename(oldPath, newPath)
      const from = inside(oldPath)
      const to = inside(newPath)
      if (from !== undefined && to !== undefined) record({ type: 'rename', from, to })
    },
    chmod: (path, mode) => inner.chmod(path, mode),
    realpath: (path) => inner.realpath(path),
    async fsyncDirectory(path) {
      await inner.fsyncDirectory(path)
      const rel = inside(path)
      if (rel !== undefined) record({ type: 'fsyncDirectory', path: rel })
    },
    async materialise(opIndex, options, target) {
      if (opIndex < 0 || opIndex > ops.length)
        throw new RangeError(`op index ${opIndex} outside 0..${ops.length}`)
      const model = cloneModel(initial)
      for (const op of ops.slice(0, opIndex)) applyOp(model, op)
      const random = seededRandom(options.seed)
      const written = new Map<number, string>()
      const useDurable = (options.names ?? 'durable') === 'durable'
      const emit = async (directory: DirectoryNode, path: string): Promise<void> => {
        const entries = [...(useDurable ? directory.durable : directory.current)].sort(([a], [b]) =>
          a < b ? -1 : 1,
        )
        for (const [name, inode] of entries) {
          const node = model.nodes.get(inode)
          const child = join(path, name)
          if (node === undefined) continue
          if (node.kind === 'dir') {
            await fsp.mkdir(child, { mode: 0o700 })
            await emit(node, child)
            continue
          }
          const first = written.get(inode)
          if (first !== undefined) {
            await fsp.link(first, child)
            continue
          }
          await fsp.mkdir(dirname(child), { recursive: true, mode: 0o700 })
          await fsp.writeFile(child, damagedContent(node, options.damage, random), { mode: 0o600 })
          written.set(inode, child)
        }
      }
      await emit(directoryNode(model, ROOT_INODE), target)
    },
  }
  return recorder
}

/** Reads a materialised or real tree into `relative path -> bytes` (directories end in `/`), for comparisons. */
export async function readTree(root: string): Promise<Map<string, Buffer | 'dir'>> {
  const tree = new Map<string, Buffer | 'dir'>()
  const visit = async (path: string): Promise<void> => {
    for (const name of (await fsp.readdir(path)).sort()) {
      const child = join(path, name)
      const stats: Stats = await fsp.lstat(child)
      const rel = relative(root, child)
      if (stats.isDirectory()) {
        tree.set(`${rel}/`, 'dir')
        await visit(child)
      } else if (stats.isFile()) tree.set(rel, await fsp.readFile(child))
    }
  }
  await visit(root)
  return tree
}
