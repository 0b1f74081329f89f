/**
 * The search index of migration 3, kept OFF the append's transaction: per session, blocks
 * of about {@link BLOCK_CHARS} characters of consecutive lines, each with a Bloom signature
 * of its folded ASCII trigrams ({@link SIGNATURE_BYTES} bytes: about 1/32 of the lines), in
 * `ledger_search_blocks`; `ledger_search_progress.next_seq` says up to where the blocks
 * cover the session. Lines at or past it (the tail) are not indexed yet and are read by
 * every search, so the index can only cost time, never a missed line.
 *
 * Catch-up ({@link catchUp}) reads the tail from `ledger_events` and writes its blocks, in
 * transactions of at most {@link CHUNK_LINES} lines (the last block of a session stays
 * open, under a full block, and is rewritten when it grows). The backend runs it in the
 * background once a writer of this process has appended a block's worth and then pauses (or
 * has many blocks pending), awaits it (up to one transaction's worth) when a lease is
 * released, and starts it when a search meets a long tail ({@link SearchIndexer}).
 *
 * The signatures are the core's (`@agent-ledger/session-store/search-index`, the same as the
 * JSONL index): trigrams of the line's UTF-8 bytes, ASCII lowercased, U+212A KELVIN SIGN as `k`
 * and U+017F LONG S as `s` (the two characters the core's `/iu` matcher folds to ASCII). The
 * candidate query checks lines with the same folding (`lower(line COLLATE "C") LIKE`, and the
 * two characters translated in a line that holds one).
 */
import { addTrigrams, SIGNATURE_BYTES } from '@agent-ledger/session-store/search-index'
import type { PoolClient } from 'pg'

import type { Db } from './db.ts'

/** A block closes when its lines (one `\n` each) reach this many UTF-16 code units. */
export const BLOCK_CHARS = 32_768
/** Lines read per catch-up transaction (bounds its memory and how long it holds its locks). */
const CHUNK_LINES = 2000

/** One block as catch-up builds it. */
export interface Block {
  readonly firstSeq: number
  lastSeq: number
  chars: number
  readonly signature: Uint8Array
}

/**
 * Cuts consecutive lines into blocks of {@link BLOCK_CHARS} (the last one possibly short).
 *
 * @param lines - Lines in seq order.
 * @returns The blocks, in order.
 */
export function buildBlocks(lines: Iterable<{ readonly seq: number; readonly line: string }>): Block[] {
  const blocks: Block[] = []
  let current: Block | undefined
  for (const { seq, line } of lines) {
    if (current === undefined || current.chars >= BLOCK_CHARS) {
      current = { firstSeq: seq, lastSeq: seq, chars: 0, signature: new Uint8Array(SIGNATURE_BYTES) }
      blocks.push(current)
    }
    addTrigrams(current.signature, Buffer.from(line, 'utf8'))
    current.lastSeq = seq
    current.chars += line.length + 1
  }
  return blocks
}

const LOCK_SESSION_SQL =
  'SELECT next_seq::text AS next_seq FROM ledger_sessions WHERE session_id = $1 FOR KEY SHARE'
const START_PROGRESS_SQL =
  'INSERT INTO ledger_search_progress (session_id, next_seq) VALUES ($1, 0) ON CONFLICT DO NOTHING'
const PROGRESS_SQL =
  'SELECT next_seq::text AS next_seq, open_seq::text AS open_seq FROM ledger_search_progress WHERE session_id = $1 FOR UPDATE'
const LINES_SQL =
  'SELECT seq::text AS seq, line FROM ledger_events WHERE session_id = $1 AND seq >= $2 AND seq < $3 ORDER BY ledger_events.seq'
const DROP_OPEN_SQL = 'DELETE FROM ledger_search_blocks WHERE session_id = $1 AND first_seq = $2'
const INSERT_BLOCKS_SQL = `
INSERT INTO ledger_search_blocks (session_id, first_seq, last_seq, signature)
SELECT $1, f, l, s FROM unnest($2::bigint[], $3::bigint[], $4::bytea[]) AS t(f, l, s)`
const ADVANCE_SQL = 'UPDATE ledger_search_progress SET next_seq = $2, open_seq = $3 WHERE session_id = $1'

/**
 * One catch-up transaction: at most {@link CHUNK_LINES} lines. `whole`: the last block too,
 * open when short of a full block (on release); otherwise full blocks only, so a writer's
 * background catch-ups read each line once. Returns whether lines are left to index.
 */
async function catchUpChunk(client: PoolClient, id: string, whole: boolean): Promise<boolean> {
  await client.query('BEGIN')
  try {
    // Derivable data: a commit lost in a crash only leaves its lines in the tail, and the
    // blocks and progress are in one transaction either way. No wait for the WAL flush.
    await client.query('SET LOCAL synchronous_commit = off')
    // The session row first (as delete locks it): a delete waits for this transaction, or
    // this one finds the session gone and writes nothing.
    const head = (await client.query<{ next_seq: string }>(LOCK_SESSION_SQL, [id])).rows[0]
    if (head === undefined) {
      await client.query('ROLLBACK')
      return false
    }
    await client.query(START_PROGRESS_SQL, [id])
    const row = (await client.query<{ next_seq: string; open_seq: string | null }>(PROGRESS_SQL, [id]))
      .rows[0]
    const headSeq = Number(head.next_seq)
    const covered = Number(row?.next_seq ?? 0)
    if (covered >= headSeq) {
      await client.query('COMMIT')
      return false
    }
    const openSeq = row?.open_seq === null || row?.open_seq === undefined ? null : Number(row.open_seq)
    const start = openSeq ?? covered
    const end = Math.min(headSeq, covered + CHUNK_LINES)
    const lines = (await client.query<{ seq: string; line: string }>(LINES_SQL, [id, start, end])).rows
    const built = buildBlocks(lines.map((line) => ({ seq: Number(line.seq), line: line.line })))
    const blocks = whole ? built : built.filter((block) => block.chars >= BLOCK_CHARS)
    if (blocks.length === 0) {
      await client.query('ROLLBACK')
      return false
    }
    if (openSeq !== null) await client.query(DROP_OPEN_SQL, [id, openSeq])
    if (blocks.length > 0) {
      await client.query(INSERT_BLOCKS_SQL, [
        id,
        blocks.map((block) => block.firstSeq),
        blocks.map((block) => block.lastSeq),
        blocks.map((block) => Buffer.from(block.signature)),
      ])
    }
    const last = blocks.at(-1)!
    const open = last.chars < BLOCK_CHARS ? last.firstSeq : null
    const next = whole ? end : last.lastSeq + 1
    await client.query(ADVANCE_SQL, [id, next, open])
    await client.query('COMMIT')
    return end < headSeq
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw error
  }
}

/**
 * Indexes session `id`'s tail (see the module comment). Safe to run from any number of
 * processes at once: each transaction locks the session's progress row.
 *
 * @param db - The backend's pool.
 * @param id - The session.
 * @param plan - `whole`: the short last block too (else full blocks only); `chunks`: most
 *   transactions to run (default: until done).
 * @returns Whether lines are left to index.
 */
async function catchUp(
  db: Db,
  id: string,
  plan: { readonly whole: boolean; readonly chunks?: number },
): Promise<boolean> {
  const context = db.context(`index session ${id} for search`, id)
  for (let chunk = 0; chunk < (plan.chunks ?? Number.POSITIVE_INFINITY); chunk++) {
    const client = await db.connect(context)
    let broken: Error | undefined
    let more: boolean
    try {
      more = await catchUpChunk(client, id, plan.whole)
    } catch (error) {
      broken = error instanceof Error ? error : new Error(String(error))
      throw error
    } finally {
      client.release(broken)
    }
    if (!more) return false
  }
  return true
}

/** How long a session's appends must pause before its background catch-up starts (ms). */
const IDLE_MS = 250
/**
 * Characters pending after which a catch-up starts without waiting for a pause: a writer
 * that never pauses is indexed in transactions of many blocks, and its tail stays bounded.
 */
export const BURST_CHARS = 64 * BLOCK_CHARS

/**
 * Schedules catch-ups for one backend instance, off the appends' path: once a block's worth
 * was appended here, when the session's appends pause for {@link IDLE_MS} (an agent waiting
 * for its model), or at once when {@link BURST_CHARS} are pending; also when a search meets a
 * long tail. One at a time per session; awaited on release. On a 2-core machine a catch-up
 * run between flushes takes its CPU (reading the lines back, their trigrams, ten statements)
 * from the writer's next flush: measured at batch 100 it was about a third of the writer's
 * client CPU per flush (`bench/append.bench.ts`). Failures are dropped: the lines stay in the
 * tail, which every search reads.
 */
export class SearchIndexer {
  private readonly db: Db
  private readonly idleMs: number
  /** Characters appended by this instance since its last catch-up of the session began. */
  private readonly pending = new Map<string, number>()
  /** The pause timer of a session with a block's worth pending (refreshed by each append). */
  private readonly idle = new Map<string, NodeJS.Timeout>()
  private readonly running = new Map<string, Promise<void>>()
  /** Sessions to catch up again when their running catch-up ends. */
  private readonly again = new Set<string>()
  private closed = false

  /**
   * @param db - The backend's pool.
   * @param options - `idleMs`: the pause before a catch-up (default {@link IDLE_MS}; tests set it).
   */
  constructor(db: Db, options: { readonly idleMs?: number } = {}) {
    this.db = db
    this.idleMs = options.idleMs ?? IDLE_MS
  }

  /** An append of `chars` characters to `id` committed. */
  appended(id: string, chars: number): void {
    if (this.closed) return
    const pending = (this.pending.get(id) ?? 0) + chars
    if (pending >= BURST_CHARS) {
      this.start(id)
      return
    }
    this.pending.set(id, pending)
    if (pending < BLOCK_CHARS) return
    const timer = this.idle.get(id)
    if (timer !== undefined) {
      timer.refresh()
      return
    }
    const fresh = setTimeout(() => {
      this.idle.delete(id)
      this.start(id)
    }, this.idleMs)
    fresh.unref()
    this.idle.set(id, fresh)
  }

  private stopTimer(id: string): void {
    const timer = this.idle.get(id)
    if (timer === undefined) return
    clearTimeout(timer)
    this.idle.delete(id)
  }

  /** Starts a background catch-up of `id` (or queues one after the running one). */
  start(id: string): void {
    if (this.closed) return
    this.pending.delete(id)
    this.stopTimer(id)
    if (this.running.has(id)) {
      this.again.add(id)
      return
    }
    const run = catchUp(this.db, id, { whole: false })
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        this.running.delete(id)
        if (this.again.delete(id)) this.start(id)
      })
    this.running.set(id, run)
  }

  /**
   * Catches `id` up now (after the running catch-up, if any), short last block included;
   * never throws. At most one transaction's worth ({@link CHUNK_LINES} lines) is awaited: a
   * longer tail (a large session written before migration 3) goes on in the background.
   */
  async settle(id: string): Promise<void> {
    this.pending.delete(id)
    this.stopTimer(id)
    this.again.delete(id)
    await this.running.get(id)
    if (this.closed) return
    if (await catchUp(this.db, id, { whole: true, chunks: 1 }).catch(() => false)) this.start(id)
  }

  /** Stops scheduling and waits for the running catch-ups (before the pool ends). */
  async close(): Promise<void> {
    this.closed = true
    this.again.clear()
    for (const timer of this.idle.values()) clearTimeout(timer)
    this.idle.clear()
    await Promise.all([...this.running.values()])
  }
}
