/**
 * One session's `search.index` against its plain log (see `search-index.ts`): the chain of
 * records read and checked in chunks, the last indexed line checked against the log, the
 * blocks that may match read, the tail caught up (blocks appended) or read raw, and a
 * stale, torn or corrupt index replaced (temp file and rename).
 */
import { constants } from 'node:fs'
import { join } from 'node:path'

import type { ReadOptions, SearchCandidateQuery, StoredHeader, StoredLine } from '@agent-ledger/session-store'
import {
  ASCII_LOWER,
  holdsFoldedLetter,
  BlockBuilder,
  chainStep,
  decodeBlock,
  decodeHeader,
  encodeHeader,
  isIndexedLine,
  RECORD_BYTES,
  sameBinding,
  SIGNATURE_BYTES,
  SIGNATURE_OFFSET,
  signatureHas,
} from '@agent-ledger/session-store/search-index'
import type { ChainEnd, IndexBlock, IndexHeader } from '@agent-ledger/session-store/search-index'

import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import { SEARCH_INDEX_FILE_NAME, TEMP_PREFIX } from '../layout.ts'
import { nativeCrc32c as crc32c } from '../line-codec.ts'
import type { StoreLimits } from '../limits.ts'
import { logAdapter } from '../log-adapter.ts'
import { createTempFile } from '../temp-file.ts'
import { throwIfAborted, toPortError } from './port-errors.ts'
import type { CachedChain, ChainCache } from './search-index-cache.ts'

/** Plain-log bytes per block the builder aims at. */
export const BLOCK_BYTES = 32 * 1024
/** New bytes past the index's end from which a search catches up (below: read raw). */
const TAIL_MIN_BYTES = 8 * 1024
/** Records per read of the index. */
const RECORDS_PER_READ = 128
export const NEWLINE = 0x0a
/** Timestamps younger than this are not trusted to show the next change. */
export const RACY_MS = 2000
/** A log not written for this long gets its last block closed whatever its size. */
const IDLE_MS = 60_000

/** What the capability needs of the backend. */
export interface SearchIndexContext {
  readonly fs: FsOps
  readonly root: string
  readonly limits: StoreLimits
  readonly randomHex: (byteCount: number) => string
  readonly assertOpen: () => void
  /** The backend's own read (every generation and encoding, every check). */
  readonly read: (id: string, options: ReadOptions) => AsyncIterable<StoredLine>
  /** The backend's header read. */
  readonly readHeader: (id: string) => Promise<StoredHeader>
  /** The backend's clock (ms since the epoch): how old a directory or log is. */
  readonly now: () => number
  /** What searches learned of each session (see {@link Known}); one map per backend. */
  readonly known: Map<string, Known>
  /** The sidecars' chains as last read, while unchanged (`search-index-cache.ts`); one per backend. */
  readonly chains: ChainCache
}

/** A query as one session's pass uses it. */
export interface Wanted {
  readonly needles: readonly Buffer[]
  readonly bits: readonly number[]
  readonly fromSeq: number
  readonly limit: number
  readonly signal: SearchCandidateQuery['signal']
}

/**
 * True when `line` may hold every needle: each is in it ASCII case-insensitively, or it holds
 * U+212A or U+017F (which the core's matcher folds to `k` and `s`; the core decides).
 */
function holdsAll(line: Buffer, needles: readonly Buffer[]): boolean {
  if (needles.length === 0 || holdsFoldedLetter(line)) return true
  const lower = lowered(line, line.length)
  return needles.every((needle) => lower.indexOf(needle) !== -1)
}

/** `bytes[0, count)` ASCII-lowercased into a shared buffer (valid until the next call). */
function lowered(bytes: Buffer, count: number): Buffer {
  if (scratch.length < count) scratch = Buffer.allocUnsafe(count)
  const lower = scratch.subarray(0, count)
  for (let index = 0; index < count; index += 1) lower[index] = ASCII_LOWER[bytes[index]!]!
  return lower
}

let scratch = Buffer.allocUnsafe(BLOCK_BYTES * 2)

/**
 * The lines of `bytes[0, count)` (split at `\n`; the last may be unterminated) that hold
 * every needle, as [line index, start, end]: the first needle is found in the whole buffer
 * at once, the others only in the lines it is in.
 */
function* matchingLines(
  bytes: Buffer,
  count: number,
  needles: readonly Buffer[],
): Generator<readonly [number, number, number]> {
  if (needles.length > 0 && holdsFoldedLetter(bytes.subarray(0, count))) {
    // Rare: a line by line check, so a line with a folded letter is handed to the core.
    let line = 0
    for (let start = 0; start < count; line += 1) {
      const newline = bytes.indexOf(NEWLINE, start)
      const end = newline === -1 || newline > count ? count : newline
      if (holdsAll(bytes.subarray(start, end), needles)) yield [line, start, end]
      start = end + 1
    }
    return
  }
  const lower = lowered(bytes, count)
  const first = needles[0]
  let line = 0
  let lineStart = 0
  while (lineStart < count) {
    const hit = first === undefined ? lineStart : lower.indexOf(first, lineStart)
    if (hit === -1) return
    for (let newline = lower.indexOf(NEWLINE, lineStart); newline !== -1 && newline < hit;) {
      line += 1
      lineStart = newline + 1
      newline = lower.indexOf(NEWLINE, lineStart)
    }
    const newline = lower.indexOf(NEWLINE, hit)
    const end = newline === -1 ? count : newline
    const holds = needles.every((needle) => {
      const at = lower.indexOf(needle, lineStart)
      return at !== -1 && at + needle.length <= end
    })
    if (holds) yield [line, lineStart, end]
    line += 1
    lineStart = end + 1
  }
}

/**
 * What a search learned of a session, reused while its directory is unchanged (same inode,
 * mtime and ctime: a log created, renamed or removed in it changes them), and kept only once
 * the directory is older than {@link RACY_MS} (a change within the file system's timestamp
 * tick would not show).
 */
export interface Known {
  readonly directoryKey: string
  /** The index binding of its plain v4 log. */
  readonly binding: IndexHeader
  readonly encrypted: boolean
  /** The log and index states at the last check of the chain's end against the log. */
  checked: string | null
}

export function statKey(stats: { ino: number; size: number; mtimeMs: number; ctimeMs: number }): string {
  return `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`
}

interface OpenSession {
  readonly id: string
  readonly directory: string
  readonly known: Known
  /** The log, when the caller opened it; else opened on first need. */
  readonly handle: FileHandleOps | null
}

export class SessionIndex {
  readonly #context: SearchIndexContext
  readonly #session: OpenSession
  readonly #path: string
  readonly #logPath: string
  readonly #file: string
  #handle: FileHandleOps | null
  /** The candidates of this pass, in seq order. */
  readonly #found: StoredLine[] = []

  constructor(context: SearchIndexContext, session: OpenSession) {
    this.#context = context
    this.#session = session
    this.#handle = session.handle
    this.#path = join(session.directory, SEARCH_INDEX_FILE_NAME)
    this.#logPath = join(session.directory, session.known.binding.log)
    this.#file = `${session.id}/${session.known.binding.log}`
  }

  async close(): Promise<void> {
    await this.#handle?.close().catch(() => undefined)
    this.#handle = null
  }

  /** The log, opened on first need (no symlink, a regular file). */
  async #log(): Promise<FileHandleOps> {
    if (this.#handle !== null) return this.#handle
    try {
      this.#handle = await this.#context.fs.open(this.#logPath, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch (error) {
      throw toPortError(error, { sessionId: this.#session.id, action: `open ${this.#file}` })
    }
    return this.#handle
  }

  async candidates(wanted: Wanted): Promise<StoredLine[]> {
    const { known } = this.#session
    const { fs, now } = this.#context
    let logStats
    try {
      logStats = await (this.#handle === null ? fs.lstat(this.#logPath) : this.#handle.stat())
    } catch (error) {
      throw toPortError(error, { sessionId: this.#session.id, action: `read ${this.#file}` })
    }
    const size = logStats.size
    let chain = await this.#readChain(known.binding, wanted)
    const state = `${statKey(logStats)}/${chain.indexKey}`
    if (chain.last !== null && known.checked !== state) {
      if (!(await this.#lastLineHolds(chain.last, size))) chain = freshChain(known.binding)
      else if (now() - Math.max(logStats.mtimeMs, chain.indexTime) > RACY_MS) known.checked = state
    }
    const found = this.#found
    for (const block of chain.matching) {
      if (found.length >= wanted.limit) return found
      await this.#blockCandidates(block, wanted)
    }
    const tail = size - chain.end.offset
    if (found.length >= wanted.limit || (tail <= 0 && !chain.rewrite)) return found
    const idle = now() - logStats.mtimeMs > IDLE_MS
    if (tail >= TAIL_MIN_BYTES || chain.rewrite || idle) {
      await this.#catchUp(chain, wanted, idle ? 0 : TAIL_MIN_BYTES)
      return found
    }
    return this.#tailCandidates(chain, wanted, size)
  }

  /**
   * The index's valid chain: its end, its last block and the blocks from `fromSeq` whose
   * signature holds the query's bits; `rewrite` when the file must be replaced (missing,
   * bound to another log, torn or corrupt: the `keep` records before the damage survive).
   */
  async #readChain(binding: IndexHeader, wanted: Wanted): Promise<Chain> {
    const { fs, chains, now } = this.#context
    const { id } = this.#session
    const current = await fs.lstat(this.#path).catch(() => null)
    const cached = current === null ? undefined : chains.get(id, statKey(current))
    if (cached !== undefined) return chainOf(cached, wanted)
    let handle: FileHandleOps
    try {
      handle = await fs.open(this.#path, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch {
      chains.delete(id)
      return freshChain(binding)
    }
    try {
      const stats = await handle.stat()
      const length = stats.size
      const buffer = Buffer.allocUnsafe(Math.min(length, RECORD_BYTES * RECORDS_PER_READ))
      const signatures = new Uint8Array(Math.max(0, Math.floor(length / RECORD_BYTES) - 1) * SIGNATURE_BYTES)
      const blocks: IndexBlock[] = []
      let end: ChainEnd = { nextSeq: 0, offset: binding.headerBytes }
      let keep = 1
      let position = 0
      let broken = false
      while (position < length && !broken) {
        const count = await handle.read(buffer, 0, Math.min(buffer.length, length - position), position)
        if (count < RECORD_BYTES) break
        for (let at = 0; at + RECORD_BYTES <= count; at += RECORD_BYTES, position += RECORD_BYTES) {
          if (position === 0) {
            const header = decodeHeader(buffer, 0, crc32c)
            if (header === null || !sameBinding(header, binding)) return freshChain(binding)
            continue
          }
          const block = decodeBlock(buffer, at, crc32c)
          const step = block === null ? 'gap' : chainStep(end, block)
          if (step === 'gap') {
            broken = true
            break
          }
          keep += 1
          if (step === 'duplicate') continue
          end = { nextSeq: block!.lastSeq + 1, offset: block!.end }
          signatures.set(
            buffer.subarray(at + SIGNATURE_OFFSET, at + SIGNATURE_OFFSET + SIGNATURE_BYTES),
            blocks.length * SIGNATURE_BYTES,
          )
          blocks.push(block!)
        }
      }
      if (position === 0) return freshChain(binding)
      const read: CachedChain = {
        indexKey: statKey(stats),
        indexTime: Math.max(stats.mtimeMs, stats.ctimeMs),
        end,
        blocks,
        signatures: signatures.subarray(0, blocks.length * SIGNATURE_BYTES),
        keep,
      }
      const rewrite = broken || keep * RECORD_BYTES !== length
      if (!rewrite && now() - read.indexTime > RACY_MS) chains.set(id, read)
      else chains.delete(id)
      return { ...chainOf(read, wanted), rewrite }
    } finally {
      await handle.close().catch(() => undefined)
    }
  }

  /** True when the log still holds the block's last line where the block says. */
  async #lastLineHolds(block: IndexBlock, size: number): Promise<boolean> {
    if (size < block.end) return false
    const bytes = Buffer.allocUnsafe(block.end - block.lastLine)
    const count = await (await this.#log()).read(bytes, 0, bytes.length, block.lastLine)
    if (count !== bytes.length || bytes[count - 1] !== NEWLINE) return false
    return isIndexedLine(bytes.subarray(0, count - 1), { seq: block.lastSeq, crc: block.lastCrc }, crc32c)
  }

  /** The lines of one indexed block holding every fragment, from `fromSeq`. */
  async #blockCandidates(block: IndexBlock, wanted: Wanted): Promise<void> {
    const found = this.#found
    const bytes = Buffer.allocUnsafe(block.end - block.start)
    const count = await (await this.#log()).read(bytes, 0, bytes.length, block.start)
    if (count !== bytes.length) return
    for (const [line, from, to] of matchingLines(bytes, count, wanted.needles)) {
      const seq = block.firstSeq + line
      if (seq < wanted.fromSeq) continue
      found.push(this.#stored(seq, bytes.toString('utf8', from, to), block.start + from))
      if (found.length >= wanted.limit) return
    }
  }

  #stored(seq: number, line: string, offset: number): StoredLine {
    return { seq, line, location: { file: this.#file, line: seq + 2, offset } }
  }

  /** The lines after the index's end, below {@link TAIL_MIN_BYTES}: raw first, checked only when one may match. */
  async #tailCandidates(chain: Chain, wanted: Wanted, size: number): Promise<StoredLine[]> {
    const found = this.#found
    const bytes = Buffer.allocUnsafe(size - chain.end.offset)
    const count = await (await this.#log()).read(bytes, 0, bytes.length, chain.end.offset)
    const may = !matchingLines(bytes, count, wanted.needles).next().done
    if (!may) return found
    await this.#scan(chain, wanted, { writer: null, lastBlockBytes: TAIL_MIN_BYTES })
    return found
  }

  /** Scans from the chain's end with every check, collecting candidates and (with `build`) appending blocks. */
  async #catchUp(chain: Chain, wanted: Wanted, lastBlockBytes: number): Promise<void> {
    const writer = await this.#openForAppend(chain, this.#session.known.binding)
    try {
      await this.#scan(chain, wanted, { writer, lastBlockBytes })
    } finally {
      await writer?.close().catch(() => undefined)
    }
  }

  async #scan(
    chain: Chain,
    wanted: Wanted,
    build: { readonly writer: FileHandleOps | null; readonly lastBlockBytes: number },
  ): Promise<void> {
    const found = this.#found
    const { id } = this.#session
    const { writer } = build
    const adapter = await logAdapter(id, 'plain', this.#context.limits)
    const handle = await this.#log()
    const maxDepth = this.#context.limits.maxDepth
    const builder = new BlockBuilder(chain.end, BLOCK_BYTES, crc32c)
    const pending: Uint8Array[] = []
    const from =
      chain.last === null
        ? undefined
        : { offset: chain.end.offset, plainOffset: chain.end.offset, lastSeq: chain.end.nextSeq - 1 }
    const scan = adapter.scan(handle, {
      ...(from === undefined ? {} : { from }),
      onLine: (location, value, text) => {
        if (location.line === 1) return false
        const seq = location.line - 2
        const bytes = location.bytes
        if (seq >= wanted.fromSeq && found.length < wanted.limit && holdsAll(bytes, wanted.needles)) {
          found.push({
            ...this.#stored(seq, text ?? bytes.toString('utf8'), location.offset),
            ...(value === undefined ? {} : { checked: { value, maxDepth } }),
          })
        }
        const closed = builder.add(seq, location.offset, bytes)
        if (closed !== null) pending.push(closed)
        // Without an index to build, stop once the page is full.
        return writer === null && found.length >= wanted.limit
      },
    })
    for (;;) {
      throwIfAborted(wanted.signal, `Searching session ${id}`, id)
      const step = await scan.next()
      if (writer !== null && pending.length > 0) await writer.write(Buffer.concat(pending.splice(0)), 0)
      if (step.done !== true) continue
      const outcome = step.value
      // Damage ends the session's candidates as it ends the core's scan (the lines before it
      // were yielded); the blocks before it stay, none is closed past it.
      if (outcome.damage !== null) return
      const last = builder.close(build.lastBlockBytes)
      if (writer !== null && last !== null) await writer.write(Buffer.from(last), 0)
      return
    }
  }

  /** The index opened for appending; replaced first (temp and rename) when it must be rewritten. Null when it cannot be written. */
  async #openForAppend(chain: Chain, binding: IndexHeader): Promise<FileHandleOps | null> {
    const { fs, randomHex } = this.#context
    try {
      if (chain.rewrite) {
        const { handle: out, path: temp } = await createTempFile(fs, {
          directory: this.#session.directory,
          prefix: `${TEMP_PREFIX}search-`,
          randomHex,
        })
        try {
          await out.write(Buffer.from(encodeHeader(binding, crc32c)), 0)
          if (chain.last !== null) await this.#copyPrefix(out, chain.keep)
        } finally {
          await out.close()
        }
        await fs.rename(temp, this.#path)
      }
      return await fs.open(this.#path, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW)
    } catch {
      return null // a read-only store is searched all the same, by the scan
    }
  }

  /** Copies the first `keep` records after the header into `out`, in chunks. */
  async #copyPrefix(out: FileHandleOps, keep: number): Promise<void> {
    const source = await this.#context.fs.open(this.#path, constants.O_RDONLY | constants.O_NOFOLLOW)
    try {
      const buffer = Buffer.allocUnsafe(RECORD_BYTES * RECORDS_PER_READ)
      for (let position = RECORD_BYTES; position < keep * RECORD_BYTES;) {
        const count = await source.read(
          buffer,
          0,
          Math.min(buffer.length, keep * RECORD_BYTES - position),
          position,
        )
        if (count === 0) return
        await out.write(buffer.subarray(0, count), position)
        position += count
      }
    } finally {
      await source.close().catch(() => undefined)
    }
  }
}

interface Chain {
  readonly end: ChainEnd
  readonly last: IndexBlock | null
  readonly matching: readonly IndexBlock[]
  readonly rewrite: boolean
  /** Records (the header included) of the file that are valid and kept by a rewrite. */
  readonly keep: number
  /** The index file's state as read (`statKey`), and its newest timestamp. */
  readonly indexKey: string
  readonly indexTime: number
}

/** The chain a sidecar held, with the blocks from `fromSeq` whose signature holds the query's bits. */
function chainOf(read: CachedChain, wanted: Wanted): Chain {
  const matching: IndexBlock[] = []
  read.blocks.forEach((block, index) => {
    if (
      block.lastSeq >= wanted.fromSeq &&
      signatureHas(read.signatures, index * SIGNATURE_BYTES, wanted.bits)
    )
      matching.push(block)
  })
  return {
    end: read.end,
    last: read.blocks.at(-1) ?? null,
    matching,
    rewrite: false,
    keep: read.keep,
    indexKey: read.indexKey,
    indexTime: read.indexTime,
  }
}

/** A chain with no block, to be written as a header-only index. */
function freshChain(binding: IndexHeader): Chain {
  const end = { nextSeq: 0, offset: binding.headerBytes }
  return { end, last: null, matching: [], rewrite: true, keep: 0, indexKey: '', indexTime: 0 }
}
