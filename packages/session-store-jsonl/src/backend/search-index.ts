/**
 * The JSONL backend's `capabilities.search`: a sidecar index per session (`search.index`,
 * records and signatures from `@agent-ledger/session-store/search-index`) that narrows the
 * lines a search reads. Only the file work is here:
 *
 * - a search reads the index in chunks, checks every record, the binding (log name, header
 *   line length and CRC) and that the last indexed line is still where the index says (seq,
 *   crc, its own checksum); reads only the blocks whose signature holds the query's
 *   trigrams, and in them only the lines holding every fragment;
 * - what the index does not cover yet is caught up in the same pass (the store's scanner,
 *   every check; each closed block appended with one `O_APPEND` write, never fsynced: the
 *   index is derived from the log) once at least {@link TAIL_MIN_BYTES} are new, else read
 *   raw and, only when a line may match, scanned with every check;
 * - a stale index (a rolled-back or replaced log) is replaced by a header-only one and
 *   rebuilt; a torn or corrupt record ends the chain there and the file is replaced by its
 *   valid prefix (temp file and rename); so an index costs time, never a missed line.
 *
 * `.zstd` logs, older generations and encrypted sessions are not indexed: they are read
 * through the backend's own `read` (an encrypted one yields one line, so the core reports it
 * `unsearched`).
 */
import { constants } from 'node:fs'
import { join } from 'node:path'

import { crc32c as nativeCrc32c } from '@node-rs/crc32'

import { SessionStoreError, SessionStoreErrorCode } from '@agent-ledger/session-store'
import type {
  ReadOptions,
  SearchCandidate,
  SearchCandidateQuery,
  SearchCapability,
  StoredHeader,
  StoredLine,
} from '@agent-ledger/session-store'
import {
  addTrigrams,
  ASCII_LOWER,
  chainStep,
  decodeBlock,
  decodeHeader,
  encodeBlock,
  encodeHeader,
  fragmentBits,
  RECORD_BYTES,
  SIGNATURE_BYTES,
  SIGNATURE_OFFSET,
  signatureHas,
} from '@agent-ledger/session-store/search-index'
import type { ChainEnd, IndexBlock, IndexHeader } from '@agent-ledger/session-store/search-index'

import type { FileHandleOps, FsOps } from '../fs-ops.ts'
import type { StoreLimits } from '../limits.ts'
import { logAdapter } from '../log-adapter.ts'
import { assertSessionId } from '../session-id.ts'
import { TEMP_PREFIX } from '../layout.ts'
import { isOlderGeneration } from './older-read.ts'
import { openLog } from './open-log.ts'
import { JSONL_DAMAGE_CODES, throwIfAborted, toPortError } from './port-errors.ts'

/** The sidecar's name in a session directory. */
export const SEARCH_INDEX_FILE_NAME = 'search.index'
/** Plain-log bytes per block the builder aims at. */
const BLOCK_BYTES = 32 * 1024
/** New bytes past the index's end from which a search catches up (below: read raw). */
const TAIL_MIN_BYTES = 8 * 1024
/** Records per read of the index. */
const RECORDS_PER_READ = 128
const crc32c = (bytes: Uint8Array): number => nativeCrc32c(bytes) >>> 0
const NEWLINE = 0x0a
/** Sessions read at once by one call. */
const SESSIONS_AHEAD = 8

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
}

/** A query as one session's pass uses it. */
interface Wanted {
  readonly needles: readonly Buffer[]
  readonly bits: readonly number[]
  readonly fromSeq: number
  readonly limit: number
  readonly signal: SearchCandidateQuery['signal']
}

/**
 * The capability.
 *
 * @param context - File system, root, limits and the backend's reads.
 * @returns `capabilities.search` of the JSONL backend.
 */
export function searchCapability(context: Omit<SearchIndexContext, 'known'>): SearchCapability {
  const full = { ...context, known: new Map<string, Known>() }
  return { candidates: (query) => candidates(full, query) }
}

async function candidates(
  context: SearchIndexContext,
  query: SearchCandidateQuery,
): Promise<{ readonly candidates: readonly SearchCandidate[]; readonly done: boolean }> {
  context.assertOpen()
  const found: SearchCandidate[] = []
  const needles = query.fragments.map((fragment) => Buffer.from(fragment, 'latin1'))
  const bits = fragmentBits(query.fragments)
  const ids = await sessionIds(context, query)
  // Sessions are read SESSIONS_AHEAD at a time (each is a few small reads: the waits overlap),
  // their candidates taken in id order; a session read ahead of a full page is wasted work.
  const ahead: Promise<StoredLine[] | Error>[] = []
  const start = (id: string): Promise<StoredLine[] | Error> => {
    const fromSeq = id === query.from?.sessionId ? query.from.seq : 0
    const wanted = { needles, bits, fromSeq, limit: query.limit, signal: query.signal }
    return sessionCandidates(context, id, wanted).catch((error: unknown) =>
      error instanceof Error ? error : new Error(String(error)),
    )
  }
  for (let index = 0; index < ids.length; index += 1) {
    while (ahead.length < SESSIONS_AHEAD && index + ahead.length < ids.length)
      ahead.push(start(ids[index + ahead.length]!))
    const id = ids[index]!
    const result = await ahead.shift()!
    throwIfAborted(query.signal, 'Searching sessions')
    if (result instanceof Error) {
      // As the core's scan: a session deleted since the listing, or damage, is skipped.
      if (isMissingOrDamage(result)) continue
      await Promise.all(ahead)
      throw toPortError(result, { sessionId: id, action: `search session ${id}` })
    }
    for (const stored of result) {
      found.push({ sessionId: id, stored })
      if (found.length === query.limit) {
        await Promise.all(ahead)
        return { candidates: found, done: false }
      }
    }
  }
  return { candidates: found, done: true }
}

function isMissingOrDamage(error: unknown): boolean {
  if (!(error instanceof SessionStoreError)) return false
  const code: string = error.code
  return (
    code === SessionStoreErrorCode.SESSION_NOT_FOUND ||
    code === SessionStoreErrorCode.CORRUPT_LINE ||
    code === SessionStoreErrorCode.LINE_TOO_LARGE ||
    JSONL_DAMAGE_CODES.includes(code)
  )
}

/** The session ids to search from `from` on, sorted (code-unit order). */
async function sessionIds(context: SearchIndexContext, query: SearchCandidateQuery): Promise<string[]> {
  const first = query.from?.sessionId
  let names: readonly string[]
  if (query.sessionIds !== null) names = query.sessionIds
  else {
    try {
      names = await context.fs.readdir(context.root)
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return []
      throw toPortError(error, { action: `list the store root ${context.root}` })
    }
  }
  return names.filter((name) => (first === undefined || name >= first) && isSessionId(name)).sort()
}

function isSessionId(name: string): boolean {
  try {
    assertSessionId(name)
    return true
  } catch {
    return false
  }
}

/** True when the line `bytes[from, to)` holds every needle, ASCII case-insensitively. */
function holdsAll(
  bytes: Buffer,
  from: number,
  to: number,
  needles: readonly Buffer[],
  scratch: Buffer,
): boolean {
  if (needles.length === 0) return true
  const length = to - from
  const lower = length <= scratch.length ? scratch.subarray(0, length) : Buffer.allocUnsafe(length)
  for (let index = 0; index < length; index += 1) lower[index] = ASCII_LOWER[bytes[from + index]!]!
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
interface Known {
  readonly directoryKey: string
  /** The index binding of its plain v4 log. */
  readonly binding: IndexHeader
  readonly encrypted: boolean
  /** The log and index states at the last check of the chain's end against the log. */
  checked: string | null
}

/** Timestamps younger than this are not trusted to show the next change. */
const RACY_MS = 2000
/** A log not written for this long gets its last block closed whatever its size. */
const IDLE_MS = 60_000

function statKey(stats: { ino: number; size: number; mtimeMs: number; ctimeMs: number }): string {
  return `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`
}

/** The lines of one session that may match, from `fromSeq`, at most `limit`. */
async function sessionCandidates(
  context: SearchIndexContext,
  id: string,
  wanted: Wanted,
): Promise<StoredLine[]> {
  const directory = join(context.root, id)
  const stats = await context.fs.lstat(directory).catch(() => null)
  const directoryKey = stats?.isDirectory() === true ? statKey(stats) : null
  let known = context.known.get(id)
  let handle: FileHandleOps | null = null
  if (known === undefined || known.directoryKey !== directoryKey) {
    context.known.delete(id)
    let opened
    try {
      opened = await openLog(context, id)
    } catch (error) {
      if (isOlderGeneration(error)) return readCandidates(context, id, wanted)
      throw error
    }
    handle = opened.handle
    const header =
      opened.log.encoding === 'plain'
        ? await headerLine(handle, context.limits.maxLineBytes).catch(() => null)
        : null
    if (header === null) {
      // zstd, or no whole header line (the backend's read reports it as the scan sees it).
      await handle.close().catch(() => undefined)
      return readCandidates(context, id, wanted)
    }
    known = {
      directoryKey: directoryKey ?? '',
      binding: {
        log: opened.log.name,
        headerBytes: header.length,
        headerCrc: crc32c(header),
        blockBytes: BLOCK_BYTES,
      },
      encrypted: isEncrypted(header.toString('utf8')),
      checked: null,
    }
    if (directoryKey !== null && context.now() - Math.max(stats!.mtimeMs, stats!.ctimeMs) > RACY_MS) {
      context.known.set(id, known)
    }
  }
  if (known.encrypted) {
    await handle?.close().catch(() => undefined)
    return readCandidates(context, id, wanted)
  }
  const index = new SessionIndex(context, { id, directory, known, handle })
  try {
    return await index.candidates(wanted)
  } finally {
    await index.close()
  }
}

/** Line 1 with its `\n`, or null when the log has no whole one within the line limit. */
async function headerLine(handle: FileHandleOps, maxBytes: number): Promise<Buffer | null> {
  let buffer = Buffer.allocUnsafe(2048)
  for (;;) {
    const count = await handle.read(buffer, 0, buffer.length, 0)
    const end = buffer.subarray(0, count).indexOf(NEWLINE)
    if (end !== -1) return buffer.subarray(0, end + 1)
    if (count < buffer.length || buffer.length >= maxBytes) return null
    buffer = Buffer.allocUnsafe(buffer.length * 4)
  }
}

/** A session that is not indexed: the backend's read, every line filtered (an encrypted one: one line). */
async function readCandidates(
  context: SearchIndexContext,
  id: string,
  wanted: Wanted,
): Promise<StoredLine[]> {
  const header = await context.readHeader(id)
  const encrypted = isEncrypted(header.line)
  const found: StoredLine[] = []
  const fragments = wanted.needles.map((needle) => needle.toString('latin1'))
  for await (const stored of context.read(id, { fromSeq: wanted.fromSeq, signal: wanted.signal })) {
    if (encrypted) return [stored]
    const lower = stored.line.toLowerCase()
    if (fragments.every((fragment) => lower.includes(fragment))) found.push(stored)
    if (found.length >= wanted.limit) break
  }
  return found
}

function isEncrypted(headerLine: string): boolean {
  try {
    const header = JSON.parse(headerLine) as { encryption?: unknown }
    return typeof header === 'object' && header !== null && header.encryption !== undefined
  } catch {
    return false // the core reports a header that is not JSON
  }
}

interface OpenSession {
  readonly id: string
  readonly directory: string
  readonly known: Known
  /** The log, when the caller opened it; else opened on first need. */
  readonly handle: FileHandleOps | null
}

/** The 8 hex digits of a line's `,"crc":"xxxxxxxx"}` suffix as a number, or null. */
function lineCrcOf(bytes: Buffer, from: number, to: number): number | null {
  if (to - from < 19 || bytes[to - 1] !== 0x7d || bytes[to - 2] !== 0x22) return null
  const digits = bytes.toString('latin1', to - 10, to - 2)
  return /^[0-9a-f]{8}$/.test(digits) ? Number.parseInt(digits, 16) : null
}

/** True when the line `bytes[from, to)` is event `seq` and carries a valid checksum equal to `crc`. */
function isLine(bytes: Buffer, range: { from: number; to: number }, seq: number, crc: number): boolean {
  const { from, to } = range
  const prefix = `{"seq":${seq},`
  if (bytes.toString('latin1', from, from + prefix.length) !== prefix) return false
  const stored = lineCrcOf(bytes, from, to)
  return stored === crc && crc32c(bytes.subarray(from, to - 18)) === crc
}

class SessionIndex {
  readonly #context: SearchIndexContext
  readonly #session: OpenSession
  readonly #path: string
  readonly #logPath: string
  readonly #file: string
  #handle: FileHandleOps | null

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
    const found: StoredLine[] = []
    for (const block of chain.matching) {
      if (found.length >= wanted.limit) return found
      await this.#blockCandidates(block, wanted, found)
    }
    const tail = size - chain.end.offset
    if (found.length >= wanted.limit || (tail <= 0 && !chain.rewrite)) return found
    const idle = now() - logStats.mtimeMs > IDLE_MS
    if (tail >= TAIL_MIN_BYTES || chain.rewrite || idle) {
      await this.#catchUp(chain, wanted, found, idle ? 0 : TAIL_MIN_BYTES)
      return found
    }
    return this.#tailCandidates(chain, wanted, found, size)
  }

  /**
   * The index's valid chain: its end, its last block and the blocks from `fromSeq` whose
   * signature holds the query's bits; `rewrite` when the file must be replaced (missing,
   * bound to another log, torn or corrupt: the `keep` records before the damage survive).
   */
  async #readChain(binding: IndexHeader, wanted: Wanted): Promise<Chain> {
    let handle: FileHandleOps
    try {
      handle = await this.#context.fs.open(this.#path, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch {
      return freshChain(binding)
    }
    try {
      const stats = await handle.stat()
      const length = stats.size
      const buffer = Buffer.allocUnsafe(Math.min(length, RECORD_BYTES * RECORDS_PER_READ))
      let end: ChainEnd = { nextSeq: 0, offset: binding.headerBytes }
      let last: IndexBlock | null = null
      let keep = 1
      const matching: IndexBlock[] = []
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
          last = block
          if (block!.lastSeq >= wanted.fromSeq && signatureHas(buffer, at + SIGNATURE_OFFSET, wanted.bits))
            matching.push(block!)
        }
      }
      if (position === 0) return freshChain(binding)
      return {
        end,
        last,
        matching,
        rewrite: broken || keep * RECORD_BYTES !== length,
        keep,
        indexKey: statKey(stats),
        indexTime: Math.max(stats.mtimeMs, stats.ctimeMs),
      }
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
    return isLine(bytes, { from: 0, to: count - 1 }, block.lastSeq, block.lastCrc)
  }

  /** The lines of one indexed block holding every fragment, from `fromSeq`. */
  async #blockCandidates(block: IndexBlock, wanted: Wanted, found: StoredLine[]): Promise<void> {
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
  async #tailCandidates(
    chain: Chain,
    wanted: Wanted,
    found: StoredLine[],
    size: number,
  ): Promise<StoredLine[]> {
    const bytes = Buffer.allocUnsafe(size - chain.end.offset)
    const count = await (await this.#log()).read(bytes, 0, bytes.length, chain.end.offset)
    const may = !matchingLines(bytes, count, wanted.needles).next().done
    if (!may) return found
    await this.#scan(chain, wanted, found, { writer: null, lastBlockBytes: TAIL_MIN_BYTES })
    return found
  }

  /** Scans from the chain's end with every check, collecting candidates and (with `build`) appending blocks. */
  async #catchUp(chain: Chain, wanted: Wanted, found: StoredLine[], lastBlockBytes: number): Promise<void> {
    const writer = await this.#openForAppend(chain, this.#session.known.binding)
    try {
      await this.#scan(chain, wanted, found, { writer, lastBlockBytes })
    } finally {
      await writer?.close().catch(() => undefined)
    }
  }

  async #scan(
    chain: Chain,
    wanted: Wanted,
    found: StoredLine[],
    build: { readonly writer: FileHandleOps | null; readonly lastBlockBytes: number },
  ): Promise<void> {
    const { id } = this.#session
    const { writer } = build
    const adapter = await logAdapter(id, 'plain', this.#context.limits)
    const handle = await this.#log()
    const maxDepth = this.#context.limits.maxDepth
    const builder = new BlockBuilder(chain.end)
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
        if (
          seq >= wanted.fromSeq &&
          found.length < wanted.limit &&
          holdsAll(bytes, 0, bytes.length, wanted.needles, scratch)
        ) {
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
        const temp = join(this.#session.directory, `${TEMP_PREFIX}search-${randomHex(8)}`)
        const out = await fs.open(
          temp,
          constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
          0o600,
        )
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

/** A chain with no block, to be written as a header-only index. */
function freshChain(binding: IndexHeader): Chain {
  const end = { nextSeq: 0, offset: binding.headerBytes }
  return { end, last: null, matching: [], rewrite: true, keep: 0, indexKey: '', indexTime: 0 }
}

function sameBinding(a: IndexHeader, b: IndexHeader): boolean {
  return a.log === b.log && a.headerBytes === b.headerBytes && a.headerCrc === b.headerCrc
}

/** Gathers lines into blocks of about {@link BLOCK_BYTES}. */
class BlockBuilder {
  readonly #signature = new Uint8Array(SIGNATURE_BYTES)
  #firstSeq: number
  #start: number
  #lastSeq = -1
  #lastLine = 0
  #end = 0
  #lastCrc = 0

  constructor(end: ChainEnd) {
    this.#firstSeq = end.nextSeq
    this.#start = end.offset
  }

  /** Adds one checked line; returns a closed block's record when the block is full. */
  add(seq: number, offset: number, bytes: Buffer): Uint8Array | null {
    addTrigrams(this.#signature, bytes, 0, bytes.length)
    this.#lastSeq = seq
    this.#lastLine = offset
    this.#end = offset + bytes.length + 1
    this.#lastCrc = lineCrcOf(bytes, 0, bytes.length) ?? 0
    return this.#end - this.#start >= BLOCK_BYTES ? this.close(0) : null
  }

  /** Closes the open block when it holds at least `minBytes` (and a line); returns its record or null. */
  close(minBytes: number): Uint8Array | null {
    if (this.#lastSeq < this.#firstSeq || this.#end - this.#start < minBytes) return null
    const block = {
      firstSeq: this.#firstSeq,
      lastSeq: this.#lastSeq,
      start: this.#start,
      lastLine: this.#lastLine,
      end: this.#end,
      lastCrc: this.#lastCrc,
    }
    const record = encodeBlock(block, this.#signature, crc32c)
    this.#signature.fill(0)
    this.#firstSeq = this.#lastSeq + 1
    this.#start = this.#end
    return record
  }
}
