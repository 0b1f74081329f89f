import { SessionStoreError } from '@agent-ledger/session-store'
import type { StoredLine, WriterLease } from '@agent-ledger/session-store'
import { expect } from 'vitest'

import type { PostgresBackend } from '../../src/index.ts'
import { crcOf, eventLines } from './pg.ts'

/** One flush of the stream. */
export interface Flush {
  readonly batchId: string
  readonly seq: number
  readonly lines: readonly string[]
}

/** A writer appending flushes back to back until the first failure. */
export class FlushStream {
  readonly acknowledged: Flush[] = []
  inFlight: Flush | undefined
  /** Resolves with the error that stopped the stream. */
  readonly stopped: Promise<unknown>
  private readonly waiters: { count: number; resolve: () => void }[] = []

  constructor(
    backend: PostgresBackend,
    lease: WriterLease,
    start: { nextSeq: number; linesPerFlush: number },
  ) {
    this.stopped = (async () => {
      let nextSeq = start.nextSeq
      for (let counter = 0; ; counter++) {
        const lines = eventLines(nextSeq, start.linesPerFlush)
        const flush: Flush = { batchId: `${lease.owner}:${lease.epoch}:${counter}`, seq: nextSeq, lines }
        this.inFlight = flush
        try {
          await backend.append(lease, {
            expectedSeq: nextSeq,
            lines,
            lastCrc: crcOf(lines[lines.length - 1] as string),
            batchId: flush.batchId,
          })
        } catch (error) {
          return error
        }
        this.inFlight = undefined
        this.acknowledged.push(flush)
        nextSeq += lines.length
        for (const waiter of this.waiters.filter((w) => this.acknowledged.length >= w.count)) waiter.resolve()
      }
    })()
  }

  /** Resolves once `count` flushes of this stream are acknowledged. */
  async acknowledgedAtLeast(count: number): Promise<void> {
    if (this.acknowledged.length >= count) return
    await new Promise<void>((resolve) => this.waiters.push({ count, resolve }))
  }
}

async function readAll(backend: PostgresBackend, id: string): Promise<StoredLine[]> {
  const out: StoredLine[] = []
  for await (const line of backend.read(id, { fromSeq: 0 })) out.push(line)
  return out
}

/** What the check after a crash found. */
export interface CrashCheck {
  readonly acknowledgedLost: number
  readonly inFlight: 'landed' | 'absent' | 'none'
  readonly nextSeq: number
}

/**
 * After a crash: every acknowledged flush must be stored at its seqs; the in-flight one is
 * either stored whole and named by `head.lastBatchId`, or absent with the head right
 * after the last acknowledged flush. Nothing else may be stored.
 */
export async function checkAfterCrash(
  backend: PostgresBackend,
  id: string,
  stream: { acknowledged: readonly Flush[]; inFlight: Flush | undefined; baseSeq: number },
): Promise<CrashCheck> {
  const stored = await readAll(backend, id)
  const head = await backend.head(id)
  let lost = 0
  for (const flush of stream.acknowledged) {
    const found = stored.slice(flush.seq, flush.seq + flush.lines.length).map((line) => line.line)
    if (JSON.stringify(found) !== JSON.stringify(flush.lines)) lost += flush.lines.length
  }
  const last = stream.acknowledged[stream.acknowledged.length - 1]
  const ackedEnd = last === undefined ? stream.baseSeq : last.seq + last.lines.length
  const flight = stream.inFlight
  let inFlight: CrashCheck['inFlight'] = 'none'
  if (flight !== undefined && head.lastBatchId === flight.batchId) {
    inFlight = 'landed'
    expect(stored.slice(flight.seq).map((line) => line.line)).toEqual(flight.lines)
    expect(head.nextSeq).toBe(flight.seq + flight.lines.length)
  } else {
    if (flight !== undefined) inFlight = 'absent'
    expect(head.nextSeq).toBe(ackedEnd)
    expect(stored.length).toBe(ackedEnd)
  }
  expect(stored.map((line) => line.seq)).toEqual(stored.map((_, index) => index))
  return { acknowledgedLost: lost, inFlight, nextSeq: head.nextSeq }
}

/** The code of an error that stopped a stream (for assertions). */
export function stopCode(error: unknown): string {
  return SessionStoreError.is(error) ? error.code : `not a SessionStoreError: ${String(error)}`
}
